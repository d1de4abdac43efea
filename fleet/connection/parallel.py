"""Work on many hosts at once; one failing or unreachable host never stops the others.

Ctrl-C (KeyboardInterrupt in the main thread) stops the run at once: hosts still queued are not started,
every open connection is aborted (its session closed, a local command's process group killed), and the
outcomes say which hosts finished, which were interrupted and which never started, so the command can print
a partial recap and exit 130. Workers are daemon threads: a host stuck in a system call cannot hold the
process open after the recap.
"""

from __future__ import annotations

import gc
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
    _room_for_files(min(forks or len(hosts), len(hosts)))
    run = _Run(hosts, work, options, debug, on_done)
    workers = [threading.Thread(target=run.worker, name=f"fleet-host-{i}", daemon=True)
               for i in range(min(forks or len(hosts), len(hosts)))]
    with _collector_for_many_hosts():
        for thread in workers:
            thread.start()
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


def _room_for_files(connections: int) -> None:
    """Each open host holds a socket and a few pipes: a soft limit of 1024 open files (the usual default) fails
    hosts past the thousandth with EMFILE. Raise the soft limit toward the hard one, as far as this run needs."""
    try:
        import resource
    except ImportError:   # not a POSIX system: nothing to raise
        return
    want = 256 + 4 * connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):   # a limit we may not raise: run with what there is
            pass


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

    def worker(self) -> None:
        while True:
            with self.lock:
                if self.stopped:
                    return
                try:
                    host = self.queue.get_nowait()
                except queue.Empty:
                    return
                self.running[host.name] = (time.monotonic(), None)
            outcome = self._one(host)
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

    def _one(self, host: Host) -> Outcome:
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
        except Exception as exc:  # a bug in fleet: keep the other hosts going, say so loudly
            outcome.error = f"{host.name}: internal error: {type(exc).__name__}: {exc}"
            if self.debug:
                outcome.error += "\n" + traceback.format_exc()
        finally:
            if conn is not None:
                outcome.remote_commands = conn.remote_commands
                conn.close()
            outcome.seconds = time.monotonic() - started
        return outcome
