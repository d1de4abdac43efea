"""apply: the plan's tasks in ONE remote command under the host's apply lock -> an `Applied` value.

Each task re-checks and acts only if needed (in state when its turn came: "ok"); the script stops at the first
failure. A dropped connection makes the host unreachable, naming the task it was in; another apply holding the
host's lock is reported as `held_by` (nothing was changed).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from fleet import sections
from fleet.engine import hostlock
from fleet.connection import Connection
from fleet.errors import HostError
from fleet.inventory import Host
from fleet.roles import Task
from fleet.engine.decided import maybe_sudo
from fleet.engine.session import tail
from fleet.engine.plan import Plan, TaskReport

_ALREADY = "@@fleet:already-in-state@@"


@dataclass(frozen=True)
class Outcome:
    status: str                 # ok (in state when its turn came) | failed
    reason: str


@dataclass(frozen=True)
class Applied:
    outcomes: Mapping[str, Outcome]     # task id -> how it ended; a task not named here did what was planned
    unreachable: bool = False
    error: str | None = None            # why the host is unreachable
    held_by: str | None = None          # another apply holds the host's lock: nothing was run


def apply(conn: Connection, host: Host, plan: Plan, progress: Callable[[str, str], None]) -> Applied:
    by_id = {t.id: t for t in plan.to_apply}
    current: dict = {"task": None, "done": set()}

    def on_line(line: str) -> None:
        if line.startswith("@@fleet:end apply."):
            current["done"].add(line[len("@@fleet:end apply."):].split(" ")[0])
        if line.startswith("@@fleet:begin apply."):
            task = by_id.get(line[len("@@fleet:begin apply."):-2])
            current["task"] = task
            if task:
                progress(host.name, f"{task.spec.role}: {task.resource.describe()}")
        elif line.strip() and not line.startswith("@@fleet:") and current["task"] is not None:
            progress(host.name, f"  {line.strip()[:160]}")

    try:
        result = conn.run(hostlock.wrap(script(plan.to_apply, conn.is_root), conn), on_output=on_line)
    except HostError as exc:
        return _lost(by_id, current["task"], current["done"], exc)
    if result.exit == hostlock.BUSY and hostlock.holder(result.stdout):
        return Applied(MappingProxyType({}), held_by=hostlock.holder(result.stdout))
    found = sections.split_sections(result.stdout)
    outcomes = {}
    for task_id in by_id:
        sec = found.get(f"apply.{task_id}")
        if sec is None:
            outcomes[task_id] = Outcome("failed", "not run: an earlier task failed")
        elif sec.rc != 0:
            outcomes[task_id] = Outcome("failed", f"apply failed (exit {sec.rc}): {tail(sec.output)}")
        elif _ALREADY in sec.output:
            outcomes[task_id] = Outcome("ok", "in state when its turn came")
    return Applied(MappingProxyType(outcomes))


def script(tasks: tuple[Task, ...], user_is_root: bool) -> str:
    """One section per task: its check again, then its apply only if still needed; stop at the first failure."""
    parts = []
    for task in tasks:
        body = (f"if ( {maybe_sudo(task.resource.check(), task, user_is_root, check=True)}\n) >/dev/null 2>&1; "
                f"then echo {_ALREADY}; exit 0; fi\n{maybe_sudo(task.resource.apply(), task, user_is_root)}")
        parts.append(sections.section(f"apply.{task.id}", sections.bounded(body, task.deadline), stop_on_failure=True))
    return "\n".join(parts)


def merged(entries: tuple[TaskReport, ...], applied: Applied) -> tuple[TaskReport, ...]:
    """The plan's entries with what the apply made of them (an "ok" has nothing left to diff)."""
    out = []
    for entry in entries:
        outcome = applied.outcomes.get(entry.id)
        if outcome is not None:
            entry = TaskReport(entry.role, entry.task, outcome.status, outcome.reason,
                               None if outcome.status == "ok" else entry.diff, entry.id)
        out.append(entry)
    return tuple(out)


def _lost(by_id: dict, task: Task | None, done: set, exc: HostError) -> Applied:
    """The connection dropped mid-apply: the host is unreachable, in the task it was running."""
    where = f"{task.spec.role}: {task.spec.name}" if task else "before its first task"
    outcomes = {task_id: Outcome("failed", "connection lost during this task" if task is not None and task_id == task.id
                                 else "not run: the connection was lost")
                for task_id in by_id if task_id not in done}
    return Applied(MappingProxyType(outcomes), unreachable=True,
                   error=f"unreachable: the connection was lost during {where} ({exc})")
