"""The one way into a host's work. Every command (apply, facts, decide, verify, script, bootstrap) reads a host
through these, so that the same facts and the same variables give the same decisions wherever they are asked:

    variables(facts, vars)                   -> the variables every stage reads (the venv on a pod's volume)
    probe(conn, host, last, checks=(), ...)  -> (facts, sections): facts + the given checks, ONE remote command
                                                (two on first contact, when the venv turns out to live elsewhere, or
                                                where the host lacks a program its last record listed)
    gather(conn, host, last)                 -> the facts alone (probe with no checks)
    decide_facts(facts, vars)                -> the Decisions, with exactly the variables apply renders with
    record(facts_dir, name, facts)           -> the one writer of facts records (atomic, scrubbed)
    roles_of(hosts, roles_path, only)        -> each host's roles, every variable checked: the pre-flight of every
                                                command that renders roles (nothing contacted; InputError, exit 2)
    check_variables(hosts, roles_path)       -> every variable checked and converted, roles aside (fleet facts)

`last` is the host's previous facts record (None: none): it says where the venv was, so a probe asks the right
python. The decide-and-render of tasks is `engine.decided.decide_tasks`, which calls `variables` and
`decide_facts` itself.
"""

from __future__ import annotations

import re
from pathlib import Path

from fleet import sections, shell
from fleet.connection import Connection
from fleet.decide import health, storage
from fleet.errors import HostError
from fleet.inventory import Host

# Generous: a probe is ~0.1-0.3 s on a real host, but a cold disk or a slow NFS mount under the venv can take
# seconds; without a limit a `df` blocked on a dead mount holds the run open for ever.
PROBE_TIMEOUT = 300.0


def variables(facts: dict | None, vars: dict) -> dict:
    """The host's variables as every stage reads them: the inventory's, plus where a pod's volume puts the venv
    and pip's files (fleet.decide.storage) unless the user set them."""
    return storage.host_vars(facts, vars)


def probe(conn: Connection, host: Host, last: dict | None, checks: tuple[str, ...] = (), *,
          what: str = "probe", timeout: float | None = -1.0,
          install: bool = False) -> tuple[dict, dict[str, sections.Section]]:
    """The facts and `checks` (framed sections, from engine.decided.check_sections) in one remote command.

    The facts sections are rendered with the variables `last` implies; where the live facts imply others (first
    contact with a pod whose /workspace volume holds the venv), the facts are probed once more with those, so the
    record always describes the venv apply will use. A facts source runs fleet's installed program where `last`
    lists it (fleet/facts/probe.py bodies); where the host lacks it all the same, that source is asked again in one
    more command with its text, and (`install`: an apply, never --check nor `fleet facts`) the program is installed
    there again."""
    from fleet.facts import probe as facts_probe

    try:
        asked_with = variables(last, host.vars)
        parts = facts_probe.parts(asked_with, programs_of(last))
    except ValueError as error:
        raise HostError(f"{host.name}: {error}; fix the variable in the inventory") from None
    upgrade = _upgrades(asked_with, programs_of(last)) if install else []
    found = run_sections(conn, sections.together([*parts, *checks, *upgrade],
                                                 first=facts_probe.prime(asked_with, programs_of(last))), what, timeout)
    installed = _installed(found) if upgrade else []
    installed += _again(conn, asked_with, found, what, timeout, install)
    facts = facts_probe.parse(found, host.name)
    if variables(facts, host.vars) != asked_with:
        found.update(run_sections(conn, facts_probe.script(variables(facts, host.vars), programs_of(facts)), what,
                                  timeout))
        installed += _again(conn, variables(facts, host.vars), found, what, timeout, install)
        facts = facts_probe.parse(found, host.name)
    if installed:
        facts["programs"] = sorted(set(programs_of(facts)) | set(installed))
    facts["health"] = health.judged(facts, host.vars)   # the GPUs' verdict, with what the inventory expects
    return facts, found


def _again(conn: Connection, vars: dict, found: dict, what: str, timeout, install: bool) -> list[str]:
    """The facts sources whose section said the host lacks their program, asked again with their text inline (into
    `found`); with `install`, that command installs the programs again too. -> the program files it installed."""
    from fleet.facts import probe as facts_probe
    from fleet.facts.probe import shipped
    from fleet.facts.sources import settings_of
    from fleet import programs

    lacking = facts_probe.lacking(found)
    if not lacking:
        return []
    again = facts_probe.again(vars, lacking)
    if install:
        settings, files = settings_of(vars), {f for fs in lacking.values() for f in fs}
        for program in dict.fromkeys(p for name in lacking if (p := shipped(name, settings)) is not None):
            if program.file in files:
                again.append(sections.section(f"install.{program.file}",
                                              programs.prelude([program], ()) + programs.use(program)))
    more = run_sections(conn, sections.together(again), what, timeout)
    found.update(more)
    return _installed(more)


