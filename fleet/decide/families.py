"""The variables of the families a GPU job reads, judged per kind of process (issue 45 item 2).

facts.shells[kind]["families"] holds every variable of the families (CUDA_, NCCL_, TORCH_, PYTHON, LD_, OMP_, the math
libraries' ...: fleet/remote/families.py) that kind exports, and set_by the startup line that set each. This module
says which of them break or slow a job, by the table with sources in fleet/remote/families.py (the verify program
judges the host's own trace by the same rows):

- FAIL rows (NCCL_P2P_DISABLE=1, CUDA_LAUNCH_BLOCKING=1, PYTORCH_NO_CUDA_MEMORY_CACHING=1, ...): a finding naming the
  variable, its value, the kind and the line; verify fails on the host for the same row. fleet never unsets them: a
  debugging variable may be kept on purpose for a while, so the fix names the line to delete.
- WARN rows (NCCL_ALGO, OMP_NUM_THREADS=1, CUBLAS_WORKSPACE_CONFIG, ...): a note with the same words.
- DELIBERATE rows (NCCL_NVLS_ENABLE=0 and its kin, which the lent multi-GPU machines set in every process): a note that
  says so; never judged as harm, never changed.

CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER are judged in fleet/decide/shells.py (a partition
of the GPUs), the loader's and Python's variables by their own rules (families.ELSEWHERE).
"""

from __future__ import annotations

from fleet.remote import families

KINDS = {"noninteractive": "`ssh host cmd`", "interactive": "interactive shells", "login": "login shells",
         "bare": "processes that read no startup file"}


def judge(shells: dict, where) -> tuple[list[dict], list[str]]:
    """-> (findings [{kind, mechanism: "family", variable, value, where, says, fix, source}], notes [str]) for every
    kind in facts.shells; `where(setter, home)` names a set_by entry as a person edits it."""
    findings: list[dict] = []
    notes: list[str] = []
    home = shells.get("home") or ""
    seen_notes: dict[tuple, list[str]] = {}
    for kind, name in KINDS.items():
        shell = shells.get(kind)
        if not isinstance(shell, dict):
            continue
        set_by = shell.get("set_by") or {}
        for found in families.judge(shell.get("families") or {}, set_by):
            line = where(found["setter"], home)
            said = f"{found['variable']}={found['value']!r}: {found['does']}"
            if found["severity"] == families.FAIL:
                findings.append({
                    "kind": kind, "mechanism": "family", "variable": found["variable"], "value": found["value"],
                    "where": line, "says": f"{name}: {line} sets {said}", "fix": f"{found['fix']}: {line}",
                    "source": found["source"], "hook_fixes": False})
            else:
                # one note per variable, value and line, naming every kind it reaches
                seen_notes.setdefault((found["severity"], said, line), []).append(name)
    for (severity, said, line), kinds in seen_notes.items():
        head = "deliberate, left as it is" if severity == families.DELIBERATE else "may slow a job"
        notes.append(f"{', '.join(kinds)}: {line} sets {said} ({head})")
    return findings, notes
