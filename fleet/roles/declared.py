"""Which variables a set of roles knows: the stack's declarations (fleet/variables.py), each role's own
(`variables:` and plain `defaults:` in its role.yaml), and any name a role's values, `when:`, `why:` and templates
read without declaring it (taking any value). What is not among them is a typo (fleet/inventory/validate.py).
"""

from __future__ import annotations

from typing import Any

from fleet import variables
from fleet.roles import template_cache
from fleet.roles.sandbox import JINJA

_CONTEXT = {"facts", "decisions", "host"}      # what rendering adds beside the variables


def variables_of(roles) -> dict[str, variables.Variable]:
    """Name -> its declaration, from the stack's, each role's, and (any value) a name a role reads undeclared."""
    return declared(roles)[0]


def declared(roles) -> tuple[dict[str, variables.Variable], dict[str, set[str]]]:
    """(variables_of(roles), each role's name -> the names it reads): the one pass over the roles' texts that both
    the variables' check and the reads' check (fleet/inventory/reads.py) use."""
    known = dict(variables.STACK)
    reads = {}
    for role in roles:
        reads[role.name] = names_read(role)
        for name, var in role.variables.items():
            known.setdefault(name, var)
        for name in reads[role.name]:     # read without being declared: any value, text shaped by the name
            known.setdefault(name, variables.Variable(name, "any", None))
    return known, reads


def names_read(role) -> set[str]:
    """Variables a role's task values, `when:`, `why:` and templates read (jinja2.meta does the parsing); found
    once per loaded role (Role.names: every host's verify fingerprint asks for them)."""
    if getattr(role, "names", None) is not None:
        return set(role.names)
    from jinja2 import meta

    texts = [f"{{{{ {expr} }}}}" for expr in [role.when, *(t.when for t in role.tasks)] if expr]
    texts += [role.why or "", role.why_skipped or ""] + [s for t in role.tasks
                                                         for s in [t.name, t.why_skipped or "", *_strings(t.params)]]
    texts += [_template(role, t) for t in sorted((role.path.parent / "templates").glob("*"))]

    def find() -> set[str]:
        return set().union(*(_undeclared(meta, JINJA, text) for text in texts))
    found = template_cache.names(texts, find) - _CONTEXT
    if hasattr(role, "names"):
        role.names = frozenset(found)
    return found


def _template(role, path) -> str:
    """A file of the role's templates/ as the role renders it (Role.template: read once per loaded role)."""
    if hasattr(role, "template") and path.is_file():
        return role.template(path.name)
    return path.read_text(encoding="utf-8")


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
