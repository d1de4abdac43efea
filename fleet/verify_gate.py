"""Verify by fingerprint: verify (a torch import, CUDA, a matmul, a perf smoke) runs again only when what it
proved may have changed.

The fingerprint is a few cheap reads taken inside the probe, in the same remote command, with no Python and no
GPU work: the kernel driver, the `libcuda.so.1` each kind of shell would load (path, size, mtime), the torch
distribution (version and a digest of its RECORD), the venv's Python, fleet's env hook, and the effective
LD_LIBRARY_PATH of a non-interactive, an interactive and a login shell. The verify check is wrapped so that the
host itself compares the fingerprint with the one the last verify recorded and answers "reused" when they match;
otherwise the check runs as before and its result records the new fingerprint.

    gated(check_snippet, python_env, expect)   # shell for the check section; expect=None always runs verify
    read(output) -> Gate                        # the fingerprint parts, reused or not, and the check's own output
    expectation(last, max_age_s, now, forced)   # (fingerprint to expect | None, why verify must run | "")
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone

from .facts.software import select_python

DEFAULT_MAX_AGE = "24h"
_FP = "@@fleet:fingerprint "
_PART = "@@fp "
_REUSED = "@@fleet:verify-reused@@"

# What each part of the fingerprint is, for the reason a person reads ("re-run: torch changed").
PART_NAMES = {"driver": "kernel driver", "python": "the venv's Python", "torch": "torch distribution",
              "hook": "fleet's env hook", "ld.noninteractive": "LD_LIBRARY_PATH of `ssh host cmd`",
              "ld.interactive": "LD_LIBRARY_PATH of interactive shells", "ld.login": "LD_LIBRARY_PATH of login shells",
              "libcuda.noninteractive": "libcuda.so.1 of `ssh host cmd`",
              "libcuda.interactive": "libcuda.so.1 of interactive shells", "libcuda.login": "libcuda.so.1 of login shells"}


def fingerprint_script(python_env: str) -> str:
    """Bash printing `name value` lines: only file reads and two shell start-ups, no Python, no GPU."""
    return f"""{select_python(python_env)}
fleet_ldc=$(command -v ldconfig || echo /sbin/ldconfig)
fleet_cached=$("$fleet_ldc" -p 2>/dev/null | awk '/libcuda\\.so\\.1 /{{print $NF; exit}}')
fleet_stat() {{ [ -e "$1" ] && stat -L -c '%n %s %Y' -- "$1" 2>/dev/null || echo "absent $1"; }}
fleet_libcuda() {{  # the libcuda.so.1 the loader takes for this LD_LIBRARY_PATH: the path first, then the cache
  fleet_IFS=$IFS; IFS=:
  for fleet_d in $1; do
    [ -n "$fleet_d" ] && [ -e "$fleet_d/libcuda.so.1" ] && {{ IFS=$fleet_IFS; fleet_stat "$(readlink -f "$fleet_d/libcuda.so.1")"; return; }}
  done
  IFS=$fleet_IFS
  [ -n "$fleet_cached" ] && fleet_stat "$(readlink -f "$fleet_cached")" || echo none
}}
fleet_ld_of() {{  # the LD_LIBRARY_PATH a shell of this kind ends up with (its startup files' output is dropped)
  timeout 10 bash "$1" -c 'printf "@@ld=%s@@" "$LD_LIBRARY_PATH"' </dev/null 2>/dev/null | sed -n 's/.*@@ld=\\(.*\\)@@.*/\\1/p' | tail -n 1
}}
echo "driver $(head -n 1 /proc/driver/nvidia/version 2>/dev/null || echo none)"
echo "python $(fleet_stat "$(readlink -f "$py" 2>/dev/null)")"
fleet_rec=$(ls -d "$env_dir"/lib/python3*/site-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/dist-packages/torch-*.dist-info/RECORD /usr/lib/python3/dist-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/site-packages/torch-*.dist-info/RECORD 2>/dev/null | head -n 1)
echo "torch ${{fleet_rec:-none}} $([ -n "$fleet_rec" ] && sha256sum < "$fleet_rec" | cut -c1-16)"
echo "hook $(cat /etc/fleet/env.sh /etc/profile.d/fleet.sh 2>/dev/null | sha256sum | cut -c1-16)"
fleet_ni=${{LD_LIBRARY_PATH:-}}
fleet_i=$(fleet_ld_of -i)
fleet_l=$(fleet_ld_of -l)
echo "ld.noninteractive $fleet_ni"
echo "ld.interactive $fleet_i"
echo "ld.login $fleet_l"
echo "libcuda.noninteractive $(fleet_libcuda "$fleet_ni")"
echo "libcuda.interactive $(fleet_libcuda "$fleet_i")"
echo "libcuda.login $(fleet_libcuda "$fleet_l")"
"""


def gated(check: str, python_env: str, expect: str | None) -> str:
    """The verify check behind the fingerprint: the host answers 'reused' when it matches `expect`."""
    want = shlex.quote(expect) if expect else "''"
    return (f"fleet_fp_parts=$( ( {fingerprint_script(python_env)} ) 2>/dev/null )\n"
            "fleet_fp=$(printf '%s\\n' \"$fleet_fp_parts\" | sha256sum | cut -c1-16)\n"
            f"printf '{_FP}%s@@\\n' \"$fleet_fp\"\n"
            f"printf '%s\\n' \"$fleet_fp_parts\" | sed 's/^/{_PART}/'\n"
            f"if [ -n {want} ] && [ \"$fleet_fp\" = {want} ]; then echo '{_REUSED}'; exit 0; fi\n"
            f"{check}")


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
    return [PART_NAMES.get(k, k) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]


def parse_age(text) -> float:
    """'24h', '30m', '2d', '90s' or a number of seconds -> seconds; ValueError for anything else."""
    if isinstance(text, (int, float)) and not isinstance(text, bool) and text >= 0:
        return float(text)
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(text))
    if not found:
        raise ValueError(f"verify_max_age {text!r} is not a duration: write e.g. 24h, 30m or 2d")
    return float(found[1]) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[found[2]]


def expectation(last: dict | None, max_age_s: float, now: datetime, forced: str | None) -> tuple[str | None, str]:
    """The fingerprint the host may match to reuse the last verify, or None and why verify must run."""
    if forced:
        return None, forced
    if not isinstance(last, dict) or not last.get("fingerprint"):
        return None, "no earlier verify with a fingerprint"
    try:
        at = datetime.fromisoformat(str(last.get("at")).replace("Z", "+00:00"))
        age = (now - (at if at.tzinfo else at.replace(tzinfo=timezone.utc))).total_seconds()
    except ValueError:
        return None, "the last verify has no readable time"
    if age > max_age_s:
        return None, f"the last verify is {_human(age)} old (verify_max_age {_human(max_age_s)})"
    return str(last["fingerprint"]), ""


def run_reason(forced_or_stale: str, last: dict | None, gate: Gate) -> str:
    """Why verify ran this time, in words."""
    if forced_or_stale:
        return forced_or_stale
    changed = changed_parts((last or {}).get("fingerprint_parts"), gate.parts)
    return "changed since the last verify: " + (", ".join(changed) if changed else "the fingerprint")


def _human(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"
