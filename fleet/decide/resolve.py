"""What `python3`, `python` and `pip` resolve to in each kind of shell, and why, judged against the torch verify proves
(issue 45, item 4). The facts (fleet/facts/shells.py, fleet/remote/trace.py) observe how each name resolves (alias,
function, hash, PATH) and where each python finds torch (PYTHONPATH, a .pth file, the user site, its own
site-packages); the cause of a wrong answer is named by the rules the verify program names it by
(fleet/remote/resolve_rules.py), each with its file:line and the fix of THAT cause. Only a PATH cause is fleet's env
hook's to fix; an alias, a function, a `hash -p`, PYTHONPATH, PYTHONHOME, a .pth line or a user site is the user's
line, named, never rewritten.

An environment the user activates in a startup file (VIRTUAL_ENV / CONDA_PREFIX with its bin on PATH) is left first by
the hook (docs/DECISIONS.md, "A user's own environment"): judged as what that kind runs, a note where it has torch, a
finding naming the activation where it has none.

    findings(kind, "interactive shells", shell, at, "/opt/fleet/venv", torch_path)
    -> ([{kind, mechanism: "python", cause: "alias", variable, value, where, says, fix, hook_fixes: False}], [notes])
"""

from __future__ import annotations

import posixpath

from fleet.remote import resolve_rules


def findings(kind: str, name: str, shell: dict, at, python_env: str,
             torch_path: str | None) -> tuple[list[dict], list[str]]:
    """This kind's python3/python/pip against the proved torch: (findings, notes). at(setter) names a line as a
    person edits it (fleet.decide.shells.where)."""
    out: list[dict] = []
    notes: list[str] = []
    commands = shell.get("commands") or {}
    pythons = shell.get("pythons") or {}
    venv_bin = posixpath.join(python_env, "bin")
    want = torch_path or posixpath.join(python_env, "lib")
    for command in ("python3", "python"):
        got = commands.get(command) or {}
        answer = pythons.get(got.get("path") or "") or {}
        torch = answer.get("torch")
        if not got.get("path"):
            says = f"`{command}` is not found"
        elif got.get("how") == "function":
            says = f"`{command}` runs a shell function (what it runs, no trace can tell)"
        elif not torch:
            says = f"`{command}` is {got.get('path')}, which has no torch"
        elif not (torch == torch_path if torch_path else torch.startswith(want)):
            says = f"`{command}` is {got.get('path')}, whose torch is {torch}, not the one verify proves ({want})"
        else:
            continue
        why = resolve_rules.cause(shell, command, python_env, at)
        if why["deliberate"] and torch:
            notes.append(f"{name}: `{command}` is {got.get('path')} with its own torch at {torch}: "
                         f"{why['because']}; verify proves fleet's venv's ({want})")
            continue
        out.append(_finding(kind, name, says, why, f"put {venv_bin} first on PATH (env_hooks_venv_on_path: first)"))
    pip = commands.get("pip") or {}
    if pip.get("how") in ("alias", "function", "hash") and not (pip.get("path") or "").startswith(venv_bin + "/"):
        why = resolve_rules.cause(shell, "pip", python_env, at)
        out.append(_finding(kind, name, f"`pip` is {pip.get('path') or 'not a file'}, not {venv_bin}/pip", why, ""))
    disagree = resolve_rules.disagreement(shell, at)
    if disagree:
        var = disagree.split("=", 1)[0]
        out.append({"kind": kind, "mechanism": "python", "cause": var, "variable": var, "value": shell.get(var),
                    "hook_fixes": False, "where": at((shell.get("set_by") or {}).get(var)), "says": f"{name}: {disagree}",
                    "fix": "activate the environment last (its activate script sets both), or unset the variable "
                           "where it is set"})
    return out, notes


def _finding(kind: str, name: str, says: str, why: dict, path_fix: str) -> dict:
    path = why["mechanism"] == "PATH"
    return {"kind": kind, "mechanism": "python", "cause": why["mechanism"], "variable": why["variable"],
            "value": why["value"], "where": why["where"], "hook_fixes": path,
            "says": f"{name}: {says}" + (f": {why['because']}" if why["because"] else ""),
            "fix": path_fix if path else why["fix"]}
