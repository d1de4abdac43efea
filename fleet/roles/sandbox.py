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

from fleet.errors import InputError
from fleet.roles import template_cache

# Sandboxed: a role is data, and a shared role's `when:` or template is not trusted with the controller. Jinja's
# immutable sandbox refuses what reaches Python's internals (`().__class__...`, a function's __globals__, hence
# os.system) and what changes a value in place (list.append, dict.update), with SecurityError: reported as the
# role's error at its file:line (docs/ARCHITECTURE.md: Resources and roles). safe_compile refuses the first kind
# at load already, before any host.
JINJA = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
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


def render(value: Any, ctx: dict, where: str, *, whole: bool = False) -> Any:
    """Render templates in a task's values; a value that is exactly '{{ expr }}' keeps its type (a list)."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        lone = LONE.match(value)
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


def truth(expr: str, ctx: dict, where: str) -> bool:
    try:
        return bool(expression(expr)(**ctx))
    except jinja2.UndefinedError as exc:
        raise InputError(f"{where}: 'when: {expr}' uses something undefined ({exc.message})") from None
    except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as exc:  # e.g. comparing None < 3
        raise InputError(f"{where}: 'when: {expr}' cannot be evaluated ({exc})") from None
