"""The one way into a host's work. Every command (apply, facts, decide, verify, script, bootstrap) reads a host
through these, so that the same facts and the same variables give the same decisions wherever they are asked:

    variables(facts, vars)                   -> the variables every stage reads (the venv on a pod's volume)
    decide_facts(facts, vars)                -> the Decisions, with exactly the variables apply renders with
    record(facts_dir, name, facts)           -> the one writer of facts records (atomic, scrubbed)
    roles_of(hosts, roles_path, only)        -> each host's roles, every variable checked: the pre-flight of every
                                                command that renders roles (nothing contacted; InputError, exit 2)
    check_variables(hosts, roles_path)       -> every variable checked and converted, roles aside (fleet facts)

The probe itself (build, run, ask again, upgrade) is fleet/engine/probe.py. The decide-and-render of tasks is
`engine.decided.decide_tasks`, which calls `variables` and `decide_facts` itself.
"""

from __future__ import annotations

from pathlib import Path

from fleet.decide import storage
from fleet.inventory import Host


def variables(facts: dict | None, vars: dict) -> dict:
    """The host's variables as every stage reads them: the inventory's, plus where a pod's volume puts the venv
    and pip's files (fleet.decide.storage) unless the user set them."""
    return storage.host_vars(facts, vars)


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
    checked = set()   # hosts that share their roles (the same loaded objects, in order) are one check, not 1,000
    for roles in by_host.values():
        if (key := tuple(map(id, roles))) not in checked:
            check_roles(roles)
            checked.add(key)
    return by_host


def check_variables(hosts: list[Host], roles_path=(), by_host: dict[str, list] | None = None) -> None:
    """Every host's variables checked and converted by their one declaration (the stack's, and every role's the
    inventory could name): an InputError naming each bad one's file:line (or --set), before any host."""
    from fleet.inventory.validate import check_hosts
    from fleet.roles import every_role
    from fleet.roles.declared import variables_of

    check_hosts(hosts, variables_of(every_role(roles_path, by_host)))
