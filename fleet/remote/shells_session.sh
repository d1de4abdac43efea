#!/usr/bin/env bash
# fleet/remote/shells_session.sh (fleet/facts/shells.py command): the environment an SSH session starts with, as sshd
# and PAM give it, in the array base (each kind of shell is then started from it with env -i), and every line of its
# sources that gives a variable of $fleet_vars or of the families ($fleet_fam, never a name matching $fleet_secret) as
# @@etcenv lines (below: sshd's config, ~/.ssh/environment, pam_env, pam_limits). Set before this: $u (usepam.sh),
# fleet_vars, fleet_fam and fleet_secret.
# u, fleet_vars, fleet_fam, fleet_secret: set by the lines before this; to, ss: read by the lines shells.py writes after this
# shellcheck disable=SC2154,SC2034,SC2094  # SC2094: fleet_env_line's first argument names the file read, it writes stdout
printf '@@home %s\n' "$HOME"
# The session sshd starts: a clean environment and sshd's default PATH, then what its config and PAM add (below).
base=(HOME="$HOME" USER="${USER:-$(id -un)}" LOGNAME="${LOGNAME:-$(id -un)}" SHELL="${SHELL:-/bin/bash}" TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SSH_CLIENT="${SSH_CLIENT:-127.0.0.1 22 22}" SSH_CONNECTION="${SSH_CONNECTION:-127.0.0.1 22 127.0.0.1 22}")
# fleet's own command (fleet.shell.REMOTE_MARK): the shells it starts only observe (env.sh asks the cuda-compat gate
# and runs it in no shell fleet starts, so --check and the probe change nothing)
[ -n "${FLEET_REMOTE-}" ] && base+=(FLEET_REMOTE="$FLEET_REMOTE")
# What sshd puts in a session before any startup file, in its order (OpenSSH session.c do_setup_env): the defaults
# above, ~/.ssh/environment where PermitUserEnvironment allows it, PAM's (pam_env: /etc/security/pam_env.conf, then
# /etc/environment) where UsePAM is yes, then the first SetEnv line. Its config: the -f of the sshd listener this
# session descends from (its title keeps its arguments; /proc read by builtins), else /etc/ssh/sshd_config; Include
# read in place, a Match block's lines not (they hold for some sessions only); sshd_config(5): the first value wins.
# Each line of a tracked or family variable: `@@etcenv LINE<TAB>NAME<TAB>VALUE<TAB>FILE` (the file, where not
# /etc/environment); each AcceptEnv line (the names a client's SendEnv may set): `@@acceptenv LINE<TAB>PATTERNS<TAB>FILE`.
fleet_cf=/etc/ssh/sshd_config fleet_pp=$PPID
for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do [ -r "/proc/$fleet_pp/stat" ] || break
  mapfile -d '' -t fleet_a < "/proc/$fleet_pp/cmdline"; l=" ${fleet_a[*]} "
  if [[ $l == *sshd* && $l =~ \ -f\ ?([^ ]+)\  ]]; then fleet_cf=${BASH_REMATCH[1]}; break; fi
  read -r l < "/proc/$fleet_pp/stat"; read -ra fleet_a <<< "${l##*) }"; fleet_pp=${fleet_a[1]}; [ "${fleet_pp:-0}" -gt 0 ] || break
