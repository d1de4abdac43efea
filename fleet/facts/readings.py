"""Facts that move on their own: on a host nobody changed, two gathers a minute apart differ in these.

A reading is worth keeping in the record (what the GPU drew, how long the kernel log was), but a change in one is
not a change of the host: what compares two records of one host (`fleet facts --drift`, fleet/report/compare.py
drift; the history store's change digest, which reads drift) leaves them out. Each is declared once here, by its
path in the record (`*`: any list index), with why it moves; fleet/facts/ observes them, nothing judges from this.

    moves_on_its_own("health.kernel_log_lines") -> True
"""
from __future__ import annotations

import re

READINGS = {
    "gathered_at": "the moment of the gather",
    "system.mem_available_mb": "free memory: every process on the host moves it",
    "system.disk_free_gb": "free disk: logs, caches and every job's files move it",
    "system.disks.*.free_gb": "free disk per path, as system.disk_free_gb",
    # the kernel log is the machine's: every message anything logs (another container, another lab host, a USB
    # device) lengthens it, so its line count is a counter that moves by itself; its Xid lines are not (xid_events)
    "health.kernel_log_lines": "the kernel log's length: grows with every message anything on the machine logs",
    "health.gpus.*.power.draw": "a sample of the moment (nvidia-smi power.draw)",
    "health.gpus.*.temperature.gpu": "a sample of the moment",
    "health.gpus.*.temperature.memory": "a sample of the moment",
    "health.gpus.*.clocks.sm": "a sample of the moment (the SM clock follows the load)",
    "health.gpus.*.clock_events": "why the clocks are held back right now (idle, a power cap): a sample",
    "health.gpus.*.pcie.gen": "an idle GPU drops its link generation to save power (judged under load by verify)",
    "verify.checked_at": "when the engine last looked at the verify record, not what verify proved",
    "verify.reused": "whether this run reused the last verify or ran it: bookkeeping of the run",
    "verify.reason": "why this run reused or ran verify: bookkeeping of the run",
}

_PATTERN = re.compile("^(?:" + "|".join(re.escape(path).replace(r"\*", r"\d+") for path in READINGS) + ")$")


def moves_on_its_own(path: str) -> bool:
    """Whether the fact at `path` (a flattened record path, "health.gpus.0.power.draw") is one of READINGS."""
    return bool(_PATTERN.match(path))
