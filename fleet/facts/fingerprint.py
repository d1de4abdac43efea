"""The fingerprint of what verify proves, as the host shows it, and whether the last verify still describes it.

The parts are a few cheap reads, no Python and no GPU work (fingerprint_script): the kernel driver, the
`libcuda.so.1` each kind of shell would load (path, size, mtime), the torch distribution (its RECORD's digest),
the venv's Python, fleet's env hook, each shell's effective LD_LIBRARY_PATH, the libcuda a process that reads
no startup file loads (the ld cache alone) and the loader's own files (preload, ld.so.conf*); the verify gate adds the variables
verify reads (`var.NAME DIGEST`). The facts probe takes them once per probe (`verify_fingerprint`, after the
background sources: it reads the shells' trace they keep) and keeps them for the gate
(fleet/resources/verify_gate.py), which compares them with the host's own verify record.

    stale_reasons(verify, parts_now, torch_now, variables_now) -> [why, ...]   # [] while the verdict holds
    judged(verify, reasons) -> the record with "verdict" passed | failed | stale (and "stale": reasons)
"""

from __future__ import annotations

import functools
import re
import shlex

from fleet.facts import shells
from fleet.programs import MISSING, MISSING_EXIT, Program, from_bin
from fleet.facts.software import select_python
from fleet import remote, shell
from fleet.remote import families

# What each part of the fingerprint is, for the reason a person reads ("re-run: torch changed").
PART_NAMES = {"driver": "kernel driver", "python": "the venv's Python", "torch": "torch distribution",
              "hook": "fleet's env hook", "ld.noninteractive": "LD_LIBRARY_PATH of `ssh host cmd`",
              "ld.interactive": "LD_LIBRARY_PATH of interactive shells", "ld.login": "LD_LIBRARY_PATH of login shells",
              "libcuda.noninteractive": "libcuda.so.1 of `ssh host cmd`",
              "libcuda.interactive": "libcuda.so.1 of interactive shells", "libcuda.login": "libcuda.so.1 of login shells",
              "libcuda.bare": "libcuda.so.1 of processes that read no startup file",
              "ld.files": "the loader's files (/etc/ld.so.preload, /etc/ld.so.conf, /etc/ld.so.conf.d)",
              "env.noninteractive": "the environment of `ssh host cmd`", "env.interactive":
              "the environment of interactive shells", "env.login": "the environment of login shells",
              "env.bare": "the environment of processes that read no startup file",
              "packages": "the packages beside torch (its site-packages: every distribution, the nvidia/* libraries)"}
# what an env.KIND part covers, said once in a reason
ENV_COVERS = ("the variables CUDA, the loader, Python and torch read (" + ", ".join(shells.VARS[1:]) + "), every "
              "variable of the families a GPU job reads (" + ", ".join(p + "*" for p in families.PREFIXES[:8]) + " and kin) and what "
              "python3, python, pip and nvcc resolve to")
VAR = "var."          # a variable verify reads: `var.NAME DIGEST`
HOST_PARTS = "fleet_fp_host"          # the probe's own fingerprint (facts.verify_fingerprint), kept for the gate
HOST_PARTS_ENV = "fleet_fp_host_env"  # ... and the venv it was taken for


def part_name(key: str) -> str:
    return f"variable {key[len(VAR):]}" if key.startswith(VAR) else PART_NAMES.get(key, key)


def fingerprint_script(python_env: str, *, capture: bool = True) -> str:
    """Bash printing `name value` lines: only file reads and the probe's own trace of the shells, no Python, no GPU.
    It takes first what the trace does not give (the driver, the venv's Python, torch's RECORD digest, the hook, the
    ld cache, the libcuda the script's own environment and the bare loader take, the loader's files, the packages),
    then reads the trace and takes what it gives (each kind's LD_LIBRARY_PATH and the libcuda it resolves, each kind's
    environment), and prints every line in one fixed order: read from stdin, the trace can arrive while the first
    parts are taken (the probe feeds it the trace as soon as its shells source ends: fleet/sections.py `fed`).
    `capture`: it traces the shells itself unless run as a program with TRACE_ON_STDIN (`bash FILE --trace-on-stdin`,
    the trace on its stdin); False: it always reads the trace from stdin (inside the facts probe: the trace's text is
    not sent twice). Read from stdin, a trace saying the shells' own program was missing (programs.MISSING) is said
    again, and the script ends with MISSING_EXIT: there is nothing to take the shells' parts from.

    Bash builtins wherever they give the same text (read, [[ ]], ${x:0:16}, one glob, one sha256sum for the four
    environments): a probe runs on every host at every apply, and each process it starts costs ~1-2 ms of the host's
    CPU."""
    return (f"{select_python(python_env)}\n{remote.program('fingerprint')}\n{_trace(capture)}\n"
            f"{remote.program('fingerprint_trace')}\n")


