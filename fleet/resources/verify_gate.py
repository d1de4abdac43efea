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

    gated(check_snippet, python_env, max_age_s)  # shell for the check section; max_age_s=None always runs verify
    read(output) -> Gate                          # the fingerprint parts, reused or not, and the check's own output
    run_reason(last, gate, max_age_s, now, forced) # why verify ran, in words
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone

from fleet.facts import shells
from fleet.facts.software import VERIFY_PATH, select_python

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
    """Bash printing `name value` lines: only file reads and the probe's own trace of the shells, no Python, no GPU.

    Bash builtins wherever they give the same text (read, [[ ]], ${x:0:16}, one glob): a probe runs on every host
    at every apply, and each process it starts costs ~1-2 ms of the host's CPU."""
    return f"""{select_python(python_env)}
{shells.capture()}
fleet_stat() {{ [ -e "$1" ] && stat -L -c '%n %s %Y' -- "$1" 2>/dev/null || echo "absent $1"; }}
declare -A fleet_seen
fleet_libcuda() {{  # fleet_r: the libcuda.so.1 the loader takes for this LD_LIBRARY_PATH (the path first, then the
  # ld cache, read once), as `path size mtime`; each file is resolved and stat'ed once for all three shells
  local fleet_d fleet_c= IFS=:
  for fleet_d in $1; do
    if [ -n "$fleet_d" ] && [ -e "$fleet_d/libcuda.so.1" ]; then fleet_c=$fleet_d/libcuda.so.1; break; fi
  done
  IFS=$' \\t\\n'
  if [ -z "$fleet_c" ]; then
    [ -n "${{fleet_cached+x}}" ] || fleet_cached=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null | awk '/libcuda\\.so\\.1 /{{print $NF; exit}}')
    [ -n "$fleet_cached" ] || {{ fleet_r=none; return; }}
    fleet_c=$fleet_cached
  fi
  [ -n "${{fleet_seen[$fleet_c]+x}}" ] || fleet_seen[$fleet_c]=$(fleet_stat "$(readlink -f "$fleet_c")")
  fleet_r=${{fleet_seen[$fleet_c]}}
}}
fleet_ld_of() {{  # fleet_v: the LD_LIBRARY_PATH a fresh session's shell of this kind ends up with, as the probe's own
  # trace of the startup files found it (facts.shells: the same trace, so the gate starts no shell of its own)
  local line kind=
  fleet_v=
  while IFS= read -r line; do
    case $line in
      "@@shell "*) kind=${{line#@@shell }} ;;
      "@@value LD_LIBRARY_PATH="*) [ "$kind" = "$1" ] && fleet_v=${{line#@@value LD_LIBRARY_PATH=}} ;;
    esac
  done <<< "${shells.CAPTURED}"
}}
fleet_first_line() {{  # what `head -n 1 FILE` prints, else "none"
  [ -r "$1" ] || {{ echo none; return; }}
  local line=; IFS= read -r line < "$1"; printf '%s\\n' "$line"
}}
echo "driver $(fleet_first_line /proc/driver/nvidia/version)"
echo "python $(fleet_stat "$(readlink -f "$py" 2>/dev/null)")"
fleet_recs=$(shopt -s nullglob; printf '%s\\n' "$env_dir"/lib/python3*/site-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/dist-packages/torch-*.dist-info/RECORD /usr/lib/python3/dist-packages/torch-*.dist-info/RECORD /usr/local/lib/python3*/site-packages/torch-*.dist-info/RECORD)
case $fleet_recs in
  *$'\\n'*) fleet_rec=$(ls -d $fleet_recs 2>/dev/null | head -n 1) ;;  # several: ls's order picks, as it always did
  *) fleet_rec=$fleet_recs ;;
esac
fleet_h=; [ -n "$fleet_rec" ] && fleet_h=$(sha256sum < "$fleet_rec")
echo "torch ${{fleet_rec:-none}} ${{fleet_h:0:16}}"
fleet_h=$(cat /etc/fleet/env.sh /etc/profile.d/fleet.sh 2>/dev/null | sha256sum)
echo "hook ${{fleet_h:0:16}}"
fleet_ni=${{LD_LIBRARY_PATH:-}}
fleet_ld_of interactive; fleet_i=$fleet_v
fleet_ld_of login; fleet_l=$fleet_v
echo "ld.noninteractive $fleet_ni"
echo "ld.interactive $fleet_i"
echo "ld.login $fleet_l"
fleet_libcuda "$fleet_ni"; echo "libcuda.noninteractive $fleet_r"
fleet_libcuda "$fleet_i"; echo "libcuda.interactive $fleet_r"
fleet_libcuda "$fleet_l"; echo "libcuda.login $fleet_r"
"""


def gated(check: str, python_env: str, max_age_s: float | None, verify_path: str = VERIFY_PATH) -> str:
    """The verify check behind the fingerprint: the host answers 'reused' when its own verify record holds this
    fingerprint and is at most `max_age_s` old; None: verify runs whatever the fingerprint says."""
    allow = "yes" if max_age_s is not None else ""
    return (f"fleet_fp_parts=$( ( {fingerprint_script(python_env)} ) 2>/dev/null )\n"
            "fleet_fp=$(printf '%s\\n' \"$fleet_fp_parts\" | sha256sum); fleet_fp=${fleet_fp:0:16}\n"
            f"printf '{_FP}%s@@\\n' \"$fleet_fp\"\n"
            f"while IFS= read -r fleet_l; do printf '{_PART}%s\\n' \"$fleet_l\"; done <<< \"$fleet_fp_parts\"\n"
            f"fleet_vf={shlex.quote(verify_path)}\n"
            f"if [ -n '{allow}' ] && [ -r \"$fleet_vf\" ]; then\n"
            # the first "fingerprint": "HEX" line of the record (json.dumps with indent puts each key on its line)
            "  fleet_last=\n"
            "  while IFS= read -r fleet_l || [ -n \"$fleet_l\" ]; do\n"
            "    if [[ $fleet_l =~ ^\\ *\\\"fingerprint\\\":\\ *\\\"([0-9a-f]*)\\\" ]]; then fleet_last=${BASH_REMATCH[1]}; break; fi\n"
            "  done < \"$fleet_vf\"\n"
            "  fleet_age=$(( ${EPOCHSECONDS:-$(date +%s)} - $(stat -c %Y \"$fleet_vf\") ))\n"
            f"  if [ \"$fleet_last\" = \"$fleet_fp\" ] && [ \"$fleet_age\" -le {int(max_age_s or 0)} ]; then "
            f"echo '{_REUSED}'; exit 0; fi\n"
            "fi\n"
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


def run_reason(last: dict | None, gate: Gate, max_age_s: float | None, now: datetime, forced: str | None) -> str:
    """Why verify ran this time, in words (the host decided; this says which of its reasons held)."""
    if forced or max_age_s is None:
        return forced or "asked for"
    if not isinstance(last, dict) or not last.get("fingerprint"):
        return "no earlier verify with a fingerprint on the host"
    if last.get("fingerprint") != gate.fingerprint:
        changed = changed_parts(last.get("fingerprint_parts"), gate.parts)
        return "changed since the last verify: " + (", ".join(changed) if changed else "the fingerprint")
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
