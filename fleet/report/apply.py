"""How `fleet apply` (and bootstrap) show their results: task lines, diffs, the recap table, or JSON."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from rich import box
from rich.table import Table

from fleet.engine import HostReport
from fleet.connection.parallel import Outcome
from fleet.remote.trace import KINDS   # the kinds of shell a person opens (the shells' trace)
from fleet.report import Reporter, markup_safe as _safe

_STYLE = {"ok": "green", "changed": "yellow", "failed": "bold red", "skipped": "dim"}


def host_json(outcome: Outcome, reporter: Reporter | None = None) -> dict:
    if outcome.value is None:
        doc = {"ok": 0, "changed": 0, "failed": 1, "skipped": 0, "unreachable": outcome.unreachable,
               "error": outcome.error, "tasks": []}
        if outcome.refused:
            doc["refused"] = True
        if outcome.interrupted:
            doc.update(interrupted=True, started=outcome.started,
                       steps=list(reporter.steps.get(outcome.host, [])) if reporter else [],
                       task_states=dict(reporter.ledger.get(outcome.host, {})) if reporter else {})
        return doc
    doc = outcome.value.to_json()
    doc["fixed"] = fixed(outcome.value, outcome.value.check_mode)   # what it repaired beyond its own lines
    return doc


@dataclass(eq=False)
class ApplyPrinter:
    """Everything `fleet apply` prints, in order: the role origins before the hosts start (--check), each host's
    lines as soon as it ends (on_hosts' on_done, from its thread), then the hosts not yet shown (cut short by
    Ctrl-C), the recap, the plan (--check) and where the run log went."""

    reporter: Reporter
    check: bool
    show_diff: bool
    json_out: bool = False
    inventory: str | None = None          # as the user named it: the fixes' commands name it so (report/fixes.py)
    shown: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self, hosts, by_host) -> None:
        if self.check and not self.json_out:
            print_role_origins(self.reporter, hosts, by_host)

    def __call__(self, outcome: Outcome) -> None:
        self.reporter.finished(outcome.host)
        if self.json_out:
            return
        with self._lock:   # one host's lines together, never interleaved with another's
            self.reporter.draw(host_lines(self.reporter, outcome.host, outcome, self.show_diff, self.check,
                                          self.inventory))
            self.shown.add(outcome.host)

    def document(self, outcome: Outcome) -> dict:
        """The host's JSON document: what --json prints and the run log keeps."""
        return host_json(outcome, self.reporter)

    def finish(self, run) -> None:
        """The rest of the output: each host's document (--json) or the hosts not yet shown, the recap and the plan,
        then where the run log went (the sinks wrote it: fleet/record/sinks.py)."""
        block = [] if self.json_out else apply_block(self.reporter, run.outcomes, show_diff=self.show_diff,
                                                     check=self.check, shown=self.shown, inventory=self.inventory)
        block += [("warn", warning) for warning in run.warnings]
        if run.logged:
            block.append(("note", f"run log: {run.logged}"))
        if self.json_out:
            self.reporter.json({name: self.document(o) for name, o in run.outcomes.items()}, run.outcomes)
        self.reporter.draw(block)


def print_role_origins(reporter: Reporter, hosts, by_host) -> None:
    """One line per distinct role list: which hosts, the roles in order, and where each came from."""
    from rich.markup import escape

    from fleet.inventory import DEFAULT_ROLES_FROM

    groups: dict[tuple, list[str]] = {}
    for host in hosts:
        groups.setdefault((tuple(r.name for r in by_host[host.name]), host.roles_from), []).append(host.name)
    for (_names, named_by), names in groups.items():
        roles = by_host[names[0]]
        parts, run = [], []
        for role in roles:          # consecutive roles of one origin share its label
            if run and run[-1].origin != role.origin:
                parts.append(_origin_part(run))
                run = []
            run.append(role)
        parts.append(_origin_part(run))
        by = "" if named_by == DEFAULT_ROLES_FROM else f" [dim](named by {escape(named_by)})[/dim]"
        reporter.print(f"[bold]roles[/bold] {escape(', '.join(names))}: {escape('; '.join(parts))}{by}")


