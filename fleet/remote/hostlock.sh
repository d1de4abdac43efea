#!/usr/bin/env bash
# fleet/remote/hostlock.sh (fleet/engine/hostlock.py take): the host's apply lock, taken for the rest of the shell, or
# exit 75 (hostlock.BUSY) with "@@fleet:host-locked@@ HOLDER" (hostlock.MARK). Set before this: fleet_lock_dir (root's
# /var/lib/fleet for every SSH host, whoever connects; this machine's ~/.cache/fleet: a directory only its user can
# write, so nobody else can plant a symlink there), fleet_holder_name (who takes it) and fleet_sudo ("sudo" for a
# user who is not root: root's lock through sudo -n, the file made by root and locked opened read-only, since
# flock(2) needs no write access; where sudo is refused, the user's own ~/.cache/fleet). A unit test holds this
# file's constants equal to hostlock's.
# shellcheck disable=SC2154  # fleet_lock_dir, fleet_holder_name, fleet_sudo: set by the line before this
if [ -n "$fleet_sudo" ]; then
  # shellcheck disable=SC2016  # $1 is sh -c's
  if ! "$fleet_sudo" -n sh -c 'mkdir -p -- "$1" && { [ -e "$1/apply.lock" ] || : > "$1/apply.lock"; }' sh "$fleet_lock_dir" 2>/dev/null; then
    fleet_sudo=; fleet_lock_dir="$HOME/.cache/fleet"; mkdir -p -- "$fleet_lock_dir"
  fi
else
  mkdir -p -- "$fleet_lock_dir"
fi
fleet_lock="$fleet_lock_dir/apply.lock"
fleet_holder="$(printf '%s, remote pid %s, since %s' "$fleet_holder_name" "$$" "$(date -u +%FT%TZ)")"
fleet_lock_put() { if [ -n "$fleet_sudo" ]; then printf '%s\n' "$fleet_holder" | "$fleet_sudo" -n tee -- "$1" >/dev/null; else printf '%s\n' "$fleet_holder" > "$1"; fi; }
# flock -n (flock(1), util-linux): the kernel drops the lock when the shell holding it ends, however it ends, so a
# killed apply leaves no stale lock; -n: a second apply is refused at once, naming the holder, never queued.
if command -v flock >/dev/null 2>&1; then
  if [ -n "$fleet_sudo" ]; then exec 9<"$fleet_lock"; else exec 9>>"$fleet_lock"; fi
  if ! flock -n 9; then
    echo "@@fleet:host-locked@@ $(head -c 300 -- "$fleet_lock" 2>/dev/null)"; exit 75
  fi
  # the lock was free but its last holder never released it (killed outright, the host rebooted under it): each
  # holder writes who it is to apply.lock.held and removes it in its EXIT trap (on exit and on TERM, not on KILL)
  fleet_stale=$(head -c 300 -- "$fleet_lock.held" 2>/dev/null) || fleet_stale=
  fleet_lock_put "$fleet_lock"
  trap '${fleet_sudo:+"$fleet_sudo" -n} rm -f -- "$fleet_lock.held"' EXIT
  fleet_lock_put "$fleet_lock.held"
else
  # Without flock(1) (busybox and other slim images lack util-linux) the lock is a directory: mkdir(2) is atomic,
  # so one apply makes it and the others are refused, naming the holder written inside. A shell that ends runs its
  # EXIT trap and removes it; one that was killed (no trap runs) leaves it behind, but the directory also records
  # the holder's pid and that process's start time (field 22 of /proc/PID/stat, proc(5)), so a lock whose process
  # is gone, or whose pid now belongs to another process, is stale and taken over. The takeover renames the stale
  # directory aside (rename(2) is atomic: one taker wins) and checks it moved the stale one; if a live lock was
  # taken in between, it is put back and this apply is refused. A sudo user's is its own (~/.cache/fleet).
  [ -z "$fleet_sudo" ] || { fleet_lock="$HOME/.cache/fleet/apply.lock"; mkdir -p -- "${fleet_lock%/*}"; }
  fleet_start() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
  fleet_alive() {
    # shellcheck disable=SC2086  # "PID START": split into $1 $2
    set -- $1
    [ -n "$1" ] || return 0
    if [ -n "$2" ] && [ -d /proc/self ]; then [ "$(fleet_start "$1")" = "$2" ]; else kill -0 "$1" 2>/dev/null; fi
  }
  fleet_lockd="$fleet_lock.d"; fleet_me="$$ $(fleet_start $$)"; fleet_got=; fleet_stale=
  for _ in 1 2 3; do
    if mkdir -- "$fleet_lockd" 2>/dev/null; then
      trap 'rm -rf -- "$fleet_lockd"' EXIT
      printf '%s\n' "$fleet_me" > "$fleet_lockd/pid"
      printf '%s\n' "$fleet_holder" > "$fleet_lockd/holder"
      fleet_got=1; break
    fi
    # no pid file yet: its holder is between mkdir and printf, alive
    fleet_owner=$(cat -- "$fleet_lockd/pid" 2>/dev/null) || fleet_owner=
    if [ -z "$fleet_owner" ] || fleet_alive "$fleet_owner"; then break; fi
    fleet_aside="$fleet_lockd.stale.$$"
    mv -- "$fleet_lockd" "$fleet_aside" 2>/dev/null || continue
    if [ "$(cat -- "$fleet_aside/pid" 2>/dev/null)" = "$fleet_owner" ]; then fleet_stale=$(head -c 300 -- "$fleet_aside/holder" 2>/dev/null) || fleet_stale="remote pid ${fleet_owner%% *}"; rm -rf -- "$fleet_aside"; else mv -- "$fleet_aside" "$fleet_lockd" 2>/dev/null; break; fi
  done
  if [ -z "$fleet_got" ]; then
    echo "@@fleet:host-locked@@ $(head -c 300 -- "$fleet_lockd/holder" 2>/dev/null)"; exit 75
  fi
fi
# a stale lock taken over: said before anything runs (hostlock.TAKEOVER), the apply shows it as a note
[ -z "$fleet_stale" ] || printf '%s %s\n' @@fleet:lock-taken-over@@ "$(printf '%s' "$fleet_stale" | head -n 1)"
# the apply's own files (engine/chains.py's apply.run) stay the user's: root's directory holds only the lock
[ -z "$fleet_sudo" ] || { fleet_lock_dir="$HOME/.cache/fleet"; mkdir -p -- "$fleet_lock_dir"; }
