"""Each kind of process, as it starts (issue 23), asked for CUDA and judged; and what the user types in each kind of
shell (python3, python, pip, nvcc, CUDA_HOME) against what this run proved.

    ssh          `ssh host cmd`: the program's own process (a non-interactive bash that read ~/.bashrc): the full check
    bare         no startup file at all (services, cron, a supervised kernel, `docker exec`): env -i
    interactive  `bash -i` from the fresh environment sshd + PAM give a session
    login        `bash -l` from that environment (/etc/profile, then the first of ~/.bash_profile, ~/.bash_login,
                 ~/.profile)
"""

import importlib.util
import json
import os
import re
import subprocess
import sys

from . import explain as explaining, gpus, loader
from .. import resolve_rules
from .explain import explain
from .loader import TRACED

KINDS = {"ssh": "in `ssh host cmd`", "bare": "in a bare process (env -i: services, cron, docker exec)",
         "interactive": "in an interactive shell (bash -i)", "login": "in a login shell (bash -l)"}


CHECK_NAMES = {"ssh": "cuda_available", "bare": "cuda_available_bare", "interactive": "cuda_available_interactive",
               "login": "cuda_available_login"}


def fresh_env():
    """The environment sshd and PAM give a new session (as the facts' shells section builds it)."""
    env = {"HOME": os.environ.get("HOME", "/root"), "TERM": "dumb", "SHELL": "/bin/bash",
           "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    for key in ("USER", "LOGNAME", "SSH_CLIENT", "SSH_CONNECTION", "FLEET_REMOTE"):   # FLEET_REMOTE: fleet.shell
        if key in os.environ:
            env[key] = os.environ[key]
    try:
        for line in open("/etc/environment"):
            line = line.strip().removeprefix("export ")
            key, eq, value = line.partition("=")
            if eq and re.fullmatch(r"[A-Za-z_]\w*", key):
                env[key] = value.strip().strip('"').strip("'")
    except OSError:
        pass
    return env


def kind_command(program, kind, need):
    """argv and environment that start the program's CUDA probe (`python PROGRAM --cuda-probe NEED`) as this kind
    of process starts."""
    if kind == "bare":
        return (["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"HOME={os.environ.get('HOME', '/root')}",
                 sys.executable, program, "--cuda-probe", str(need)], None)
    flags = ["+m", "-i"] if kind == "interactive" else ["-l"]
    return (["bash", *flags, "-c", 'exec "$0" "$1" --cuda-probe "$2"', sys.executable, program, str(need)],
            fresh_env())


def other_kinds(run, need):
    """The probe in bare, interactive and login processes at once -> {kind: report}."""
    procs, out = {}, {}
    if not run.program:
        return {kind: {"run_error": "the verify program was not run from a file"} for kind in ("bare", "interactive", "login")}
    for kind in ("bare", "interactive", "login"):
        argv, env = kind_command(run.program, kind, int(need))
        try:
            procs[kind] = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as exc:
            out[kind] = {"run_error": f"{type(exc).__name__}: {exc}"}
    for kind, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=120)   # a startup file that waits (for a terminal, a prompt)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, 9)   # its own session (start_new_session): the shell and what it started
            except OSError:
                proc.kill()
            stdout, stderr = proc.communicate()
            out[kind] = {"run_error": "no answer in 120 s (does a startup file of this kind wait for something?): "
                                      + (stderr or stdout or "").strip()[-200:]}
            continue
        answer = next((line for line in reversed(stdout.splitlines()) if line.startswith("@@fleet-cuda ")), None)
        out[kind] = (json.loads(answer[len("@@fleet-cuda "):]) if answer else
                     {"run_error": f"no answer (exit {proc.returncode}): {(stderr or stdout).strip()[-300:]}"})
    return out


def hidden_gpus(run, kind, r):
    """A kind whose CUDA comes up but sees fewer of the host's GPUs than it has, because of CUDA_VISIBLE_DEVICES:
    the sentence naming it; None where it sees them all (or the count is unknown)."""
    n, seen = gpus.host_gpu_count(run), r.get("devices")
    if r.get("visible_devices") is None or n is None or seen is None or seen >= n:
        return None
    where = loader.variable_line(run, kind, "CUDA_VISIBLE_DEVICES")
    return (f"sees {seen} of the host's {n} GPUs: CUDA_VISIBLE_DEVICES={r['visible_devices']!r} set at {where}; fix: "
            f"correct or remove it there (fleet leaves CUDA_VISIBLE_DEVICES to you)")