def _origin_part(roles) -> str:
    return f"{' '.join(r.name for r in roles)} ({roles[0].origin})" if roles else "none"


def print_apply(reporter: Reporter, outcomes: dict[str, Outcome], *, json_out: bool, show_diff: bool,
                check: bool, shown: set[str] = frozenset(), inventory: str | None = None) -> bool:
    """Print per-host tasks and the recap (or one JSON document); True if any host failed. `shown`: hosts whose
    lines were printed live already (LiveHosts); `inventory`: as the fixes' commands name it."""
    failed = any(o.value is None or o.value.failed for o in outcomes.values())
    hosts = {name: host_json(o, reporter) for name, o in outcomes.items()} if json_out else {}
    block = [] if json_out else apply_block(reporter, outcomes, show_diff=show_diff, check=check, shown=shown,
                                            inventory=inventory)
    if json_out:
        reporter.json(hosts, outcomes)
    reporter.draw(block)
    return failed


def apply_block(reporter: Reporter, outcomes: dict[str, Outcome], *, show_diff: bool, check: bool,
                shown: set[str] = frozenset(), inventory: str | None = None) -> list[tuple]:
    """What apply prints after its hosts (as Reporter.draw prints it): the lines of each host not shown yet, the
    recap and, with --check, the plan last: what a script (or a person) acts on."""
    recap = ("table", _recap(outcomes, check, short=not reporter.plain))
    plans = [("line", f"{_safe(name)}: {plan_total(outcome.value)}")
             for name, outcome in outcomes.items() if check and outcome.value is not None]
    hosts = [line for name, outcome in outcomes.items() if name not in shown
             for line in host_lines(reporter, name, outcome, show_diff, check, inventory)]
    return [*hosts, recap, *plans]


def plan_total(report: HostReport) -> str:
    """'3 to change, 12 in state' (check mode): exactly what the apply that follows will count. An assertion that
    apply judges only after the changes (verify) is counted "ok" as apply counts it when it passes, and named apart
    from the tasks in state: '3 to change, 11 in state, 1 judged after the changes'."""
    from fleet.engine.judge import AFTER_CHANGES

    after = sum(1 for t in report.tasks if t.status == "ok" and t.reason.startswith(AFTER_CHANGES))
    text = f"{report.count('changed')} to change, {report.count('ok') - after} in state"
    text += f", {after} judged after the changes" if after else ""
    extra = [f"{n} {s}" for s, n in (("failing", report.count("failed")), ("skipped", report.count("skipped"))) if n]
    return text + (f" ({', '.join(extra)})" if extra else "")


def host_total(report: HostReport, seconds: float) -> str:
    """'in state (12 ok, 13 skipped) 0.3 s', or '3 changed, 12 ok, 13 skipped 4.1 s'."""
    counts = [f"{report.count(s)} {s}" for s in ("changed", "failed", "ok", "skipped") if report.count(s)]
    if report.count("changed") or report.count("failed"):
        return f"{', '.join(counts)} {seconds:.1f} s"
    return f"in state ({', '.join(counts) or 'no tasks'}) {seconds:.1f} s"


