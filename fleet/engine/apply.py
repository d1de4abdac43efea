"""apply: the plan's tasks in ONE remote command under the host's apply lock -> an `Applied` value.

The tasks run as chains at once (fleet/engine/chains.py: a role's tasks in order, never two holding one lock);
each re-checks and acts only if needed (in state when its turn came: "ok"). A failed task stops only what depends on
it: its role's later tasks and the roles that name it in `after:`; the other chains finish. A dropped connection
makes the host unreachable, naming the tasks it was in; another apply holding the host's lock is reported as
`held_by` (nothing was changed). Each task's start and end on the host's clock come back with its outcome.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from fleet import sections, shell
from fleet.engine import chains, hostlock
from fleet.connection import Connection
from fleet.errors import HostError
from fleet.inventory import Host
from fleet.roles import Task
from fleet.engine.decided import maybe_sudo
from fleet.engine.probe import tail
from fleet.engine.plan import Plan, TaskReport

_ALREADY = "@@fleet:already-in-state@@"


@dataclass(frozen=True)
class Outcome:
    status: str                 # ok (in state when its turn came) | failed
    reason: str


@dataclass(frozen=True)
class Timing:
    chain: str                  # the chain it ran in, by its roles ("cuda_toolkit+cuda_compat")
    started: float | None       # seconds since the apply started, on the host's clock (None: it never began)
    ended: float | None


@dataclass(frozen=True)
class Applied:
    outcomes: Mapping[str, Outcome]     # task id -> how it ended; a task not named here did what was planned
    unreachable: bool = False
    error: str | None = None            # why the host is unreachable
    held_by: str | None = None          # another apply holds the host's lock: nothing was run
    timings: Mapping[str, Timing] = dataclasses.field(default_factory=lambda: MappingProxyType({}))


def apply(conn: Connection, host: Host, plan: Plan, progress: Callable[[str, str], None],
          on_task: Callable[[str, str, str], None] | None = None) -> Applied:
    """`on_task(host, event, line)`: "planned" for each task before the script starts, then what the host says of
    each, named by its progress line: "begin", and how it ended ("done", "in state", "failed", "not run"). The
    chains run at once: the live display shows what is in flight, an interrupted run's summary what had ended."""
    by_id = {t.id: t for t in plan.to_apply}
    laid = chains.layout(plan.to_apply)
    several = len(laid.chains) > 1
    reader = chains.Reader()

    def on_line(line: str) -> None:
        note = hostlock.taken_over(line)   # the lock's last holder died holding it: one line says whose it was
        if note:
            progress(host.name, note)
            return
        event = reader.feed(line)
        if event is None:
            return
        kind, task_id = event
        task = by_id.get(task_id)
        if task is None:
            return
        if kind in ("begin", "end", "skip"):
            step = f"{task.spec.role}: {task.resource.describe()}"
            if on_task:
                on_task(host.name, _said(kind, reader.runs[task_id]), step)
            if kind == "begin":
                progress(host.name, step)
        elif kind == "out":
            # a line redrawn with \r (apt's, pip's progress): its last state, as a terminal shows it
            text = reader.runs[task_id].lines[-1].rstrip("\r").rsplit("\r", 1)[-1].strip()
            if text and not text.startswith("@@fleet:"):
                progress(host.name, f"  {task.spec.role + ': ' if several else ''}{text[:160]}")

    if on_task:
        for task in plan.to_apply:
            on_task(host.name, "planned", f"{task.spec.role}: {task.resource.describe()}")
    try:
        result = conn.run(hostlock.wrap(script(laid, conn.is_root), conn), on_output=on_line)
    except HostError as exc:
        return _lost(by_id, laid, reader, exc)
    if result.exit == hostlock.BUSY and hostlock.holder(result.stdout):
        return Applied(MappingProxyType({}), held_by=hostlock.holder(result.stdout))
    ran = chains.read(result.stdout).runs
    outcomes = {}
    for task_id in by_id:
        run = ran.get(task_id)
        outcome = (_ended(by_id, run) if run is not None else None) or (
            None if run is not None and run.rc == 0 else Outcome("failed", "not run: the apply script ended first"))
        if outcome is not None:
            outcomes[task_id] = outcome
    return Applied(MappingProxyType(outcomes), timings=_timings(laid, ran))


