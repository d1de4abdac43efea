"""Verify by fingerprint: verify (a torch import, CUDA, a matmul, a perf smoke) runs again only when what it
proved may have changed.

The fingerprint is a few cheap reads taken inside the probe, in the same remote command, with no Python and no
GPU work: the kernel driver, the `libcuda.so.1` each kind of shell would load (path, size, mtime), the torch
distribution (version and a digest of its RECORD), the venv's Python, fleet's env hook, and the effective
LD_LIBRARY_PATH of a non-interactive, an interactive and a login shell. The verify check is wrapped so that the
host itself compares the fingerprint with the one its own verify record (/var/lib/fleet/verify.json, which the
same probe reads back) holds, and answers "reused" when they match and that record is younger than
verify_max_age (its mtime: it is written whenever verify runs); otherwise the check runs as before and its
result records the new fingerprint. The host's record decides, not the controller's cached copy: a record that
is missing, unreadable or from another fleet means verify runs.

A failed verify is never reused: the host reuses only a record that says it passed (a top-level
`"passed": true`), so after a failure the next apply, verify or bootstrap runs it again. The variables verify reads
(verify_perf, its floors, the venv: the names its role's texts read) are parts of the fingerprint too, each as a
digest of its value (`var.NAME`), so changing one runs verify again and the reason names it.

The same fingerprint, taken by the facts probe (the `verify_fingerprint` source: once per probe, after the shells'
trace, kept for the gate), tells whether the last verify still describes the host: fleet/facts/fingerprint.py's
`stale_reasons` compares it with the parts the verify record holds, and its `judged` gives the verify record its
verdict (passed, failed or stale, with why) for the facts, the tables, the HTML report and --json.

    gated(check_snippet, python_env, max_age_s, variables=...)  # shell for the check section; None always runs
    read(output) -> Gate                          # the fingerprint parts, reused or not, and the check's own output
    run_reason(last, gate, max_age_s, now, forced) # why verify ran, in words
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone

from fleet import remote
from fleet.facts.fingerprint import HOST_PARTS, HOST_PARTS_ENV, fingerprint_script, part_name, variable_lines
from fleet.facts.software import VERIFY_PATH

DEFAULT_MAX_AGE = "24h"
_FP = "@@fleet:fingerprint "
_PART = "@@fp "
_REUSED = "@@fleet:verify-reused@@"

def gated(check: str, python_env: str, max_age_s: float | None, verify_path: str = VERIFY_PATH,
          variables: dict[str, str] | None = None, fingerprint=None) -> str:
    """The verify check behind the fingerprint: the host answers 'reused' when its own verify record PASSED, holds
    this fingerprint and is at most `max_age_s` old; None: verify runs whatever the fingerprint says.
    `variables`: name -> digest of the variables verify reads (parts of the fingerprint). Inside the probe the
    host's parts are the ones the facts took ($fleet_fp_host, same venv); alone, the gate takes its own: by running
    `fingerprint` (the installed program of fleet/programs.py) where given, else the script inline."""
    allow = "yes" if max_age_s is not None else ""
    extra = variable_lines(variables)
    add = f"fleet_fp_parts=\"$fleet_fp_parts\"$'\\n'{shlex.quote(extra)}\n" if extra else ""
    if fingerprint is not None:
        from fleet.programs import use

        alone = f"{use(fingerprint)}fleet_fp_parts=$(bash \"{fingerprint.at}\" 2>/dev/null </dev/null)\n"
    else:   # (set --: the script's own first argument could ask it to read a trace on stdin)
        alone = f"fleet_fp_parts=$( ( set --; {fingerprint_script(python_env)} ) 2>/dev/null )\n"
    from fleet.facts.fingerprint import taken

    return (f"if {taken()} && [ \"${{{HOST_PARTS_ENV}-}}\" = {shlex.quote(python_env)} ]; then "
            f"fleet_fp_parts=${HOST_PARTS}\n"
            f"else {alone}fi\n"
            f"{add}"
            f"fleet_vf={shlex.quote(verify_path)} fleet_allow={allow} fleet_max_age={int(max_age_s or 0)}\n"
            + remote.program("verify_gate") + "\n" + check)


@dataclass(frozen=True)
class Gate:
    fingerprint: str | None
    parts: dict[str, str] = field(default_factory=dict)
    reused: bool = False
    output: str = ""           # the check's own output, the gate's lines taken out


def read(output: str) -> Gate:
    fingerprint, parts, reused, rest = None, {}, False, []
    for line in output.splitlines():
        if line.startswith(_FP) and line.endswith("@@"):
            fingerprint = line[len(_FP):-2]
        elif line.startswith(_PART):
            name, _, value = line[len(_PART):].partition(" ")
            parts[name] = value
        elif line == _REUSED:
            reused = True
        else:
            rest.append(line)
    return Gate(fingerprint, parts, reused, "\n".join(rest))


def changed_parts(old: dict | None, new: dict) -> list[str]:
    old = old if isinstance(old, dict) else {}
    return [part_name(k) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]


def parse_age(text) -> float:
    """'24h', '30m', '2d', '90s' or a number of seconds -> seconds (fleet.parse.duration); ValueError otherwise."""
    from fleet.parse import Rejected, duration

    try:
        return duration(text)
    except Rejected as exc:
        raise ValueError(f"verify_max_age {exc}") from None


def run_reason(last: dict | None, gate: Gate, max_age_s: float | None, now: datetime, forced: str | None) -> str:
    """Why verify ran this time, in words (the host decided; this says which of its reasons held)."""
    if forced or max_age_s is None:
        return forced or "asked for"
    if not isinstance(last, dict) or not last.get("fingerprint"):
        return "no earlier verify with a fingerprint on the host"
    if last.get("fingerprint") != gate.fingerprint:
        changed = changed_parts(last.get("fingerprint_parts"), gate.parts)
        return "changed since the last verify: " + (", ".join(changed) if changed else "the fingerprint")
    if not (last.get("was_passed") if "was_passed" in last else last.get("passed")):   # (a stale one: what it said)
        return "the last verify failed (a failed verify is never reused)"
    try:
        at = datetime.fromisoformat(str(last.get("at")).replace("Z", "+00:00"))
        age = (now - (at if at.tzinfo else at.replace(tzinfo=timezone.utc))).total_seconds()
    except ValueError:
        return "the last verify has no readable time"
    return f"the last verify is {_human(age)} old (verify_max_age {_human(max_age_s)})"


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"
