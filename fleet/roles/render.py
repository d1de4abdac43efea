"""Rendering a role for one host: its `when:` judged, each enabled task's values and templates rendered against
the variables (the stack's defaults < the role's < the host's), the facts and the decisions, into Tasks whose
resources are ready to give their check and apply."""

from __future__ import annotations

import dataclasses
from typing import Any

import jinja2

from fleet import variables as declarations
from fleet.errors import InputError
from fleet.resources import TYPES
from fleet.roles.load import timeout_of
from fleet.roles.role import Role, Task, TaskSpec
from fleet.roles.sandbox import compiled_file, render, template_line, truth


def context(variables: dict[str, Any], facts: dict | None, decisions: dict | None, host: dict) -> dict[str, Any]:
    ctx = dict(variables)
    ctx.update(facts=facts or {}, decisions=decisions or {}, host=host)
    return ctx


def render_role(role: Role, variables: dict[str, Any], facts, decisions, host: dict) -> list[Task]:
    merged = declarations.defaults()   # the stack's own defaults (cuda_version, python_env, sources) come first
    merged.update(role.defaults)
    merged.update(variables)
    ctx = context(merged, facts, decisions, host)
    role_on = truth(role.when, ctx, role.when_where or str(role.path)) if role.when else True
    why = str(render(role.why, ctx, role.when_where or str(role.path), whole=True)) if role.why and role_on else None
    tasks = []
    role_off = None if role_on else (f"role condition is false: {role.when}", _said(role.why_skipped, ctx))
    for spec in role.tasks:
        enabled, skip = role_on, role_off
        if enabled and spec.when:
            enabled = truth(spec.when, ctx, spec.when_where or spec.where)
            skip = None if enabled else (f"condition is false: {spec.when}", _said(spec.why_skipped, ctx))
        if not enabled:  # not rendered: its values may only make sense where it applies
            values = (dict(spec.unrendered) if spec.unrendered is not None else
                      TYPES[spec.type].validate(spec.params, spec.where, check_types=False))
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
        deadline = (timeout_of(render(spec.timeout, ctx, spec.where), spec.where) if spec.timeout is not None
                    else resource.deadline())
        tasks.append(Task(spec, resource, True, why=why, deadline=deadline))
    return tasks


def _said(words: str | None, ctx: dict) -> str | None:
    """A `why_skipped:` rendered for this host; None where there is none or it does not render here (then the
    raw condition is shown: never a half-rendered sentence)."""
    if not words:
        return None
    try:
        text = " ".join(str(render(words, ctx, "why_skipped", whole=True)).split())
    except (InputError, TypeError, AttributeError, KeyError, ValueError):
        return None
    return text or None


def role_applies(role: Role, variables: dict[str, Any], facts, decisions, host: dict) -> bool:
    """The role's `when:` for one host (what `fleet decide` lists as acting)."""
    ctx = context({**declarations.defaults(), **role.defaults, **variables}, facts, decisions, host)
    return truth(role.when, ctx, role.when_where or str(role.path)) if role.when else True


def _named(spec: TaskSpec, ctx: dict, *, strict: bool = True) -> TaskSpec:
    """A copy of the spec whose display name is rendered for this host (a skipped task's, where it can be)."""
    if "{" not in spec.name:
        return spec
    try:
        return dataclasses.replace(spec, name=str(render(spec.name, ctx, spec.where, whole=True)))
    except InputError:
        if strict:
            raise
        return spec


def _render_params(spec: TaskSpec, ctx: dict) -> Any:
    """Render a task's parameters; an error names the line of the parameter it is in."""
    if not isinstance(spec.params, dict):
        return render(spec.params, ctx, spec.where)
    return {k: render(v, ctx, spec.lines.get(k, spec.where)) for k, v in spec.params.items()}


def _render_template(role: Role, name: str, ctx: dict, where: str) -> str:
    """Render templates/<name>; an undefined variable is named with the template's own file:line."""
    path = role.template_path(name)
    source = role.template(name, where)
    try:
        return compiled_file(source, name, str(path)).render(ctx)
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: template syntax error: {exc.message} (used at {where})") from None
    except jinja2.UndefinedError as exc:
        line = template_line(exc, str(path))
        raise InputError(f"{path}{f':{line}' if line else ''}: {exc.message} (used at {where}); "
                         "define it in the role's defaults or the inventory's vars") from None
    except jinja2.TemplateError as exc:   # a SecurityError too: the sandbox refused something at that line
        line = template_line(exc, str(path))
        raise InputError(f"{path}{f':{line}' if line else ''}: template error: {exc} (used at {where})") from None
