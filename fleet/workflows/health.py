"""The GPU health check alone (issue 36): `fleet health INVENTORY` and bootstrap's first step.

    verdict, facts = check(conn, host)

ONE remote command of the probe's health sources only (the kernel driver's GPU list, the query fields and remapped
rows, `nvidia-smi -q -x` filtered, the kernel log), run at once: read-only, cheap enough before every job. The
verdict is fleet.decide.health's, with the host's `expect_gpus`.
"""

from __future__ import annotations

from fleet import sections
from fleet.decide.health import HealthVerdict, decide_health, parse_expect
from fleet.facts.record import assemble
from fleet.facts.sources import BY_NAME

SOURCES = ("kernel_gpus", "health", "health_xml", "xid")
TIMEOUT = 60.0


def script() -> str:
    """The health sources as background sections (as the whole probe runs them): the time of the slowest."""
    return sections.together([sections.background(f"facts.{name}", f"export LC_ALL=C\n{BY_NAME[name].command({})}")
                              for name in SOURCES])


def read(found: dict[str, sections.Section], expect_gpus=None) -> tuple[HealthVerdict, dict]:
    """Framed output -> (the verdict, {"health": facts.health, "probe": {errors...}}). Pure."""
    outputs = {name[len("facts."):]: sec.output for name, sec in found.items() if name.startswith("facts.")}
    record = assemble(outputs, expected=list(SOURCES))
    facts = {"health": record["health"], "probe": record["probe"]}
    return decide_health(facts, parse_expect(expect_gpus)), facts


def check(conn, host, *, timeout: float | None = TIMEOUT) -> tuple[HealthVerdict, dict]:
    from fleet.engine.probe import run_sections

    return read(run_sections(conn, script(), "health check", timeout), host.vars.get("expect_gpus"))
