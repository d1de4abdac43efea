"""Roles as data: <name>/role.yaml (+ templates/), loaded, validated and rendered with Jinja2.

    description: what the role manages
    variables:                                   # what only this role reads, each declared once (fleet/variables.py)
      cutlass_ref: {type: text, default: v4.3.0, description: the tag checked out}
    defaults: {my_dir: /srv/mine}                # the older shape: NAME: VALUE, typed as its value
    when: "decisions.compat.use"                 # optional: the whole role applies only if true (the ONLY gate)
    why: "{{ decisions.compat.reason }}"         # optional: the reason shown beside a change it plans
    why_skipped: "{{ decisions.compat.reason }}" # optional: why it is left out, in plain words (-v); -vv adds
                                                 # the raw `when:` (without it, -v shows the raw condition)
    tasks:
      - name: clone CUTLASS
        git: {repo: "{{ cutlass_repo }}", ref: "{{ cutlass_ref }}", dest: "{{ cutlass_dir }}"}
        when: "..."                              # optional, over facts, decisions and variables
        why_skipped: "git is installed already"  # optional: the plain words for a false `when:` (may be templated)
        after: [torch]                           # optional: runs once those roles' tasks succeeded (also per role)
        locks: [systemd]                         # optional: what it holds while it runs (default: its type's)

Apply runs independent tasks at once on the host (fleet/engine/chains.py): a role's tasks in order, after the
roles its `after:` names, and never two tasks holding the same lock at once (the dpkg lock, a venv, a path).

Loading validates structure with file:line errors before any host is contacted; rendering happens per host,
once its facts and decisions are known. A user adds a role without touching Python.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from fleet.roles import template_cache
from fleet import variables as declarations, yamlsrc
from fleet.errors import InputError
from fleet.resources import TYPES, Resource

ROLE_KEYS = {"description", "variables", "defaults", "when", "why", "why_skipped", "after", "tasks"}
TASK_KEYS = {"name", "when", "why_skipped", "sudo", "after", "locks", "timeout"}
DEFAULT_ORDER = ("cuda_toolkit", "fabric_manager", "cuda_compat", "nvpl", "cudss", "env_hooks", "cutlass", "torch", "verify")

# The built-in roles: roles/ at the repository's root, shipped as the package fleet.builtin_roles (pyproject.toml's
# package-dir): the import finds them in a wheel (fleet/builtin_roles/) and in an editable install (roles/) alike.
def _builtin_dir() -> Path:
    try:
        from fleet import builtin_roles
    except ImportError as exc:
        # a checkout run from its source without an install (PYTHONPATH=checkout, as on the lent GPU machine):
        # roles/ beside the package; else an install made before roles/ moved
        checkout = Path(__file__).resolve().parents[2] / "roles"
        if (checkout / "verify" / "role.yaml").is_file():
            return checkout
        raise ImportError("fleet's built-in roles (the package fleet.builtin_roles: roles/ in a checkout) are not "
                          "installed with this fleet; install it (in a checkout: pip install -e . or "
                          "./scripts/setup.sh)") from exc
    return Path(builtin_roles.__file__).resolve().parent


BUILTIN_DIR = _builtin_dir()

# Sandboxed: a role is data, and a shared role's `when:` or template is not trusted with the controller. Jinja's
# immutable sandbox refuses what reaches Python's internals (`().__class__...`, a function's __globals__, hence
# os.system) and what changes a value in place (list.append, dict.update), with SecurityError: reported as the
# role's error at its file:line (docs/ARCHITECTURE.md: Resources and roles). _safe_compile refuses the first kind
# at load already, before any host.
_JINJA = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
_JINJA.filters["dashed"] = lambda v: str(v).replace(".", "-")
_JINJA.filters["shq"] = lambda v: shlex.quote(str(v))   # for values a template writes into shell code
_LONE = re.compile(r"^\{\{(?P<expr>(?:(?!\}\}).)*)\}\}\Z", re.S)


# Compiling is most of rendering's cost (Jinja parses, generates Python and compiles it: ~2.5 ms a value, against
# microseconds to render), and every host renders the same role texts, twice in a no-op (the last record's checks
# and the live ones). Compiled once per distinct text; a compiled template or expression renders reentrantly,
# so the worker threads share them. Errors are not cached: they raise again, with the same message.
@functools.lru_cache(maxsize=2048)
def _compiled(source: str) -> jinja2.Template:
    return _from_code(template_cache.code(_JINJA, "checked template", source, lambda: _safe_compile(source)))


@functools.lru_cache(maxsize=2048)
def _expression(expr: str):
    def build():
        _JINJA.compile_expression(expr)   # Jinja's own check and error for an expression ("chunk after ...")
        return _safe_compile(_EXPRESSION.format(expr=expr))
    # What compile_expression makes of it: a template that sets `result`, read back by TemplateExpression
    template = _from_code(template_cache.code(_JINJA, "checked expression", expr, build))
    return jinja2.environment.TemplateExpression(template, undefined_to_none=False)


@functools.lru_cache(maxsize=256)
def _compiled_file(source: str, name: str, filename: str) -> jinja2.Template:
    code = template_cache.code(_JINJA, f"checked file:{name}:{filename}", source,
                               lambda: _safe_compile(source, name, filename))
    return _from_code(code)


def _safe_compile(source: str, name: str | None = None, filename: str | None = None):
    """Compile a role text, refusing at load what the sandbox would refuse at render: a name that starts with
    '_' (`x.__class__`, `x['__globals__']`, `x|attr('__init__')`: the ways to Python's internals, hence to
    os.system) is a TemplateSyntaxError at its line, before any host. Compiled code is cached only once this
    passed (template_cache), so a cached text was checked; the sandbox still guards every render."""
    tree = _JINJA.parse(source, name, filename)
    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem, jinja2.nodes.Filter)):
        if isinstance(node, jinja2.nodes.Getattr):
            word = node.attr
        elif isinstance(node, jinja2.nodes.Getitem):
            word = node.arg.value if isinstance(node.arg, jinja2.nodes.Const) else None
        else:
            word = node.args[0].value if node.name == "attr" and node.args and isinstance(
                node.args[0], jinja2.nodes.Const) else None
        if isinstance(word, str) and word.startswith("_"):
            raise jinja2.TemplateSyntaxError(
                f"{word!r} is not reachable from a role: roles render in Jinja's sandbox, which reads variables, "
                "facts and decisions and nothing of Python's internals; take it out", node.lineno, name, filename)
    return _JINJA.compile(tree, name, filename)


_EXPRESSION = "{{% set result = ({expr}\n) %}}"


def _from_code(code) -> jinja2.Template:
    return _JINJA.template_class.from_code(_JINJA, code, _JINJA.make_globals(None))


@dataclass
class TaskSpec:
    role: str
    index: int
    name: str
    type: str
    params: dict[str, Any]        # raw (templated) values
    when: str | None
    sudo: bool | None
    where: str                    # file:line, for errors
    lines: dict[str, str] = field(default_factory=dict)   # parameter -> its file:line
    when_where: str = ""          # file:line of `when:`
    after: tuple[str, ...] = ()   # roles whose tasks must have succeeded first (the role's `after:` and the task's)
    locks: tuple[str, ...] | None = None   # what it holds while it runs, where the task names it (else its type's)
    timeout: Any = None           # `timeout:` seconds (may be templated): the apply's deadline on the host
    why_skipped: str | None = None   # `why_skipped:`: why a false `when:` leaves it out, in plain words (templated)

    @property
    def id(self) -> str:
        return f"{self.role}.{self.index}"


@dataclass
class Role:
    name: str
    path: Path
    description: str
    defaults: dict[str, Any]
    when: str | None
    tasks: list[TaskSpec] = field(default_factory=list)
    when_where: str = ""
    why: str | None = None
    why_skipped: str | None = None   # `why_skipped:`: why a false `when:` leaves the role out, in plain words
    variables: dict[str, declarations.Variable] = field(default_factory=dict)   # what it declares

    @property
    def origin(self) -> str:
        """Where the role came from: 'built-in' or its directory (shown by --check)."""
        return "built-in" if self.path.parent.parent == BUILTIN_DIR else str(self.path.parent)

    def template_path(self, name: str) -> Path:
        return self.path.parent / "templates" / name

    def template(self, name: str, where: str = "") -> str:
        return _template_source(self.template_path(name), where or str(self.path))


@dataclass
class Task:
    """A task rendered for one host: the resource ready to give its check and apply snippets."""

    spec: TaskSpec
    resource: Resource
    enabled: bool
    skip_reason: str | None = None   # why it is left out: the role's `why_skipped:` words, else skip_condition
    skip_condition: str | None = None   # the raw condition: "condition is false: EXPR" or "role condition ..."
    why: str | None = None        # the role's rendered `why:`
    deadline: int | None = None   # seconds its apply may run on the host (fleet.sections.bounded)

    @property
    def id(self) -> str:
        return self.spec.id


def roles_dirs(extra: list[Path] | tuple = ()) -> list[Path]:
    """Where roles are looked up: the declared extra directories (an inventory's roles_path), then the built-in
    ones. Never the working directory or a folder that merely sits beside an inventory: a planted roles/ would
    run as root on every host."""
    out = []
    for path in [*map(Path, extra), BUILTIN_DIR]:
        if path not in out:
            out.append(path)
    return out


def available_roles(extra: list[Path] | tuple = ()) -> dict[str, str]:
    """Every role name that can be named -> where it comes from (as Role.origin); the declared
    directories come first, so a role there shadows the built-in one of the same name (as load_roles does)."""
    found: dict[str, str] = {}
    for directory in roles_dirs(extra):
        for path in sorted(directory.glob("*/role.yaml")):
            found.setdefault(path.parent.name, "built-in" if directory == BUILTIN_DIR else str(path.parent))
    return found


def roles_for_hosts(hosts, dirs: list[Path], only: list[str] | None = None) -> dict[str, list[Role]]:
    """Each host's roles, in its order (Host.roles, else the built-in nine); `only` (--roles) narrows every
    host's list to those names, in the order given. Each role file is loaded once, before any host is touched."""
    cache: dict[str, Role] = {r.name: r for r in load_roles(only, dirs)} if only else {}  # a misspelt name fails
    out = {}
    for host in hosts:
        names = list(host.roles or DEFAULT_ORDER)
        if only:
            names = [n for n in only if n in names]
        for name in names:
            if name not in cache:
                cache[name] = load_roles([name], dirs)[0]
        out[host.name] = [cache[n] for n in names]
    if only and not any(out.values()):
        raise InputError(f"--roles {','.join(only)}: none of these is among the roles of the selected hosts; "
                         "see 'roles:' in the inventory")
    return out


def every_role(roles_path=(), by_host: dict | None = None) -> list:
    """The roles the hosts run (`by_host`, loaded already), plus every other one their inventory could name: a
    variable meant for a role that --roles leaves out is still a known one."""
    roles = {r.name: r for rs in (by_host or {}).values() for r in rs}
    rest = [n for n in available_roles(roles_path) if n not in roles]
    return list(roles.values()) + (load_roles(rest, roles_dirs(roles_path)) if rest else [])


def load_roles(names: list[str] | None, dirs: list[Path]) -> list[Role]:
    names = list(names or DEFAULT_ORDER)
    roles = []
    for name in names:
        path = next((d / name / "role.yaml" for d in dirs if (d / name / "role.yaml").is_file()), None)
        if path is None:
            known = sorted({p.parent.name for d in dirs for p in d.glob("*/role.yaml")})
            raise InputError(f"no role named {name!r} (looked in {', '.join(map(str, dirs)) or 'no roles dir'})"
                             f"{yamlsrc.closest(name, known).replace('valid keys', 'roles')}")
        roles.append(load_role(path))
    return roles


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
        _check_syntax(why, f"{path}:{loc.line('why')}")
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
    TYPES[kind].validate(params, where_params, check_types=False)  # names now; types after rendering
    for key, value in (params.items() if isinstance(params, dict) else ()):
        _check_syntax(value, lines[key])
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
        _timeout(timeout, f"{loc.path}:{loc.line('tasks', index, 'timeout')}")
    return TaskSpec(role, index, str(task.get("name") or f"{kind} #{index}"), kind, params,
                    _expr(task.get("when"), loc, ("tasks", index, "when")), sudo, where_params, lines,
                    f"{loc.path}:{loc.line('tasks', index, 'when')}", after=after, locks=locks, timeout=timeout,
                    why_skipped=_words(task.get("why_skipped"), f"{loc.path}:{loc.line('tasks', index, 'why_skipped')}"))


def _words(value: Any, where: str) -> str | None:
    """`why_skipped:`: one line of text (it may be templated); checked at load like every template."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: 'why_skipped' is the plain words saying why the `when:` leaves it out, e.g. "
                         "why_skipped: \"git is installed already\"")
    _check_syntax(value, where)
    return " ".join(value.split())


def _timeout(value: Any, where: str) -> int | None:
    """A task's `timeout:`: whole seconds > 0 (a template is judged once rendered, None until then)."""
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        _check_syntax(value, where)
        return None
    text = str(value).strip()
    if isinstance(value, bool) or not text.isdigit() or int(text) <= 0:
        raise InputError(f"{where}: 'timeout' must be whole seconds above 0 (how long the task's apply may run "
                         f"on the host), not {value!r}; write e.g. timeout: 3600")
    return int(text)


def _check_syntax(value: Any, where: str) -> None:
    """Templated values must compile (syntax, unknown filters) at load, before any host is contacted."""
    if isinstance(value, (list, dict)):
        for item in (value.values() if isinstance(value, dict) else value):
            _check_syntax(item, where)
    elif isinstance(value, str) and ("{{" in value or "{%" in value):
        try:
            _compiled(value)   # compiled once here, at load: every render then takes it from the cache
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"{where}: template error in {value!r}: {exc.message}") from None


