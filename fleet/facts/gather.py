"""Gather one host's facts: the probe script as ONE remote command, parsed into a record."""

from __future__ import annotations

from ..errors import HostError
from ..sections import Section, split_sections
from . import probe

# Generous: a cold torch import with CUDA init takes seconds; the torch section has its own shorter limit.
GATHER_TIMEOUT = 300.0


def gather(conn, host, vars: dict | None = None, *, timeout: float = GATHER_TIMEOUT) -> tuple[dict, dict[str, Section]]:
    """Run the probe on `host` through `conn` (one remote command) -> (record, sections).

    Raises HostError only when the probe printed nothing we can read (bash missing, the session died at once);
    a probe cut short part way still yields a record whose probe.errors name the missing sources.
    """
    name = host.name
    try:
        script = probe.script(vars if vars is not None else host.vars)
    except ValueError as error:
        raise HostError(f"{name}: {error}; fix the variable in the inventory") from None
    result = conn.run(script, timeout=timeout)
    sections = split_sections(result.stdout)
    if not any(key.startswith("facts.") for key in sections):
        detail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise HostError(f"{name}: the facts probe printed nothing readable (exit {result.exit}: {detail[0]}); "
                        "check that bash exists on the host and `fleet run` works there")
    return probe.parse(sections, name), sections
