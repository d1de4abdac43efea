"""The facts probe: ONE bash script of `facts.<source>` sections, and the pure parse of what it printed.

`script(vars)` and `parse(sections, host_name)` are the primitive API: the engine appends its own check
sections to the script, runs the lot as one remote command, and hands the sections back here.
Everything the script does is read-only. Values from vars reach the shell through shlex.quote only.
"""

from __future__ import annotations

from datetime import datetime, timezone

from fleet import __version__
from fleet.sections import Section, background, section, together
from fleet.facts import fingerprint, shells
from fleet.facts.record import assemble
from fleet.facts.sources import DEFAULTS, SOURCES, settings_of

__all__ = ["DEFAULTS", "bodies", "parts", "script", "parse"]


def bodies(vars: dict | None = None) -> dict[str, str]:
    """Source name -> shell body, in the order the script runs them (fleet/facts/sources.py declares them)."""
    settings = settings_of(vars)
    return {source.name: source.command(settings) for source in SOURCES}


def parts(vars: dict | None = None) -> list:
    """The probe as background sections (sections.background), one per source, for sections.together: read-only
    sources that need nothing from each other, so they all start at once and are printed in order as each ends.
    The probe takes the time of its slowest source, not the sum (on the real H100 the sum was ~150 ms of a 245 ms
    probe, the slowest ~37 ms: tests/data/h100-device/issue14-s4). What each prints is unchanged."""
    # LC_ALL=C: parsers read English tool output whatever locale the user's shell set. Set inside each
    # section (a subshell), so check sections the engine appends to this script keep the user's locale.
    # The shells' trace is kept in a variable of the script too: the verify fingerprint (a source `kept_as` a variable)
    # reads it and starts as soon as the trace has ended, while the other sources still run; the verify gate the engine
    # adds reads the fingerprint and starts as soon as it has ended (sections.background `after`).
    # The fingerprint keeps the user's locale, as the gate's own (ls and glob order are parts of it).
    settings, out = settings_of(vars), []
    for source in SOURCES:
        body = source.command(settings)
        if source.kept_as:
            out.append(background(f"facts.{source.name}", body, keep_in=source.kept_as, after=shells.CAPTURED,
                                  before=fingerprint.kept_for(settings)))
        else:
            out.append(background(f"facts.{source.name}", f"export LC_ALL=C\n{body}",
                                  keep_in=shells.CAPTURED if source.name == "shells" else None))
    return out


def script(vars: dict | None = None) -> str:
    """The whole probe as one bash script: one `facts.<source>` section per source, all running at once."""
    return together(parts(vars))


def parse(sections: dict[str, Section], host_name: str, *, now: datetime | None = None) -> dict:
    """Framed probe output -> the facts record (docs/ARCHITECTURE.md). Pure: never raises for host output."""
    gathered = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    outputs = {name[len("facts."):]: sec.output for name, sec in sections.items() if name.startswith("facts.")}
    record = assemble(outputs, expected=[source.name for source in SOURCES])
    return {
        "host": host_name,
        "gathered_at": gathered.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "fleet_version": __version__,
        **record,
    }
