"""The GPU health check alone (issue 36): `fleet health INVENTORY`; bootstrap reads the same verdict off its first
probe (extra_sections, of_facts).

    verdict, facts = check(conn, host)
    check_hosts(inventory, hosts, request) -> HealthRun   # every host at once, each host's report to the run's
                                                          # sinks (the run log: fleet/record/sinks.py)

ONE remote command of the probe's health sources only (the kernel driver's GPU list, the query fields and remapped
rows, `nvidia-smi -q -x` filtered, the kernel log, the pod's /dev/shm and limits), run at once: read-only, cheap enough before every job. The
verdict is fleet.decide.health's, with the host's `expect_gpus`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fleet import sections
from fleet.connection import ConnectOptions
from fleet.connection.parallel import Outcome, on_hosts
from fleet.decide.health import HealthVerdict, decide_health, parse_expect
from fleet.facts.record import HEALTH_SOURCES, health_facts
from fleet.facts.sources import BY_NAME, HEALTH_ONLY

SOURCES = HEALTH_SOURCES
TIMEOUT = 60.0


def script() -> str:
    """The health sources as background sections (as the whole probe runs them): the time of the slowest."""
    return sections.together([sections.background(f"facts.{name}", f"export LC_ALL=C\n{BY_NAME[name].command({})}",
                                                  needs=BY_NAME[name].needs) for name in SOURCES])


def extra_sections() -> list:
    """The health sources the routine probe leaves out (facts/sources.py HEALTH_ONLY: `nvidia-smi -q -x`), as
    sections a probe can carry (engine.observe's `also`): bootstrap's first probe reads the pod's whole health with
    its facts, in that one command, and the verdict (`of_facts`) is the one `fleet health` gives."""
    return [sections.background(f"facts.{source.name}", f"export LC_ALL=C\n{source.command({})}", needs=source.needs)
            for source in HEALTH_ONLY]


def of_facts(facts: dict, host) -> HealthVerdict:
    """The verdict of a probe's facts that carried `extra_sections()`, with the host's `expect_gpus`. Pure."""
    return decide_health(facts, parse_expect(host.vars.get("expect_gpus")))


def read(found: dict[str, sections.Section], expect_gpus=None) -> tuple[HealthVerdict, dict]:
    """Framed output -> (the verdict, {"health": facts.health, "probe": {errors...}}). Pure."""
    outputs = {name[len("facts."):]: sec.output for name, sec in found.items() if name.startswith("facts.")}
    facts = health_facts(outputs)
    return decide_health(facts, parse_expect(expect_gpus)), facts


def check(conn, host, *, timeout: float | None = TIMEOUT) -> tuple[HealthVerdict, dict]:
    from fleet.engine.probe import run_sections

    return read(run_sections(conn, script(), "health check", timeout), host.vars.get("expect_gpus"))


@dataclass(frozen=True)
class HealthRequest:
    """What `fleet health` was asked, as parsed from its flags."""

    connect: ConnectOptions = field(default_factory=ConnectOptions)
    forks: int | None = None
    debug: bool = False
    argv: tuple = ()                      # the command line, for the run log


@dataclass
class HealthRun:
    """Each host's outcome (its (verdict, facts), or why there is none), each verdict, and each host's document (what
    --json prints and the run log keeps)."""

    outcomes: dict[str, Outcome]
    verdicts: dict[str, HealthVerdict]
    documents: dict[str, dict] = field(default_factory=dict)
    logged: Path | None = None            # where the run log went
    warnings: tuple = ()                  # what a sink could not take, one sentence each

    @property
    def status(self) -> int:
        return exit_status(self.outcomes, self.verdicts)


def check_hosts(inventory, hosts: list, request: HealthRequest) -> HealthRun:
    """Every host's health at once (their variables checked first: a bad expect_gpus is exit 2, nobody contacted);
    nothing is installed nor recorded on a host or in the facts records; the run log keeps each verdict."""
    from fleet.engine.session import check_variables
    from fleet.record.sinks import Run, Sinks, for_run
    from fleet.workflows.hosts import Told

    check_variables(hosts, inventory.roles_path)
    run = Run("health", inventory.path, argv=request.argv, loaded=inventory)
    told = Told(run, Sinks(for_run(run)), document)
    outcomes = on_hosts(hosts, lambda conn, host: check(conn, host), options=request.connect, forks=request.forks,
                        debug=request.debug, on_done=told.then())
    result = HealthRun(outcomes, {name: o.value[0] for name, o in outcomes.items() if not o.error},
                       {name: document(o) for name, o in outcomes.items()})
    told.end(outcomes, result.status)
    result.logged, result.warnings = told.logged, tuple(told.sinks.warnings)
    return result


def document(outcome: Outcome) -> dict:
    """The host's JSON document (--json, the run log): its verdict and health facts, or the error."""
    if outcome.error or outcome.value is None:
        return {"error": outcome.error, "unreachable": outcome.unreachable}
    verdict, facts = outcome.value
    return {**verdict.to_json(), "facts": facts}


def exit_status(outcomes, verdicts) -> int:
    from fleet.errors import ExitStatus

    if any(o.interrupted for o in outcomes.values()):
        return ExitStatus.INTERRUPTED
    kinds = {v.verdict for v in verdicts.values()}
    if "return" in kinds:
        return ExitStatus.RETURN_POD
    if any(o.error for o in outcomes.values()):
        return ExitStatus.HOST_FAILED
    # degraded, or a GPU host whose health could not be read (no nvidia-smi, NVML failing): not a go for a job
    return ExitStatus.GPU_DEGRADED if kinds & {"degraded", "unknown"} else ExitStatus.OK