def _check_template(kind: str, params: Any, role_dir: Path, lines: dict[str, str]) -> None:
    """A task's template must exist and parse: found at load, not on the first host that renders it."""
    name = params.get("template") if isinstance(params, dict) and TYPES[kind].template_target else None
    if not isinstance(name, str) or "{" in name:
        return
    path = role_dir / "templates" / name
    source = _template_source(path, lines["template"])
    try:
        _compiled_file(source, name, str(path))   # as _render_template takes it: compiled once, at load
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: template syntax error: {exc.message} "
                         f"(used at {lines['template']})") from None


def _template_source(path: Path, where: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        raise InputError(f"{where}: template {path.name!r} not found at {path}; "
                         "put it in the role's templates/ folder") from None


def _expr(value: Any, loc: yamlsrc.Located, keys: tuple) -> str | None:
    if value is None:
        return None
    text = str(value).lower() if isinstance(value, bool) else str(value)
    try:
        _expression(text)
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{loc.path}:{loc.line(*keys)}: 'when' is not a valid expression ({exc.message}); "
                         "write e.g. when: \"decisions.compat.use\"") from None
    return text


# -- rendering for one host ----------------------------------------------------------------------

def context(variables: dict[str, Any], facts: dict | None, decisions: dict | None, host: dict) -> dict[str, Any]:
    ctx = dict(variables)
    ctx.update(facts=facts or {}, decisions=decisions or {}, host=host)
    return ctx


