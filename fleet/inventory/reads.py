"""What a role reads that nothing gives: a name in a role's template, task value, `when:` or `why:` with no
default (the role's, another selected role's, the stack's, the probe's) and no value from the inventory or
`--set`. Caught before any host is contacted, naming the file and line that reads it and the closest name that
is given (a typo in one's own role's template is found as offline as one in the inventory).

A name the role guards itself (`x is defined`, `x | default(...)`) is left to it."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from fleet.errors import InputError


def check_reads(hosts, by_host: dict[str, list], reads: dict[str, set[str]]) -> None:
    """`reads`: each role's name -> the names it reads (fleet.roles.declared.declared)."""
    from fleet.variables import STACK

    problems: list[str] = []
    for host in hosts:
        roles = by_host.get(host.name, [])
        given = {*STACK, *host.vars, *(n for r in roles for n in r.defaults)}
        for role in roles:
            for name in sorted(reads[role.name] - given):
                where, guarded = _where(role, name)
                if guarded:
                    continue
                close = difflib.get_close_matches(name, sorted(given), n=1, cutoff=0.7)
                hint = f"did you mean '{close[0]}'? " if close else ""
                problem = (f"{where}: role {role.name} reads '{name}', which no default, inventory value or --set "
                           f"gives: {hint}(or give it a default under the role's defaults:)")
                if problem not in problems:
                    problems.append(problem)
    if problems:
        raise InputError("\n".join(problems))


def _where(role, name: str) -> tuple[str, bool]:
    """The first file:line of the role that names `name` (role.yaml, then its templates), and whether the role
    guards it (`is defined`, `| default`) somewhere."""
    word = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    guard = re.compile(rf"(?<![\w.]){re.escape(name)}\s*(?:is\s+(?:not\s+)?defined|\|\s*d(?:efault)?\b)")
    files = [Path(role.path), *sorted((Path(role.path).parent / "templates").glob("*"))]
    first, guarded = None, False
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        guarded = guarded or bool(guard.search(text))
        if first is None:
            for number, line in enumerate(text.splitlines(), 1):
                if word.search(line):
                    first = f"{path}:{number}"
                    break
    return first or str(role.path), guarded
