"""Environment, Python, torch, CUTLASS and the last verify result: probe commands and pure parsers."""

from __future__ import annotations

import re
import shlex

from fleet import remote
from fleet.facts import paths
from fleet.jsontext import loads as json_loads
from fleet.shell import git_guard

# Only these environment variables are recorded: anything else may hold a secret.
ENV_VARS = ("LD_LIBRARY_PATH", "PATH", "CUDA_HOME", "CUTLASS_HOME")
# The env_hooks role's block starts with this line; its presence means the hook is installed.
HOOK_MARKER = "# BEGIN fleet env_hooks"
HOOK_FILES = ("$HOME/.bashrc", "/etc/profile.d/fleet.sh", "/etc/bash.bashrc", "$HOME/.profile")
VERIFY_PATH = "/var/lib/fleet/verify.json"
_HOOK_FILES_SHELL = " ".join(f'"{path}"' for path in HOOK_FILES)  # double quotes: $HOME must expand

# ---- environment ------------------------------------------------------------------------------------

# What `printenv VAR` and `grep -qF MARKER FILE` answer, in bash builtins: fleet/remote/env.sh, handed the variables,
# the hook files and the marker.
ENV = (f"fleet_env_vars=({' '.join(ENV_VARS)})\nfleet_hook_files=({_HOOK_FILES_SHELL})\n"
       f"fleet_hook_marker={shlex.quote(HOOK_MARKER)}\n" + remote.program("env"))


def parse_env(text: str) -> dict:
    """The env section -> {LD_LIBRARY_PATH: str | None, ..., hook_installed: bool, hook_files: [...]}.

        LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/nvidia/lib
        unset CUTLASS_HOME
        hook /root/.bashrc
    These are the values a non-interactive `ssh host cmd` gets, which is what scripts and services see.
    """
    env: dict = {name: None for name in ENV_VARS}
    hooks = []
    seen = False
    for line in text.splitlines():
        name, eq, value = line.partition("=")
        if eq and name in ENV_VARS:
            env[name], seen = value, True
        elif line.startswith("unset ") and line[6:] in ENV_VARS:
            seen = True
        elif line.startswith("hook "):
            hooks.append(line[5:])
    if not seen:
        raise ValueError("no environment variable lines")
    return {**env, "hook_installed": bool(hooks), "hook_files": hooks}


# ---- python -----------------------------------------------------------------------------------------

def select_python(python_env: str) -> str:
    """Shell that sets $py: the roles' virtual environment's python when it exists and is safe to run as root
    (fleet/remote/trust.sh's fleet_judge: it, every parent and what it reads at start, site-packages and its .pth
    files, owned by root or the user and writable by no one else; $env_untrusted says why not), else python3.
    Run it as `cd / && "$py" -I ...` (isolated: no PYTHONPATH/PYTHONHOME, no user site, no module from the working
    directory). It calls the shared functions "trust" (fleet.shell.FUNCTIONS): a source holding it declares them."""
    return f"env_dir={shlex.quote(python_env)}\n" + remote.program("select_python")


def python_command(python_env: str) -> str:
    return f"{select_python(python_env)}\n" + remote.program("python_version")


def parse_python(text: str) -> dict:
    """The python section -> {version, executable, env, env_exists}.

        env /opt/fleet/venv
        env_exists yes
        executable /opt/fleet/venv/bin/python
        version 3.12.3
    """
    pairs = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
    if "env_exists" not in pairs:
        raise ValueError("no env_exists line")
    version = pairs.get("version", "").strip()
    return {
        "version": version if re.fullmatch(r"\d+\.\d+(\.\d+)?\S*", version) else None,
        "executable": pairs.get("executable", "").strip() or None,
        "env": pairs.get("env", "").strip() or None,
        "env_exists": pairs["env_exists"].strip() == "yes",
        "venv_module": {"yes": True, "no": False}.get(pairs.get("venv_module", "").strip()),
        # the venv exists but another user owns or can write it: never executed (why, as fleet.facts.paths says)
        "untrusted": paths.reason(pairs["untrusted"].strip()) if pairs.get("untrusted", "").strip() else None,
    }


