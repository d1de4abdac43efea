"""Loading a role: <dir>/<name>/role.yaml (+ templates/) into a Role, validated before any host is contacted: every
key, task and parameter named at its file:line, every template and `when:` compiled (fleet/roles/sandbox.py), each
declared variable checked against its own declaration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from fleet import variables as declarations, yamlsrc
from fleet.errors import InputError
from fleet.resources import TYPES
from fleet.roles.role import Role, TaskSpec, template_source
from fleet.roles.sandbox import compiled, compiled_file, expression

ROLE_KEYS = {"description", "variables", "defaults", "when", "why", "why_skipped", "after", "tasks"}
TASK_KEYS = {"name", "when", "why_skipped", "sudo", "after", "locks", "timeout"}


def load_role(path: Path) -> Role:
    loc = yamlsrc.load(path)
    doc = loc.data
    if not isinstance(doc, dict):
        raise InputError("a role file is a mapping with 'tasks:'", path=str(path), line=1)
    for key in doc:
        if key not in ROLE_KEYS:
            raise InputError(f"unknown key {key!r} in the role{yamlsrc.closest(key, ROLE_KEYS)}",
                             path=str(path), line=loc.line(key))
    declared = _declared(loc, path)
    defaults = {name: var.default for name, var in declared.items()}
    why = doc.get("why")
    if why is not None:
        check_syntax(why, f"{path}:{loc.line('why')}")
    role = Role(path.parent.name, path, str(doc.get("description", "")), defaults,
                _expr(doc.get("when"), loc, ("when",)), when_where=f"{path}:{loc.line('when')}",
                why=None if why is None else str(why),
                why_skipped=_words(doc.get("why_skipped"), f"{path}:{loc.line('why_skipped')}"),
                variables=declared)
    tasks = doc.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise InputError("a role needs a non-empty 'tasks:' list", path=str(path), line=loc.line("tasks"))
    role_after = _names(doc.get("after"), "after", f"{path}:{loc.line('after')}", "role names, e.g. [torch]")
    for i, task in enumerate(tasks):
        spec = _task(role.name, i, task, loc)
        spec.after = tuple(dict.fromkeys(role_after + spec.after))
        role.tasks.append(spec)
    return role


def _declared(loc: yamlsrc.Located, path: Path) -> dict[str, declarations.Variable]:
    """The role's `variables:` (each a type, a default, a description, ...) and plain `defaults:` (typed as their
    values), each checked here: a default its own declaration refuses is the role's mistake, at its line."""
    out: dict[str, declarations.Variable] = {}
    for key in ("variables", "defaults"):
        section = loc.data.get(key) or {}
        if not isinstance(section, dict):
            raise InputError(f"'{key}' must be a mapping of NAME: " + ("{type: ..., default: ...}" if key == "variables"
                             else "VALUE"), path=str(path), line=loc.line(key))
        for name, spec in section.items():
            where = f"{path}:{loc.line(key, name)}"
            if name in out:
                raise InputError(f"{where}: {name!r} is declared twice in this role; keep one")
            try:
                out[name] = (declarations.from_spec(name, spec, path.parent.name) if key == "variables" else
                             declarations.from_default(name, spec, path.parent.name))
            except declarations.Rejected as exc:
                raise InputError(f"{where}: {exc}") from None
    return out


