"""The one way into a host's work. Every command (apply, facts, decide, verify, script, bootstrap) reads a host
through these, so that the same facts and the same variables give the same decisions wherever they are asked:

    variables(facts, vars)                   -> the variables every stage reads (the venv on a pod's volume)
    probe(conn, host, last, checks=(), ...)  -> (facts, sections): facts + the given checks, ONE remote command
                                                (two on first contact, when the venv turns out to live elsewhere)
    gather(conn, host, last)                 -> the facts alone (probe with no checks)
    decide_facts(facts, vars)                -> the Decisions, with exactly the variables apply renders with
    record(facts_dir, name, facts)           -> the one writer of facts records (atomic, scrubbed)
    roles_of(hosts, roles_path, only)        -> each host's roles, every variable checked: the pre-flight of every
                                                command that renders roles (nothing contacted; InputError, exit 2)

`last` is the host's previous facts record (None: none): it says where the venv was, so a probe asks the right
python. The decide-and-render of tasks is `engine.decided.decide_tasks`, which calls `variables` and
`decide_facts` itself.
"""

from __future__ import annotations

from pathlib import Path

from fleet import sections, shell
from fleet.connection import Connection
from fleet.decide import storage
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
          what: str = "probe", timeout: float | None = PROBE_TIMEOUT) -> tuple[dict, dict[str, sections.Section]]:
    """The facts and `checks` (framed sections, from engine.decided.check_sections) in one remote command.

    The facts sections are rendered with the variables `last` implies; where the live facts imply others (first
    contact with a pod whose /workspace volume holds the venv), the facts are probed once more with those, so the
    record always describes the venv apply will use."""
    from fleet.facts import probe as facts_probe

    try:
        asked_with = variables(last, host.vars)
        parts = facts_probe.parts(asked_with)
    except ValueError as error:
        raise HostError(f"{host.name}: {error}; fix the variable in the inventory") from None
    found = run_sections(conn, sections.together([*parts, *checks]), what, timeout)
    facts = facts_probe.parse(found, host.name)
    if variables(facts, host.vars) != asked_with:
        found.update(run_sections(conn, facts_probe.script(variables(facts, host.vars)), what, timeout))
        facts = facts_probe.parse(found, host.name)
    return facts, found


def gather(conn: Connection, host: Host, last: dict | None, *, timeout: float | None = PROBE_TIMEOUT) -> dict:
    """The facts alone: `fleet facts`, `fleet script`, bootstrap's first look."""
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
    a bad role or variable is an InputError naming its file:line before any host is contacted."""
    from fleet.roles import roles_dirs, roles_for_hosts
    from fleet.inventory.reads import check_reads
    from fleet.inventory.validate import check_hosts

    from fleet.engine.chains import check_roles

    by_host = roles_for_hosts(hosts, roles_dirs(roles_path), only)
    check_hosts(hosts, roles_path, by_host)
    check_reads(hosts, by_host)
    for roles in by_host.values():
        check_roles(roles)
    return by_host


def run_sections(conn: Connection, script: str, what: str,
                 timeout: float | None = PROBE_TIMEOUT) -> dict[str, sections.Section]:
    """One remote command of framed sections -> its sections; an empty script asks nothing (no command). On an SSH
    host the command ends with its connection (shell.STOP_WITH_CONNECTION): a probe cut short (Ctrl-C, SIGTERM, a
    dropped connection) does not run on, blocked on a dead mount, after fleet has gone."""
    from fleet.connection import LocalConnection

    if not script.strip():
        return {}
    result = conn.run(shell.ends_with_connection(script, local=isinstance(conn, LocalConnection)), timeout=timeout)
    found = sections.split_sections(result.stdout)
    if not found:
        raise HostError(f"{conn.host.name}: the {what} produced no output (exit {result.exit}): "
                        f"{tail(result.stderr or result.stdout)}; check that bash exists on the host and "
                        "`fleet run` works there")
    return found


def tail(text: str, n: int = 8) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"
