"""What each kind of process reaches when a user types a command, judged against what verify proves.

facts.shells (fleet/facts/shells.py) observes, per kind (`ssh host cmd`, interactive, login, bare), every variable
that decides what CUDA, the loader, Python and torch see, with the startup line that last set it, and what
`python3`, `python`, `pip` and `nvcc` resolve to. This module says which of those break the promise that "verify
passed" holds for whatever the user runs next (shared/DOMAIN.md, "What a process sees beyond libcuda"):

- visibility: CUDA_VISIBLE_DEVICES leaving fewer of the host's GPUs than it has (the driver's own rule, `visible`:
  empty = none, the list stops at the first entry that names no GPU, UUIDs and unique UUID prefixes): cuInit
  answers 100 (CUDA_ERROR_NO_DEVICE) when none is left. Never neutralized by fleet (a deliberate partition looks the
  same): verify fails naming the line, and this says so in the plan.
- toolkit: the `nvcc` a shell runs is not the decided toolkit's, or CUDA_HOME/CUDA_PATH names another toolkit (a
  build would mix two toolkits);
- python: `python3`/`python` does not find the torch verify proved, each named with its cause and that cause's fix
  (fleet/decide/resolve.py: alias, function, hash, PYTHONPATH, PYTHONHOME, a .pth line, the user site, an
  environment activated after fleet's guard, PATH); `pip` runs a Python that refuses installs (PEP 668) or is not
  the venv's;
- notes: NVIDIA_VISIBLE_DEVICES set in a shell (read by the container toolkit when a container starts, never by
  CUDA), CUDA_DEVICE_ORDER (changes which GPU an index means).

bare processes (services, cron) use absolute paths: only their visibility is judged. Every other variable of the
families a GPU job reads (NCCL_, CUDA_, TORCH_, OMP_ ...) is judged in fleet/decide/families.py, called from judge.
"""

from __future__ import annotations

import posixpath

from fleet.decide import families, resolve

KINDS = {"noninteractive": "`ssh host cmd`", "interactive": "interactive shells", "login": "login shells",
         "bare": "processes that read no startup file"}
USER_KINDS = ("noninteractive", "interactive", "login")


def visible(value: str | None, gpus: list[dict]) -> list[int]:
    """The host's GPU indices a process with CUDA_VISIBLE_DEVICES=value sees, in its order (the CUDA programming
    guide's rule as the lent H200's driver answered it: shared/captured/h200-device/visible.txt)."""
    if value is None:
        return list(range(len(gpus)))
    seen: list[int] = []
    for entry in value.split(","):
        entry = entry.strip()
        found = None
        if entry.isdigit():
            found = int(entry) if int(entry) < len(gpus) else None
        elif entry.startswith("GPU-"):
            hits = [i for i, g in enumerate(gpus) if str(g.get("uuid") or "").lower().startswith(entry.lower())]
            found = hits[0] if len(hits) == 1 else None
        if found is None or found in seen:
            break
        seen.append(found)
    return seen


def where(setter: dict | None, home: str) -> str:
    """The line a person edits, from a facts.shells set_by entry: "~/.bashrc:1", "~/.bashrc:9 (via /x.sh:2)"."""
    if not setter or not setter.get("file"):
        return "no startup file of this kind (the process's parent: sshd's SetEnv, a container's ENV)"
    def tilde(p: str) -> str:
        return "~" + p[len(home):] if home and home != "/" and p.startswith(home + "/") else p
    origin = tilde(f"{setter['file']}:{setter['line']}")
    via = [tilde(v) for v in setter.get("via") or []]
    return f"{via[0]} (via {origin})" if via else origin