# the fingerprint program's first argument where the probe hands it the trace its shells source kept, on stdin
TRACE_ON_STDIN = "--trace-on-stdin"


def _trace(capture: bool) -> str:
    """Shell: $fleet_shells_out, the shells' trace: from stdin where the program was given TRACE_ON_STDIN (the
    probe's own, kept by its shells source) or where it does not capture, else traced here unless this script already
    holds it. Read from stdin, a trace saying the shells' program was missing is said again (MISSING, MISSING_EXIT)."""
    read = (f"{shells.CAPTURED}=$(cat); exec </dev/null\n"
            f'case $\'\\n\'"${shells.CAPTURED}" in *$\'\\n\'{shlex.quote(MISSING)}*)\n'
            f'  while IFS= read -r line; do [[ $line != {shlex.quote(MISSING)}* ]] || printf \'%s\\n\' "$line"; done '
            f'<<< "${shells.CAPTURED}"; exit {MISSING_EXIT};; esac')
    if not capture:
        return read
    return f'if [ "${{1-}}" = {TRACE_ON_STDIN} ]; then {read}\nelse {shells.capture()}\nfi'


def probe_part(python_env: str) -> str:
    """The facts probe's source, inline: the host's parts of the fingerprint, started with the other sources and handed
    the shells' trace on its stdin as soon as it is kept (fleet/sections.py `fed`): what reads no trace is taken
    meanwhile. The probe keeps what it prints in $fleet_fp_host (sources.Source kept_as), where the verify gate finds
    them. Run from its installed program instead: fingerprint_part."""
    return f"( {fingerprint_script(python_env, capture=False)} ) 2>/dev/null"


@functools.lru_cache(maxsize=64)
def fingerprint_program(venv: str) -> Program:
    """The fingerprint's parts for this venv, as a helper program (fleet/programs.py): what the gate runs where the
    facts did not take them."""
    return Program("fleet-fingerprint", shell.define(("trust",)) + fingerprint_script(venv))


def fingerprint_part(python_env: str, program: Program | None = None) -> str:
    """The facts probe's fingerprint source (probe_part), fed the shells' trace on its stdin (fleet/sections.py `fed`):
    `program`, the installed fingerprint program, run with TRACE_ON_STDIN where the host has it, else the script
    inline. Where the host lacks it, or the trace says the shells' own program was missing, the section says so
    (MISSING, MISSING_EXIT): the gate then takes its own (taken()), and the probe asks again with the text."""
    if program is not None:
        return from_bin(program, f" {TRACE_ON_STDIN} 2>/dev/null")
    return probe_part(python_env)


def taken() -> str:
    """Shell test: the probe took the host's fingerprint parts ($fleet_fp_host kept, and not its section saying the
    host lacks a program)."""
    return f'[ -n "${{{HOST_PARTS}+x}}" ] && [[ ${HOST_PARTS} != {shlex.quote(MISSING)}* ]]'


def kept_for(settings: dict) -> str:
    """Shell the probe runs before it takes the fingerprint: the venv the kept parts are for (the gate compares)."""
    return f"{HOST_PARTS_ENV}={shlex.quote(str(settings['python_env']))}"


def variable_lines(variables: dict[str, str] | None) -> str:
    """`var.NAME DIGEST` lines, sorted: the variables verify reads, each as a digest of its value."""
    return "\n".join(f"{VAR}{name} {digest}" for name, digest in sorted((variables or {}).items()))


def digest(value) -> str:
    """A value's short digest (JSON, keys sorted): what the fingerprint holds of a variable."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


_DRIVER = re.compile(r"(?<![\d.])(\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)(?![\d.])")


def _driver_of(line: str | None) -> str:
    """The version in /proc/driver/nvidia/version's first line ("... Kernel Module  580.95.05  Tue ..."), or "-"."""
    found = _DRIVER.search(line or "") if line and line != "none" else None
    return found[1] if found else "-"


