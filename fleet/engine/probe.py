"""The probe, one stage over one value: what a host's probe needs (`Needs`, computed once per host from its
variables and a facts record) -> ONE remote command of `facts.<source>` sections (with the checks the engine adds)
-> the facts record. This module alone builds it, runs it, asks again what the host turned out to lack, and upgrades
the facts' own helper programs:

    needs(host_vars, facts, install=False) -> Needs   the settings the sources render with (the probe's defaults, the
                                                     host's variables, the venv on a pod's volume) and the helper
                                                     program files the record lists (its `programs`)
    script(needs) / parts(needs) / prime(needs)      the probe as one bash script, or as background sections
    probe(conn, host, needs, checks) -> (facts, sections)   facts + checks in ONE command (again at first contact
                                                     when the venv turns out to live elsewhere, or where the host
                                                     lacks a program its last record listed)
    gather(conn, host, last) -> facts                the facts alone (fleet facts, fleet script)
    run_sections(conn, script, what) -> sections     one remote command of framed sections, cut short = an error
    parse(sections, host_name) -> facts record       pure

Everything the script does is read-only but the `install.<file>` sections an apply's probe carries (`Needs.install`).
Values from the variables reach the shell through shlex.quote only.

A source whose output an installed helper program gives (`shipped`: the shells' trace, the fingerprint;
fleet/programs.py) runs that program where `needs.have` lists its file, and carries its text only where it does
not: a converged host's probe holds neither text. Where the host lacks the file all the same, the section says so
(`lacking`), and `again` asks those sources once more with the text (an apply also installs the program there).
"""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from fleet import __version__, programs, sections, shell
from fleet.connection import Connection
from fleet.decide import health, storage
from fleet.errors import HostError
from fleet.facts import fingerprint, shells
from fleet.facts.record import assemble
from fleet.facts.sources import BY_NAME, ROOT_PATHS, SOURCES, settings_of
from fleet.inventory import Host

# Generous: a probe is ~0.1-0.3 s on a real host, but a cold disk or a slow NFS mount under the venv can take
# seconds; without a limit a `df` blocked on a dead mount holds the run open for ever.
PROBE_TIMEOUT = 300.0


@dataclass(frozen=True)
class Needs:
    """What one host's probe needs, computed once and handed down whole: the settings its sources render with
    (fleet/facts/sources.py settings_of: the probe's defaults and the host's variables), the helper program files
    the host had at its last probe (None known: every text inline), and whether this probe may install a facts
    program the host lacks (an apply; never --check nor `fleet facts`); and the facts' own programs for these
    settings (source name -> Program: `shipped`)."""
    settings: dict = field(default_factory=lambda: settings_of(None))
    have: frozenset = frozenset()
    install: bool = False
    programs: dict = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, vars: dict | None = None, have=(), *, install: bool = False) -> "Needs":
        """From variables as they are (ValueError: a path the probe cannot use, e.g. a relative venv)."""
        settings = settings_of(vars)
        return cls(settings, frozenset(have or ()), install,
                   {source.name: p for source in SOURCES if (p := shipped(source.name, settings)) is not None})


def needs(host_vars: dict, facts: dict | None, *, install: bool = False) -> Needs:
    """The host's probe as `facts` (its last record, or the live facts; None: first contact) imply it: the venv where
    a pod's volume puts it (fleet.decide.storage), the programs the record lists."""
    return Needs.of(storage.host_vars(facts, host_vars), programs_of(facts), install=install)


def programs_of(facts: dict | None) -> tuple[str, ...]:
    """The helper program files the host had when these facts were taken (the `programs` source)."""
    found = facts.get("programs") if isinstance(facts, dict) else None
    return tuple(found) if isinstance(found, list) else ()


# -- building -------------------------------------------------------------------------------------------------------

def shipped(name: str, settings: dict) -> programs.Program | None:
    """The installed program that prints what the facts source `name` prints, for these settings, or None: the
    shells' trace (`bash PROGRAM`, the verify program's too) and the fingerprint's parts (`bash PROGRAM
    --trace-on-stdin`, the trace the probe kept on its stdin; the verify gate's own where it runs without the probe)."""
    if name == "shells":
        return shells.trace_program()
    if name == "verify_fingerprint":
        return fingerprint.fingerprint_program(str(settings["python_env"]))
    return None


