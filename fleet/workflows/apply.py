"""`fleet apply` (and `fleet verify`) as one job: every host, its roles checked already (the command's
pre-flight), converged in parallel (engine.converge); each host's report handed to the run's sinks (its facts
record, the run log: fleet/record/sinks.py) and its lines to the printer as it ends.

    converge_hosts(inventory, by_host, hosts, request, reporter, on_start, on_done, describe) -> ApplyRun

The command parses and prints; this holds no words of its own (fleet/report/apply.py owns them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
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
    detailed: bool = False                # --detailed-exitcode: pending changes exit 4
    command: str = "apply"                # apply, verify (the run log's name)
    argv: tuple = ()                      # the command line, for the run log
    log: Path | None = None               # --log FILE (None: a new file under the runs folder)


@dataclass
class ApplyRun:
    """What happened: each host's outcome (a HostReport, or why there is none), the roles it was given, and when
    the run began (the run log's first line)."""

    outcomes: dict[str, Outcome]
    by_host: dict[str, list]
    started: float
    check: bool
    detailed: bool = False
    logged: Path | None = None            # where the run log went (None: it could not be written)
    warnings: tuple = ()                  # what a sink could not take, one sentence each (fleet/record/sinks.py)
    status: ExitStatus = ExitStatus.OK    # the run's exit status (exit_status), once it has ended
    unkept: bool = False                  # a host's facts record could not be written

    @property
    def interrupted(self) -> bool:
        """Ctrl-C (or SIGTERM, SIGHUP) came before some host finished."""
        return any(o.interrupted for o in self.outcomes.values())

    @property
    def failed(self) -> bool:
        return self.unkept or any(o.value is None or o.value.failed for o in self.outcomes.values())

    @property
    def pending(self) -> bool:
        """A --check that found something to change (--detailed-exitcode exits with CHANGES_PENDING for it)."""
        return any(o.value is not None and o.value.count("changed") for o in self.outcomes.values())

    def exit_status(self, detailed: bool | None = None) -> ExitStatus:
        detailed = self.detailed if detailed is None else detailed
        if self.interrupted:
            return ExitStatus.INTERRUPTED
        if any(o.value is not None and (o.value.health or {}).get("verdict") == "return"
               for o in self.outcomes.values()):
            return ExitStatus.RETURN_POD   # a GPU fault only the provider can fix (the recap's GPU health column)
        if self.failed:
            return ExitStatus.HOST_FAILED
        return ExitStatus.CHANGES_PENDING if detailed and self.pending else ExitStatus.OK


def converge_hosts(inventory, by_host: dict[str, list], hosts: list, request: ApplyRequest, reporter,
                   on_start: Callable[[list, dict], None] | None = None,
                   on_done: Callable[[Outcome], None] | None = None,
                   describe: Callable[[Outcome], dict] = lambda o: {}) -> ApplyRun:
    """`on_start(hosts, by_host)`, then the hosts converged in parallel to their roles (`by_host`, checked by
    session.roles_of); as each ends, its report to the sinks (`describe(outcome)`: the host's JSON document, the
    printer's) and `on_done(outcome)`."""
    from fleet.engine import Setup, converge
    from fleet.record.sinks import Run, Sinks, for_run
    from fleet.workflows.hosts import Told

    setups: dict[tuple, Setup] = {}
    for roles in by_host.values():
        setups.setdefault(tuple(r.name for r in roles), Setup(
            roles, facts_dir=inventory.facts_dir, check_mode=request.check, progress=reporter.progress,
            rerun=request.rerun, on_task=reporter.on_task, record_facts=False))   # the sinks keep the record

    def work(conn, host):
        return converge(conn, host, setups[tuple(r.name for r in by_host[host.name])])

    if on_start:
        on_start(hosts, by_host)
    run = Run(request.command, inventory.path, check=request.check, argv=request.argv, facts_dir=inventory.facts_dir,
              log=request.log, loaded=inventory)
    told = Told(run, Sinks(for_run(run)), describe, keep=lambda o: o.value.record)
    with reporter.heartbeat(live=request.live):   # on a terminal: a live status line per running host
        outcomes = on_hosts(hosts, work, options=request.connect, forks=request.forks, debug=request.debug,
                            on_done=told.then(on_done))
    result = ApplyRun(outcomes, by_host, run.started.timestamp(), request.check, request.detailed,
                      unkept=told.failed)
    result.status = result.exit_status()
    told.end(outcomes, result.status)
    result.logged, result.warnings = told.logged, tuple(told.sinks.warnings)
    return result
