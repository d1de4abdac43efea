"""One apply at a time per host: a lock taken on the host itself, around the apply command.

Two applies to one host would run pip into the same venv and git's replace at once. The apply script
starts by taking `flock -n` on a file on the host (flock(1), util-linux): the kernel drops the lock when the
shell holding it ends, however it ends, so a killed apply leaves no stale lock; -n means a second apply is
refused at once, naming the holder, never queued behind it. Where the host has no flock (busybox images), a
mkdir lock with the same semantics stands in (fleet/remote/hostlock.sh). The file is root's, in /var/lib/fleet,
whoever connects (issue 49: an apply as the Spark's sudo user and one as root ran the same root task at once, each
under its own user's lock): a sudo user creates it with `sudo -n` and locks it opened read-only (flock(2) needs no
write access), so nobody else can plant a symlink there and every apply to the host meets the same lock. A user
without sudo changes nothing of root's and takes the lock in ~/.cache/fleet; so does a sudo user on a host without
flock(1) (the mkdir lock's takeover is a user's own). On this machine (`connection: local`) it is the user's
~/.cache/fleet: local applies by one user exclude each other.

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

from fleet import remote, shell
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
    return (f"fleet_lock_dir={where}; fleet_holder_name={shlex.quote(holder)}; fleet_sudo={'sudo' if sudo else ''}\n"
            + remote.program("hostlock") + "\n")


# The apply's remote work ends with its connection (Ctrl-C, SIGTERM or SIGHUP of fleet, a controller that died):
# fleet.shell.STOP_WITH_CONNECTION, started after the lock is taken, outside it (fd 9 closed). The kernel drops the
# flock when the last of the session's processes ends.
STOP_WITH_CONNECTION = shell.STOP_WITH_CONNECTION


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
