#!/usr/bin/env bash
# fleet/remote/shells_session.sh (fleet/facts/shells.py command): the environment an SSH session starts with, as sshd
# and PAM give it, in the array base (each kind of shell is then started from it with env -i), and /etc/environment's
# lines for the variables of $fleet_vars and of the families ($fleet_fam, never a name matching $fleet_secret) as
# @@etcenv lines. Set before this: $u (usepam.sh), fleet_vars, fleet_fam and fleet_secret.
# u, fleet_vars, fleet_fam, fleet_secret: set by the lines before this; to, ss: read by the lines shells.py writes after this
# shellcheck disable=SC2154,SC2034
printf '@@home %s\n' "$HOME"
# The session sshd + PAM start: a clean environment, sshd's default PATH, then /etc/environment.
base=(HOME="$HOME" USER="${USER:-$(id -un)}" LOGNAME="${LOGNAME:-$(id -un)}" SHELL="${SHELL:-/bin/bash}" TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SSH_CLIENT="${SSH_CLIENT:-127.0.0.1 22 22}" SSH_CONNECTION="${SSH_CONNECTION:-127.0.0.1 22 127.0.0.1 22}")
# fleet's own command (fleet.shell.REMOTE_MARK): the shells it starts only observe (env.sh asks the cuda-compat gate
# and runs it in no shell fleet starts, so --check and the probe change nothing)
[ -n "${FLEET_REMOTE-}" ] && base+=(FLEET_REMOTE="$FLEET_REMOTE")
# sshd applies /etc/environment (pam_env) only with UsePAM yes (sshd_config(5): the first value wins)
u=${u##* }; case ${u,,} in yes) pam=1;; *) pam=;; esac
if [ -n "$pam" ] && [ -r /etc/environment ]; then n=0
  while IFS= read -r l || [ -n "$l" ]; do n=$((n+1)); l=${l#"${l%%[![:space:]]*}"}; l=${l#export }
    case $l in ''|'#'*) continue;; esac; case $l in *=*) ;; *) continue;; esac
    k=${l%%=*}; v=${l#*=}
    case $k in ''|*[!A-Za-z0-9_]*) continue;; esac
    case $v in \"*\") v=${v#\"}; v=${v%\"};; \'*\') v=${v#\'}; v=${v%\'};; esac
    base+=("$k=$v")
    case " $fleet_vars " in *" $k "*) ;; *) if ! [[ $k =~ $fleet_fam ]] || [[ ${k^^} =~ $fleet_secret ]]; then continue; fi;; esac
    printf '@@etcenv %s\t%s\t%s\n' "$n" "$k" "$v"
  done < /etc/environment
fi
to=; command -v timeout >/dev/null 2>&1 && to='timeout -k 2 15'
# setsid: no controlling terminal, so an interactive bash can never stop on SIGTTOU or read a tty
ss=; command -v setsid >/dev/null 2>&1 && ss='setsid -w'