def _installed(found: dict) -> list[str]:
    from fleet import programs

    return [f for name, sec in found.items() if name.startswith("install.") for f in programs.installed(sec.output)]


def _upgrades(vars: dict, have: tuple[str, ...]) -> list[str]:
    """Sections installing this fleet's version of a facts program where the host holds another fleet's (same name,
    another digest: a fleet upgrade changed its text) and not this one's: the probe runs that source with its text
    this once, and the next probe runs it from /var/lib/fleet/bin (else every probe would carry the text until the
    host lost the old file). Only for an apply (the caller's `install`); a host holding none was never given them."""
    from fleet.facts.probe import shipped
    from fleet.facts.sources import SOURCES, settings_of
    from fleet import programs

    settings, out = settings_of(vars), []
    for program in dict.fromkeys(p for source in SOURCES if (p := shipped(source.name, settings)) is not None):
        if program.file not in have and any(f.rsplit("-", 1)[0] == program.name for f in have):
            out.append(sections.section(f"install.{program.file}", programs.prelude([program], ()) + programs.use(program)))
    return out


def programs_of(facts: dict | None) -> tuple[str, ...]:
    """The helper program files the host had when these facts were taken (fleet/programs.py)."""
    found = facts.get("programs") if isinstance(facts, dict) else None
    return tuple(found) if isinstance(found, list) else ()


def gather(conn: Connection, host: Host, last: dict | None, *, timeout: float | None = -1.0) -> dict:
    """The facts alone: `fleet facts`, `fleet script` (bootstrap's first look is observe + plan in check mode).
    Read-only: a program the host lacks is not installed (its source runs with its text)."""
    return probe(conn, host, last, what="facts probe", timeout=timeout)[0]


def decide_facts(facts: dict, vars: dict):
    """decide() with the variables apply renders with: `fleet decide FACTS` and `fleet apply --check` agree."""
    from fleet.decide import decide

    return decide(facts, variables(facts, vars))


def record(facts_dir: Path, name: str, facts: dict) -> None:
    """Write the host's facts record (fleet.record.store: atomic, secrets scrubbed, the previous one kept)."""
    from fleet.record import store

    store.write(facts_dir, name, facts)


def roles_of(hosts: list[Host], roles_path, only: list[str] | None = None) -> dict[str, list]:
    """Each host's roles (`only`: --roles), loaded once, and every variable of every host checked against them:
    a bad role or variable is an InputError naming its file:line before any host is contacted. One step, each
    lower module doing its whole part in one call: the roles resolved, what they declare and read, the
    variables checked and converted, the names read that nothing gives, the order of each host's tasks."""
    from fleet.engine.chains import check_roles
    from fleet.inventory.reads import check_reads
    from fleet.inventory.validate import check_hosts
    from fleet.roles import every_role, roles_dirs, roles_for_hosts
    from fleet.roles.declared import declared

    by_host = roles_for_hosts(hosts, roles_dirs(roles_path), only)
    every = every_role(roles_path, by_host)      # a variable meant for a role --roles leaves out is still known
    known, reads = declared(every)
    check_hosts(hosts, known)
    check_reads(hosts, by_host, reads)
    for roles in by_host.values():
        check_roles(roles)
    return by_host


def check_variables(hosts: list[Host], roles_path=(), by_host: dict[str, list] | None = None) -> None:
    """Every host's variables checked and converted by their one declaration (the stack's, and every role's the
    inventory could name): an InputError naming each bad one's file:line (or --set), before any host."""
    from fleet.inventory.validate import check_hosts
    from fleet.roles import every_role
    from fleet.roles.declared import variables_of

    check_hosts(hosts, variables_of(every_role(roles_path, by_host)))


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
        from fleet.facts.sources import BY_NAME   # named in the order the probe prints them, not the order it starts them
        order = {name: i for i, name in enumerate(BY_NAME)}
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


_BEGIN = re.compile(r"@@fleet:begin ([A-Za-z0-9_.:-]+)@@")


def unobserved(script: str, found: dict[str, sections.Section]) -> list[str]:
    """The sections `script` frames (its begin markers) that gave no complete answer (no end marker: rc -1)."""
    return [name for name in dict.fromkeys(_BEGIN.findall(script))
            if name not in found or found[name].rc == -1]


def tail(text: str, n: int = 8) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"
