"""One apply at a time per host: a lock taken on the host itself, around the apply command.

Two applies to one host would run pip into the same venv and git's replace at once. The apply script
starts by taking `flock -n` on a file on the host (flock(1), util-linux): the kernel drops the lock when the
shell holding it ends, however it ends, so a killed apply leaves no stale lock; -n means a second apply is
refused at once, naming the holder, never queued behind it. Where the host has no flock (busybox images), a
mkdir lock with the same semantics stands in (see _MKDIR_LOCK). The file is root's, in /var/lib/fleet, whoever
connects (issue 49: an apply as the Spark's sudo user and one as root ran the same root task at once, each under
its own user's lock): a sudo user creates it with `sudo -n` and locks it opened read-only (flock(2) needs no write
access), so nobody else can plant a symlink there and every apply to the host meets the same lock. A user without
sudo changes nothing of root's and takes the lock in ~/.cache/fleet; so does a sudo user on a host without flock(1)
(the mkdir lock's takeover is a user's own). On this machine (`connection: local`) it is the user's ~/.cache/fleet:
local applies by one user exclude each other.

`fleet script` takes the same lock on the host (`take`): a pod's start command running it while an apply runs is
refused at once, naming the apply, as a second apply is.

`reserve` is the controller-side half for `fleet bootstrap`: a claim on the new host's name and on the pod.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import socket
from datetime import datetime, timezone
from pathlib import Path

from fleet import shell
from fleet.errors import InputError

BUSY = 75            # EX_TEMPFAIL: the host is busy, try again later
MARK = "@@fleet:host-locked@@"
# The lock was free but its last holder never released it (killed outright, the host rebooted under it): each
# holder writes who it is to apply.lock.held and removes it in its EXIT trap (which runs on exit and on TERM, the
# signal fleet's watchdog and Ctrl-C send; not on KILL). A taker that finds the file prints this line with what it
# says, before running anything: the apply shows it as a note. The mkdir lock's stale takeover says the same.
TAKEOVER = "@@fleet:lock-taken-over@@"


def wrap(script: str, conn) -> str:
    """`script` run under the host's apply lock; exit BUSY with MARK and the holder when another apply holds it."""
    from fleet.connection import LocalConnection

    local = isinstance(conn, LocalConnection)
    holder = f"fleet apply from {socket.gethostname()} (pid {os.getpid()})"
    return (take(lock_dir(not local), holder, sudo=not local and not conn.is_root)
            + (STOP_WITH_CONNECTION if not isinstance(conn, LocalConnection) else "")
            + script)


def lock_dir(root: bool) -> str:
    """Where the host's apply lock lives (a shell word): root's /var/lib/fleet, else the user's ~/.cache/fleet."""
    return "/var/lib/fleet" if root else '"$HOME"/.cache/fleet'


