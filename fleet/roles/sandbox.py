"""Role texts in Jinja's immutable sandbox: compiled once per distinct text (and per machine: template_cache.py),
refused at load where they reach for Python's internals, rendered with each error at its file:line.

    compiled(text) / expression(expr) / compiled_file(source, name, filename)   the cached compiled forms
    render(value, ctx, where) -> value      a task's values (a lone '{{ expr }}' keeps its type: a list stays one)
    truth(expr, ctx, where) -> bool         a `when:`
"""

from __future__ import annotations

import functools
import re
import shlex
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import internalcode

from fleet.errors import InputError
from fleet.roles import template_cache

# Sandboxed: a role is data, and a shared role's `when:` or template is not trusted with the controller. Jinja's
# immutable sandbox refuses what reaches Python's internals (`().__class__...`, a function's __globals__, hence
# os.system) and what changes a value in place (list.append, dict.update), with SecurityError: reported as the
# role's error at its file:line (docs/ARCHITECTURE.md: Resources and roles). safe_compile refuses the first kind
# at load already, before any host.
# Plain values: their type alone decides every sandbox verdict about them (no instance of these can carry an
# attribute of its own, nor claim another class through __class__).
_PLAIN = frozenset({dict, list, tuple, str, int, float, bool, type(None), set, frozenset})
_DICT_ATTRIBUTES = frozenset(dir(dict))
_BUILTIN_METHOD = type({}.get)


class Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, reaching the same answers with less work on the plain values roles read (a
    converged host renders ~50 role texts, each a few attribute reads and calls: issue 46). Every other value takes
    Jinja's own path. tests/unit/test_role_render_fast.py holds each shortcut to Jinja's answer."""

    def getattr(self, obj, attribute):
        # `decisions.compat`: no attribute of a dict is named so, and Jinja then reads the key
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)

    def is_safe_attribute(self, obj, attr, value):
        # the verdict reads the object's type and the name alone (never the value): kept per (type, name)
        kind = type(obj)
        if kind not in _PLAIN or type(attr) is not str:
            return super().is_safe_attribute(obj, attr, value)
        verdict = _SAFE.get((kind, attr))
        if verdict is None:
            verdict = super().is_safe_attribute(obj, attr, value)
            if len(_SAFE) < 4096:
                _SAFE[kind, attr] = verdict
        return verdict

    @internalcode
    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's own signature)
        # `facts.system.get('systemd')`: a plain value's builtin method takes no attribute (so none that marks it
        # unsafe or asks for the context): what Context.call does then, without asking
        if type(__obj) is _BUILTIN_METHOD and type(__obj.__self__) in _PLAIN:
            kwargs.pop("_block_vars", None)
            kwargs.pop("_loop_vars", None)
            try:
                return __obj(*args, **kwargs)
            except StopIteration:
                return __self.undefined("value was undefined because a callable raised a StopIteration exception")
        return super().call(__context, __obj, *args, **kwargs)


_SAFE: dict[tuple[type, str], bool] = {}

JINJA = Sandbox(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
JINJA.filters["dashed"] = lambda v: str(v).replace(".", "-")
JINJA.filters["shq"] = lambda v: shlex.quote(str(v))   # for values a template writes into shell code
LONE = re.compile(r"^\{\{(?P<expr>(?:(?!\}\}).)*)\}\}\Z", re.S)


# Compiling is most of rendering's cost (Jinja parses, generates Python and compiles it: ~2.5 ms a value, against
# microseconds to render), and every host renders the same role texts, twice in a no-op (the last record's checks
# and the live ones). Compiled once per distinct text; a compiled template or expression renders reentrantly,
# so the worker threads share them. Errors are not cached: they raise again, with the same message.
@functools.lru_cache(maxsize=2048)
def compiled(source: str) -> jinja2.Template:
    return from_code(template_cache.code(JINJA, "checked template", source, lambda: safe_compile(source)))


@functools.lru_cache(maxsize=2048)
def expression(expr: str):
    def build():
        JINJA.compile_expression(expr)   # Jinja's own check and error for an expression ("chunk after ...")
        return safe_compile(_EXPRESSION.format(expr=expr))
    # What compile_expression makes of it: a template that sets `result`, read back by TemplateExpression
    template = from_code(template_cache.code(JINJA, "checked expression", expr, build))
    return jinja2.environment.TemplateExpression(template, undefined_to_none=False)


@functools.lru_cache(maxsize=256)
def compiled_file(source: str, name: str, filename: str) -> jinja2.Template:
    code = template_cache.code(JINJA, f"checked file:{name}:{filename}", source,
                               lambda: safe_compile(source, name, filename))
    return from_code(code)


def safe_compile(source: str, name: str | None = None, filename: str | None = None):
    """Compile a role text, refusing at load what the sandbox would refuse at render: a name that starts with
    '_' (`x.__class__`, `x['__globals__']`, `x|attr('__init__')`: the ways to Python's internals, hence to
    os.system) is a TemplateSyntaxError at its line, before any host. Compiled code is cached only once this
    passed (template_cache), so a cached text was checked; the sandbox still guards every render."""
    tree = JINJA.parse(source, name, filename)
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
    return JINJA.compile(tree, name, filename)


_EXPRESSION = "{{% set result = ({expr}\n) %}}"


def from_code(code) -> jinja2.Template:
    # The globals as a plain dict, not make_globals' ChainMap over JINJA.globals: every render copies them into its
    # context, and a ChainMap is copied key by key in Python (~40 % of a render's own cost; issue 46). fleet adds no
    # global after JINJA is made, so the two hold the same names.
    return JINJA.template_class.from_code(JINJA, code, dict(JINJA.make_globals(None)))


def template_line(exc: BaseException, filename: str) -> int | None:
    """The template line an error came from: Jinja maps its frames back to the template's file and lines."""
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