def stale_reasons(verify: dict | None, parts_now: dict | None, torch_now: dict | None = None,
                  variables_now: dict[str, str] | None = None) -> list[str]:
    """Why the last verify no longer describes the host as last probed, one phrase per change ("torch changed:
    2.11.0 -> -", "driver changed: 580.95.05 -> 570.195.03", "variable verify_perf changed"); [] while it holds.
    Only what both sides hold is compared: a record without a fingerprint (an older fleet) or a probe without one
    (it failed) says nothing; variables only where the caller knows them (the inventory's, with the roles)."""
    if not isinstance(verify, dict) or not parts_now:
        return []
    then = verify.get("fingerprint_parts")
    if not isinstance(then, dict) or not then:
        return []
    now = {**parts_now, **{f"{VAR}{k}": v for k, v in (variables_now or {}).items()}}
    reasons, seen = [], set()
    for key in then:
        if key not in now or then[key] == now[key] or (key.startswith(VAR) and variables_now is None):
            continue
        if key == "torch":
            was = ((verify.get("torch") or {}) if isinstance(verify.get("torch"), dict) else {}).get("version")
            is_ = (torch_now or {}).get("version") if isinstance(torch_now, dict) else None
            if now[key].startswith("none"):
                is_ = "-"
            reasons.append(f"torch changed: {was or '?'} -> {is_ or '-'}" if was != is_
                           else f"torch changed: its files differ from those verify imported ({was})")
        elif key == "driver":
            reasons.append(f"driver changed: {_driver_of(then[key])} -> {_driver_of(now[key])}")
        elif key.startswith("libcuda."):
            if "libcuda" in seen:
                continue
            seen.add("libcuda")
            kinds = [k for k in then if k.startswith("libcuda.") and k in now and then[k] != now[k]]
            was, is_ = then[key].split(" ")[0], now[key].split(" ")[0]
            where = ", ".join(PART_NAMES.get(k, k).replace("libcuda.so.1 of ", "") for k in kinds)
            reasons.append(f"libcuda.so.1 changed ({where}): {was} -> {is_}" if was != is_
                           else f"libcuda.so.1 changed ({where}): {is_} is another file now")
        elif key.startswith("env."):
            kinds = [k for k in then if k.startswith("env.") and k in now and then[k] != now[k]]
            if "env" in seen:
                continue
            seen.add("env")
            where = ", ".join(PART_NAMES.get(k, k).replace("the environment of ", "") for k in kinds)
            reasons.append(f"the environment changed ({where}): {ENV_COVERS}")
        else:
            reasons.append(f"{part_name(key)} changed")
    return reasons


def compared(parts: dict | None) -> str:
    """What a reused verdict compared, in words: the parts its fingerprint holds."""
    names, envs = [], []
    for key in parts or {}:
        if key.startswith("env."):
            envs.append(PART_NAMES.get(key, key).replace("the environment of ", ""))
        elif not key.startswith("libcuda.") and not key.startswith("ld.") or key == "ld.files":
            names.append(part_name(key))
    if any(k.startswith(("libcuda.", "ld.")) and k != "ld.files" for k in parts or {}):
        names.append("each kind's libcuda.so.1 and LD_LIBRARY_PATH")
    if envs:
        names.append(f"the environment of {', '.join(envs)} ({ENV_COVERS})")
    return "; ".join(names)


def judged(verify: dict | None, reasons: list[str]) -> dict | None:
    """The verify record with its verdict for the facts: "passed" or "failed" while it describes the host; "stale"
    (with why) when it no longer does: then `passed` is None (shown as passed only while it holds) and
    `was_passed` keeps what it said. Idempotent: a judged record judged again keeps what it was."""
    if not isinstance(verify, dict):
        return verify
    base = {k: v for k, v in verify.items() if k not in ("verdict", "stale", "was_passed")}
    base["passed"] = verify.get("was_passed", verify.get("passed")) if "was_passed" in verify else verify.get("passed")
    if reasons:
        return {**base, "passed": None, "was_passed": base["passed"], "verdict": "stale", "stale": list(reasons)}
    return {**base, "verdict": "passed" if base["passed"] else "failed", "stale": []}



def parse(text: str) -> dict[str, str]:
    """The verify_fingerprint section -> {part: value}; no parts -> ValueError (the probe could not take them)."""
    parts = {}
    for line in text.splitlines():
        name, sep, value = line.partition(" ")
        if name and (sep or name in PART_NAMES):
            parts[name] = value
    if "driver" not in parts:
        raise ValueError("no fingerprint parts (no 'driver' line)")
    return parts