def _names(value: Any, key: str, where: str, example: str) -> tuple[str, ...]:
    """`after:` and `locks:`: a list of plain names (one name alone is taken as a list of one)."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() and "{" not in v for v in items):
        raise InputError(f"{where}: '{key}' is a list of {example}")
    return tuple(v.strip() for v in items)


def _task(role: str, index: int, task: Any, loc: yamlsrc.Located) -> TaskSpec:
    where = f"{loc.path}:{loc.line('tasks', index)}"
    if not isinstance(task, dict):
        raise InputError(f"{where}: a task is a mapping such as '{{name: ..., apt: {{packages: [...]}}}}'")
    types = [k for k in task if k in TYPES]
    unknown = [k for k in task if k not in TYPES and k not in TASK_KEYS]
    if unknown:
        raise InputError(f"{loc.path}:{loc.line('tasks', index, unknown[0])}: unknown key {unknown[0]!r} in a task"
                         f"{yamlsrc.closest(unknown[0], set(TYPES) | TASK_KEYS)}")
    if len(types) != 1:
        raise InputError(f"{where}: a task names exactly one resource type ({', '.join(sorted(TYPES))}); "
                         f"this one names {len(types)}")
    kind = types[0]
    params = task[kind]
    where_params = f"{loc.path}:{loc.line('tasks', index, kind)}"
    lines = ({k: f"{loc.path}:{loc.line('tasks', index, kind, k)}" for k in params}
             if isinstance(params, dict) else {})
    for key in lines:
        if key not in TYPES[kind].params:  # named at its own line, before validate names the task's
            raise InputError(f"{lines[key]}: unknown parameter {key!r} for {kind}"
                             f"{yamlsrc.closest(key, TYPES[kind].params)}")
    unrendered = TYPES[kind].validate(params, where_params, check_types=False)  # names now; types after rendering
    for key, value in (params.items() if isinstance(params, dict) else ()):
        check_syntax(value, lines[key])
    _check_template(kind, params, Path(loc.path).parent, lines)
    sudo = task.get("sudo")
    if sudo is not None and not isinstance(sudo, bool):
        raise InputError(f"{loc.path}:{loc.line('tasks', index, 'sudo')}: 'sudo' must be true or false")
    after = _names(task.get("after"), "after", f"{loc.path}:{loc.line('tasks', index, 'after')}",
                   "role names, e.g. [torch]")
    locks = (None if "locks" not in task else
             _names(task.get("locks"), "locks", f"{loc.path}:{loc.line('tasks', index, 'locks')}",
                    "names of what the task holds while it runs, e.g. [systemd] or ['path:/etc/x']"))
    timeout = task.get("timeout")
    if timeout is not None:
        timeout_of(timeout, f"{loc.path}:{loc.line('tasks', index, 'timeout')}")
    return TaskSpec(role, index, str(task.get("name") or f"{kind} #{index}"), kind, params,
                    _expr(task.get("when"), loc, ("tasks", index, "when")), sudo, where_params, lines,
                    f"{loc.path}:{loc.line('tasks', index, 'when')}", after=after, locks=locks, timeout=timeout,
                    why_skipped=_words(task.get("why_skipped"), f"{loc.path}:{loc.line('tasks', index, 'why_skipped')}"),
                    unrendered=unrendered)


def _words(value: Any, where: str) -> str | None:
    """`why_skipped:`: one line of text (it may be templated); checked at load like every template."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: 'why_skipped' is the plain words saying why the `when:` leaves it out, e.g. "
                         "why_skipped: \"git is installed already\"")
    check_syntax(value, where)
    return " ".join(value.split())


def timeout_of(value: Any, where: str) -> int | None:
    """A task's `timeout:`: whole seconds > 0 (a template is judged once rendered, None until then)."""
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        check_syntax(value, where)
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) <= 0:
        raise InputError(f"{where}: 'timeout' must be whole seconds above 0 (how long the task's apply may run "
                         f"on the host), not {value!r}; write e.g. timeout: 3600")
    return int(text)


def check_syntax(value: Any, where: str) -> None:
    """Templated values must compile (syntax, unknown filters) at load, before any host is contacted."""
    if isinstance(value, (list, dict)):
        for item in (value.values() if isinstance(value, dict) else value):
            check_syntax(item, where)
    elif isinstance(value, str) and ("{{" in value or "{%" in value):
        try:
            compiled(value)   # compiled once here, at load: every render then takes it from the cache
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"{where}: template error in {value!r}: {exc.message}") from None


def _check_template(kind: str, params: Any, role_dir: Path, lines: dict[str, str]) -> None:
    """A task's template must exist and parse: found at load, not on the first host that renders it."""
    name = params.get("template") if isinstance(params, dict) and TYPES[kind].template_target else None
    if not isinstance(name, str) or "{" in name:
        return
    path = role_dir / "templates" / name
    source = template_source(path, lines["template"])
    try:
        compiled_file(source, name, str(path))   # as _render_template takes it: compiled once, at load
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: template syntax error: {exc.message} "
                         f"(used at {lines['template']})") from None




def _expr(value: Any, loc: yamlsrc.Located, keys: tuple) -> str | None:
    if value is None:
        return None
    text = str(value).lower() if isinstance(value, bool) else str(value)
    try:
        expression(text)
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{loc.path}:{loc.line(*keys)}: 'when' is not a valid expression ({exc.message}); "
                         "write e.g. when: \"decisions.compat.use\"") from None
    return text
