"""Decide and render: one host's facts -> its decisions and its rendered tasks, as one immutable value.

    decided = decide_tasks(roles, host, facts, check_mode=False)    # the one place decide() and render meet
    check_sections(decided, max_age)                                  # every enabled task's check, framed
    maybe_sudo(snippet, task, user_is_root)                           # sudo only where a task needs root

`fleet apply` (through observe), `fleet bootstrap` and `fleet script` all use these: no Engine object, no
connection needed (whether the user is root is a bool).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet import sections, shell
from fleet.errors import HostError, InputError
from fleet.inventory import Host
from fleet.roles import Task, render_role


@dataclass(frozen=True)
class Decided:
    """The decisions and rendered tasks for one set of facts."""

    facts: dict
    decisions: object
    decisions_json: dict
    tasks: tuple[Task, ...]


def decide_tasks(roles, host: Host, facts: dict, *, check_mode: bool = False) -> Decided:
    """Decide from `facts` (and the host's variables) and render every role's tasks from the decisions."""
    from fleet.decide import FactsError, VariableError
    from fleet.engine.session import decide_facts, variables

    host_vars = variables(facts, host.vars)   # venv and pip's files on a pod's volume
    refuse_untrusted_paths(host, host_vars, facts)
    try:
        decisions = decide_facts(facts, host.vars)
    except (FactsError, VariableError) as exc:
        raise InputError(f"{host.name}: {exc}") from None
    djson = decisions.to_json()
    # check_mode: templates keep --check read-only and light (verify's perf smoke never runs in it)
    # roles: the host's own roles (the inventory's, else the built-in order) and any this run renders besides:
    # verify proves the user's shells wherever env_hooks is the host's, so a plain `fleet verify` proves what
    # apply's verify proves (issue 45), not less because --roles narrowed the run
    from fleet.roles import DEFAULT_ORDER
    info = {"name": host.name, "user": host.user, "root": shell.user_is_root(host), "check_mode": check_mode,
            "roles": list(dict.fromkeys([*(host.roles or DEFAULT_ORDER), *(role.name for role in roles)]))}
    tasks = []
    for role in roles:
        rendered = render_role(role, host_vars, facts, djson, info)
        if any(t.enabled and getattr(t.resource, "reads_variables", False) for t in rendered):
            reads = variables_read(role, host_vars)
            for t in rendered:
                if getattr(t.resource, "reads_variables", False):
                    t.resource.variables = reads
        tasks += rendered
    return Decided(facts, decisions, djson, tuple(tasks))


def refuse_untrusted_paths(host: Host, host_vars: dict, facts: dict) -> None:
    """The venv, pip's files, the checkout and the archives' homes run or are written as root: refused where the probe found another user owns or can
    write them or a parent (fleet/facts/paths.py), naming the owner and mode."""
    from fleet.facts.paths import refusal
    from fleet.facts.sources import DEFAULTS, ROOT_PATHS

    found = facts.get("paths") if isinstance(facts, dict) else None
    for name in ROOT_PATHS:
        path = host_vars.get(name) or DEFAULTS.get(name)
        why = found.get(str(path)) if path and isinstance(found, dict) else None
        if path and isinstance(found, dict) and str(path) not in found:   # no verdict is never "trusted"
            why = "the probe gave no verdict for it (see the record's probe.errors)"
        if why:
            raise HostError(f"{host.name}: {refusal(name, str(path), why)}")


def variables_read(role, host_vars: dict) -> dict[str, str]:
    """name -> digest of the value, for every variable the role's texts read (its defaults, the stack's, the
    host's): what verify's fingerprint holds of them, so a changed verify_perf runs verify again and says so."""
    from fleet.facts.fingerprint import digest
    from fleet.roles.declared import names_read
    from fleet.variables import defaults

    merged = {**defaults(), **role.defaults, **host_vars}
    return {name: digest(merged[name]) for name in sorted(names_read(role)) if name in merged}


# Seconds a check that runs a role author's command (command's unless) may take on the host (sections.bounded).
CHECK_DEADLINE = 120

def check_sections(decided: Decided, max_age: float | None = None, *, without_records: bool = False,
                   have=None, only=None, install: bool = True) -> tuple:
    """Every enabled task's check (checks read as the user: never sudo), behind its gate (Resource.gate: verify's
    fingerprint, records up to `max_age` seconds old reused; None: it runs). fleet's own read-only checks run at once
    (sections.background), a gated one (verify) as soon as the fingerprint it reads is taken, the ones that run what a
    role's author wrote one after the other, after those: join them with sections.together.
    `have`: the helper program files the host has (facts.programs): the text of the others rides along
    (fleet/programs.py; None: every one), installed where the host lacks them, or with `install` False
    (--check: nothing is written) run from a temporary copy the section removes. `only`: these task ids alone."""
    from fleet.programs import prelude

    out = []
    for t in decided.tasks:
        if not t.enabled or (without_records and t.resource.writes_record) or (only is not None and t.id not in only):
            continue
        # behind its gate; a check that runs a helper program: the text it needs where the host lacks it
        shipped = t.resource.programs()    # most run none: nothing to ship (prelude's answer for none)
        body = ((prelude(shipped, have, install=install) if shipped else "")
                + t.resource.gate(t.resource.check(), max_age))
        calls = t.resource.uses()    # the shared functions it calls: the script defines them once
        if not t.resource.concurrent_check and not t.resource.judged:
            # what a role's author wrote (command's unless) gets a deadline on the host; an assertion has its own.
            # A bash of its own: the functions it calls go with it
            body, calls = sections.bounded(shell.define(calls) + body, CHECK_DEADLINE), ()
        name = f"check.{t.id}"
        if t.resource.concurrent_check:
            out.append(sections.background(name, body, needs=calls))
        elif t.resource.reads_kept:
            # it reads what the facts keep (verify's gate: the fingerprint): in a probe it starts as soon as that is
            # kept, and is collected before the role authors' checks run; alone, it runs as a plain section
            out.append(sections.background(name, body, after=t.resource.reads_kept, needs=calls))
        else:
            out.append(sections.Plain(sections.section(name, body), calls))
    return tuple(out)


def maybe_sudo(snippet: str, task: Task, user_is_root: bool, *, check: bool = False) -> str:
    """Wrap in sudo only where this task needs root and the user is not root (checks read as the user); the rule
    is fleet.shell.needs_sudo, the wrapping fleet.shell.as_root."""
    wants_root = not check and (task.spec.sudo if task.spec.sudo is not None else task.resource.root)
    return shell.as_root(snippet, wants_root=wants_root, user_is_root=user_is_root,
                         needs=task.resource.uses(apply=not check))


# What a probe reads off the moment, the engine's own note of when and why verify was last checked, and the helper
# programs the host has (they change what a check carries, never what it asks: fleet/programs.py): no
# decision and no built-in role reads them, and two probes a minute apart differ in these and nothing else. Where
# only these differ from the facts a Decided was made from, it stands for the new facts too (one decide-and-render
# per probe); a role whose text names one of them is always decided afresh (reads_readings).
READINGS = {None: ("gathered_at", "probe", "programs"), "system": ("mem_available_mb", "disk_free_gb"),
            "verify": ("checked_at", "reused", "reason")}
_NAMED = ("gathered_at", "mem_available_mb", "disk_free_gb", "checked_at", "facts.probe", "facts['probe']", "facts.programs",
          'facts["probe"]', "verify.reason", "verify.reused", "verify['reason']", "verify['reused']",
          'verify["reason"]', 'verify["reused"]', ".free_gb", "['free_gb']", '["free_gb"]')
# each disk's free space (fleet/facts/readings.py: system.disks.*.free_gb): the disks' paths, mounts and sources are
# judged (fleet/decide/storage.py), their free space moves on every host between two probes
_DISK_READING = "free_gb"


def without_readings(facts: dict) -> dict:
    """A copy of `facts` without the readings of the moment (the input is never modified)."""
    out = {k: v for k, v in facts.items() if k not in READINGS[None]}
    for part, names in READINGS.items():
        if part is not None and isinstance(out.get(part), dict):
            out[part] = {k: v for k, v in out[part].items() if k not in names}
    disks = out["system"].get("disks") if isinstance(out.get("system"), dict) else None
    if isinstance(disks, list):
        out["system"]["disks"] = [{k: v for k, v in d.items() if k != _DISK_READING} if isinstance(d, dict) else d
                                  for d in disks]
    return out


def reads_readings(roles) -> bool:
    """Whether any role's text (its when:, defaults, task parameters, templates) names a reading of the moment."""
    import json

    for role in roles:
        texts = [role.when or "", getattr(role, "why", None) or "", getattr(role, "why_skipped", None) or "",
                 json.dumps([role.defaults, [[t.when, t.params, t.name, getattr(t, "why_skipped", None)]
                                             for t in role.tasks]], default=str)]
        templates = role.path.parent / "templates"
        if templates.is_dir():
            texts += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(templates.rglob("*"))
                      if p.is_file()]
        if any(name in text for text in texts for name in _NAMED):
            return True
    return False
