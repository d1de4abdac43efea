"""Every variable of the families a GPU job reads, in each kind of shell the user opens, judged by the table with sources
(fleet/remote/families.py, the rows fleet's decide reads too): a variable that breaks or slows every job there
(NCCL_P2P_DISABLE=1, CUDA_LAUNCH_BLOCKING=1, PYTORCH_NO_CUDA_MEMORY_CACHING=1, ...) fails that kind's check, naming
the variable, its value and the startup line that set it; one that may slow a job is said in the passing detail; a
deliberate one (NCCL_NVLS_ENABLE=0 on the lent machines) is said as deliberate. The same rows judge what NCCL's config
files give the kind (/etc/nccl.conf, ~/.nccl.conf or $NCCL_CONF_FILE, where the environment lacks the name), naming
file:line; a startup line that unsets what the session gave (sshd's SetEnv, pam_env) or a deliberate variable, and a
kind's `ulimit -n`/`-l` under the thresholds (families.judge_limits), are said in the detail. Read from
fleet.facts.shells' trace of each kind (Run.shell_trace), asked on the host at this run."""

import os

from .. import families
from . import loader
from .loader import TRACED

KINDS = {"ssh": "in `ssh host cmd`", "interactive": "in an interactive shell (bash -i)",
         "login": "in a login shell (bash -l)"}


def job_variables(run):
    """One check per kind of shell, job_variables_KIND; run.out["job_variables"]: {kind: [judged rows]}."""
    if not os.environ.get("FLEET_VERIFY_TRACE"):
        return None
    trace = run.shell_trace()
    run.out["job_variables"] = {}
    for kind, name in KINDS.items():
        shell = trace.get(TRACED[kind])
        if shell is None:
            run.check(f"job_variables_{kind}", False, f"{name}: the startup files' trace gave no answer")
            continue
        judged = families.judge(shell.get("families") or {}, shell.get("set_by"))
        conf = families.judge(*families.conf_setters(shell.get("nccl_conf")))   # NCCL's config files' lines
        judged += conf
        said = []
        for found in judged:
            line = (f"{_line(run, found['setter'])} (NCCL's config file)" if any(found is c for c in conf)
                    else loader.variable_line(run, kind, found["variable"]))
            said.append(f"{found['variable']}={found['value']!r} set at {line}: {found['does']}"
                        + (f"; fix: {found['fix']}" if found["severity"] == families.FAIL else
                           " (deliberate, left as it is)" if found["severity"] == families.DELIBERATE else ""))
        run.out["job_variables"][kind] = [{k: f[k] for k in ("variable", "value", "severity")} for f in judged]
        bad = [s for s, f in zip(said, judged) if f["severity"] == families.FAIL]
        others = [s for s, f in zip(said, judged) if f["severity"] != families.FAIL]
        # the limits and unsets first: the detail is capped (Run.check), the table's notes are long
        others = (_limits(run, kind, shell, (trace.get("bare") or {}).get("limits")) + _unset(run, trace, kind, shell)
                  + others)
        noted = " (noted: " + "; ".join(others) + ")" if others else ""
        detail = (f"{name}: " + "; ".join(bad) if bad else
                  f"{name}: no variable of the families a GPU job reads breaks or slows it") + noted
        run.check(f"job_variables_{kind}", not bad, detail)
    return None


def _line(run, setter):
    home = os.environ.get("HOME") or ""
    origin = loader.rules.tilde(f"{setter['file']}:{setter['line']}", home)
    return f"{origin} (read from {loader.rules.tilde(setter['via'][0], home)})" if setter.get("via") else origin


def _unset(run, trace, kind, shell):
    """A startup line of this kind that unsets a variable the session gave or the table calls deliberate."""
    out = []
    for name, setter in sorted((shell.get("unset_by") or {}).items()):
        given = [e for e in trace.get("etc_environment") or [] if e.get("name") == name]
        deliberate = any(r.name == name and r.severity == families.DELIBERATE for r in families.RULES)
        if given or deliberate:
            out.append(f"{name} unset at {_line(run, setter)}"
                       + (f", which {given[-1]['file']}:{given[-1]['line']} gives every SSH session" if given else "")
                       + (" (a deliberate setting there)" if deliberate else ""))
    return out


def _limits(run, kind, shell, session):
    """This kind's `ulimit -n`/`-l` under the thresholds, where a startup line set it or it differs from the
    session's (a process that reads no startup file)."""
    return [f"{f['limit']} {f['value']} set at {_line(run, f['setter']) if f['setter'] else 'the session'}: {f['does']}"
            for f in families.judge_limits(shell.get("limits"), shell.get("limits_set_by"), session)]
