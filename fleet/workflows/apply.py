"""`fleet apply` (and `fleet verify`) as one job: every host, its roles checked already (the command's
pre-flight), converged in parallel (engine.converge), each host's lines handed to the printer as it ends.

    converge_hosts(facts_dir, by_host, hosts, request, reporter, on_start, on_done) -> ApplyRun

The command parses and prints; this holds no words of its own (fleet/report/apply.py owns them)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from fleet.connection import ConnectOptions
from fleet.connection.parallel import Outcome, on_hosts
from fleet.errors import ExitStatus


@dataclass(frozen=True)
class ApplyRequest:
    """What `fleet apply` was asked, as parsed from its flags."""

    check: bool = False
    rerun: str | None = None              # why each judged resource (verify) runs whatever its record says (None: a
    #                                       record that still stands may be reused)
    connect: ConnectOptions = field(default_factory=ConnectOptions)
    forks: int | None = None
    debug: bool = False
    live: bool = True                     # a live status line per running host (not with --json)


@dataclass
class ApplyRun:
    """What happened: each host's outcome (a HostReport, or why there is none), the roles it was given, and when
    the run began (the run log's first line)."""

    outcomes: dict[str, Outcome]
    by_host: dict[str, list]
    started: float
    check: bool

    @property
    def interrupted(self) -> bool:
        """Ctrl-C (or SIGTERM, SIGHUP) came before some host finished."""
        return any(o.interrupted for o in self.outcomes.values())

    @property
    def failed(self) -> bool:
        return any(o.value is None or o.value.failed for o in self.outcomes.values())

    @property
    def pending(self) -> bool:
        """A --check that found something to change (--detailed-exitcode exits with CHANGES_PENDING for it)."""
        return any(o.value is not None and o.value.count("changed") for o in self.outcomes.values())

    def exit_status(self, detailed: bool = False) -> ExitStatus:
        if self.interrupted:
            return ExitStatus.INTERRUPTED
        if any(o.value is not None and (o.value.health or {}).get("verdict") == "return"
               for o in self.outcomes.values()):
            return ExitStatus.RETURN_POD   # a GPU fault only the provider can fix (the recap's GPU health column)
        if self.failed:
            return ExitStatus.HOST_FAILED
        return ExitStatus.CHANGES_PENDING if detailed and self.pending else ExitStatus.OK


def converge_hosts(facts_dir, by_host: dict[str, list], hosts: list, request: ApplyRequest, reporter,
                   on_start: Callable[[list, dict], None] | None = None,
                   on_done: Callable[[Outcome], None] | None = None) -> ApplyRun:
    """`on_start(hosts, by_host)`, then the hosts converged in parallel to their roles (`by_host`, checked by
    session.roles_of), `on_done(outcome)` as each ends."""
    from fleet.engine import Setup, converge

    setups: dict[tuple, Setup] = {}
    for roles in by_host.values():
        setups.setdefault(tuple(r.name for r in roles), Setup(
            roles, facts_dir=facts_dir, check_mode=request.check, progress=reporter.progress,
            rerun=request.rerun, on_task=reporter.on_task))

    def work(conn, host):
        return converge(conn, host, setups[tuple(r.name for r in by_host[host.name])])

    if on_start:
        on_start(hosts, by_host)
    started = time.time()
    with reporter.heartbeat(live=request.live):   # on a terminal: a live status line per running host
        outcomes = on_hosts(hosts, work, options=request.connect, forks=request.forks, debug=request.debug,
                            on_done=on_done)
    return ApplyRun(outcomes, by_host, started, request.check)
