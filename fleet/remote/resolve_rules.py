"""Why a command the user types runs what it runs, in one kind of shell: the rules both sides name a cause by, from
one kind's trace (fleet/remote/trace.py parse): the facts' judgement (fleet/decide/resolve.py) and the verify program
on the host (fleet/remote/verify/explain.py), which ships this very text. Standalone and stdlib only.

bash's order (bash manual, "Command Search and Execution"): an alias (interactive shells: expand_aliases), a shell
function, a name hashed (`hash -p`), then PATH. Then Python's order for `import torch` (the site module, "sys.path
init"): PYTHONHOME chooses the library, PYTHONPATH's entries come first, then the user site (before site-packages),
then site-packages and the directories its .pth files add; an activated venv or conda environment is a PATH entry with
VIRTUAL_ENV / CONDA_PREFIX beside it.

    cause(shell, "python3", "/opt/fleet/venv", at)
    -> {"mechanism": "alias", "variable": None, "value": "/usr/bin/python3", "where": "~/.bashrc:5",
        "because": "an alias: `alias python3=/usr/bin/python3` at ~/.bashrc:5 (bash -i expands it before PATH)",
        "fix": "remove the alias at ~/.bashrc:5 ...", "deliberate": False}

Every cause but PATH's carries its own fix; PATH's fix is each side's (fleet's env hook). `at(setter)` formats a
file:line as that side names lines.
"""

import posixpath

ENVS = ("VIRTUAL_ENV", "CONDA_PREFIX")   # what an activate script (venv's, conda's) sets beside its bin on PATH


def cause(shell, name, venv, at):
    """The first reason, in bash's then Python's order, why `name` in this kind runs what it runs; PATH's where
    nothing else explains it. venv: fleet's python_env."""
    got = (shell.get("commands") or {}).get(name) or {}
    how, by, path = got.get("how"), got.get("by"), got.get("path")
    line = at(by) if by else None
    own = posixpath.join(venv.rstrip("/"), "bin", name)
    if how == "alias":
        text = f"`{by['text']}` at {line}" if by else f"`alias {name}={got.get('alias')}`"
        return _cause("alias", None, got.get("alias"), line,
                      f"an alias: {text} (an interactive shell expands it before searching PATH)",
                      f"remove the alias at {line or 'the line that makes it'} (or `unalias {name}` after it; to keep "
                      f"one, `alias {name}={own}`)")
    if how == "function":
        return _cause("function", None, None, line,
                      f"a shell function defined at {line or '?'} (bash runs a function before any file on PATH)",
                      f"remove the function {name}() at {line or 'its line'} (or `unset -f {name}` after it)")
    if how == "hash":
        text = f"`{by['text']}` at {line}" if by else "`hash -p`"
        return _cause("hash", None, path, line,
                      f"hashed to {path} by {text} (PATH would give {got.get('hashed') or 'nothing'})",
                      f"remove the `hash -p` at {line or 'its line'} (or `hash -r` after it)")
    if not name.startswith("python"):
        return _cause("PATH", "PATH", None, at((shell.get("set_by") or {}).get("PATH")), "", None)
    return python_cause(shell, path, venv, at)


def python_cause(shell, path, venv, at):
    """Why the python at `path` finds the torch it finds (or none), where that is not simply PATH's choice."""
    py = (shell.get("pythons") or {}).get(path or "") or {}
    set_by = shell.get("set_by") or {}
    home = shell.get("PYTHONHOME")
    if home is not None and (not py.get("ran") or _same(py.get("prefix"), home)):
        line = at(set_by.get("PYTHONHOME"))
        return _cause("PYTHONHOME", "PYTHONHOME", home, line,
                      f"PYTHONHOME={home} (set at {line}) makes it take its library from {home}"
                      + ("" if py.get("ran") else ": it does not even start"),
                      f"remove PYTHONHOME at {line} (or `unset PYTHONHOME` after it): a venv never needs it")
    found, torch = py.get("torch_from") or {}, py.get("torch")
    if found.get("by") == "PYTHONPATH":
        value, line = shell.get("PYTHONPATH"), at(set_by.get("PYTHONPATH"))
        entry = posixpath.dirname(torch or "")
        return _cause("PYTHONPATH", "PYTHONPATH", value, line,
                      f"PYTHONPATH={value} (set at {line}) puts {entry}'s torch before the environment's own",
                      f"take {entry} off PYTHONPATH at {line} (or `unset PYTHONPATH` after it); a torch source tree "
                      "imports only once built (its torch._C)")
    if found.get("by") == "pth":
        line = f"{found.get('file')}:{found.get('line')}"
        return _cause(".pth", None, found.get("file"), line,
                      f"{line} (a .pth file site.py reads at every start) adds {posixpath.dirname(torch or '')}",
                      f"delete line {found.get('line')} of {found.get('file')} (or the file; `pip uninstall` the "
                      "package that installed it)")
    if found.get("by") == "user":
        base = shell.get("PYTHONUSERBASE")
        line = at(set_by.get("PYTHONUSERBASE")) if base is not None else None
        return _cause("user site", "PYTHONUSERBASE" if line else None, base, line,
                      f"the user site {posixpath.dirname(torch or '')} holds a torch, found before site-packages"
                      + (f" (PYTHONUSERBASE={base}, set at {line})" if line else ""),
                      f"`{path} -m pip uninstall torch` (it removes the user site's), or export PYTHONNOUSERSITE=1"
                      + (f", or remove PYTHONUSERBASE at {line}" if line else ""))
    env, var = activated(shell, venv)
    if env and _same(py.get("prefix"), env):
        line = at(set_by.get(var))
        return _cause("activated", var, env, line,
                      f"the environment {env} activated at {line} ({var}; fleet's hook leaves a user's activation "
                      "first: docs/DECISIONS.md)",
                      f"install torch into {env} ({env}/bin/pip install torch), or set python_env={env} so fleet "
                      f"installs and verifies torch there, or remove the activation at {line} to get fleet's venv",
                      deliberate=True)
    return _cause("PATH", "PATH", None, at(set_by.get("PATH")), "", None)


def activated(shell, venv):
    """(directory, variable) of an environment other than fleet's venv that this kind activated (VIRTUAL_ENV or
    CONDA_PREFIX set); (None, None) where none is."""
    for var in ENVS:
        value = shell.get(var)
        if value and not _same(value, venv):
            return value, var
    return None, None


def disagreement(shell, at):
    """VIRTUAL_ENV (or CONDA_PREFIX) names one environment while `python3` runs another: the sentence, else None
    (which variable: the sentence's first word)."""
    got = (shell.get("commands") or {}).get("python3") or {}
    prefix = ((shell.get("pythons") or {}).get(got.get("path") or "") or {}).get("prefix")
    for var in ENVS:
        value = shell.get(var)
        if value and prefix and not _same(value, prefix):
            return (f"{var}={value} (set at {at((shell.get('set_by') or {}).get(var))}) while `python3` is "
                    f"{got.get('path')}, whose sys.prefix is {prefix}: tools that read {var} (pip's --require-"
                    "virtualenv, uv, conda, prompts) and python3 disagree")
    return None


def _same(a, b):
    return bool(a) and bool(b) and a.rstrip("/") == b.rstrip("/")


def _cause(mechanism, variable, value, where, because, fix, deliberate=False):
    return {"mechanism": mechanism, "variable": variable, "value": value, "where": where, "because": because,
            "fix": fix, "deliberate": deliberate}