def host_lines(reporter: Reporter, name: str, outcome: Outcome, show_diff: bool, check: bool,
               inventory: str | None = None) -> list[tuple]:
    """One host's lines, as Reporter.draw prints them: its total, each change (with -v each task) and why, then
    what the host says beyond its tasks (GPU health, where torch is, what it fixed, a verify that skipped perf);
    a failed task's fix names `inventory` as the user named it."""
    report: HostReport | None = outcome.value
    if report is None and outcome.interrupted:
        return [("block", name, "INTERRUPTED" if outcome.started else "NOT STARTED",
                 interrupted_summary(reporter, outcome), "yellow")]
    if report is None:
        state = "REFUSED" if outcome.refused else "UNREACHABLE" if outcome.unreachable else "FAILED"
        return [("block", name, state, outcome.error or "", "red")]
    total = plan_total(report) if check else host_total(report, outcome.seconds)
    lines = [("line", f"[bold]{_safe(name)}[/bold]: {_safe(total)}" + (" [red]UNREACHABLE[/red]" if report.unreachable
                                                                       else ""))]
    if report.refuse:
        lines.append(("line", f"  [bold red]refused:[/bold red] {_safe(report.refuse)}"))
    elif report.error:
        lines.append(("line", f"  [bold red]error:[/bold red] {_safe(report.error)}"))
    beyond = _beyond(report, check)   # printed after the tasks
    verbose = reporter.verbose > 0
    shown_skips, shown_why, fixes_said = set(), set(), set()
    for task in report.tasks:
        if task.status in ("ok", "skipped") and not verbose:
            continue  # in state or left out: the host line counts them (-v lists them, with why in plain words)
        if task.status == "skipped" and (task.condition or "").startswith("role condition"):
            if task.role in shown_skips:
                continue  # one line per role left out, with its reason
            shown_skips.add(task.role)
            task = type(task)(task.role, "(whole role)", "skipped", task.reason, id=task.id, condition=task.condition)
        if task.status == "skipped" and reporter.verbose > 1 and task.condition and task.condition != task.reason:
            task = type(task)(task.role, task.task, "skipped", f"{task.reason} [{task.condition}]", id=task.id)
        label = "would change" if check and task.status == "changed" else task.status
        label = label if reporter.plain else f"{label:>12}"   # aligned on a terminal; unpadded in a pipe
        why = _reason(task, shown_why) if verbose or show_diff or task.status == "failed" else first_sentence(task)
        line = f"  [{_STYLE[task.status]}]{label}[/] {_safe(task.role)}: {_safe(task.task)} [dim]— {_safe(why)}[/dim]"
        # one line that fits the terminal ("cut"): the rest is a -v away
        lines.append(("line" if verbose or reporter.plain or task.status == "failed" else "cut", line))
        fix = fix_for(task.reason, name, inventory) if task.status == "failed" and not check else None
        if fix and fix not in fixes_said:    # once per host: five tasks cut by one lost connection need one fix
            fixes_said.add(fix)
            lines.append(("line", f"  [bold]fix:[/bold] {_safe(fix)}"))
        if show_diff and task.diff:
            lines.append(("diff", task.diff))
    return lines + beyond


def _beyond(report: HostReport, check: bool) -> list[tuple]:
    """What the host says beyond its tasks, after them: its GPU health, where torch is, what it fixed (or will), a
    verify that skipped perf."""
    lines = []
    health = report.health or {}
    if health.get("verdict") in ("degraded", "return"):   # the GPUs themselves (issue 36): what, which GPU, the action
        style = "bold red" if health["verdict"] == "return" else "yellow"
        lines.append(("line", f"  [{style}]GPU health:[/{style}] {_safe(health.get('reason'))}"))
        if health.get("advice"):
            lines.append(("line", f"  [{style}]keep or return:[/{style}] {_safe(health['advice'])}"))
    skipped = ((report.facts or {}).get("verify") or {}).get("perf") or {}
    if report.verify == "passed":   # verify ran and proved it in this run: where torch is and how to reach it
        facts = report.facts or {}
        env = (facts.get("python") or {}).get("env") or "/opt/fleet/venv"
        reach = reach_short(facts.get("torch"), env)
        if reach:
            lines.append(("line", f"  [dim]{_safe(reach)}[/dim]"))
    fixes = fixed(report, check)   # what it repaired beyond its own lines
    lines += [("line", f"  [green]{'will fix' if check else 'fixed'}:[/green] {_safe(line)}") for line in fixes]
    if skipped.get("skipped"):   # a busy GPU: say why there are no perf figures (issue 11)
        lines.append(("line", f"  [yellow]{_safe(skipped['skipped'])}[/yellow]"))
    return lines


# An interrupted host's tasks, grouped by what the host said of each (engine.apply's on_task events).
_SAID = (("finished", ("done",)), ("already in state", ("in state",)), ("failed", ("failed",)),
         ("running when interrupted (begun, no end reported: the next apply checks it again)", ("begin",)),
         ("never started", ("planned", "not run")))