# A role text that only reads variables ('{{ python_env }}/bin/python', `when: decisions.gpu`): most of a host's
# ~50 renders. Jinja spends ~5 us a render on its context and generator around a lookup that costs well under one;
# such a text is read here with the sandbox's own getattr, which is all its compiled code would call. Anything
# else, and any lookup that does not give a plain value (a name not given, an undefined or unsafe attribute, an
# error), is rendered by Jinja, which answers or raises exactly as it always did. FAST False: every text by Jinja
# (tests/unit/test_role_render_fast.py compares the two on every recorded host).
FAST = True
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DOTTED = re.compile(rf"\s*({_NAME}(?:\.{_NAME})*)\s*\Z")
_PIECES = re.compile(r"\{\{(.*?)\}\}", re.S)
# names Jinja reads as constants, operators or its own objects, never as a variable lookup
_NOT_LOOKUPS = frozenset({"true", "false", "True", "False", "none", "None", "not", "self", "loop", "caller",
                          "varargs", "kwargs"})
_MISS = object()


@functools.lru_cache(maxsize=2048)
def _path(expr: str) -> tuple[str, ...] | None:
    """'decisions.compat.use' -> ('decisions', 'compat', 'use'); None where the expression is anything more."""
    found = _DOTTED.match(expr)
    if not found:
        return None
    path = tuple(found[1].split("."))
    return None if path[0] in _NOT_LOOKUPS else path


@functools.lru_cache(maxsize=2048)
def _pieces(text: str) -> tuple | None:
    """A text of plain parts and '{{ name.attr }}' lookups -> (part, path, part, path, ..., part); None for any
    other text (a statement, a comment, a filter, whitespace control, a carriage return Jinja would normalize)."""
    if "\r" in text:
        return None
    out = []
    at = 0
    for found in _PIECES.finditer(text):
        path = _path(found[1])
        if path is None:
            return None
        out += [text[at:found.start()], path]
        at = found.end()
    out.append(text[at:])
    if any(("{{" in part or "{%" in part or "{#" in part) for part in out[::2]):
        return None
    return tuple(out)


def _looked_up(path: tuple[str, ...], ctx: dict) -> Any:
    """The value `path` reads in `ctx` as the compiled text would, or _MISS where only Jinja can say."""
    value = ctx.get(path[0], _MISS)
    if value is _MISS:
        return _MISS
    try:
        for attribute in path[1:]:
            if isinstance(value, jinja2.Undefined):
                return _MISS
            value = JINJA.getattr(value, attribute)
    except Exception:   # noqa: BLE001 - Jinja raises it again, with its own message
        return _MISS
    return _MISS if isinstance(value, jinja2.Undefined) else value


