"""The facts probe: ONE bash script of `facts.<source>` sections, and the pure parse of what it printed.

`script(vars)` and `parse(sections, host_name)` are the primitive API: the engine appends its own check
sections to the script, runs the lot as one remote command, and hands the sections back here.
Everything the script does is read-only. Values from vars reach the shell through shlex.quote only.
"""

from __future__ import annotations

from datetime import datetime, timezone

from fleet import __version__
from fleet.sections import Section, background, section, together
from fleet.facts import shells
from fleet.facts.record import assemble
from fleet.facts.sources import DEFAULTS, SOURCES, settings_of

__all__ = ["DEFAULTS", "bodies", "parts", "script", "parse"]


def bodies(vars: dict | None = None) -> dict[str, str]:
    """Source name -> shell body, in the order the script runs them (fleet/facts/sources.py declares them)."""
    settings = settings_of(vars)
    return {source.name: source.command(settings) for source in SOURCES}


def parts(vars: dict | None = None) -> list[tuple[str, str]]:
    """The probe as background sections (sections.background), one per source, for sections.together: read-only
    sources that need nothing from each other, so they all start at once and are printed in order as each ends.
    The probe takes the time of its slowest source, not the sum (on the real H100 the sum was ~150 ms of a 245 ms
    probe, the slowest ~37 ms: tests/data/h100-device/issue14-s4). What each prints is unchanged."""
    # LC_ALL=C: parsers read English tool output whatever locale the user's shell set. Set inside each
    # section (a subshell), so check sections the engine appends to this script keep the user's locale.
    # The shells' trace is kept at the top level too: the verify gate the engine runs after the background sections
    # reads each shell's LD_LIBRARY_PATH from it (its frame lines are ignored), starting no shell of its own.
    # A source `kept_as` a variable (the verify fingerprint) runs after them at the top level, reading what they kept.
    kept = {source.name: source.kept_as for source in SOURCES if source.kept_as}
    return [f"{body}\n" + section(f"facts.{name}", f'printf "%s\\n" "${kept[name]}"') if name in kept else
            background(f"facts.{name}", f"export LC_ALL=C\n{body}", keep_in=shells.CAPTURED if name == "shells" else None)
            for name, body in bodies(vars).items()]


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