def render_role(role: Role, variables: dict[str, Any], facts, decisions, host: dict) -> list[Task]:
    merged = declarations.defaults()   # the stack's own defaults (cuda_version, python_env, sources) come first
    merged.update(role.defaults)
    merged.update(variables)
    ctx = context(merged, facts, decisions, host)
    role_on = _truth(role.when, ctx, role.when_where or str(role.path)) if role.when else True
    why = str(_render(role.why, ctx, role.when_where or str(role.path), whole=True)) if role.why and role_on else None
    tasks = []
    role_off = None if role_on else (f"role condition is false: {role.when}", _said(role.why_skipped, ctx))
    for spec in role.tasks:
        enabled, skip = role_on, role_off
        if enabled and spec.when:
            enabled = _truth(spec.when, ctx, spec.when_where or spec.where)
            skip = None if enabled else (f"condition is false: {spec.when}", _said(spec.why_skipped, ctx))
        if not enabled:  # not rendered: its values may only make sense where it applies
            values = TYPES[spec.type].validate(spec.params, spec.where, check_types=False)
            condition, words = skip
            tasks.append(Task(_named(spec, ctx, strict=False), TYPES[spec.type](values), False, words or condition,
                              skip_condition=condition))
            continue
        params = _render_params(spec, ctx)
        target = TYPES[spec.type].template_target
        if target and isinstance(params, dict) and params.get("template"):
            where = spec.lines.get("template", spec.where)
            params[target] = _render_template(role, params.pop("template"), ctx, where)
        spec = _named(spec, ctx)
        resource = TYPES[spec.type](TYPES[spec.type].validate(params, spec.where))
        deadline = (_timeout(_render(spec.timeout, ctx, spec.where), spec.where) if spec.timeout is not None
                    else resource.deadline())
        tasks.append(Task(spec, resource, True, why=why, deadline=deadline))
    return tasks