# ---- torch ------------------------------------------------------------------------------------------



def torch_command(python_env: str) -> str:
    """Shell printing one JSON line about the torch distribution the roles' python would import."""
    return f"{select_python(python_env)}\n" + remote.program("torch")


def parse_torch(text: str) -> dict | None:
    """The torch section (last JSON line) -> dict | None.

        {"version": "2.11.0+cu130", "cuda": "13.0", "path": ".../site-packages/torch"}
    Not installed -> None. Older records (and captures) hold what an import told: cuda_available, arch_list,
    capability, device_name; those keys are kept when present, and otherwise filled from the last verify.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    data = None
    for line in reversed(lines):
        if line.lstrip().startswith("{"):
            data = json_loads(line)
            break
    if not isinstance(data, dict):
        raise ValueError("no JSON line from the torch program")
    if "timed_out" in data:
        raise ValueError(f"reading torch's metadata did not finish within {data['timed_out']} s (a hung filesystem?)")
    if not data.get("installed"):
        return None
    return {
        "version": data.get("version"),
        "cuda": data.get("cuda"),
        "cuda_available": data.get("cuda_available"),
        "arch_list": data.get("arch_list", []),
        "capability": data.get("capability"),
        "device_name": data.get("device_name"),
        "path": data.get("path"),
        "error": data.get("error") or data.get("cuda_error"),
        "missing_libraries": data.get("missing_libraries", []),
        "warnings": data.get("warnings", []),
    }


# ---- CUTLASS ----------------------------------------------------------------------------------------

# git's ownership check stays on for a checkout another user owns (fleet.shell.git_guard), set up only where the
# checkout has a .git: fleet/remote/cutlass.sh calls it
_CUTLASS_GIT = "fleet_cutlass_git() {\n" + git_guard('"$d"') + "}\n"


def cutlass_command(cutlass_dir: str) -> str:
    return f"d={shlex.quote(cutlass_dir)}\n{_CUTLASS_GIT}" + remote.program("cutlass")


def parse_cutlass(text: str) -> dict | None:
    """The cutlass section -> {path, version, describe, commit, cute} | None when the checkout is absent.

        path /opt/cutlass
        #define CUTLASS_MAJOR 4
        #define CUTLASS_MINOR 3
        #define CUTLASS_PATCH 0
        cute yes
        describe v4.3.0
        commit 3f4c086d...
    """
    if text.startswith("absent "):
        return None
    path = re.search(r"^path (.+)$", text, re.M)
    if not path:
        raise ValueError("no 'path' line")
    parts = dict(re.findall(r"^#define CUTLASS_(MAJOR|MINOR|PATCH) (\d+)", text, re.M))
    version = None
    if {"MAJOR", "MINOR", "PATCH"} <= set(parts):
        version = f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
    describe = re.search(r"^describe (\S+)", text, re.M)
    commit = re.search(r"^commit ([0-9a-f]{7,40})\s*$", text, re.M)
    return {
        "path": path[1], "version": version, "describe": describe[1] if describe else None,
        "commit": commit[1] if commit else None, "cute": bool(re.search(r"^cute yes", text, re.M)),
    }


# ---- the last verify result -------------------------------------------------------------------------

VERIFY = (
    f"f={VERIFY_PATH}\n"
    "if [ -r \"$f\" ]; then cat \"$f\"; elif [ -e \"$f\" ]; then printf 'unreadable %s\\n' \"$f\"; exit 13; fi"
)


def parse_verify(text: str) -> dict | None:
    """/var/lib/fleet/verify.json (written by the verify role) -> its JSON object; none yet -> None."""
    if not text.strip():
        return None
    if text.startswith("unreadable "):
        raise ValueError(f"{VERIFY_PATH} exists but this user cannot read it")
    data = json_loads(text)   # a NaN or Infinity in it reads as null
    if not isinstance(data, dict) or "passed" not in data:
        raise ValueError("verify.json has no 'passed' key")
    return data