def _said(kind: str, run: chains.Run) -> str:
    """What the host said of a task, as on_task names it: begin, done, in state (its check passed when its turn
    came), failed, or not run (a task it needs failed)."""
    if kind != "end":
        return "begin" if kind == "begin" else "not run"
    return "failed" if run.rc else "in state" if _ALREADY in run.output else "done"


def _ended(by_id: dict, run: chains.Run) -> Outcome | None:
    """How a task that ended (or was not run) ended; None: it did what was planned, or it has not ended."""
    if run.skipped_by:
        return Outcome("failed", f"not run: it needs '{_name(by_id, run.skipped_by)}', which did not succeed")
    if run.rc is None:
        return None
    if run.rc != 0:
        return Outcome("failed", f"apply failed (exit {run.rc}): {tail(run.output)}")
    if _ALREADY in run.output:
        return Outcome("ok", "in state when its turn came")
    return None


def script(laid: chains.Layout, user_is_root: bool) -> str:
    """Each task: its check again, then its apply only if still needed; the tasks as chains (engine/chains.py)."""
    # each body runs in a bash of its own (bounded): the shared functions its task calls go with it (and into sudo's)
    bodies = {task.id: sections.bounded(shell.define(task.resource.uses(apply=True))
                                        + f"if ( {maybe_sudo(task.resource.check(), task, user_is_root, check=True)}"
                                        f"\n) >/dev/null 2>&1; then echo {_ALREADY}; exit 0; fi\n"
                                        f"{maybe_sudo(task.resource.apply(), task, user_is_root)}", task.deadline)
              for task in (step.task for step in laid.steps)}
    return chains.script(laid, bodies)


def _name(by_id: dict, task_id: str) -> str:
    task = by_id.get(task_id)
    return f"{task.spec.role}: {task.spec.name}" if task else task_id


def _timings(laid: chains.Layout, ran: dict) -> Mapping[str, Timing]:
    out = {}
    for step in laid.steps:
        run = ran.get(step.task.id)
        out[step.task.id] = Timing(laid.names[step.chain], run.started if run else None,
                                   run.ended if run else None)
    return MappingProxyType(out)


def merged(entries: tuple[TaskReport, ...], applied: Applied) -> tuple[TaskReport, ...]:
    """The plan's entries with what the apply made of them (an "ok" has nothing left to diff)."""
    out = []
    for entry in entries:
        outcome = applied.outcomes.get(entry.id)
        if outcome is not None:
            entry = TaskReport(entry.role, entry.task, outcome.status, outcome.reason,
                               None if outcome.status == "ok" else entry.diff, entry.id)
        timing = applied.timings.get(entry.id)
        if timing is not None:
            entry = dataclasses.replace(entry, chain=timing.chain, started=timing.started, ended=timing.ended)
        out.append(entry)
    return tuple(out)


def _lost(by_id: dict, laid: chains.Layout, reader: chains.Reader, exc: HostError) -> Applied:
    """The connection dropped mid-apply: the host is unreachable, in the tasks it was running."""
    runs = reader.runs
    cut = [task_id for task_id, run in runs.items() if run.begun and run.rc is None and task_id in by_id]
    outcomes = {}
    for task_id in by_id:
        run = runs.get(task_id)
        if run is not None and (run.rc is not None or run.skipped_by):   # it ended before the connection did
            outcome = _ended(by_id, run)
            if outcome is not None:
                outcomes[task_id] = outcome
            continue
        outcomes[task_id] = Outcome("failed", "connection lost during this task" if task_id in cut
                                    else "not run: the connection was lost")
    where = ", ".join(_name(by_id, t) for t in cut) or "before its first task"
    return Applied(MappingProxyType(outcomes), unreachable=True,
                   error=f"unreachable: the connection was lost during {where} ({exc})",
                   timings=_timings(laid, runs))
