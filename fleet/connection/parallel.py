"""Work on many hosts at once; one failing or unreachable host never stops the others.

Ctrl-C (KeyboardInterrupt in the main thread) stops the run at once: hosts still queued are not started,
every open connection is aborted (its session closed, a local command's process group killed), and the
outcomes say which hosts finished, which were interrupted and which never started, so the command can print
a partial recap and exit 130. Workers are daemon threads: a host stuck in a system call cannot hold the
process open after the recap.
"""

from __future__ import annotations

import gc
import os
import queue
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from fleet.connection import Connection, ConnectOptions, open_connection
from fleet.errors import FleetError, HostError, HostKeyError
from fleet.inventory import Host

# After Ctrl-C, how long running hosts get to unwind once their connections are closed. Their outcome is
# "interrupted" whatever they do now, so this only lets them close cleanly; the 2 s a person waits for Ctrl-C
# to take effect must also cover the recap and the exit.
INTERRUPT_GRACE = 0.1


@dataclass
class Outcome:
    """What happened on one host: a value, or an error sentence; plus the `stats` figures."""

    host: str
    value: Any = None
    error: str | None = None
    unreachable: bool = False
    refused: bool = False         # we refused the host: its key changed, is revoked or unknown (not unreachable)
    remote_commands: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)
    interrupted: bool = False     # Ctrl-C came before this host finished
    started: bool = True          # False: still queued when Ctrl-C came, never contacted

    def stats(self) -> dict:
        return {"remote_commands": self.remote_commands, "seconds": round(self.seconds, 3)}


HostWork = Callable[[Connection, Host], Any]


def interrupted(outcomes: dict[str, Outcome]) -> bool:
    return any(o.interrupted for o in outcomes.values())


def on_hosts(hosts: list[Host], work: HostWork, *, options: ConnectOptions | None = None,
             forks: int | None = None, debug: bool = False,
             on_done: Callable[[Outcome], None] | None = None) -> dict[str, Outcome]:
    """Connect to each host, call work(conn, host), close; hosts run in parallel, results in inventory order.
    `on_done(outcome)` is called from the host's thread as soon as it ends (a host done at 0.4 s is shown then,
    not when the slowest ends); never for a host cut short by Ctrl-C."""
    from fleet.connection.ssh_config import check

    check(hosts, options.ssh_config if options else None)   # a bad ~/.ssh/config: exit 2, no host contacted
    at_once = hosts_at_once(min(forks or len(hosts), len(hosts)), thread_room())
    at_once = min(at_once, _room_for_files(at_once))
    run = _Run(hosts, work, options, debug, on_done)
    workers = [threading.Thread(target=run.worker, name=f"fleet-host-{i}", daemon=True) for i in range(at_once)]
    with _collector_for_many_hosts():
        workers = _started(workers, run)
        try:
            for thread in workers:
                while thread.is_alive():
                    thread.join(0.1)  # a timed join: Ctrl-C reaches the main thread at once
        except KeyboardInterrupt:
            run.interrupt()
            deadline = time.monotonic() + INTERRUPT_GRACE
            for thread in workers:
                thread.join(max(deadline - time.monotonic(), 0))
    return run.results()


# Threads a host holds at most while it runs: its worker, paramiko's transport, a command's stdout and stderr readers
# and stdin writer (invoke's), its first-output timer. A replayed converged apply peaked at 3 a host (605 threads for
# 200 hosts, 2026-11-29); a real host holds them all at once while its command runs.
THREADS_PER_HOST = 6
THREADS_SPARE = 8     # the main thread, the live display, the keep-alive watchdog, the sinks' own


def hosts_at_once(wanted: int, room: int | None) -> int:
    """How many hosts run at once: `wanted` (--forks, else every host), fewer where this process may not start
    THREADS_PER_HOST threads for each (`room`: thread_room()), never fewer than one: the others wait their turn,
    none fails for it (a run past the limit crashed: "can't start new thread", 400 hosts under `ulimit -u 600`)."""
    if room is None:
        return wanted
    return max(1, min(wanted, (room - THREADS_SPARE) // THREADS_PER_HOST))


def thread_room(proc: str = "/proc", uid: int | None = None) -> int | None:
    """How many more threads this process may start, where the system limits it; None where nothing does or it cannot
    be read. Two limits count every thread: the user's process limit (`ulimit -u`, RLIMIT_NPROC: every thread of
    every process of the user, root's not enforced), and the pids.max of the process's cgroup and each above it (a
    container's, a Kubernetes pod's, a systemd slice's TasksMax), cgroup v1 or v2."""
    rooms = [room for room in (_nproc_room(proc, os.getuid() if uid is None else uid), _cgroup_room(proc))
             if room is not None]
    return min(rooms) if rooms else None


def _nproc_room(proc: str, uid: int) -> int | None:
    try:
        import resource
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft == resource.RLIM_INFINITY or uid == 0:
        return None
    used = 0
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"{entry.path}/status", encoding="ascii", errors="replace") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:      # a process that ended meanwhile
            continue
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            used += int(fields.get("Threads", "1").strip() or 1)
    return soft - used


def _cgroup_room(proc: str) -> int | None:
    """The least room (pids.max - pids.current) of this process's pids cgroup and every cgroup above it."""
    try:
        with open(f"{proc}/self/cgroup", encoding="utf-8") as handle:
            groups = [line.rstrip("\n").split(":", 2) for line in handle if line.count(":") >= 2]
        with open(f"{proc}/self/mountinfo", encoding="utf-8") as handle:
            mounts = [line.split() for line in handle]
    except OSError:
        return None
    # a v1 hierarchy that has the pids controller, else the v2 one: (its path here, where it is mounted)
    path = next((p for _, names, p in groups if "pids" in names.split(",")), None)
    kind = "cgroup" if path is not None else "cgroup2"
    if path is None:
        path = next((p for number, names, p in groups if number == "0" and names == ""), None)
    if path is None:
        return None
    for fields in mounts:
        if "-" not in fields:
            continue
        after = fields[fields.index("-") + 1:]
        if not after or after[0] != kind or (kind == "cgroup" and "pids" not in after[-1].split(",")):
            continue
        root, point = fields[3], fields[4]
        inside = path[len(root):] if root != "/" and (path == root or path.startswith(root + "/")) else path
        return _room_up(point, inside)
    return None


def _room_up(point: str, inside: str) -> int | None:
    rooms = []
    parts = [p for p in inside.split("/") if p]
    for depth in range(len(parts), -1, -1):
        folder = os.path.join(point, *parts[:depth])
        try:
            with open(os.path.join(folder, "pids.max"), encoding="ascii") as handle:
                most = handle.read().strip()
            with open(os.path.join(folder, "pids.current"), encoding="ascii") as handle:
                current = int(handle.read().strip())
        except (OSError, ValueError):
            continue
        if most.isdigit():
            rooms.append(int(most) - current)
    return min(rooms) if rooms else None


def _started(workers: list[threading.Thread], run: "_Run") -> list[threading.Thread]:
    """Start the workers; where the system refuses a thread (a limit thread_room could not read, another process of
    the user taking threads meanwhile), the ones started take every host, one after the other."""
    started = []
    try:
        for thread in workers:
            with run.lock:
                run.active += 1
            try:
                thread.start()
            except RuntimeError as exc:
                with run.lock:
                    run.active -= 1
                if not started:
                    raise FleetError(f"could not start a thread for any host ({exc}): this user's process limit "
                                     "(ulimit -u) or the cgroup's pids.max is reached; end other processes or raise "
                                     "the limit") from None
                break
            started.append(thread)
    finally:
        run.ready.set()      # the workers take hosts once every one of them is counted (a host handed back needs one)
    return started


# Python's cycle collector while the hosts run: every host keeps its facts, checks and report (a few hundred KB of
# dicts and lists) until the recap, and each full collection walks all of them. At 1,000 converged hosts it cost the
# controller 5.3 s of CPU (5 ms a host, 14 full passes) and held every thread meanwhile (issue 46). What exists
# before the hosts start (modules, the inventory, the roles) is frozen out of every pass (gc.freeze), and the
# young generation is collected every 10,000 allocations rather than 700; cycles are still collected, later.
GC_THRESHOLD = (10_000, 10, 10)


@contextmanager
def _collector_for_many_hosts():
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


FILES_PER_HOST = 4     # a host's socket, a command's pipes, the facts record being written
FILES_SPARE = 256      # the process's own: the inventory, the history store (SQLite's three files), logs


def _room_for_files(connections: int) -> int:
    """Each open host holds a socket and a few pipes: a soft limit of 1024 open files (the usual default) fails
    hosts past the thousandth with EMFILE. Raise the soft limit toward the hard one, as far as this run needs;
    -> how many hosts at once the limit then leaves files for (a hard limit of 300 failed 700 of 1,000 hosts,
    down to reading /etc/passwd: "getpwuid(): uid not found"), never fewer than one."""
    try:
        import resource
    except ImportError:   # not a POSIX system: nothing to raise
        return connections
    want = FILES_SPARE + FILES_PER_HOST * connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
            soft = new
        except (ValueError, OSError):   # a limit we may not raise: run with what there is
            pass
    if soft == resource.RLIM_INFINITY or soft >= want:
        return connections
    return max(1, (soft - FILES_SPARE) // FILES_PER_HOST)


class _Run:
    def __init__(self, hosts: list[Host], work: HostWork, options, debug: bool, on_done=None):
        self.hosts, self.work, self.options, self.debug, self.on_done = hosts, work, options, debug, on_done
        self.queue: queue.SimpleQueue[Host] = queue.SimpleQueue()
        for host in hosts:
            self.queue.put(host)
        self.lock = threading.Lock()
        self.stopped = False
        self.done: dict[str, Outcome] = {}
        self.running: dict[str, tuple[float, Connection | None]] = {}   # started hosts (kept once done)
        self.active = 0       # workers running: a worker refused a thread mid-host hands the host back and ends
        self.ready = threading.Event()   # set once every worker that could be started is

    def worker(self) -> None:
        try:
            self._work()
        except BaseException:
            with self.lock:
                self.active -= 1
            raise

    def _work(self) -> None:
        """Hosts from the queue until it is empty. A worker counts itself out of `active` under the lock where it
        finds the queue empty, so a host handed back (_hand_back, which counts its worker out in the same lock)
        is always found by a worker still counted."""
        self.ready.wait()
        while True:
            with self.lock:
                if self.stopped:
                    self.active -= 1
                    return
                try:
                    host = self.queue.get_nowait()
                except queue.Empty:
                    self.active -= 1
                    return
                self.running[host.name] = (time.monotonic(), None)
            outcome = self._one(host)
            if outcome is None:     # handed back: no thread for it now (_one); another worker takes it, this one ends
                return
            with self.lock:
                stopped = self.stopped
                if not stopped:   # after Ctrl-C the host's outcome is "interrupted", whatever it says now
                    self.done[host.name] = outcome
            if not stopped and self.on_done is not None:
                self.on_done(outcome)

    def _opened(self, host: Host, conn: Connection) -> None:
        """Register a connection before it opens, so that Ctrl-C can abort it even mid-handshake."""
        with self.lock:
            if self.stopped:
                raise HostError(f"{host.name}: interrupted")
            started, _ = self.running[host.name]
            self.running[host.name] = (started, conn)

    def interrupt(self) -> None:
        with self.lock:
            self.stopped = True
            conns = [conn for name, (_, conn) in self.running.items() if conn is not None and name not in self.done]
        for conn in conns:
            try:
                conn.abort()
            except Exception:  # a connection half torn down already: nothing more to close
                pass

    def results(self) -> dict[str, Outcome]:
        now = time.monotonic()
        with self.lock:
            out = {}
            for host in self.hosts:
                if host.name in self.done:
                    out[host.name] = self.done[host.name]
                elif host.name in self.running:
                    started, conn = self.running[host.name]
                    out[host.name] = Outcome(host.name, error=f"{host.name}: interrupted", interrupted=True,
                                             remote_commands=conn.remote_commands if conn else 0,
                                             seconds=now - started)
                else:
                    out[host.name] = Outcome(host.name, error=f"{host.name}: not started (interrupted)",
                                             interrupted=True, started=False)
            return out

    def _one(self, host: Host) -> Outcome | None:
        """The host's outcome; None where the system refused a thread before anything ran on the host and other
        workers run: the host is queued again (fewer hosts at once, none failed for the controller's own load)."""
        outcome = Outcome(host.name)
        started = time.monotonic()
        conn = None
        try:
            try:
                conn = open_connection(host, self.options, before_open=lambda c: self._opened(host, c))
            except HostKeyError as exc:
                outcome.error, outcome.refused = str(exc), True
                return outcome
            except HostError as exc:
                outcome.error, outcome.unreachable = str(exc), True
                return outcome
            outcome.value = self.work(conn, host)
        except FleetError as exc:
            outcome.error = str(exc)
        except RuntimeError as exc:
            if not _no_thread(exc):
                outcome.error = _internal(host, exc, self.debug)
            elif self._hand_back(host, conn):
                return None
            else:
                outcome.error = (f"{host.name}: the controller could not start a thread for it ({exc}): this user's "
                                 "process limit (ulimit -u) or the cgroup's pids.max is reached; run again with a "
                                 "lower --forks, or raise the limit")
        except Exception as exc:  # a bug in fleet: keep the other hosts going, say so loudly
            outcome.error = _internal(host, exc, self.debug)
        finally:
            if conn is not None:
                outcome.remote_commands = conn.remote_commands
                conn.close()
            outcome.seconds = time.monotonic() - started
        return outcome

    def _hand_back(self, host: Host, conn: Connection | None) -> bool:
        """Queue the host again if nothing ran on it yet and another worker is left to take it."""
        if conn is not None and conn.remote_commands:
            return False
        with self.lock:
            if self.stopped or self.active <= 1:
                return False
            self.running.pop(host.name, None)
            self.queue.put(host)
            self.active -= 1       # this worker ends: one host fewer at once
            return True


def _no_thread(exc: RuntimeError) -> bool:
    """threading's refusal when the system gives no more threads ("can't start new thread")."""
    return "start new thread" in str(exc)


def _internal(host: Host, exc: Exception, debug: bool) -> str:
    error = f"{host.name}: internal error: {type(exc).__name__}: {exc}"
    return error + ("\n" + traceback.format_exc() if debug else "")
