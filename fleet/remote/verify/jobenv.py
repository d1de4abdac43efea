"""Every variable of the families a GPU job reads, in each kind of shell the user opens, judged by the table with sources
(fleet/remote/families.py, the rows fleet's decide reads too): a variable that breaks or slows every job there
(NCCL_P2P_DISABLE=1, CUDA_LAUNCH_BLOCKING=1, PYTORCH_NO_CUDA_MEMORY_CACHING=1, ...) fails that kind's check, naming
the variable, its value and the startup line that set it; one that may slow a job is said in the passing detail; a
deliberate one (NCCL_NVLS_ENABLE=0 on the lent machines) is said as deliberate. Read from fleet.facts.shells' trace
of each kind (Run.shell_trace), asked on the host at this run."""

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
        said = []
        for found in judged:
            line = loader.variable_line(run, kind, found["variable"])
            said.append(f"{found['variable']}={found['value']!r} set at {line}: {found['does']}"
                        + (f"; fix: {found['fix']}" if found["severity"] == families.FAIL else
                           " (deliberate, left as it is)" if found["severity"] == families.DELIBERATE else ""))
        run.out["job_variables"][kind] = [{k: f[k] for k in ("variable", "value", "severity")} for f in judged]
        bad = [s for s, f in zip(said, judged) if f["severity"] == families.FAIL]
        others = [s for s, f in zip(said, judged) if f["severity"] != families.FAIL]
        noted = " (noted: " + "; ".join(others) + ")" if others else ""
        detail = (f"{name}: " + "; ".join(bad) if bad else
                  f"{name}: no variable of the families a GPU job reads breaks or slows it") + noted
        run.check(f"job_variables_{kind}", not bad, detail)
    return None