def judge(facts: dict, toolkit: str | None, python_env: str, torch_path: str | None = None) -> dict:
    """-> {"findings": [{kind, mechanism, variable, value, where, says, fix}], "notes": [...], "reach": {...}}

    toolkit: the decided toolkit's directory (decisions.cuda.path) or None; python_env: fleet's venv; torch_path:
    the torch directory verify proves (facts.torch.path), else the venv's."""
    shells = facts.get("shells") if isinstance(facts.get("shells"), dict) else {}
    gpus = [g for g in facts.get("gpus") or [] if isinstance(g, dict)]
    home = shells.get("home") or ""
    findings: list[dict] = []
    notes: list[str] = []
    venv_bin = posixpath.join(python_env, "bin")
    for kind, name in KINDS.items():
        shell = shells.get(kind)
        if not isinstance(shell, dict):
            continue
        set_by = shell.get("set_by") or {}
        value = shell.get("CUDA_VISIBLE_DEVICES")
        if gpus and value is not None:
            seen = visible(value, gpus)
            if len(seen) < len(gpus):
                line = where(set_by.get("CUDA_VISIBLE_DEVICES"), home)
                findings.append({
                    "kind": kind, "mechanism": "visibility", "variable": "CUDA_VISIBLE_DEVICES", "value": value,
                    "where": line, "says": f"{name}: {line} sets CUDA_VISIBLE_DEVICES={value!r}: {len(seen)} of the "
                    f"host's {len(gpus)} GPUs visible" + (" (cuInit 100, CUDA_ERROR_NO_DEVICE)" if not seen else ""),
                    "fix": f"correct or remove the line at {line} (fleet leaves CUDA_VISIBLE_DEVICES to you)",
                    "hook_fixes": False})
        for var in ("NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"):
            if shell.get(var) is not None:
                what = ("read only by the container toolkit when a container starts, never by CUDA" if
                        var == "NVIDIA_VISIBLE_DEVICES" else "changes which GPU an index means")
                notes.append(f"{name}: {where(set_by.get(var), home)} sets {var}={shell[var]!r} ({what})")
        if kind not in USER_KINDS:
            continue
        commands = shell.get("commands") or {}
        pythons = shell.get("pythons") or {}
        nvcc = commands.get("nvcc") or {}
        if toolkit:
            real = nvcc.get("real")
            if not real or not _under(real, toolkit):
                said = f"runs {real} (CUDA {nvcc.get('version') or '?'})" if real else "finds no nvcc"
                findings.append({
                    "kind": kind, "mechanism": "toolkit", "variable": "PATH", "value": None,
                    "where": where(set_by.get("PATH"), home), "says": f"{name}: `nvcc` {said}, not the toolkit's "
                    f"{toolkit}/bin/nvcc (PATH last set at {where(set_by.get('PATH'), home)})",
                    "fix": f"put {toolkit}/bin first on PATH (fleet's env hook does, last in every shell)",
                    "hook_fixes": True})
            for var in ("CUDA_HOME", "CUDA_PATH"):
                got = shell.get(var)
                if (var == "CUDA_HOME" or got is not None) and (got is None or not _under(got, toolkit)):
                    findings.append({
                        "kind": kind, "mechanism": "toolkit", "variable": var, "value": got,
                        "where": where(set_by.get(var), home),
                        "says": f"{name}: {var}={got!r}, not the toolkit {toolkit}"
                        + (f" (set at {where(set_by.get(var), home)})" if set_by.get(var) else ""),
                        "fix": f"set {var}={toolkit} (fleet's env hook does for CUDA_HOME)", "hook_fixes": True})
        found, said = resolve.findings(kind, name, shell, lambda setter: where(setter, home), python_env, torch_path)
        findings += found
        notes += said
        pip = commands.get("pip") or {}
        pip_python = (pythons.get(pip.get("python") or "") or {})
        if pip.get("path") and pip_python.get("externally_managed"):
            findings.append({"kind": kind, "mechanism": "python", "variable": "PATH", "value": None,
                             "where": where(set_by.get("PATH"), home),
                             "says": f"{name}: `pip` is {pip.get('real')} for {pip.get('python')}, an externally "
                                     "managed Python (PEP 668): `pip install` refuses",
                             "fix": f"put {venv_bin} first on PATH (its pip installs into fleet's venv)",
                             "hook_fixes": True})
    notes += other_torches(shells, torch_path, python_env)
    # every variable of the families a GPU job reads, by the table with sources (fleet/decide/families.py)
    family_findings, family_notes = families.judge(shells, where)
    return {"findings": findings + family_findings, "notes": notes + family_notes,
            "reach": reach(facts, python_env, torch_path)}


def other_torches(shells: dict, torch_path: str | None, python_env: str) -> list[str]:
    """A torch the host's own Python already has (an image's, RunPod's system Python), and why fleet does not use
    it: fleet installs and proves torch in python_env; another environment is used by naming it there."""
    seen: dict = {}
    for kind in USER_KINDS:
        shell = shells.get(kind) or {}
        for path, answer in (shell.get("pythons") or {}).items():
            torch = (answer or {}).get("torch")
            if torch and torch != torch_path and not torch.startswith(python_env.rstrip("/") + "/"):
                seen.setdefault(torch, path)
    return [f"{python} has its own torch at {torch}: not used (fleet installs and verifies torch in python_env="
            f"{python_env}, and a system Python's packages are the image's to change); to use a virtual "
            f"environment that already has torch, set python_env to it" for torch, python in seen.items()]


def reach(facts: dict, python_env: str, torch_path: str | None) -> dict:
    """Where torch is and how to reach it, for the summaries and `fleet facts`."""
    torch = facts.get("torch") if isinstance(facts.get("torch"), dict) else {}
    path = torch_path or torch.get("path")
    python = posixpath.join(python_env, "bin", "python")
    return {"torch": path, "version": torch.get("version"), "python": python,
            "how": f"python3 / python / pip in any new shell (fleet's venv first on PATH), or {python} by path"}


def _under(path: str, toolkit: str) -> bool:
    """path is the toolkit or inside it; /usr/local/cuda-13.0 also as the /usr/local/cuda link NVIDIA's packages
    make to it is not followed here (the facts hold the real file)."""
    toolkit = toolkit.rstrip("/")
    return path == toolkit or path.startswith(toolkit + "/")