done
fleet_sshd_read() { local l n=0 k r f; while IFS= read -r l || [ -n "$l" ]; do n=$((n+1)); l=${l#"${l%%[![:space:]]*}"}; k=${l%%[[:space:]=]*}; r=${l#"$k"}; r=${r#"${r%%[![:space:]=]*}"}
    case ${k,,} in match) break;; include) for f in $r; do [[ $f == /* && -r $f ]] && fleet_sshd_read "$f"; done;;
      usepam) : "${sp:=$r}";; permituserenvironment) : "${su:=$r}";; setenv) [ -n "$se" ] || { se=$1:$n; sv=$r; };;
      acceptenv) printf '@@acceptenv %s\t%s\t%s\n' "$n" "$r" "$1";; esac
  done < "$1"; }
sp='' su='' se='' sv=''; [ -r "$fleet_cf" ] && fleet_sshd_read "$fleet_cf"
fleet_env_line() {   # FILE LINE NAME VALUE: into the session, and said where tracked or of the families
  base+=("$3=$4")
  case " $fleet_vars " in *" $3 "*) ;; *) if ! [[ $3 =~ $fleet_fam ]] || [[ ${3^^} =~ $fleet_secret ]]; then return; fi;; esac
  printf '@@etcenv %s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$1"; }
fleet_env_file() { local l n=0 k v; [ -r "$1" ] || return 0
  while IFS= read -r l || [ -n "$l" ]; do n=$((n+1)); l=${l#"${l%%[![:space:]]*}"}; l=${l#export }
    case $l in ''|'#'*) continue;; *=*) ;; *) continue;; esac
    k=${l%%=*}; v=${l#*=}
    case $k in ''|*[!A-Za-z0-9_]*) continue;; esac
    case $v in \"*\") v=${v#\"}; v=${v%\"};; \'*\') v=${v#\'}; v=${v%\'};; esac
    fleet_env_line "$1" "$n" "$k" "$v"
  done < "$1"; }
# PermitUserEnvironment: yes, or a pattern list of names (taken as yes: a list is rare, and a name outside it is said)
case ${su,,} in ''|no) ;; *) fleet_env_file "$HOME/.ssh/environment";; esac
# sshd applies PAM's environment only with UsePAM yes; without the running sshd's config, the probe's UsePAM ($u)
u=${u##* }; [ -r "$fleet_cf" ] && u=${sp:-no}; case ${u,,} in yes) pam=1;; *) pam=;; esac
if [ -n "$pam" ]; then
  # pam_env.conf: NAME [DEFAULT=value] [OVERRIDE=value]; a value that expands ${...} or @{...} is not read
  if [ -r /etc/security/pam_env.conf ]; then n=0
    while IFS= read -r l || [ -n "$l" ]; do n=$((n+1)); read -r k r <<< "$l"
      case $k in ''|'#'*|*[!A-Za-z0-9_]*) continue;; esac
      v=; [[ $r =~ (^|[[:space:]])DEFAULT=\"?([^\"[:space:]]*) ]] && v=${BASH_REMATCH[2]}
      [[ $r =~ (^|[[:space:]])OVERRIDE=\"?([^\"[:space:]]*) ]] && v=${BASH_REMATCH[2]}
      case $v in ''|*'{'*) continue;; esac
      fleet_env_line /etc/security/pam_env.conf "$n" "$k" "$v"
    done < /etc/security/pam_env.conf
  fi
  fleet_env_file /etc/environment
  # pam_limits: the nofile and memlock lines of limits.conf and limits.d that name this user or `*` (which is not
  # root's: limits.conf(5)), as `@@limconf LINE<TAB>TYPE<TAB>ITEM<TAB>VALUE<TAB>FILE`; the session's ulimit is theirs
  for f in /etc/security/limits.conf /etc/security/limits.d/*.conf; do [ -r "$f" ] || continue; n=0
    while read -r k t w v r; do n=$((n+1)); case $w in nofile|memlock) ;; *) continue;; esac
      [[ $k == "${base[1]#USER=}" || ( $k == '*' && $EUID != 0 ) ]] && printf '@@limconf %s\t%s\t%s\t%s\t%s\n' "$n" "$t" "$w" "$v" "$f"
    done < "$f"
  done
fi
# SetEnv NAME=VALUE ...: the first line's, a name's first value (sshd_config(5)); a "quoted word" unquoted
if [ -n "$se" ]; then declare -A fleet_seen=()
  read -ra fleet_a <<< "$sv"   # words, never globbed
  for w in "${fleet_a[@]}"; do w=${w#\"}; w=${w%\"}; k=${w%%=*}; [[ $w == *=* && -z ${fleet_seen[$k]-} ]] || continue; fleet_seen[$k]=1
    fleet_env_line "${se%:*}" "${se##*:}" "$k" "${w#*=}"; done
fi
to=; command -v timeout >/dev/null 2>&1 && to='timeout -k 2 15'
# setsid: no controlling terminal, so an interactive bash can never stop on SIGTTOU or read a tty
ss=; command -v setsid >/dev/null 2>&1 && ss='setsid -w'
