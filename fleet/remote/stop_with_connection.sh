#!/usr/bin/env bash
# fleet/remote/stop_with_connection.sh (fleet/shell.py STOP_WITH_CONNECTION): a remote command that ends with its
# connection. sshd starts a command in a session of its own (setsid, then the user's login shell), and when the
# connection goes (Ctrl-C, SIGTERM or SIGHUP of fleet, a controller that died, a dropped network) its sshd process
# goes, but the script would run on, reparented to PID 1: an apply holding its lock, a probe blocked on a dead mount,
# a `fleet run` command. A watchdog started first checks every second that the command's sshd is alive; once it is
# gone (and the script is not) it sends TERM to every process of the session (pkill -s; without pkill, the script's
# process group), then KILL 5 s later to what is left. It is off the channel (its output to /dev/null, so the command
# still ends when the script does), and disowned, so it is no job of the script's shell: a bare `wait` in the script
# (a user's `fleet run` command) never waits for it. What runs under timeout(1) (fleet.sections.bounded) is in the
# same session; what sudo started gets the TERM from sudo, which relays it. No process is started to find the
# session: `read` of /proc/PID/stat is a builtin (the probe's cost stays flat); the watchdog is the one process it adds.
#
# Which process is sshd (issue 44): the parent of the session's leader, the process sshd started. That is this bash's
# parent only where the login shell exec'd it; a login shell that does not (dash, Debian's /bin/sh and useradd's
# default shell, never does for a command with an assignment; bash does not once a startup file set a trap) stays
# alive as the script's parent for as long as the script runs, so watching $PPID watched nothing.
# A script that dies of SIGPIPE (it wrote to the channel after sshd had gone) would let the watchdog take that for
# the script's own end and leave the rest of the session running (a probe's background section blocked on a dead
# mount): SIGPIPE is caught here, so the script's own writes fail with EPIPE and it lives on until the watchdog ends
# the session. A caught signal is reset to its default in every command and subshell the script starts.
# fleet_f: the fields of /proc/PID/stat after the command's name (proc(5)): [0] state, [1] ppid, [3] session,
# [19] start time; empty where /proc is missing
# shellcheck disable=SC2206  # the fields after the command's name, split on spaces, are wanted as words
fleet_l=; read -r fleet_l 2>/dev/null <"/proc/$$/stat"; fleet_f=(${fleet_l##*) })
fleet_sid=${fleet_f[3]}; fleet_me_t=${fleet_f[19]}
case "$fleet_sid" in ''|0|1|*[!0-9]*) fleet_sid=$$ ;; esac
# shellcheck disable=SC2206  # as above
fleet_l=; read -r fleet_l 2>/dev/null <"/proc/$fleet_sid/stat"; fleet_f=(${fleet_l##*) })
fleet_sshd=${fleet_f[1]}
case "$fleet_sshd" in ''|0|1|*[!0-9]*) fleet_sshd=$PPID ;; esac
# shellcheck disable=SC2206  # as above
fleet_l=; read -r fleet_l 2>/dev/null <"/proc/$fleet_sshd/stat"; fleet_f=(${fleet_l##*) })
fleet_sshd_t=${fleet_f[19]}; unset fleet_l fleet_f
trap : PIPE
( trap '' TERM HUP INT
  # gone: the process PID ($1) started at $2 has ended: no such process, a zombie, or its pid reused by another one
  # (a start time that differs); where /proc is missing ($2 empty), kill -0 alone
  fleet_gone() {
    local s=
    if [ -z "$2" ]; then ! kill -0 "$1" 2>/dev/null; return; fi
    read -r s 2>/dev/null <"/proc/$1/stat" || return 0
    # shellcheck disable=SC2206  # as above
    s=(${s##*) }); [ "${s[0]}" = Z ] || [ "${s[19]}" != "$2" ]
  }
  while ! fleet_gone "$fleet_sshd" "$fleet_sshd_t"; do fleet_gone $$ "$fleet_me_t" && exit 0; sleep 1; done
  fleet_gone $$ "$fleet_me_t" && exit 0
  for fleet_sig in TERM KILL; do
    if command -v pkill >/dev/null 2>&1; then pkill -"$fleet_sig" -s "$fleet_sid"; else kill -"$fleet_sig" -- "-$fleet_sid"; fi
    sleep 5
  done
) 9>&- </dev/null >/dev/null 2>&1 & disown $!