def reach_short(torch: dict | None, python_env: str) -> str | None:
    """reach_sentence in a line that fits a terminal (apply's summary): the version, the venv, how to reach it."""
    if not isinstance(torch, dict) or not torch.get("path"):
        return None
    kinds = (torch.get("reached_by") or {}).get("kinds") or {}
    every = all("python3" in (kinds.get(k) or []) for k in KINDS)
    how = "python3 and pip in any new shell" if every else f"{python_env}/bin/python (not python3 in every shell)"
    return f"torch {torch.get('version') or '?'} in {python_env}: {how}"


def reach_sentence(torch: dict | None, python_env: str) -> str | None:
    """Where torch is and how to reach it, in words, from facts.torch (with reached_by)."""
    if not isinstance(torch, dict) or not torch.get("path"):
        return None
    reach = torch.get("reached_by") or {}
    kinds = reach.get("kinds") or {}
    every = [k for k in KINDS if "python3" in (kinds.get(k) or [])]
    python = f"{python_env}/bin/python"
    how = ("`python3` (and pip) in any new shell" if len(every) == len(KINDS) else
           f"`python3` in {', '.join(every)} shells" if every else f"{python} by path (python3 in a shell is another)")
    said = f"torch {torch.get('version') or '?'} at {torch['path']}: {how}, or {python}"
    for other in reach.get("others") or []:
        said += f"; also {other['torch']} for {other['python']} (not the one fleet verifies)"
    return said


def interrupted_summary(reporter: Reporter, outcome: Outcome) -> str:
    """What an interrupted host had done, from what it reported: the tasks that finished, the ones cut short and
    the ones that never started; before its apply began, the step it was in (a probe changes nothing)."""
    if not outcome.started:
        return "never started: the run was interrupted while this host waited its turn; nothing was asked of it"
    said = dict(reporter.ledger.get(outcome.host) or {})
    steps = list(reporter.steps.get(outcome.host) or [])
    if not said:
        where = f"during {steps[-1]}" if steps else "while connecting"
        return f"cut short {where}, before any task began: nothing was changed"
    lines = []
    for label, events in _SAID:
        names = [line for line, event in said.items() if event in events]
        if names:
            lines += [f"{label} ({len(names)}):", *(f"  {name}" for name in names)]
    if steps and steps[-1] not in said and not any(e in ("begin", "planned") for e in said.values()):
        lines.append(f"cut short after the tasks: {steps[-1]}")
    return "\n".join(lines)


def fixed(report: HostReport, check: bool = False) -> list[str]:
    """What this run's changes repaired beyond their own lines, from the decisions it applied: each startup line
    that put cuda-compat where it breaks CUDA (error 803), neutralized by fleet's hook running last; each ld cache
    or preload entry taken out of effect. Only where the env_hooks task that does it changed in this run."""
    loader = (report.decisions or {}).get("loader") or {}
    changed = [t for t in report.tasks if t.status == "changed" and t.role == "env_hooks"]
    aside_task = [t for t in changed if "ld cache" in t.task]
    out = []
    if len(changed) > len(aside_task):   # a hook or guard written: fleet's env runs last in that shell
        for line in loader.get("lines") or []:
            claim = str(line.get("claim") or "neutralizes")
            verb = ("will neutralize" if check else "neutralized") if claim == "neutralizes" else claim
            out.append(f"{verb} {line.get('says') or line.get('where')}")
    for task in aside_task:   # what the host's check said it would do, one line each; done, once confirmed
        said = task.reason[:-len(f" ({task.why})")] if task.why and task.reason.endswith(f" ({task.why})") \
            else task.reason
        for line in said.splitlines():
            verb, _, rest = line.strip().partition(" ")
            if rest:
                out.append(f"will {_BASE.get(verb, verb)} {rest}" if check else f"{_PAST.get(verb, verb)} {rest}")
    return out


# ld_aside's check says what it will do in these verbs (fleet/resources/ld_aside.py)
_PAST = {"moves": "moved", "takes": "took", "comments": "commented", "rebuilds": "rebuilt"}
_BASE = {"moves": "move", "takes": "take", "comments": "comment", "rebuilds": "rebuild"}


from fleet.report.fixes import fix_for  # noqa: E402  (what a failed task needs: one class, one command)


def first_sentence(task) -> str:
    """A change's reason without its role's `why:` paragraph, cut at its first sentence ('-v' shows it all)."""
    reason = task.reason
    suffix = f" ({task.why})" if task.why else ""
    if suffix and reason.endswith(suffix):
        reason = reason[:-len(suffix)]
    cut = re.search(r"\.\s|\s\(|;\s", reason)
    return reason[:cut.start()] if cut else reason


def _reason(task, shown_why: set) -> str:
    """The task's reason, its role's `why:` only on the role's first line: a long why (env_hooks' says which
    shells and which compat lines) repeated on each of five tasks buries what each task does. The JSON keeps
    it in every task's reason."""
    suffix = f" ({task.why})" if task.why else ""
    if not suffix or not task.reason.endswith(suffix):
        return task.reason
    if (task.role, task.why) in shown_why:
        return task.reason[:-len(suffix)]
    shown_why.add((task.role, task.why))
    return task.reason


def _recap(outcomes: dict[str, Outcome], check: bool, short: bool = False) -> Table:
    """The recap table. `short` (a terminal): short headers and two-space gaps, so that a converged host's row fits
    80 columns whole (its cells were cut to `healt…` and `(reuse…`); a pipe keeps the full headers, tab-separated."""
    stopped = sum(1 for o in outcomes.values() if o.interrupted)
    title = "recap" + (" (check mode)" if check else "")
    if stopped:
        title += f" (interrupted: {stopped} host{'s' if stopped != 1 else ''} did not finish)"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                  collapse_padding=short)
    for col in ("host", "ok", "would change" if check else "changed", "failed", "skipped", "verify", "GPU health",
                "seconds", "commands"):
        header = {"GPU health": "GPU", "seconds": "secs", "commands": "cmds"}.get(col, col) if short else col
        table.add_column(header, justify="left" if col == "host" else "right",
                         no_wrap=col in ("verify", "GPU health"))   # a verdict whole, never `healt…`
    for name, o in outcomes.items():
        if o.value is None:
            state = ("[yellow]interrupted[/yellow]" if o.started else "[yellow]not started[/yellow]") if o.interrupted \
                else "[red]refused[/red]" if o.refused else "[red]unreachable[/red]" if o.unreachable \
                else "[red]error[/red]"
            table.add_row(_safe(name), "-", "-", state, "-", "-", "-", f"{o.seconds:.1f}", str(o.remote_commands))
            continue
        r: HostReport = o.value
        failed = r.count("failed") + (1 if r.failed and not r.count("failed") else 0)
        table.add_row(_safe(name), str(r.count("ok")), f"[yellow]{r.count('changed')}[/yellow]",
                      "[red]unreachable[/red]" if r.unreachable else f"[red]{failed}[/red]" if failed else "0", str(r.count("skipped")), _verify_cell(r),
                      health_cell(r.health), f"{o.seconds:.1f}", str(o.remote_commands))
    return table


def health_cell(health: dict | None) -> str:
    """healthy / degraded / return this pod (fleet/decide/health.py); "-" where no GPU was judged."""
    verdict = (health or {}).get("verdict")
    if verdict not in ("healthy", "degraded", "return", "unknown"):
        return "[dim]-[/dim]"
    style = {"healthy": "green", "degraded": "yellow", "return": "bold red", "unknown": "yellow"}[verdict]
    return f"[{style}]{'return this pod' if verdict == 'return' else verdict}[/{style}]"


def _verify_cell(report: HostReport) -> str:
    """THIS run's verify verdict (engine.judge.record_verdict), or that it did not run and why; never the facts'
    last verify (a host whose task failed in this run never shows "passed")."""
    verdict = report.verify or "skipped: not judged"
    style = "green" if verdict.startswith("passed") else "dim" if verdict.startswith("skipped") else "red"
    return f"[{style}]{_safe(verdict)}[/{style}]"