def judge_kind(run, kind, r):
    """One kind's entry of run.out["kinds"] and its check: passed, the libcuda (path, version, stub), and on failure
    the step of the loader that put it first and the explanation."""
    passed = r.get("torch_available") if kind == "ssh" else r.get("available")
    r = {**r, "kind": kind}
    entry = {"passed": bool(passed), **{k: r.get(k) for k in (
        "code", "name", "libcuda", "libcuda_real", "libcuda_version", "stub", "driver_api", "devices",
        "ld_library_path", "ld_preload", "run_error", "load_error", "visible_devices", "nccl") if r.get(k) is not None}}
    fewer = hidden_gpus(run, kind, r) if passed else None
    if fewer:
        passed = entry["passed"] = False
        entry["explain"] = detail = f"{KINDS[kind]}: {fewer}"
    elif passed:
        detail = f"{KINDS[kind]}: CUDA up through {r.get('libcuda_real')}"
    elif r.get("run_error"):
        detail = f"{KINDS[kind]}: {r['run_error']}"
    else:
        step = loader.loader_step(run, r, kind)
        entry["step"] = step
        detail = f"{KINDS[kind]}: {explain(run, r, step)}"
        entry["explain"] = detail
    run.check(CHECK_NAMES[kind], passed, detail)
    return entry


def user_commands(run):
    """What the user types in each kind of shell reaches what this verify proves (issue 35): python3, python and
    pip are the venv's and find this torch (where venv_first), nvcc and CUDA_HOME are the decided toolkit's; from
    fleet.facts.shells' trace of each kind (the commands resolved there, each python asked where torch is)."""
    toolkit = run.config.toolkit
    if not (run.config.venv_first or toolkit) or not os.environ.get("FLEET_VERIFY_TRACE"):
        return None
    torch_dir = os.path.dirname(run.torch.__file__) if run.torch is not None else None
    trace = run.shell_trace()
    run.out["commands"] = {}
    for kind in ("ssh", "interactive", "login"):
        shell = trace.get(TRACED[kind])
        if shell is None:
            run.check(f"user_commands_{kind}", False, f"{KINDS[kind]}: the startup files' trace gave no answer")
            continue
        wrong, noted, cmds = [], [], shell["commands"]   # wrong: (what, its cause's fix)
        where_path = loader.variable_line(run, kind, "PATH")
        if run.config.venv_first:
            for name in ("python3", "python"):
                got = cmds.get(name) or {}
                found = (shell["pythons"].get(got.get("path") or "") or {}).get("torch")
                if got.get("path") and found == torch_dir:
                    continue
                why = explaining.command_cause(run, kind, shell, name)
                said = (f"`{name}` is {got.get('path') or 'not found'}"
                        + (f" (its torch: {found or 'none'}, not {torch_dir})" if got.get("path") else ""))
                if why["deliberate"] and found:
                    noted.append(f"{said}: {why['because']}")
                else:
                    wrong.append((f"{said}: {why['because']}", why["fix"]))
            pip, venv_bin = cmds.get("pip") or {}, os.path.dirname(sys.executable)
            if importlib.util.find_spec("pip") is None:
                wrong.append((f"`pip` is {pip.get('path') or 'not found'}: the venv has no pip module (made without "
                              "it, as uv makes them)", f"run {sys.executable} -m ensurepip --default-pip"))
            elif not os.path.exists(os.path.join(venv_bin, "pip")):
                wrong.append((f"`pip` is {pip.get('path') or 'not found'}: the venv has pip's module but no "
                              f"{venv_bin}/pip", "fleet apply writes it (the env_hooks role)"))
            elif not pip.get("path") or not pip["path"].startswith(venv_bin + "/"):
                why = explaining.command_cause(run, kind, shell, "pip")
                wrong.append((f"`pip` is {pip.get('path') or 'not found'}, not {venv_bin}/pip: {why['because']}",
                              why["fix"]))
            disagree = resolve_rules.disagreement(shell, explaining.at)
            if disagree:
                wrong.append((disagree, "activate the environment last (its activate script sets both), or unset "
                                        "the variable where it is set"))
        if toolkit and os.path.exists(os.path.join(toolkit, "bin", "nvcc")):
            nvcc = cmds.get("nvcc") or {}
            real = nvcc.get("real") or ""
            if not real.startswith(toolkit + "/"):
                wrong.append((f"`nvcc` is {real or 'not found'}" + (f" (CUDA {nvcc['version']})" if nvcc.get("version")
                                                                   else "") + f", not {toolkit}/bin/nvcc (PATH last "
                              f"set at {where_path})", explaining.PATH_FIX))
            for name in ("CUDA_HOME", "CUDA_PATH"):
                value = shell.get(name)
                if (name == "CUDA_HOME" or value is not None) and (value or "").rstrip("/") != toolkit:
                    wrong.append((f"{name}={value!r} (set at {loader.variable_line(run, kind, name)}), not {toolkit}",
                                  explaining.PATH_FIX))
        run.out["commands"][kind] = {name: (cmds.get(name) or {}).get("path") for name in ("python3", "python", "pip", "nvcc")}
        fixes = list(dict.fromkeys(fix for _, fix in wrong))
        detail = (f"{KINDS[kind]}: " + "; ".join(what for what, _ in wrong) + "; fix: " + "; ".join(fixes)) if wrong \
            else f"{KINDS[kind]}: python3, pip and nvcc reach this venv's torch and {toolkit or 'the system'}'s toolkit"
        if noted and not wrong:
            detail = f"{KINDS[kind]}: " + "; ".join(noted) + f"; nvcc reaches {toolkit or 'the system'}'s toolkit"
        run.check(f"user_commands_{kind}", not wrong, detail)
    return None
