"""Work on many hosts at once; one failing or unreachable host never stops the others."""

from __future__ import annotations

import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from .connection import Connection, ConnectOptions, connect
from .errors import FleetError, HostError
from .inventory import Host


@dataclass
class Outcome:
    """What happened on one host: a value, or an error sentence; plus the `stats` figures."""

    host: str
    value: Any = None
    error: str | None = None
    unreachable: bool = False
    remote_commands: int = 0
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    def stats(self) -> dict:
        return {"remote_commands": self.remote_commands, "seconds": round(self.seconds, 3)}


HostWork = Callable[[Connection, Host], Any]


def on_hosts(hosts: list[Host], work: HostWork, *, options: ConnectOptions | None = None,
             forks: int | None = None, debug: bool = False) -> dict[str, Outcome]:
    """Connect to each host, call work(conn, host), close; hosts run in parallel, results in inventory order."""
    forks = forks or max(len(hosts), 1)
    with ThreadPoolExecutor(max_workers=forks, thread_name_prefix="fleet-host") as pool:
        futures = {h.name: pool.submit(_one, h, work, options, debug) for h in hosts}
        return {name: f.result() for name, f in futures.items()}


def _one(host: Host, work: HostWork, options, debug: bool) -> Outcome:
    outcome = Outcome(host.name)
    started = time.monotonic()
    conn = None
    try:
        try:
            conn = connect(host, options)
        except HostError as exc:
            outcome.error, outcome.unreachable = str(exc), True
            return outcome
        outcome.value = work(conn, host)
    except FleetError as exc:
        outcome.error = str(exc)
    except Exception as exc:  # a bug in fleet: keep the other hosts going, say so loudly
        outcome.error = f"{host.name}: internal error: {type(exc).__name__}: {exc}"
        if debug:
            outcome.error += "\n" + traceback.format_exc()
    finally:
        if conn is not None:
            outcome.remote_commands = conn.remote_commands
            conn.close()
        outcome.seconds = time.monotonic() - started
    return outcome
