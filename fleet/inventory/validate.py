"""Every variable checked and converted before the first connection: names (a typo is an error with the closest
name) and values (each by its one declaration: fleet/variables.py and the roles' `variables:`), each problem with
the file:line of the value (or the --set that gave it), exit 2, no host touched. What passes is what renders: each
host's variables are replaced by their converted values (`verify_perf: "off"` renders False).

Which names exist is not a second list: the stack's declarations (fleet.variables.STACK), every available role's
declarations and every variable a role's templates read. Versions are judged by fleet.decide.variables.resolve
itself, so the rule lives in one place.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from fleet import variables
from fleet.errors import InputError
from fleet.roles import template_cache

_CONTEXT = {"facts", "decisions", "host"}      # what rendering adds beside the variables


def declared(roles) -> dict[str, variables.Variable]:
    """Name -> its declaration, from the stack's, each role's, and (any value) a name a role reads undeclared."""
    known = dict(variables.STACK)
    for role in roles:
        for name, var in role.variables.items():
            known.setdefault(name, var)
        for name in names_read(role):
            known.setdefault(name, variables.read_without_default(name))
    return known


def check_hosts(hosts, roles_path=(), by_host: dict[str, list] | None = None) -> None:
    """Check and convert every host's variables, or raise one InputError listing every bad one. Known names come
    from every role the inventory could name (built-in and roles_path), not only those this run selects: a
    variable meant for a role that --roles leaves out is still a known one."""
    known = declared(_all_roles(roles_path, by_host))
    problems: list[str] = []
    for host in hosts:
        converted, found = check_values(host.vars, known, host.var_where)
        problems += [problem for problem in found if problem not in problems]   # a bad top-level value: once
        host.vars = converted
    if problems:
        raise InputError("\n".join(problems))


def check_values(values: dict[str, Any], known: dict[str, variables.Variable],
                 where: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """(the values converted, problems), each problem '<file:line>: sentence with a fix'."""
    from fleet.decide import VariableError
    from fleet.decide.variables import resolve

    converted, problems = variables.check(values, known, where)
    try:
        resolve(converted)                                # versions, judged by the decisions' own rules
    except VariableError as exc:
        name = re.match(r"^(\w+)=", str(exc))
        problems.append(f"{where.get(name[1], 'the variables') if name else 'the variables'}: {exc}")
    return converted, problems


def parse_assignments(assignments: Iterable[str], known: dict[str, variables.Variable]) -> dict[str, Any]:
    """--set NAME=VALUE words -> {name: converted value}; an unknown name or a bad value is an InputError."""
    values = assignments_of(assignments)
    converted, problems = check_values(values, known, {n: f"--set {n}" for n in values})
    if problems:
        raise InputError("\n".join(problems))
    return converted


def assignments_of(words: Iterable[str]) -> dict[str, str]:
    """--set words -> {NAME: text}, their shape only: the values are checked with the inventory's (check_hosts)."""
    try:
        return variables.assignments(words)
    except variables.Rejected as exc:
        raise InputError(str(exc)) from None


def _all_roles(roles_path, by_host) -> list:
    """The roles the hosts run, plus every other one their inventory could name."""
    from fleet.roles import available_roles, load_roles, roles_dirs

    roles = {r.name: r for rs in (by_host or {}).values() for r in rs}
    rest = [n for n in available_roles(roles_path) if n not in roles]
    return list(roles.values()) + (load_roles(rest, roles_dirs(roles_path)) if rest else [])


def names_read(role) -> set[str]:
    """Variables a role's task values, `when:`, `why:` and templates read (jinja2.meta does the parsing)."""
    from jinja2 import meta

    from fleet.roles import _JINJA

    texts = [f"{{{{ {expr} }}}}" for expr in [role.when, *(t.when for t in role.tasks)] if expr]
    texts += [role.why or "", role.why_skipped or ""] + [s for t in role.tasks
                                                         for s in [t.name, t.why_skipped or "", *_strings(t.params)]]
    texts += [t.read_text(encoding="utf-8") for t in sorted((role.path.parent / "templates").glob("*"))]

    def find() -> set[str]:
        return set().union(*(_undeclared(meta, _JINJA, text) for text in texts))
    return template_cache.names(texts, find) - _CONTEXT


def _undeclared(meta, env, text: str) -> set[str]:
    import jinja2

    try:
        return meta.find_undeclared_variables(env.parse(text))
    except jinja2.TemplateSyntaxError:
        return set()                                       # load_role already reported it


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