def _said(words: str | None, ctx: dict) -> str | None:
    """A `why_skipped:` rendered for this host; None where there is none or it does not render here (then the
    raw condition is shown: never a half-rendered sentence)."""
    if not words:
        return None
    try:
        text = " ".join(str(_render(words, ctx, "why_skipped", whole=True)).split())
    except (InputError, TypeError, AttributeError, KeyError, ValueError):
        return None
    return text or None


def role_applies(role: Role, variables: dict[str, Any], facts, decisions, host: dict) -> bool:
    """The role's `when:` for one host (what `fleet decide` lists as acting)."""
    ctx = context({**declarations.defaults(), **role.defaults, **variables}, facts, decisions, host)
    return _truth(role.when, ctx, role.when_where or str(role.path)) if role.when else True


def _named(spec: TaskSpec, ctx: dict, *, strict: bool = True) -> TaskSpec:
    """A copy of the spec whose display name is rendered for this host (a skipped task's, where it can be)."""
    if "{" not in spec.name:
        return spec
    try:
        return dataclasses.replace(spec, name=str(_render(spec.name, ctx, spec.where, whole=True)))
    except InputError:
        if strict:
            raise
        return spec


def _render_params(spec: TaskSpec, ctx: dict) -> Any:
    """Render a task's parameters; an error names the line of the parameter it is in."""
    if not isinstance(spec.params, dict):
        return _render(spec.params, ctx, spec.where)
    return {k: _render(v, ctx, spec.lines.get(k, spec.where)) for k, v in spec.params.items()}