def bodies(needs: Needs = Needs(), only=None) -> dict[str, str]:
    """Source name -> shell body, in the order the script runs them (fleet/facts/sources.py declares them). A source
    whose output an installed program gives runs that program where the host has its file, judged right before it
    runs; its text goes inline only where it does not. `only`: these sources alone."""
    settings = needs.settings
    installed = {name: program for name, program in needs.programs.items() if program.file in needs.have}
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


def parts(needs: Needs = Needs(), only=None) -> list:
    """The probe as background sections (sections.background), one per source, for sections.together: read-only
    sources that need nothing from each other, so they all start at once and are printed in order as each ends.
    The probe takes the time of its slowest source, not the sum (on the real H100 the sum was ~150 ms of a 245 ms
    probe, the slowest ~37 ms: tests/data/h100-device/issue14-s4). What each prints is unchanged."""
    # LC_ALL=C: parsers read English tool output whatever locale the user's shell set. Set inside each
    # section (a subshell), so check sections the engine appends to this script keep the user's locale.
    # The shells' trace is kept in a variable of the script too: the verify fingerprint (a source `kept_as` a variable)
    # reads it: it starts at once with the others, takes what the trace does not give, and is fed the trace on its
    # stdin as soon as it has ended (sections.background `fed`); the verify gate the engine adds reads the fingerprint
    # and starts as soon as it has ended (sections.background `after`).
    # The fingerprint keeps the user's locale, as the gate's own (ls and glob order are parts of it).
    calls = functions(needs)
    return list(_parts(tuple(bodies(needs, only).items()), fingerprint.kept_for(needs.settings),
                       tuple(calls.items())))


@functools.lru_cache(maxsize=64)   # every input of it: hosts whose settings and programs are the same ask it once
def _parts(bodies: tuple, before: str, calls: tuple) -> tuple:
    kept, calls, out = {source.name: source.kept_as for source in SOURCES}, dict(calls), []
    for name, body in bodies:
        if kept[name]:
            out.append(sections.background(f"facts.{name}", body, keep_in=kept[name], after=shells.CAPTURED,
                                           before=before, fed=True, needs=calls[name]))
        else:
            out.append(sections.background(f"facts.{name}", f"export LC_ALL=C\n{body}",
                                           keep_in=shells.CAPTURED if name == "shells" else None, needs=calls[name]))
    return tuple(out)


def functions(needs: Needs = Needs()) -> dict[str, tuple[str, ...]]:
    """Source name -> the shared shell functions its body calls (fleet.shell.FUNCTIONS): its own (Source.needs), and
    "bin" where it runs its installed program (programs.from_bin), as bodies() decides."""
    installed = {name for name, program in needs.programs.items() if program.file in needs.have}
    return {source.name: source.needs + (programs.NEEDS_BIN if source.name in installed else ())
            for source in SOURCES}


def prime(needs: Needs = Needs()) -> str:
    """Shell that takes, once at the probe's start, what the trust judgements of its sections ask stat and ls
    (fleet/shell.py fleet_trust_prime): the venv's python and what it reads at start, the paths fleet writes into as
    root, the CUTLASS checkout, the helper programs the host has. ~15 judgements a probe each started a stat and an
    ls (and its `ls --version`) of the same few directories; each section now finds them taken."""
    settings = needs.settings
    env, cutlass = str(settings["python_env"]), str(settings["cutlass_dir"])
    # a path whose child is listed too is taken with it (every parent is); a pod volume's paths that the host lacks
    # are never taken (a missing path is asked where it is judged): only the settings' own
    paths = [*(str(settings[name]) for name in ROOT_PATHS if settings.get(name)), f"{cutlass}/.git/config",
             *(f"{programs.BIN}/{name}" for name in sorted(needs.have))]
    judged = env + "/bin/python"
    paths = [p for p in dict.fromkeys(paths) if not any(q.startswith(p.rstrip("/") + "/") for q in [*paths, judged])]
    return shell.TRUST_PRIME + "fleet_trust_prime " + " ".join(map(shlex.quote, paths)) + f" --judge {shlex.quote(judged)}"


