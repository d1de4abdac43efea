"""`fleet facts` as one job: every selected host's facts gathered in parallel (one remote command each,
fleet/engine/probe.py gather), or with --cached read from its record; each host's report handed to the run's sinks
as it ends (its facts record, the run log: fleet/record/sinks.py). The store is read here, once per host and record.

    gather_hosts(inventory, hosts, request) -> FactsRun

The command parses and prints; this holds no words of its own (fleet/report/facts.py owns them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fleet.connection import ConnectOptions
from fleet.connection.parallel import Outcome, interrupted, on_hosts
from fleet.errors import ExitStatus
from fleet.facts.scrub import scrub
from fleet.record import store


@dataclass(frozen=True)
class FactsRequest:
    """What `fleet facts` was asked, as parsed from its flags."""

    cached: bool = False                  # read the records, contact nobody
    connect: ConnectOptions = field(default_factory=ConnectOptions)
    forks: int | None = None
    debug: bool = False
    argv: tuple = ()                      # the command line, for the run log


@dataclass
class FactsRun:
    """What happened: each host's outcome (its facts, or why there are none), each host's record as it stands now
    (this run's, else its last one: None where it has none) and the record before it (drift)."""

    outcomes: dict[str, Outcome]
    records: dict[str, dict | None]
    previous: dict[str, dict | None]
    facts_dir: Path
    cached: bool = False
    logged: Path | None = None            # where the run log went
    warnings: tuple = ()                  # what a sink could not take, one sentence each
    unkept: bool = False                  # a host's facts record could not be written

    @property
    def status(self) -> ExitStatus:
        if interrupted(self.outcomes):
            return ExitStatus.INTERRUPTED
        failed = self.unkept or any(o.error for o in self.outcomes.values())
        return ExitStatus.HOST_FAILED if failed else ExitStatus.OK


def gather_hosts(inventory, hosts: list, request: FactsRequest) -> FactsRun:
    """The hosts' facts: gathered live (their variables checked first: bad input is exit 2, nobody contacted) and
    recorded, or read from their records (`request.cached`: nothing is rendered, nobody contacted)."""
    if not request.cached:
        return _live(inventory, hosts, request)
    outcomes, records, previous = {}, {}, {}
    for host in hosts:
        records[host.name], previous[host.name] = store.read_both(inventory.facts_dir, host.name)
        error = None if records[host.name] else (f"{host.name}: no record in {inventory.facts_dir}; run `fleet facts` "
                                                 "without --cached")
        outcomes[host.name] = Outcome(host.name, value=records[host.name], error=error)
    return FactsRun(outcomes, records, previous, inventory.facts_dir, cached=True)


def _live(inventory, hosts: list, request: FactsRequest) -> FactsRun:
    from fleet.engine import probe
    from fleet.engine.session import check_variables
    from fleet.record.sinks import Run, Sinks, for_run
    from fleet.roles import roles_dirs, roles_for_hosts
    from fleet.workflows.hosts import Told

    # The probe is rendered from each host's variables (where the venv is, ...): a misspelt or mistyped one is bad
    # input here as in apply (exit 2, file:line, nobody contacted).
    check_variables(hosts, inventory.roles_path)
    roles = roles_for_hosts(hosts, roles_dirs(inventory.roles_path or []))
    facts_dir, last = inventory.facts_dir, {}

    def work(conn, host):
        # the last record says where the venv was (a pod's /workspace volume): the probe asks that python
        last[host.name] = store.read(facts_dir, host.name)
        facts = probe.gather(conn, host, last[host.name])
        return with_verify_variables(facts, host, roles.get(host.name, []))

    run = Run("facts", inventory.path, argv=request.argv, facts_dir=facts_dir, loaded=inventory)
    told = Told(run, Sinks(for_run(run)), summary, keep=lambda o: o.value)
    outcomes = on_hosts(hosts, work, options=request.connect, forks=request.forks, debug=request.debug,
                        on_done=told.then())
    records, previous = {}, {}
    for name, outcome in outcomes.items():
        if outcome.error or name in told.sinks.failed:    # nothing new recorded: as the records stand
            records[name], previous[name] = store.read_both(facts_dir, name)
        else:                                             # what the record now holds, and the one it replaced
            records[name], previous[name] = scrub(outcome.value), last.get(name)
    result = FactsRun(outcomes, records, previous, facts_dir, unkept=told.failed)
    told.end(outcomes, result.status)
    result.logged, result.warnings = told.logged, tuple(told.sinks.warnings)
    return result


def summary(outcome: Outcome) -> dict:
    """The host's line in the run log: what was gathered (the record itself is the facts records' to keep)."""
    facts = outcome.value or {}
    return {"error": outcome.error, "unreachable": outcome.unreachable, "gathered_at": facts.get("gathered_at"),
            "platform": facts.get("platform"), "health": (facts.get("health") or {}).get("verdict"),
            "verify": (facts.get("verify") or {}).get("verdict")}


def with_verify_variables(facts: dict, host, roles) -> dict:
    """The facts with the last verify judged on the variables it read too (the inventory's and the verify role's
    defaults, as apply renders them): a changed verify_perf makes it stale ("variable verify_perf changed")."""
    from fleet.engine.decided import variables_read
    from fleet.engine.session import variables
    from fleet.facts import fingerprint

    verify = facts.get("verify")
    role = next((r for r in roles if any(t.type == "verify" for t in r.tasks)), None)
    if not isinstance(verify, dict) or role is None:
        return facts
    now = variables_read(role, variables(facts, host.vars))
    reasons = fingerprint.stale_reasons(verify, facts.get("verify_fingerprint"), facts.get("torch"), now)
    return {**facts, "verify": fingerprint.judged(verify, reasons)}
