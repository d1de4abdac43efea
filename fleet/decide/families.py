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

The same rows judge what NCCL's config files give a kind (nccl_conf: /etc/nccl.conf, ~/.nccl.conf or $NCCL_CONF_FILE,
each value with its file:line, where the kind's environment lacks the name). A startup line's `unset` of a variable
the session gave (sshd's SetEnv, ~/.ssh/environment, pam_env) or that the table calls deliberate is a note naming the
line; so is a kind's `ulimit -n`/`ulimit -l` below the thresholds (families.judge_limits) where a startup line set it
or it differs from the session's.

CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER are judged in fleet/decide/shells.py (a partition
of the GPUs), the loader's and Python's variables by their own rules (families.ELSEWHERE).
"""

from __future__ import annotations

import functools

from fleet.remote import families

KINDS = {"noninteractive": "`ssh host cmd`", "interactive": "interactive shells", "login": "login shells",
         "bare": "processes that read no startup file"}


def _accepted(patterns) -> list[str]:
    """families.accepted, kept per whole list of patterns where they are text (every host's sshd has the same
    AcceptEnv line: ~40 fnmatch calls a host, issue 46)."""
    if isinstance(patterns, list) and all(type(p) is str for p in patterns):
        return list(_accepted_kept(tuple(patterns)))
    return families.accepted(patterns)


@functools.lru_cache(maxsize=256)
def _accepted_kept(patterns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(families.accepted(list(patterns)))


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
        conf_values, conf_set_by = families.conf_setters(shell.get("nccl_conf"))
        for found in families.judge(shell.get("families") or {}, set_by) + families.judge(conf_values, conf_set_by):
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
        # a startup line that unsets a variable the session gave (sshd, PAM) or that the table calls deliberate
        for var, setter in sorted((shell.get("unset_by") or {}).items()):
            given = [e for e in shells.get("etc_environment") or [] if e.get("name") == var]
            what = f"{var}, which {given[-1]['file']}:{given[-1]['line']} gives every SSH session" if given else None
            if any(r.name == var and r.severity == families.DELIBERATE for r in families.RULES):
                what = (what or var) + " (a deliberate setting: " + families.LENT + ")"
            if what:
                seen_notes.setdefault(("unset", what, where(setter, home)), []).append(name)
        bare = (shells.get("bare") or {}).get("limits")
        for found in families.judge_limits(shell.get("limits"), shell.get("limits_set_by"), bare):
            line = where(found["setter"], home) or "the session"
            said = f"{found['limit']} {found['value']}: {found['does']}"
            seen_notes.setdefault(("limit", said, line), []).append(name)
    for row in shells.get("accept_env") or []:
        admits = _accepted(row.get("patterns"))
        if admits:
            notes.append(f"every SSH session: {row['file']}:{row['line']} AcceptEnv lets a client send "
                         f"{' '.join(admits)} (ssh_config SendEnv): what a job gets of the families then depends on "
                         "the machine it is started from, and no startup file here shows it")
    for (severity, said, line), kinds in seen_notes.items():
        if severity == "unset":
            notes.append(f"{', '.join(kinds)}: {line} unsets {said}")
            continue
        if severity == "limit":
            notes.append(f"{', '.join(kinds)}: {line} sets {said}")
            continue
        head = "deliberate, left as it is" if severity == families.DELIBERATE else "may slow a job"
        notes.append(f"{', '.join(kinds)}: {line} sets {said} ({head})")
    return findings, notes