def script(needs: Needs = Needs(), more=()) -> str:
    """The whole probe as one bash script: one `facts.<source>` section per source, all running at once; `more`:
    the sections the engine adds (the checks, the upgrades), after them."""
    return sections.together([*parts(needs), *more], first=prime(needs))


def said(found: dict[str, sections.Section]) -> tuple[list[str], dict[str, list[str]]]:
    """What the sections said of the helper programs: the files the `install.` ones installed, and source name -> the
    program files its section says the host lacks (programs.MISSING): where the last record listed a program the
    host no longer has whole and trusted (removed, changed, made writable)."""
    installed, lacked = [], {}
    for name, sec in found.items():
        done, lacks = programs.marks(sec.output)
        if name.startswith("install."):
            installed += done
        if name.startswith("facts.") and lacks:
            lacked[name[len("facts."):]] = lacks
    return installed, lacked


def again(needs: Needs, lacked: dict[str, list[str]]) -> str:
    """The sections that ask the sources `lacked` names once more with their text inline (the shells' trace and the
    sources kept after it, which read it, always together); with `needs.install`, each program they lacked is
    installed again in the same command (an `install.<file>` section)."""
    names = set(lacked)
    kept = {source.name for source in SOURCES if source.kept_as}
    if names & (kept | {"shells"}):
        names |= kept | {"shells"}
    out = parts(replace(needs, have=frozenset()), only=names)
    if needs.install:
        files = {f for fs in lacked.values() for f in fs}
        found = dict.fromkeys(needs.programs[name] for name in lacked if name in needs.programs)
        out += [_install(program) for program in found if program.file in files]
    return sections.together(out)


def upgrades(needs: Needs) -> list[sections.Plain]:
    """Sections installing this fleet's version of a facts program where the host holds another fleet's (same name,
    another digest: a fleet upgrade changed its text) and not this one's: the probe runs that source with its text
    this once, and the next probe runs it from /var/lib/fleet/bin (else every probe would carry the text until the
    host lost the old file). Only where the probe may install; a host holding none was never given them."""
    if not needs.install:
        return []
    have = needs.have
    return [_install(program) for program in dict.fromkeys(needs.programs.values())
            if program.file not in have and any(f.rsplit("-", 1)[0] == program.name for f in have)]


def _install(program: programs.Program) -> sections.Plain:
    return sections.Plain(sections.section(f"install.{program.file}", programs.prelude([program], ())
                                           + programs.use(program)), programs.NEEDS_PROGRAM)


# -- running --------------------------------------------------------------------------------------------------------

def probe(conn: Connection, host: Host, needs: Needs, checks: tuple[str, ...] = (), *, what: str = "probe",
          timeout: float | None = -1.0) -> tuple[dict, dict[str, sections.Section]]:
    """The facts and `checks` (framed sections, from engine.decided.check_sections) in one remote command.

    The facts sections are rendered from `needs` (what the last record implies); where the live facts imply other
    settings (first contact with a pod whose /workspace volume holds the venv), the facts are probed once more with
    those, so the record always describes the venv apply will use. Where the host lacks a program `needs.have`
    listed, those sources are asked again in one more command (`again`)."""
    found = run_sections(conn, script(needs, [*checks, *upgrades(needs)]), what, timeout)
    installed = _again(conn, needs, found, what, timeout)
    facts = parse(found, host.name)
    live = needs_of(host, facts, install=needs.install)
    if live.settings != needs.settings:
        found.update(run_sections(conn, script(live), what, timeout))
        installed += _again(conn, live, found, what, timeout)
        facts = parse(found, host.name)
    if installed:
        facts["programs"] = sorted(set(programs_of(facts)) | set(installed))
    facts["health"] = health.judged(facts, host.vars)   # the GPUs' verdict, with what the inventory expects
    return facts, found