def take(where: str, holder: str, *, sudo: bool = False) -> str:
    """Shell that takes the host's apply lock in `where` for the rest of the shell, or exits BUSY naming the holder;
    `fleet apply` (wrap) and `fleet script` (fleet/workflows/script.py) take the same one. `sudo`: a user who is not
    root takes root's lock in `where` through `sudo -n` (its own ~/.cache/fleet where sudo is refused)."""
    return (
        f"fleet_lock_dir={where}; fleet_sudo={'sudo' if sudo else ''}\n"
        + (_ROOTS_LOCK if sudo else "mkdir -p -- \"$fleet_lock_dir\"\n") +
        "fleet_lock=\"$fleet_lock_dir/apply.lock\"\n"
        f"fleet_holder=\"$(printf '%s, remote pid %s, since %s' {shlex.quote(holder)} \"$$\" "
        "\"$(date -u +%FT%TZ)\")\"\n"
        + (_PUT_SUDO if sudo else _PUT) +
        "if command -v flock >/dev/null 2>&1; then\n"
        "  if [ -n \"$fleet_sudo\" ]; then exec 9<\"$fleet_lock\"; else exec 9>>\"$fleet_lock\"; fi\n"
        "  if ! flock -n 9; then\n"
        f"    echo \"{MARK} $(head -c 300 -- \"$fleet_lock\" 2>/dev/null)\"; exit {BUSY}\n"
        "  fi\n"
        "  fleet_stale=$(head -c 300 -- \"$fleet_lock.held\" 2>/dev/null) || fleet_stale=\n"
        "  fleet_lock_put \"$fleet_lock\"\n"
        + ("  trap '${fleet_sudo:+sudo -n} rm -f -- \"$fleet_lock.held\"' EXIT\n" if sudo else
           "  trap 'rm -f -- \"$fleet_lock.held\"' EXIT\n") +
        "  fleet_lock_put \"$fleet_lock.held\"\n"
        "else\n"
        # no flock: the mkdir lock's pid files and takeover are a user's own (root's, or this user's directory)
        "  [ -z \"$fleet_sudo\" ] || { fleet_lock=\"$HOME/.cache/fleet/apply.lock\"; mkdir -p -- \"${fleet_lock%/*}\"; }\n"
        + _MKDIR_LOCK +
        "fi\n"
        f"[ -z \"$fleet_stale\" ] || printf '%s %s\\n' {TAKEOVER} \"$(printf '%s' \"$fleet_stale\" | head -n 1)\"\n"
        # the apply's own files (engine/chains.py's apply.run) stay the user's: root's directory holds only the lock
        + ("[ -z \"$fleet_sudo\" ] || { fleet_lock_dir=\"$HOME/.cache/fleet\"; mkdir -p -- \"$fleet_lock_dir\"; }\n"
           if sudo else "")
    )


# A sudo user's way to root's lock: the directory and an empty lock file made by root (0755, 0644), the holder's
# lines written through `sudo -n tee`; where sudo is refused, the user's own directory and no sudo after that.
_ROOTS_LOCK = (
    "if ! sudo -n sh -c 'mkdir -p -- \"$1\" && { [ -e \"$1/apply.lock\" ] || : > \"$1/apply.lock\"; }' sh "
    "\"$fleet_lock_dir\" 2>/dev/null; then\n"
    "  fleet_sudo=; fleet_lock_dir=\"$HOME/.cache/fleet\"; mkdir -p -- \"$fleet_lock_dir\"\n"
    "fi\n"
)
_PUT = "fleet_lock_put() { printf '%s\\n' \"$fleet_holder\" > \"$1\"; }\n"
_PUT_SUDO = ("fleet_lock_put() { if [ -n \"$fleet_sudo\" ]; then printf '%s\\n' \"$fleet_holder\" | sudo -n tee -- \"$1\" "
        ">/dev/null; else printf '%s\\n' \"$fleet_holder\" > \"$1\"; fi; }\n")


# The apply's remote work ends with its connection (Ctrl-C, SIGTERM or SIGHUP of fleet, a controller that died):
# fleet.shell.STOP_WITH_CONNECTION, started after the lock is taken, outside it (fd 9 closed). The kernel drops the
# flock when the last of the session's processes ends.
STOP_WITH_CONNECTION = shell.STOP_WITH_CONNECTION


