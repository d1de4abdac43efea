"""Every variable checked before the first connection: names (a typo is an error with the closest name) and
values (types, URL shapes, absolute paths, versions and choices), each problem with the file:line of the
value, exit 2, no host touched.

Which names exist is not a second list: it is the one defaults table (fleet.decide.DEFAULTS), the probe's own
settings, every available role's `defaults:` and every variable a role's templates read. Versions and choices
are judged by fleet.decide.variables.resolve itself, so the rule lives in one place.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from fleet.roles import template_cache
from fleet import yamlsrc
from fleet.errors import InputError

_CONTEXT = {"facts", "decisions", "host"}      # what rendering adds beside the variables
_URL = re.compile(r"^(https?|file)://\S+$")
# scp-like git@github.com:o/r, and an absolute path on the host (git clone takes a local repository: a mirror)
_GIT_URL = re.compile(r"^((https?|file|ssh|git)://\S+|[\w.-]+@[\w.-]+:\S+|/\S*)$")
# a venv, a checkout or an archive's files go there as a tree of their own: never a system directory
_OWN_TREE = {"python_env", "nvpl_home", "cudss_home", "cutlass_dir"}
_SYSTEM_DIRS = {"/", "/usr", "/usr/local", "/root", "/etc", "/opt", "/bin", "/sbin", "/lib", "/var", "/home"}
_BOOL_TEXT = {"true", "false", "yes", "no", "on", "off", "1", "0"}


def known_variables(roles) -> dict[str, Any]:
    """Name -> default (None where a role reads it without one), from every source of variables."""
    from fleet.decide import DEFAULTS
    from fleet.facts.sources import DEFAULTS as PROBE_DEFAULTS

    from fleet.decide.variables import PINS_VAR

    known: dict[str, Any] = {**DEFAULTS, **PROBE_DEFAULTS, PINS_VAR: {}}
    for role in roles:
        for name, value in role.defaults.items():
            known.setdefault(name, value)
        for name in names_read(role):
            known.setdefault(name, None)
    return known


def check_hosts(hosts, roles_path=(), by_host: dict[str, list] | None = None) -> None:
    """Raise one InputError listing every bad variable of these hosts. Known names come from every role the
    inventory could name (built-in and roles_path), not only those this run selects: a variable meant for a
    role that --roles leaves out is still a known one."""
    known = known_variables(_all_roles(roles_path, by_host))
    problems: list[str] = []
    for host in hosts:
        for problem in check_values(host.vars, known, host.var_where):
            if problem not in problems:       # a bad top-level value is one problem, not one per host
                problems.append(problem)
    if problems:
        raise InputError("\n".join(problems))


def check_values(values: dict[str, Any], known: dict[str, Any], where: dict[str, str]) -> list[str]:
    """Problems with `values` (merged variables of one host), each '<file:line>: sentence with a fix'."""
    from fleet.decide import VariableError
    from fleet.decide.variables import resolve

    problems, good = [], {}
    for name, value in values.items():
        at = where.get(name, "the variables")
        if name not in known:
            problems.append(f"{at}: unknown variable {name!r}: no role and no decision reads it"
                            f"{yamlsrc.closest(name, known).replace('valid keys', 'known variables')}")
            continue
        problem = check_value(name, value, known[name])
        if problem:
            problems.append(f"{at}: {problem}")
        else:
            good[name] = value
    try:
        resolve(good)                                     # versions and choices, judged by the decisions' own rules
    except VariableError as exc:
        name = re.match(r"^(\w+)=", str(exc))
        problems.append(f"{where.get(name[1], 'the variables') if name else 'the variables'}: {exc}")
    return problems


def check_value(name: str, value: Any, default: Any) -> str | None:
    """One sentence when `value` cannot be right for `name` (its type follows its default), else None."""
    shown = f"{name}={value!r}"
    if default is None:                  # read by a role that gives no default: only its shape can be judged
        return _shape(name, value.strip(), shown, default) if isinstance(value, str) else None
    if isinstance(default, bool):
        if isinstance(value, bool) or str(value).strip().lower() in _BOOL_TEXT:
            return None
        return f"{shown} is not true or false: write {name}: true (or false)"
    if isinstance(default, int):
        if not isinstance(value, bool) and (isinstance(value, int) or str(value).strip().isdigit()):
            return None
        return f"{shown} is not a whole number: write e.g. {name}: {default}"
    if isinstance(default, (list, dict)):
        if isinstance(value, type(default)):
            return None
        return f"{shown} must be {yamlsrc.type_name(default)}, like its default, not {yamlsrc.type_name(value)}"
    if value is None or isinstance(value, (bool, list, dict)):
        return f"{shown} must be text, not {yamlsrc.type_name(value)}; quote it"
    return _shape(name, str(value).strip(), shown, default)


def _shape(name: str, text: str, shown: str, default: Any) -> str | None:
    if not text:
        return None                                    # "" means "use the default behaviour" where allowed
    plain = re.match(r"^(http|git)://", text, re.I)
    if plain and name.endswith(("_repo", "_url", "_apt_repo")):
        # keyrings, .debs, wheels, archives and checkouts fleet fetches run or are trusted as root: a plain-text
        # download lets anyone on the path replace them
        return (f"{shown} is plain {plain[1].lower()}://, and what fleet installs from it runs as root, so anyone on "
                f"the network path could replace it: write https://{text[plain.end():]} (or file:///... for a local "
                "mirror)")
    if name.endswith("_repo") and name != "cuda_apt_repo":
        if not _GIT_URL.match(text):
            return (f"{shown} is not a git URL: write https://..., file:///..., git@host:owner/repo.git or an "
                    "absolute path of a repository on the host")
    elif name.endswith(("_url", "_apt_repo")):
        if not _URL.match(text):
            return f"{shown} is not a URL: write https://... (or file:///... for a local mirror)"
    elif name.endswith(("_dir", "_home", "_env", "_tmpdir")):
        example = default if isinstance(default, str) and default.startswith("/") else "/workspace/cache"
        if not text.startswith("/"):
            return f"{shown} is a path on the host and must be absolute: write one like {example}"
        if ".." in text.split("/"):
            return f"{shown} climbs with '..': write the directory it means, like {example}"
        if name in _OWN_TREE and (text.rstrip("/") or "/") in _SYSTEM_DIRS:
            # a venv or an archive's `cp -a` over /usr/local shadows python3 (and more) for every user of the host
            return (f"{shown} is a system directory that fleet would fill as root: write a directory of its own, "
                    f"like {example}")
    return None


def parse_assignments(assignments: Iterable[str], known: dict[str, Any]) -> dict[str, str]:
    """--set NAME=VALUE words -> {name: value}; an unknown name or a bad value is an InputError."""
    values: dict[str, str] = {}
    for text in assignments:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InputError(f"--set {text!r} is not NAME=VALUE: write it like --set cuda_version=13.0")
        values[name] = value.strip()
    problems = check_values(values, known, {n: f"--set {n}" for n in values})
    if problems:
        raise InputError("\n".join(problems))
    return values


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