def gather(conn: Connection, host: Host, last: dict | None, *, timeout: float | None = -1.0) -> dict:
    """The facts alone (`fleet facts`, `fleet script`), probed as `last` (the host's last record) implies. Read-only:
    a program the host lacks is not installed (its source runs with its text)."""
    return probe(conn, host, needs_of(host, last), what="facts probe", timeout=timeout)[0]


def needs_of(host: Host, facts: dict | None, *, install: bool = False) -> Needs:
    """`needs` for this host, a variable the probe cannot use a HostError naming the host."""
    try:
        return needs(host.vars, facts, install=install)
    except ValueError as error:
        raise HostError(f"{host.name}: {error}; fix the variable in the inventory") from None


def _again(conn: Connection, needs: Needs, found: dict, what: str, timeout) -> list[str]:
    """The facts sources whose section said the host lacks their program, asked again with their text inline (into
    `found`). -> the program files the probe installed (its upgrades, and that command)."""
    installed, lacked = said(found)
    if not lacked:
        return installed
    more = run_sections(conn, again(needs, lacked), what, timeout)
    found.update(more)
    return installed + said(more)[0]


def run_sections(conn: Connection, script: str, what: str,
                 timeout: float | None = -1.0) -> dict[str, sections.Section]:
    """One remote command of framed sections -> its sections; an empty script asks nothing (no command). On an SSH
    host the command ends with its connection (shell.STOP_WITH_CONNECTION): a probe cut short (Ctrl-C, SIGTERM, a
    dropped connection) does not run on, blocked on a dead mount, after fleet has gone."""
    from fleet.connection import LocalConnection

    if not script.strip():
        return {}
    if timeout is not None and timeout < 0:     # the default: PROBE_TIMEOUT as it is when called
        timeout = PROBE_TIMEOUT
    result = conn.run(shell.ends_with_connection(script, local=isinstance(conn, LocalConnection)), timeout=timeout)
    found = sections.split_sections(result.stdout)
    if not found:
        raise HostError(f"{conn.host.name}: the {what} produced no output (exit {result.exit}): "
                        f"{tail(result.stderr or result.stdout)}; check that bash exists on the host and "
                        "`fleet run` works there")
    missing = unobserved(script, found)
    if missing:
        # A probe cut short (its deadline, a dropped connection) leaves sources and checks with no answer: their
        # defaults would make every `when:` false and every check "did not run", and a host fleet could not see
        # would be reported in state. It is a failure, naming what was not observed.
        cut = (f"after {timeout:g} s, its deadline" if result.exit == 124 and timeout else f"exit {result.exit}")
        order = {name: i for i, name in enumerate(BY_NAME)}   # in the order the probe prints them
        facts = sorted((name[len("facts."):] for name in missing if name.startswith("facts.")),
                       key=lambda n: order.get(n, len(order)))
        others = [name for name in missing if not name.startswith("facts.")]
        shown = "; ".join(filter(None, [f"facts.{{{','.join(facts)}}}" if len(facts) > 1 else
                                        "".join(f"facts.{n}" for n in facts),
                                        ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4
                                                                 else "")]))
        raise HostError(f"{conn.host.name}: the {what} was cut short ({cut}) before it observed {shown}; nothing "
                        "it did not see is judged. Find what blocks there (a dead NFS or FUSE mount under df's "
                        "paths, a hung nvidia-smi: `fleet run` the source's command) and run again")
    return found


def unobserved(script: str, found: dict[str, sections.Section]) -> list[str]:
    """The sections `script` frames (sections.framed: either frame) that gave no complete answer (no end marker:
    rc -1)."""
    return [name for name in sections.framed(script) if name not in found or found[name].rc == -1]


def tail(text: str, n: int = 8) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


# -- reading --------------------------------------------------------------------------------------------------------

def parse(found: dict[str, sections.Section], host_name: str, *, now: datetime | None = None) -> dict:
    """Framed probe output -> the facts record (docs/ARCHITECTURE.md). Pure: never raises for host output."""
    gathered = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    outputs = {name[len("facts."):]: sec.output for name, sec in found.items() if name.startswith("facts.")}
    record = assemble(outputs, expected=[source.name for source in SOURCES])
    return {
        "host": host_name,
        "gathered_at": gathered.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "fleet_version": __version__,
        **record,
    }