# Without flock(1) (busybox and other slim images lack util-linux) the lock is a directory: mkdir(2) is atomic,
# so one apply makes it and the others are refused, naming the holder written inside. A shell that ends runs
# its EXIT trap and removes it; one that was killed (no trap runs) leaves it behind, but the directory also
# records the holder's pid and that process's start time (field 22 of /proc/PID/stat, proc(5)), so a lock
# whose process is gone, or whose pid now belongs to another process, is stale and taken over. The takeover
# renames the stale directory aside (rename(2) is atomic: one taker wins) and checks it moved the stale one;
# if a live lock was taken in between, it is put back and this apply is refused.
_MKDIR_LOCK = (
    "  fleet_start() { sed 's/.*) //' \"/proc/$1/stat\" 2>/dev/null | cut -d' ' -f20; }\n"
    "  fleet_alive() {\n"
    "    set -- $1\n"
    "    [ -n \"$1\" ] || return 0\n"
    "    if [ -n \"$2\" ] && [ -d /proc/self ]; then [ \"$(fleet_start \"$1\")\" = \"$2\" ]; "
    "else kill -0 \"$1\" 2>/dev/null; fi\n"
    "  }\n"
    "  fleet_lockd=\"$fleet_lock.d\"; fleet_me=\"$$ $(fleet_start $$)\"; fleet_got=; fleet_stale=\n"
    "  for fleet_try in 1 2 3; do\n"
    "    if mkdir -- \"$fleet_lockd\" 2>/dev/null; then\n"
    "      trap 'rm -rf -- \"$fleet_lockd\"' EXIT\n"
    "      printf '%s\\n' \"$fleet_me\" > \"$fleet_lockd/pid\"\n"
    "      printf '%s\\n' \"$fleet_holder\" > \"$fleet_lockd/holder\"\n"
    "      fleet_got=1; break\n"
    "    fi\n"
    # no pid file yet: its holder is between mkdir and printf, alive
    "    fleet_owner=$(cat -- \"$fleet_lockd/pid\" 2>/dev/null) || fleet_owner=\n"
    "    if [ -z \"$fleet_owner\" ] || fleet_alive \"$fleet_owner\"; then break; fi\n"
    "    fleet_aside=\"$fleet_lockd.stale.$$\"\n"
    "    mv -- \"$fleet_lockd\" \"$fleet_aside\" 2>/dev/null || continue\n"
    "    if [ \"$(cat -- \"$fleet_aside/pid\" 2>/dev/null)\" = \"$fleet_owner\" ]; then "
    "fleet_stale=$(head -c 300 -- \"$fleet_aside/holder\" 2>/dev/null) || fleet_stale=\"remote pid ${fleet_owner%% *}\"; "
    "rm -rf -- \"$fleet_aside\"; "
    "else mv -- \"$fleet_aside\" \"$fleet_lockd\" 2>/dev/null; break; fi\n"
    "  done\n"
    "  if [ -z \"$fleet_got\" ]; then\n"
    f"    echo \"{MARK} $(head -c 300 -- \"$fleet_lockd/holder\" 2>/dev/null)\"; exit {BUSY}\n"
    "  fi\n"
)


def taken_over(line: str) -> str | None:
    """The note for a TAKEOVER line of wrap()'s output: who left the lock; None for any other line."""
    if not line.startswith(TAKEOVER):
        return None
    who = "".join(ch for ch in line[len(TAKEOVER):].strip() if ch.isprintable()) or "an earlier fleet apply"
    return f"note: took over the apply lock left by {who}, which ended without releasing it"


def holder(stdout: str) -> str | None:
    """Who holds the lock, from the output of a refused wrap(); None when the script was not refused."""
    for line in stdout.splitlines():
        if line.startswith(MARK):
            return line[len(MARK):].strip() or "another fleet apply"
    return None


def reserve(inventory_path: Path, name: str, pod: tuple[str, int]):
    """Claim `name` in this inventory and the pod's address:port for this bootstrap's whole run, before any host
    is contacted: two bootstraps of one pod, or of two pods deriving one name, would otherwise both connect and
    one fail after changing things. flock(2) locks, dropped by the kernel when this process ends however it
    ends (no stale claim); the files live in fleet's cache directory, never beside the inventory."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fleet" / "bootstrap"
    base.mkdir(parents=True, exist_ok=True)
    inv = hashlib.sha256(str(inventory_path.resolve()).encode()).hexdigest()[:16]
    claims = []
    try:
        for what, key in ((f"name {name!r} in {inventory_path}", f"{inv}-name-{name.lower()}"),
                          (f"pod {pod[0]}:{pod[1]}", f"pod-{pod[0]}-{pod[1]}")):
            claims.append(_claim(base / (re.sub(r"[^A-Za-z0-9._-]", "_", key) + ".lock"), what))
    except BaseException:
        for handle in claims:
            handle.close()
        raise
    return _Claims(claims)


def _claim(path: Path, what: str):
    handle = open(path, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read(200).strip() or "another process"
        handle.close()
        raise InputError(f"another fleet bootstrap is working on the {what} ({holder}); nothing was contacted. "
                         "Wait for it to finish, or give this pod another --name") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} since {datetime.now(timezone.utc).isoformat(timespec='seconds')}\n")
    handle.flush()
    return handle


class _Claims:
    def __init__(self, handles):
        self.handles = handles

    def close(self) -> None:
        for handle in self.handles:
            handle.close()   # closing drops the flock
