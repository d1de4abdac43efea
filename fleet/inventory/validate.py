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
from fleet.inventory import set_values


def check_hosts(hosts, known: dict[str, variables.Variable]) -> None:
    """Check and convert every host's variables against `known` (fleet.roles.declared.variables_of), or raise one
    InputError listing every bad one."""
    problems: list[str] = []
    for host in hosts:
        converted, found = check_values(host.vars, known, host.var_where)
        problems += [problem for problem in found if problem not in problems]   # a bad top-level value: once
        if not found:
            host.vars = converted     # else left as written: fleet run goes on (warning), nothing renders them
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
    values = set_values(assignments)
    converted, problems = check_values(values, known, {n: f"--set {n}" for n in values})
    if problems:
        raise InputError("\n".join(problems))
    return converted
