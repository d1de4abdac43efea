#!/usr/bin/env bash
# fleet/remote/stop_with_connection.sh (fleet/shell.py STOP_WITH_CONNECTION): a remote command that ends with its
# connection. sshd starts a command in a session of its own (setsid; the login shell execs bash, so the script's $$
# is that session), and when the connection goes (Ctrl-C, SIGTERM or SIGHUP of fleet, a controller that died, a
# dropped network) its sshd process goes, but the script would run on, reparented to PID 1: an apply holding its
# lock, a probe blocked on a dead mount, a `fleet run` command. A watchdog started first checks every second that
# the script's parent sshd is alive; once it is gone (and the script is not) it sends TERM to every process of the
# session (pkill -s; without pkill, the script's process group), then KILL 5 s later to what is left. It is off the
# channel (its output to /dev/null, so the command still ends when the script does), and disowned, so it is no job
# of the script's shell: a bare `wait` in the script (a user's `fleet run` command) never waits for it. What runs
# under timeout(1) (fleet.sections.bounded) is in the same session; what sudo started gets the TERM from sudo, which
# relays it. No process is started to find the session: `read` of /proc/$$/stat is a builtin (the probe's cost stays
# flat); the watchdog is the one process it adds.
# the session sshd made for this command (field 6 of /proc/PID/stat, proc(5)); $$ where /proc is missing
# shellcheck disable=SC2206  # the fields after the command's name, split on spaces, are wanted as words
fleet_stat=; read -r fleet_stat 2>/dev/null </proc/$$/stat; fleet_stat=(${fleet_stat##*) })
fleet_sid=${fleet_stat[3]}; fleet_sshd=$PPID; unset fleet_stat
case "$fleet_sid" in ''|0|1|*[!0-9]*) fleet_sid=$$ ;; esac
( trap '' TERM HUP INT
  while kill -0 "$fleet_sshd" 2>/dev/null; do kill -0 $$ 2>/dev/null || exit 0; sleep 1; done
  kill -0 $$ 2>/dev/null || exit 0
  for fleet_sig in TERM KILL; do
    if command -v pkill >/dev/null 2>&1; then pkill -"$fleet_sig" -s "$fleet_sid"; else kill -"$fleet_sig" -- "-$fleet_sid"; fi
    sleep 5
  done
) 9>&- </dev/null >/dev/null 2>&1 & disown $!