def _render_template(role: Role, name: str, ctx: dict, where: str) -> str:
    """Render templates/<name>; an undefined variable is named with the template's own file:line."""
    path = role.template_path(name)
    source = role.template(name, where)
    try:
        return _compiled_file(source, name, str(path)).render(ctx)
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: template syntax error: {exc.message} (used at {where})") from None
    except jinja2.UndefinedError as exc:
        line = _template_line(exc, str(path))
        raise InputError(f"{path}{f':{line}' if line else ''}: {exc.message} (used at {where}); "
                         "define it in the role's defaults or the inventory's vars") from None
    except jinja2.TemplateError as exc:   # a SecurityError too: the sandbox refused something at that line
        line = _template_line(exc, str(path))
        raise InputError(f"{path}{f':{line}' if line else ''}: template error: {exc} (used at {where})") from None


def _template_line(exc: BaseException, filename: str) -> int | None:
    """The template line an error came from: Jinja maps its frames back to the template's file and lines."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _render(value: Any, ctx: dict, where: str, *, whole: bool = False) -> Any:
    """Render templates in a task's values; a value that is exactly '{{ expr }}' keeps its type (a list)."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        lone = _LONE.match(value)
        try:
            if lone and not whole:
                result = _expression(lone["expr"])(**ctx)
                return result if isinstance(result, (list, dict, bool, int, float)) else ("" if result is None
                                                                                       else str(result))
            return _compiled(value).render(ctx)
        except jinja2.UndefinedError as exc:
            raise InputError(f"{where}: {exc.message}; define it in the role's defaults or the inventory's vars") from None
        except jinja2.TemplateError as exc:
            raise InputError(f"{where}: template error: {exc}") from None
    if isinstance(value, list):
        return [_render(v, ctx, where) for v in value]
    if isinstance(value, dict):
        return {k: _render(v, ctx, where) for k, v in value.items()}
    return value


def _truth(expr: str, ctx: dict, where: str) -> bool:
    try:
        return bool(_expression(expr)(**ctx))
    except jinja2.UndefinedError as exc:
        raise InputError(f"{where}: 'when: {expr}' uses something undefined ({exc.message})") from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as exc:  # e.g. comparing None < 3
        raise InputError(f"{where}: 'when: {expr}' cannot be evaluated ({exc})") from None
