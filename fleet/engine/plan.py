"""plan: an Observed -> a `Plan` (pure): per task ok/changed/skipped/failed with its reason and diff, and the
tasks to apply. Asserts are not planned: they are judged on the last probe (fleet/engine/report.py)."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass

from fleet.resources.base import CheckResult
from fleet.roles import Task
from fleet.engine.observe import Observed


@dataclass(frozen=True)
class TaskReport:
    role: str
    task: str
    status: str            # ok | changed | failed | skipped
    reason: str
    diff: str | None = None
    id: str = ""
    why: str | None = None  # the role's `why:`, already at the end of `reason`; the report shows it once per role
    chain: str | None = None        # where it was applied: its chain (engine/chains.py) and, on the host's clock,
    started: float | None = None    # its start and end in seconds since the apply began (None: it never began)
    ended: float | None = None
    condition: str | None = None    # skipped: the raw condition ("condition is false: EXPR", "role condition ...");
                                    # `reason` is its role's plain words where it has them (`why_skipped:`)

    def to_json(self) -> dict:
        out = {"role": self.role, "task": self.task, "status": self.status, "reason": self.reason, "diff": self.diff}
        if self.condition is not None:
            out["condition"] = self.condition
        if self.chain is not None:
            out.update(chain=self.chain, started=self.started, ended=self.ended)
        return out


@dataclass(frozen=True)
class Plan:
    entries: tuple[TaskReport, ...]     # every task but the asserts, in order
    to_apply: tuple[Task, ...]          # the tasks whose check says "not in state"


def plan(observed: Observed) -> Plan:
    entries, to_apply = [], []
    for task in observed.tasks:
        name, role = task.spec.name, task.spec.role
        if not task.enabled:
            entries.append(TaskReport(role, name, "skipped", task.skip_reason or "", id=task.id,
                                      condition=task.skip_condition))
            continue
        if task.resource.judged:
            continue  # judged on the last probe
        result = observed.checks[task.id]
        if result.error:
            entries.append(TaskReport(role, name, "failed", f"check failed: {result.error}", id=task.id))
        elif result.in_state:
            entries.append(TaskReport(role, name, "ok", result.reason, id=task.id))
        else:
            why = result.reason + (f" ({task.why})" if task.why else "")
            entries.append(TaskReport(role, name, "changed", why, diff(task, result), id=task.id,
                                      why=task.why))
            to_apply.append(task)
    return Plan(tuple(entries), tuple(to_apply))


def confirm(entries: tuple[TaskReport, ...], observed: Observed) -> tuple[TaskReport, ...]:
    """After applying, every changed task must now check in state: idempotence proved, not assumed. A task the
    new facts leave out (its role's `when:` turned false: the toolkit it installed is now there) is proved by its
    own check, run in the same probe (Observed.left_out)."""
    out = []
    for entry in entries:
        result = (observed.checks.get(entry.id) or observed.left_out.get(entry.id)) if entry.status == "changed" \
            else None
        if result is not None and not result.in_state:
            entry = dataclasses.replace(entry, status="failed",
                                        reason=f"applied, but the check still says: {result.reason}")
        out.append(entry)
    return tuple(out)


def diff(task: Task, result: CheckResult) -> str | None:
    if getattr(task.resource, "renders_diff", False):   # the check printed the whole diff itself (ld_aside)
        return result.diff or None
    want = getattr(task.resource, "wanted_text", None)
    if want is None:
        return None
    old = result.diff or ""
    new = want()
    path = task.resource.p.get("path", "")
    lines = difflib.unified_diff(_lines(old), _lines(new), f"{path} (now)", f"{path} (after)")
    return "".join(lines) or None


def _lines(text: str) -> list[str]:
    """Lines for a unified diff; a last line without its newline says so as diff(1) does, so that adding the
    newline shows as what it is, not as a last line changed into itself."""
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines
