"""chains: the tasks to apply on one host as chains that run at once, in ONE remote command.

A new pod's first apply is bytes (the toolkit's .debs, torch's wheels, a CUTLASS clone) and most of that work is
independent: dpkg's lock serializes apt, not pip or git. Each task holds some locks (its resource type's `locks()`:
apt the dpkg lock and the ld cache, pip its venv, git/file/block/archive their path, ld cache editors the ld cache,
a `command` everything unless its task names `locks:`), and depends on earlier tasks two ways:

- result: an earlier task of its own role, or of a role named in `after:` (the role's or the task's). When one of
  those failed (or was not run), this task is not run, and says which.
- order: an earlier task holding a lock it holds too (a path conflicts with its parents and children). It waits for
  that task to end, whatever its end: two apt installs never run at once, a failed one does not stop the other.

Earlier means earlier in the plan (the roles' order, then the tasks'). Tasks are laid into chains greedily: a task
joins the chain whose last task it depends on (its latest such dependency), else it starts a chain. Each chain is
one background subshell on the host; a task whose dependencies sit in other chains waits for their exit-status
files. Every line a task prints is tagged with its id (live output stays attributed while chains interleave), and
its begin and end markers carry the host's clock, so the report (and bench/) can draw each host's waterfall.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fleet import remote
from fleet.errors import InputError
from fleet.roles import Task

SKIPPED = 254          # the exit status a task not run (a result dependency failed) leaves for its dependents
_BEGIN = re.compile(r"^@@fleet:begin apply\.(?P<id>\S+) (?P<t>[0-9.]+)@@$")
_END = re.compile(r"^@@fleet:end apply\.(?P<id>\S+) (?P<rc>-?\d+) (?P<t>[0-9.]+)@@$")
_SKIP = re.compile(r"^@@fleet:skip apply\.(?P<id>\S+) (?P<dep>\S+)@@$")
_OUT = re.compile(r"^@@fleet:o (?P<id>\S+)@@ ?(?P<text>.*)$", re.S)
_T0 = re.compile(r"^@@fleet:t0 (?P<t>[0-9.]+)@@$")


@dataclass(frozen=True)
class Step:
    task: Task
    chain: int                       # index into Layout.chains
    results: tuple[str, ...]         # ids of earlier tasks whose failure means this one is not run
    orders: tuple[str, ...]          # ids of earlier tasks it waits for (a lock they share), whatever their end


@dataclass(frozen=True)
class Layout:
    steps: tuple[Step, ...]                  # in plan order
    chains: tuple[tuple[str, ...], ...]      # task ids per chain, in the order each chain runs them
    names: tuple[str, ...] = ()              # each chain as people read it: its roles ("cuda_toolkit+cuda_compat")

    def chain_name(self, index: int) -> str:
        return self.names[index]


def _names(steps, count: int) -> tuple[str, ...]:
    roles: list[list[str]] = [[] for _ in range(count)]
    for step in steps:
        if step.task.spec.role not in roles[step.chain]:
            roles[step.chain].append(step.task.spec.role)
    return tuple("+".join(r) for r in roles)


def locks_conflict(a: str, b: str) -> bool:
    """Two lock names exclude each other: equal, either is "*", or two paths one inside the other."""
    if a == "*" or b == "*" or a == b:
        return True
    if a.startswith("path:") and b.startswith("path:"):
        x, y = a[5:].rstrip("/") + "/", b[5:].rstrip("/") + "/"
        return x.startswith(y) or y.startswith(x)
    return False


def layout(tasks: tuple[Task, ...]) -> Layout:
    """Dependencies and chains of the tasks to apply (pure; see the module's text)."""
    tasks = ordered(tasks)
    held = [task_locks(t) for t in tasks]
    place = {t.id: k for k, t in enumerate(tasks)}
    steps: list[Step] = []
    chains: list[list[str]] = []
    chain_of: dict[str, int] = {}
    for i, task in enumerate(tasks):
        after = set(task.spec.after)
        results, orders = [], []
        for j in range(i):
            earlier = tasks[j]
            if earlier.spec.role == task.spec.role or earlier.spec.role in after:
                results.append(earlier.id)
            elif any(locks_conflict(a, b) for a in held[i] for b in held[j]):
                orders.append(earlier.id)
        latest = max(results + orders, key=place.__getitem__, default=None)
        if latest is not None and chains[chain_of[latest]][-1] == latest:
            index = chain_of[latest]
        else:
            index = len(chains)
            chains.append([])
        chains[index].append(task.id)
        chain_of[task.id] = index
        same = set(chains[index])
        # what the chain's order already guarantees needs no wait on the host; results keep every id (the skip
        # test reads them), orders only those in other chains
        steps.append(Step(task, index, tuple(results), tuple(d for d in orders if d not in same)))
    return Layout(tuple(steps), tuple(tuple(c) for c in chains), _names(steps, len(chains)))


def ordered(tasks: tuple, spec=lambda task: task.spec) -> tuple:
    """The plan's order, except that a task comes after every task of the roles its `after:` names (a role named
    in `after:` may come later in the plan: nvpl's wheels go into torch's environment). A cycle is an InputError.
    `spec` gives an item's TaskSpec (the pre-flight passes the specs themselves)."""
    specs = [spec(t) for t in tasks]
    roles = {s.role for s in specs}
    # (task, its role, the other roles it waits for): each spec read once, not in every pass (~50 tasks a host)
    left = [(t, s.role, (set(s.after) & roles) - {s.role}) for t, s in zip(tasks, specs)]
    out: list = []
    while left:
        for k, (task, role, waits) in enumerate(left):
            if not any(r in waits or r == role for _, r, _ in left[:k]) and \
                    not (waits and any(r in waits for _, r, _ in left[k + 1:])):
                out.append(task)
                del left[k]
                break
        else:
            left = [t for t, _, _ in left]
            names = sorted({spec(t).role for t in left})
            where = next((spec(t).where.rsplit(":", 1)[0] for t in left if spec(t).after), "")
            raise InputError(f"the roles {', '.join(names)} wait for each other through 'after:' ({where}); "
                             "take one of those 'after:' out")
    return tuple(out)


def check_roles(roles: list) -> None:
    """The pre-flight's part: one host's roles can be ordered (no two wait for each other)."""
    ordered(tuple(t for r in roles for t in r.tasks), spec=lambda s: s)


def task_locks(task: Task) -> frozenset[str]:
    declared = task.spec.locks
    return frozenset(declared) if declared is not None else task.resource.locks()


_PRELUDE = "\n" + remote.program("chains_start") + "\n"   # fleet/remote/chains_start.sh

_EPILOGUE = "\n" + remote.program("chains_end") + "\n"   # fleet/remote/chains_end.sh


def script(plan_layout: Layout, bodies: dict[str, str]) -> str:
    """The remote script: each chain a background subshell running its tasks in order (each task's body: its
    check again, then its apply if still needed, as engine/apply.py renders it)."""
    by_id = {s.task.id: s for s in plan_layout.steps}
    parts = [_PRELUDE]
    for chain in plan_layout.chains:
        lines = ["("]
        for task_id in chain:
            step = by_id[task_id]
            lines.append(
                f"if fleet_ready {task_id} '{' '.join(step.results)}' '{' '.join(step.orders)}'; then\n"
                f"  {{ ( :; {bodies[task_id]}\n  ) 2>&1 </dev/null; }} | fleet_tag {task_id}\n"
                f"  fleet_done {task_id} \"${{PIPESTATUS[0]}}\"\nfi")
        lines.append(") </dev/null &\nfleet_chains=\"$fleet_chains $!\"")
        parts.append("\n".join(lines))
    parts.append(_EPILOGUE)
    return "\n".join(parts)


@dataclass
class Run:
    """What one task did, as its lines said."""
    begun: bool = False
    rc: int | None = None            # None: no end marker (still running when the output stopped)
    skipped_by: str | None = None    # the result dependency that failed
    started: float | None = None     # seconds since the apply started, on the host's clock
    ended: float | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def output(self) -> str:
        return "\n".join(self.lines)


class Reader:
    """Reads the script's output line by line (live, or all of it at the end) into a Run per task."""

    def __init__(self) -> None:
        self.t0: float | None = None
        self.runs: dict[str, Run] = {}

    def _at(self, stamp: str) -> float | None:
        try:
            value = float(stamp)
        except ValueError:
            return None
        return round(value - self.t0, 3) if self.t0 is not None else None

    def feed(self, line: str) -> tuple[str, str] | None:
        """Take one line; returns (event, task id) for begin/end/skip/out, else None."""
        if not line.startswith("@@fleet:"):
            return None
        if m := _OUT.match(line):
            self.runs.setdefault(m["id"], Run()).lines.append(m["text"])
            return "out", m["id"]
        if m := _BEGIN.match(line):
            run = self.runs.setdefault(m["id"], Run())
            run.begun, run.started = True, self._at(m["t"])
            return "begin", m["id"]
        if m := _END.match(line):
            run = self.runs.setdefault(m["id"], Run())
            run.rc, run.ended = int(m["rc"]), self._at(m["t"])
            return "end", m["id"]
        if m := _SKIP.match(line):
            self.runs.setdefault(m["id"], Run()).skipped_by = m["dep"]
            return "skip", m["id"]
        if m := _T0.match(line):
            self.t0 = float(m["t"])
        return None


def read(stdout: str) -> Reader:
    reader = Reader()
    for line in stdout.split("\n"):
        reader.feed(line)
    return reader
