"""The report stage: the `HostReport` of one host, built ONCE at the end of a converge from the stages' values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from fleet.engine.observe import Observed
from fleet.engine.plan import TaskReport
from fleet.engine.setup import Setup
from fleet.inventory import Host


@dataclass(frozen=True)
class HostReport:
    host: str
    check_mode: bool
    tasks: tuple[TaskReport, ...] = ()
    refuse: str | None = None
    decisions: dict | None = None
    facts: dict | None = None
    error: str | None = None
    phases: Mapping[str, float] = field(default_factory=dict)
    unreachable: bool = False      # the connection dropped mid-apply: `error` names the task it was in
    verify: str = ""               # THIS run's verify verdict ("passed", "passed (reused)", "failed", "would fail"),
                                   # or "skipped: why" (role not in this run, host failed earlier, refused, ...)

    @property
    def record(self) -> dict | None:
        """The facts record this run keeps for the host: its facts, unless the connection dropped mid-apply (its
        last record stays as it was)."""
        return None if self.unreachable else self.facts

    def count(self, status: str) -> int:
        return sum(1 for t in self.tasks if t.status == status)

    @property
    def failed(self) -> bool:
        return bool(self.error or self.refuse or self.count("failed"))

    def to_json(self) -> dict:
        return {"ok": self.count("ok"), "changed": self.count("changed"), "failed": self.count("failed") +
                (1 if (self.error or self.refuse) and not self.count("failed") else 0),
                "skipped": self.count("skipped"), "unreachable": self.unreachable, "check": self.check_mode,
                "refuse": self.refuse, "error": self.error, "tasks": [t.to_json() for t in self.tasks],
                "reasons": (self.decisions or {}).get("reasons", {}), "phases": dict(self.phases),
                "verify": self.verify, "health": self.health}

    @property
    def health(self) -> dict | None:
        """The GPUs' health verdict of this run's facts ({"verdict", "reason"}; fleet/decide/health.py), or None."""
        found = (self.facts or {}).get("health") or {}
        return {"verdict": found["verdict"], "reason": found.get("reason")} if found.get("verdict") else None


def report(host: Host, setup: Setup, observed: Observed, entries: tuple[TaskReport, ...] = (), *,
           facts: dict | None = None, error: str | None = None, refuse: str | None = None,
           unreachable: bool = False, phases: Mapping[str, float] | None = None, verify: str = "") -> HostReport:
    """The host's report, from the values: the last Observed's decisions, the task entries, the recorded facts."""
    return HostReport(host.name, setup.check_mode, tuple(entries), refuse, observed.decisions_json,
                      observed.facts if facts is None else facts,
                      f"refused: {refuse}" if refuse else error, dict(phases or {}), unreachable, verify)
