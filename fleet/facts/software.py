"""Environment, Python, torch, CUTLASS and the last verify result: probe commands and pure parsers."""

from __future__ import annotations

import re
import shlex

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

# What `printenv VAR` and `grep -qF MARKER FILE` answer, in bash builtins (eight processes fewer per probe):
# a variable counts when exported and set (${!v@a} holds x; bash >= 4.4, else printenv answers), its value
# without trailing newlines (as $(printenv) gives it); a hook file counts when one of its lines holds the marker.
ENV = (
    "fleet_new=; (( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4) )) && fleet_new=1\n"
    f"for v in {' '.join(ENV_VARS)}; do\n"
    "  if [ -n \"$fleet_new\" ]; then\n"
    "    a=${!v@a}; if [[ $a == *x* ]] && [ -n \"${!v+x}\" ]; then val=${!v}; ok=1; else ok=; fi\n"
    "    while [[ $val == *$'\\n' ]]; do val=${val%$'\\n'}; done\n"
    "  elif val=$(printenv \"$v\"); then ok=1; else ok=; fi\n"
    "  if [ -n \"$ok\" ]; then printf '%s=%s\\n' \"$v\" \"$val\"; else printf 'unset %s\\n' \"$v\"; fi\n"
    "done\n"
    f"m={shlex.quote(HOOK_MARKER)}\n"
    f"for f in {_HOOK_FILES_SHELL}; do\n"
    "  [ -r \"$f\" ] || continue\n"
    "  while IFS= read -r l || [ -n \"$l\" ]; do\n"
    "    if [[ $l == *\"$m\"* ]]; then printf 'hook %s\\n' \"$f\"; break; fi\n"
    "  done < \"$f\"\n"
    "done\n"
    "true"
)


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
    (fleet.shell.TRUST_FN's fleet_judge: it, every parent and what it reads at start, site-packages and its .pth
    files, owned by root or the user and writable by no one else; $env_untrusted says why not), else python3.
    Run it as `cd / && "$py" -s ...` (no module from the working directory, no user site)."""
    return (
        f"{paths.TRUST_FN}\n"
        f"env_dir={shlex.quote(python_env)}; env_untrusted=\n"
        "if [ -x \"$env_dir/bin/python\" ]; then env_untrusted=$(fleet_judge \"$env_dir/bin/python\"); fi\n"
        "if [ -x \"$env_dir/bin/python\" ] && [ -z \"$env_untrusted\" ]; then py=$env_dir/bin/python; env_exists=yes\n"
        "else py=$(command -v python3 || true); env_exists=no; fi"
    )


def python_command(python_env: str) -> str:
    return (
        f"{select_python(python_env)}\n"
        "printf 'env %s\\nenv_exists %s\\nexecutable %s\\n' \"$env_dir\" \"$env_exists\" \"$py\"\n"
        "[ -z \"$env_untrusted\" ] || printf 'untrusted %s\\n' \"$env_untrusted\"\n"
        "[ -n \"$py\" ] || exit 0\n"
        # A venv that exists answers from files, with no Python start (~50 ms of the host's CPU at every probe):
        # its pyvenv.cfg holds the version it was made with (venv: `version`, virtualenv and uv: `version_info`),
        # taken where its X.Y is the one its interpreter's name says (python3.12 -> 3.12) and that interpreter is
        # there. A Python upgraded in place within X.Y keeps the cfg's patch level; only X.Y decides anything.
        "if [ \"$env_exists\" = yes ] && [ -r \"$env_dir/pyvenv.cfg\" ]; then\n"
        "  real=$(readlink -f \"$py\"); xy=${real##*/python}; cfg=\n"
        "  while IFS= read -r l || [ -n \"$l\" ]; do\n"
        "    case $l in version*=*) k=${l%%=*}; k=${k%% *}\n"
        "      case $k in version|version_info) cfg=${l#*=}; cfg=${cfg// /}; break;; esac;; esac\n"
        "  done < \"$env_dir/pyvenv.cfg\"\n"
        "  if [[ $cfg =~ ^([0-9]+\\.[0-9]+)(\\.[0-9]+)? ]]; then cfg=${BASH_REMATCH[0]}; else cfg=; fi\n"
        "  if [ -x \"$real\" ] && [ -n \"$cfg\" ] && [ \"${cfg%.*}\" = \"$xy\" -o \"$cfg\" = \"$xy\" ]; then\n"
        "    echo \"version $cfg\"; echo 'source pyvenv.cfg'; exit 0; fi\n"
        "fi\n"
        # Minimal images (Debian/Ubuntu without python3-venv) lack ensurepip: `python3 -m venv` fails there.
        # One Python start for both answers (each start is ~50 ms of CPU, most of this section); the version is
        # printed first, so a Python that cannot import ensurepip still says which it is (the import error is caught).
        # the system's python3 is judged as the venv's is before it starts (a python3 planted on PATH is not run)
        "[ \"$env_exists\" = yes ] || [ -z \"$(fleet_judge \"$py\")\" ] || exit 0\n"
        "cd / && \"$py\" -s -B -c 'import platform; print(\"version\", platform.python_version(), flush=True)\n"
        "try:\n    import ensurepip, venv\nexcept Exception:\n    print(\"venv_module no\")\n"
        "else:\n    print(\"venv_module yes\")'\n"
        "true"
    )


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

# No `import torch` here, and no Python at all: importing torch costs seconds on a real GPU host (CUDA
# initialisation) and takes GPU memory from whatever runs there. The version comes from the distribution's
# METADATA and the CUDA variant from torch/version.py, both plain files found where the chosen python keeps its
# packages; what only an import can tell (CUDA available, the arch list, missing libraries) comes from the
# last verify, which the engine re-runs only when its fingerprint changes (fleet/resources/verify_gate.py).
# (the version is torch.__version__ as an import says it, 2.11.0+cu130, where the dist-info may say 2.11.0)
_TORCH_READ = r"""json() { j=${1//\\/\\\\}; j=${j//\"/\\\"}; }
version=
while IFS= read -r line || [ -n "$line" ]; do
  case $line in Version:*) version=${line#Version:}; version=${version#"${version%%[! ]*}"}; break;; esac
done < "$meta"
re_cuda="^cuda[^=]*= *[\"']([^\"']*)[\"']" re_version="^__version__[^=]*= *[\"']([^\"']*)[\"']"
if [ -r "$site/torch/version.py" ]; then
  cuda= v=
  while IFS= read -r line || [ -n "$line" ]; do
    if [ -z "$cuda" ] && [[ $line =~ $re_cuda ]]; then cuda=${BASH_REMATCH[1]}; fi
    if [ -z "$v" ] && [[ $line =~ $re_version ]]; then v=${BASH_REMATCH[1]}; fi
  done < "$site/torch/version.py"
  [ -n "$v" ] && version=$v
  error=
else cuda=; error='cannot read torch/version.py'; fi
json "$version"; jv=$j; json "$site/torch"; jp=$j
if [ -n "$cuda" ]; then json "$cuda"; jc="\"$j\""; else jc=null; fi
if [ -n "$error" ]; then je="\"$error\""; else je=null; fi
printf '{"installed": true, "version": "%s", "path": "%s", "cuda": %s, "error": %s}\n' "$jv" "$jp" "$jc" "$je"
"""


def torch_command(python_env: str) -> str:
    """Shell printing one JSON line about the torch distribution the roles' python would import."""
    return (
        f"{select_python(python_env)}\n"
        "[ -n \"$py\" ] || { echo '{\"installed\": false, \"error\": \"no python3\"}'; exit 0; }\n"
        # The venv's own site-packages; without a venv, where Debian/Ubuntu's python3 and pip put packages.
        "if [ \"$env_exists\" = yes ]; then set -- \"$env_dir\"/lib/python3*/site-packages\n"
        "else set -- \"$HOME\"/.local/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages "
        "/usr/lib/python3/dist-packages /usr/local/lib/python3*/site-packages; fi\n"
        "if [ -n \"${PYTHONPATH:-}\" ]; then ifs=$IFS; IFS=:; set -- $PYTHONPATH \"$@\"; IFS=$ifs; fi\n"
        "meta=; for d in \"$@\"; do for m in \"$d\"/torch-*.dist-info/METADATA; do "
        "[ -r \"$m\" ] && { meta=$m; site=$d; break 2; }; done; done\n"
        "[ -n \"$meta\" ] || { echo '{\"installed\": false}'; exit 0; }\n"
        # Read with bash builtins only (sed, head and a printf|sed per JSON string were ~10 processes): the first
        # `Version:` line of METADATA, and the first `cuda`/`__version__` assignment of torch/version.py.
        + _TORCH_READ
    )


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

_CUTLASS_GIT = git_guard('"$d"')


def cutlass_command(cutlass_dir: str) -> str:
    return (
        f"d={shlex.quote(cutlass_dir)}\n"
        "[ -d \"$d\" ] || { printf 'absent %s\\n' \"$d\"; exit 0; }\n"
        "printf 'path %s\\n' \"$d\"\n"
        "[ -r \"$d/include/cutlass/version.h\" ] && grep -E '^#define CUTLASS_(MAJOR|MINOR|PATCH) ' \"$d/include/cutlass/version.h\"\n"
        "[ -e \"$d/include/cute/tensor.hpp\" ] && echo 'cute yes'\n"
        "if command -v git >/dev/null 2>&1 && [ -e \"$d/.git\" ]; then\n"
        # git's ownership check stays on for a checkout another user owns (fleet.shell.git_guard)
        + _CUTLASS_GIT +
        "  printf 'describe %s\\n' \"$(git -C \"$d\" describe --tags 2>/dev/null)\"\n"
        "  printf 'commit %s\\n' \"$(git -C \"$d\" rev-parse HEAD 2>/dev/null)\"\n"
        "fi\n"
        "true"
    )


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
