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

    __init__.py   finding roles: the directories (roles_dirs), each host's list (roles_for_hosts), load_roles
    role.py       Role, TaskSpec, Task; BUILTIN_DIR
    load.py       role.yaml -> Role, validated (load_role)
    render.py     one host's Tasks from a Role (render_role, role_applies)
    sandbox.py    Jinja's immutable sandbox: compiled once, refused at load, rendered with file:line errors
    declared.py   the variables a set of roles knows; template_cache.py: compiled texts kept per machine
"""

from __future__ import annotations

from pathlib import Path

from fleet import yamlsrc
from fleet.errors import InputError
from fleet.roles.load import load_role
from fleet.roles.render import context, render_role, role_applies
from fleet.roles.role import BUILTIN_DIR, Role, Task, TaskSpec

__all__ = ["BUILTIN_DIR", "DEFAULT_ORDER", "Role", "Task", "TaskSpec", "available_roles", "context", "every_role",
           "load_role", "load_roles", "render_role", "role_applies", "roles_dirs", "roles_for_hosts"]

DEFAULT_ORDER = ("cuda_toolkit", "fabric_manager", "cuda_compat", "nvpl", "cudss", "env_hooks", "cutlass", "torch", "verify")


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
