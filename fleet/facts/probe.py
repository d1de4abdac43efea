"""The facts probe: ONE bash script of `facts.<source>` sections, and the pure parse of what it printed.

`script(vars)` and `parse(sections, host_name)` are the primitive API: the engine appends its own check
sections to the script, runs the lot as one remote command, and hands the sections back here.
Everything the script does is read-only. Values from vars reach the shell through shlex.quote only.

`script(vars, have)`: a source whose output an installed helper program gives (the shells' trace, the fingerprint:
fleet/programs.py) runs that program where `have` (the last record's `programs`) lists its file, and carries its
text only where it does not: a converged host's probe holds neither text. Where the host lacks the file all the same,
the section says so (`lacking`), and `again` asks those sources once more with the text.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timezone

from fleet import __version__
from fleet.sections import Section, background, section, together
from fleet import programs
from fleet.facts import fingerprint, shells
from fleet.facts.record import assemble
from fleet.facts.sources import DEFAULTS, ROOT_PATHS, SOURCES, settings_of

__all__ = ["DEFAULTS", "again", "bodies", "lacking", "parts", "prime", "script", "parse"]


def bodies(vars: dict | None = None, have=None, only=None) -> dict[str, str]:
    """Source name -> shell body, in the order the script runs them (fleet/facts/sources.py declares them).
    `have`: the helper program files the host had at its last probe (facts.programs): a source whose output an
    installed program gives (fleet/programs.py shipped: the shells' trace, the fingerprint) runs that program
    where the host has its file, judged right before it runs, and its text goes inline only where it does not (None:
    nothing known, every text inline). `only`: these sources alone."""
    settings = settings_of(vars)
    have = frozenset(have or ())
    installed = {source.name: program for source in SOURCES
                 if (program := shipped(source.name, settings)) is not None and program.file in have}
    out = {}
    for source in SOURCES:
        if only is not None and source.name not in only:
            continue
        program = installed.get(source.name)
        if source.name == "verify_fingerprint":   # the trace on its stdin (fed: fleet/sections.py)
            out[source.name] = fingerprint.fingerprint_part(str(settings["python_env"]), program)
        elif program is not None:
            out[source.name] = programs.from_bin(program)
        else:
            out[source.name] = source.command(settings)
    return out


def shipped(name: str, settings: dict) -> programs.Program | None:
    """The installed program that prints what the facts source `name` prints, for these settings (fleet/facts/sources.py
    settings_of), or None: the shells' trace (`bash PROGRAM`, the verify program's too) and the fingerprint's parts
    (`bash PROGRAM --trace-on-stdin`, the trace the probe kept on its stdin; the verify gate's own where it runs
    without the probe)."""
    if name == "shells":
        return shells.trace_program()
    if name == "verify_fingerprint":
        return fingerprint.fingerprint_program(str(settings["python_env"]))
    return None


def parts(vars: dict | None = None, have=None, only=None) -> list:
    """The probe as background sections (sections.background), one per source, for sections.together: read-only
    sources that need nothing from each other, so they all start at once and are printed in order as each ends.
    The probe takes the time of its slowest source, not the sum (on the real H100 the sum was ~150 ms of a 245 ms
    probe, the slowest ~37 ms: tests/data/h100-device/issue14-s4). What each prints is unchanged. `have`, `only`:
    as bodies()."""
    # LC_ALL=C: parsers read English tool output whatever locale the user's shell set. Set inside each
    # section (a subshell), so check sections the engine appends to this script keep the user's locale.
    # The shells' trace is kept in a variable of the script too: the verify fingerprint (a source `kept_as` a variable)
    # reads it: it starts at once with the others, takes what the trace does not give, and is fed the trace on its
    # stdin as soon as it has ended (sections.background `fed`); the verify gate the engine adds reads the fingerprint
    # and starts as soon as it has ended (sections.background `after`).
    # The fingerprint keeps the user's locale, as the gate's own (ls and glob order are parts of it).
    settings, kept, out = settings_of(vars), {source.name: source.kept_as for source in SOURCES}, []
    for name, body in bodies(vars, have, only).items():
        if kept[name]:
            out.append(background(f"facts.{name}", body, keep_in=kept[name], after=shells.CAPTURED,
                                  before=fingerprint.kept_for(settings), fed=True))
        else:
            out.append(background(f"facts.{name}", f"export LC_ALL=C\n{body}",
                                  keep_in=shells.CAPTURED if name == "shells" else None))
    return out


def prime(vars: dict | None = None, have=None) -> str:
    """Shell that takes, once at the probe's start, what the trust judgements of its sections ask stat and ls
    (fleet/shell.py fleet_trust_prime): the venv's python and what it reads at start, the paths fleet writes into as
    root, the CUTLASS checkout, the helper programs `have` lists. ~15 judgements a probe each started a stat and an
    ls (and its `ls --version`) of the same few directories; each section now finds them taken."""
    from fleet.shell import TRUST_PRIME

    settings = settings_of(vars)
    env, cutlass = str(settings["python_env"]), str(settings["cutlass_dir"])
    # a path whose child is listed too is taken with it (every parent is); a pod volume's paths that the host lacks
    # are never taken (a missing path is asked where it is judged): only the settings' own
    paths = [*(str(settings[name]) for name in ROOT_PATHS if settings.get(name)), f"{cutlass}/.git/config",
             *(f"{programs.BIN}/{name}" for name in sorted(have or ()))]
    judged = env + "/bin/python"
    paths = [p for p in dict.fromkeys(paths) if not any(q.startswith(p.rstrip("/") + "/") for q in [*paths, judged])]
    return TRUST_PRIME + "fleet_trust_prime " + " ".join(map(shlex.quote, paths)) + f" --judge {shlex.quote(judged)}"


def script(vars: dict | None = None, have=None) -> str:
    """The whole probe as one bash script: one `facts.<source>` section per source, all running at once."""
    return together(parts(vars, have), first=prime(vars, have))


def lacking(sections: dict[str, Section]) -> dict[str, list[str]]:
    """Source name -> the program files its section says the host lacks (fleet/programs.py MISSING): where the
    last record listed a program the host no longer has whole and trusted (removed, changed, made writable)."""
    out = {}
    for name, sec in sections.items():
        files = programs.missing(sec.output) if name.startswith("facts.") else []
        if files:
            out[name[len("facts."):]] = files
    return out


def again(vars: dict | None, names) -> list[tuple[str, str]]:
    """The parts that ask the sources `names` once more with their text inline: the shells' trace and the sources
    kept after it (they read it) always together."""
    names = set(names)
    kept = {source.name for source in SOURCES if source.kept_as}
    if names & (kept | {"shells"}):
        names |= kept | {"shells"}
    return parts(vars, have=(), only=names)


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
