"""One apply at a time per host: a lock taken on the host itself, around the apply command.

Two applies to one host would run pip into the same venv and git's replace at once. The apply script
starts by taking `flock -n` on a file on the host (flock(1), util-linux): the kernel drops the lock when the
shell holding it ends, however it ends, so a killed apply leaves no stale lock; -n means a second apply is
refused at once, naming the holder, never queued behind it. The file is in a directory only its user can
write (root: /var/lib/fleet, else ~/.cache/fleet), so nobody else can plant a symlink there. On this machine
(`connection: local`) it is the user's ~/.cache/fleet: local applies by one user exclude each other.
"""

from __future__ import annotations

import os
import shlex
import socket

BUSY = 75            # EX_TEMPFAIL: the host is busy, try again later
MARK = "@@fleet:host-locked@@"


def wrap(script: str, conn) -> str:
    """`script` run under the host's apply lock; exit BUSY with MARK and the holder when another apply holds it."""
    from .connection import LocalConnection

    where = "/var/lib/fleet" if conn.is_root and not isinstance(conn, LocalConnection) else '"$HOME"/.cache/fleet'
    holder = f"fleet apply from {socket.gethostname()} (pid {os.getpid()})"
    return (
        f"fleet_lock_dir={where}; mkdir -p -- \"$fleet_lock_dir\"; fleet_lock=\"$fleet_lock_dir/apply.lock\"\n"
        "if command -v flock >/dev/null 2>&1; then\n"
        "  exec 9>>\"$fleet_lock\"\n"
        "  if ! flock -n 9; then\n"
        f"    echo \"{MARK} $(head -c 300 -- \"$fleet_lock\" 2>/dev/null)\"; exit {BUSY}\n"
        "  fi\n"
        f"  printf '%s, remote pid %s, since %s\\n' {shlex.quote(holder)} \"$$\" \"$(date -u +%FT%TZ)\" "
        "> \"$fleet_lock\"\n"
        "fi\n"
        + script
    )


def holder(stdout: str) -> str | None:
    """Who holds the lock, from the output of a refused wrap(); None when the script was not refused."""
    for line in stdout.splitlines():
        if line.startswith(MARK):
            return line[len(MARK):].strip() or "another fleet apply"
    return None