def _fast(value: str, lone: re.Match | None, whole: bool, ctx: dict) -> Any:
    if lone and not whole:
        path = _path(lone["expr"])
        if path is None:
            return _MISS
        result = _looked_up(path, ctx)
        if result is _MISS:
            return _MISS
        return result if isinstance(result, (list, dict, bool, int, float)) else ("" if result is None
                                                                               else str(result))
    pieces = _pieces(value)
    if pieces is None:
        return _MISS
    out = [pieces[0]]
    for i in range(1, len(pieces), 2):
        found = _looked_up(pieces[i], ctx)
        if found is _MISS:
            return _MISS
        out += [str(found), pieces[i + 1]]
    return "".join(out)


def render(value: Any, ctx: dict, where: str, *, whole: bool = False) -> Any:
    """Render templates in a task's values; a value that is exactly '{{ expr }}' keeps its type (a list)."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        lone = LONE.match(value)
        if FAST:
            result = _fast(value, lone, whole, ctx)
            if result is not _MISS:
                return result
        try:
            if lone and not whole:
                result = expression(lone["expr"])(**ctx)
                return result if isinstance(result, (list, dict, bool, int, float)) else ("" if result is None
                                                                                       else str(result))
            return compiled(value).render(ctx)
        except jinja2.UndefinedError as exc:
            raise InputError(f"{where}: {exc.message}; define it in the role's defaults or the inventory's vars") from None
        except jinja2.TemplateError as exc:
            raise InputError(f"{where}: template error: {exc}") from None
    if isinstance(value, list):
        return [render(v, ctx, where) for v in value]
    if isinstance(value, dict):
        return {k: render(v, ctx, where) for k, v in value.items()}
    return value


_JOINED = re.compile(r"\s+(and|or)\s+")
_COMPARED = re.compile(rf"\s*({_NAME}(?:\.{_NAME})*)\s*(==|!=)\s*'([^'\\\\]*)'\s*\Z")


@functools.lru_cache(maxsize=2048)
def _condition(expr: str) -> tuple | None:
    """A `when:` of lookups, each alone or compared (== / !=) with a quoted text, joined by one of `and` / `or`
    ('decisions.compat.use or decisions.compat.installed', "decisions.nvpl.source == 'pypi'") -> (joiner,
    ((path, op, text) ...)); None for anything more (parentheses, calls, filters, both joiners)."""
    parts = _JOINED.split(expr)
    joiners = set(parts[1::2])
    if len(joiners) > 1:
        return None
    terms = []
    for term in parts[::2]:
        compared = _COMPARED.match(term)
        path = _path(compared[1]) if compared else _path(term)
        if path is None:
            return None
        terms.append((path, compared[2], compared[3]) if compared else (path, None, None))
    return (joiners.pop() if joiners else "and", tuple(terms))


def _judged(expr: str, ctx: dict) -> Any:
    """The `when:`'s truth where _condition reads it and every lookup gives a plain value; else _MISS. Python's
    and, or, == and != over plain values are what Jinja's compiled expression runs; every term is looked up (an
    undefined one, even where `and` would stop before it, leaves the answer to Jinja)."""
    shape = _condition(expr)
    if shape is None:
        return _MISS
    joiner, terms = shape
    values = []
    for path, op, text in terms:
        found = _looked_up(path, ctx)
        if found is _MISS or type(found) not in _PLAIN:
            return _MISS
        values.append(found if op is None else (found == text) if op == "==" else (found != text))
    return any(values) if joiner == "or" else all(values)


def truth(expr: str, ctx: dict, where: str) -> bool:
    if FAST:
        judged = _judged(expr, ctx)
        if judged is not _MISS:
            return judged
    try:
        return bool(expression(expr)(**ctx))
    except jinja2.UndefinedError as exc:
        raise InputError(f"{where}: 'when: {expr}' uses something undefined ({exc.message})") from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as exc:  # e.g. comparing None < 3
        raise InputError(f"{where}: 'when: {expr}' cannot be evaluated ({exc})") from None
