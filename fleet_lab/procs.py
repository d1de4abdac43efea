"""Ending a lab host's processes for certain, and knowing that they ended.

A process has ended when it is a zombie or gone: by then it has closed its sockets and left its mount
namespace (the kernel's do_exit runs exit_files and exit_task_namespaces before exit_notify makes it a
zombie). It has NOT ended when its /proc/PID/ns/mnt can no longer be read: that link dies in
exit_task_namespaces while the process is still exiting; the last process of a lab host is then unmounting
the host's overlay, which syncs the upper dir and takes a while on a busy disk. Finding processes by their
namespace alone is why `lab down` used to return while an sshd was still alive (issue 17), so every process
found once is followed by its identity (pid + start time) until it has ended.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from fleet.errors import LabError

TERM_GRACE = 2.0    # seconds for SIGTERM (sshd and login shells end at once), then SIGKILL
KILL_BOUND = 20.0   # seconds for SIGKILLed processes to finish exiting (overlay unmount on a busy disk)
PORT_BOUND = 10.0   # seconds for a host's listening address to become bindable once its sshd has ended
POLL = 0.01


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int   # /proc/PID/stat field 22 (clock ticks since boot): with the pid, names one process even
                 # after the pid is reused

    def __str__(self) -> str:
        st = _stat(self.pid)
        return f"{self.pid} ({st[0]}, state {st[1]})" if st and st[2] == self.start else str(self.pid)


def _stat(pid: int) -> tuple[str, str, int, int] | None:
    """(comm, state, start time, parent's pid) of a process, None when it is gone."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
    return comm, rest[0], int(rest[19]), int(rest[1])


def parent(pid: int) -> int | None:
    """The pid of a process's parent, None when it is gone."""
    st = _stat(pid)
    return st[3] if st else None


def identify(pid: int) -> Proc | None:
    st = _stat(pid)
    return Proc(pid, st[2]) if st else None


def ended(proc: Proc) -> bool:
    st = _stat(proc.pid)
    return st is None or st[2] != proc.start or st[1] in ("Z", "X")


def send(proc: Proc, sig: int) -> None:
    """Signal `proc` only if it is still that process: a pidfd pins it, so a reused pid is never hit."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:
        return   # gone
    try:
        if identify(proc.pid) == proc:
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass     # ended meanwhile
    finally:
        os.close(fd)


def end_all(find: Callable[[], Iterable[int]], what: str, term_grace: float = TERM_GRACE,
            kill_bound: float = KILL_BOUND) -> list[Proc]:
    """SIGTERM every process `find()` names (and any it names later, e.g. forked meanwhile), wait up to
    term_grace for all of them to end, SIGKILL those left and wait up to kill_bound. Returns the processes
    ended; raises LabError naming those that did not end."""
    sent: dict[Proc, int] = {}
    for sig, bound in ((signal.SIGTERM, term_grace), (signal.SIGKILL, kill_bound)):
        deadline = time.monotonic() + bound
        while True:
            # Check `ended` BEFORE looking for new processes: a child forked by a process we saw alive is
            # then either found by this find() or has a parent that was still alive, which loops again.
            left = [p for p in sent if not ended(p)]
            new = [p for p in map(identify, find()) if p and p not in sent and not ended(p)]
            left += new
            for proc in left:
                if sent.get(proc) != sig:
                    send(proc, sig)
                    sent[proc] = sig
            if not left:
                return list(sent)
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL)
    survivors = ", ".join(str(p) for p in left)   # alive at the last look
    raise LabError(f"{what}: processes {survivors} are still alive {kill_bound:g} s after SIGKILL (stuck in the "
                   "kernel, state D?); see /proc/PID/stack, then run `fleet lab down` again")


def bindable(address: str, port: int) -> bool:
    """Whether an sshd could listen on address:port now (it binds with SO_REUSEADDR, so do we)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError as err:
            if err.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def wait_bindable(address: str, port: int, what: str, holders: Callable[[], list[int]],
                  bound: float = PORT_BOUND) -> None:
    """Poll until address:port is free; LabError naming the pids that hold it when it stays taken."""
    deadline = time.monotonic() + bound
    while not bindable(address, port):
        if time.monotonic() >= deadline:
            raise LabError(f"{what}: {address}:{port} is still taken {bound:g} s after its sshd ended "
                           f"(listening: pids {holders() or 'none found'}); stop those, then run `fleet lab up` again")
        time.sleep(POLL)


def listening_pids(address: str, port: int) -> list[int]:
    """Processes holding a TCP socket listening on address:port (from /proc/net/tcp and /proc/*/fd)."""
    want = "%08X:%04X" % (int.from_bytes(socket.inet_aton(address), "little"), port)
    inodes = set()
    with open("/proc/net/tcp") as fh:
        for line in fh.readlines()[1:]:
            fields = line.split()
            if fields[1] == want and fields[3] == "0A":   # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    pids = []
    for entry in os.listdir("/proc") if inodes else []:
        if not entry.isdigit():
            continue
        try:
            if any(os.readlink(f"/proc/{entry}/fd/{fd}") in inodes for fd in os.listdir(f"/proc/{entry}/fd")):
                pids.append(int(entry))
        except OSError:
            continue
    return pids
