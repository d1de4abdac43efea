"""How `fleet apply` (and bootstrap) show their results: task lines, diffs, the recap table, or JSON."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.table import Table

from fleet.engine import HostReport
from fleet.connection.parallel import Outcome
from fleet.report import Reporter, markup_safe as _safe, terminal_safe

_STYLE = {"ok": "green", "changed": "yellow", "failed": "bold red", "skipped": "dim"}


def host_json(outcome: Outcome, reporter: Reporter | None = None) -> dict:
    if outcome.value is None:
        doc = {"ok": 0, "changed": 0, "failed": 1, "skipped": 0, "unreachable": outcome.unreachable,
               "error": outcome.error, "tasks": []}
        if outcome.interrupted:
            doc.update(interrupted=True, started=outcome.started,
                       steps=list(reporter.steps.get(outcome.host, [])) if reporter else [])
        return doc
    return outcome.value.to_json()


def print_apply(reporter: Reporter, outcomes: dict[str, Outcome], *, json_out: bool, show_diff: bool,
                check: bool) -> bool:
    """Print per-host tasks and the recap (or one JSON document); True if any host failed."""
    failed = any(o.value is None or o.value.failed for o in outcomes.values())
    if json_out:
        reporter.json({name: host_json(o, reporter) for name, o in outcomes.items()}, outcomes)
        return failed
    for name, outcome in outcomes.items():
        _host(reporter, name, outcome, show_diff, check)
    _recap(reporter, outcomes, check)
    return failed


def _host(reporter: Reporter, name: str, outcome: Outcome, show_diff: bool, check: bool) -> None:
    console = reporter.env.console
    report: HostReport | None = outcome.value
    if report is None and outcome.interrupted:
        reporter.host_block(name, "INTERRUPTED" if outcome.started else "NOT STARTED", reporter.partial(outcome),
                            "yellow")
        return
    if report is None:
        state = "UNREACHABLE" if outcome.unreachable else "FAILED"
        reporter.host_block(name, state, outcome.error or "", "red")
        return
    reporter.rule(f"[bold]{_safe(name)}[/bold]" + (" [red]UNREACHABLE[/red]" if report.unreachable else "")
                  + (" [dim](check mode: nothing changed)[/dim]" if check else ""))
    if report.refuse:
        console.print(f"[bold red]refused:[/bold red] {_safe(report.refuse)}")
    elif report.error:
        console.print(f"[bold red]error:[/bold red] {_safe(report.error)}")
    shown_skips, shown_why = set(), set()
    for task in report.tasks:
        if task.status == "ok" and not check and not reporter.verbose:
            continue  # a converged task is noise; the recap counts it (-v shows it)
        if task.status == "skipped" and task.reason.startswith("role condition"):
            if task.role in shown_skips:
                continue  # one line per role left out, with its reason
            shown_skips.add(task.role)
            task = type(task)(task.role, "(whole role)", "skipped", task.reason, id=task.id)
        label = "would change" if check and task.status == "changed" else task.status
        label = label if reporter.plain else f"{label:>12}"   # aligned on a terminal; unpadded in a pipe
        console.print(f"  [{_STYLE[task.status]}]{label}[/] {_safe(task.role)}: {_safe(task.task)}"
                      f" [dim]— {_safe(_reason(task, shown_why))}[/dim]", soft_wrap=True)
        if show_diff and task.diff:
            if reporter.plain:
                console.print(terminal_safe(task.diff).rstrip("\n"), markup=False, soft_wrap=True)
            else:
                console.print(Syntax(terminal_safe(task.diff), "diff", theme="ansi_dark", background_color="default"))
    if not any(t.status in ("changed", "failed") for t in report.tasks) and not report.failed:
        console.print("  [green]in state: nothing to change[/green]")
    skipped = ((report.facts or {}).get("verify") or {}).get("perf") or {}
    if skipped.get("skipped"):   # a busy GPU: say why there are no perf figures (issue 11)
        console.print(f"  [yellow]{_safe(skipped['skipped'])}[/yellow]")


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


def _recap(reporter: Reporter, outcomes: dict[str, Outcome], check: bool) -> None:
    stopped = sum(1 for o in outcomes.values() if o.interrupted)
    title = "recap" + (" (check mode)" if check else "")
    if stopped:
        title += f" (interrupted: {stopped} host{'s' if stopped != 1 else ''} did not finish)"
    table = Table(title=title, title_justify="left")
    for col in ("host", "ok", "would change" if check else "changed", "failed", "skipped", "verify", "seconds",
                "commands"):
        table.add_column(col, justify="left" if col == "host" else "right")
    for name, o in outcomes.items():
        if o.value is None:
            state = ("[yellow]interrupted[/yellow]" if o.started else "[yellow]not started[/yellow]") if o.interrupted \
                else "[red]unreachable[/red]" if o.unreachable else "[red]error[/red]"
            table.add_row(_safe(name), "-", "-", state, "-", "-", f"{o.seconds:.1f}", str(o.remote_commands))
            continue
        r: HostReport = o.value
        failed = r.count("failed") + (1 if r.failed and not r.count("failed") else 0)
        table.add_row(_safe(name), str(r.count("ok")), f"[yellow]{r.count('changed')}[/yellow]",
                      "[red]unreachable[/red]" if r.unreachable else f"[red]{failed}[/red]" if failed else "0", str(r.count("skipped")), _verify_cell(r),
                      f"{o.seconds:.1f}", str(o.remote_commands))
    reporter.print(table)


def _verify_cell(report: HostReport) -> str:
    """THIS run's verify verdict (engine.judge.verify_verdict), or that it did not run and why; never the facts'
    last verify (a host whose task failed in this run never shows "passed")."""
    verdict = report.verify or "skipped: not judged"
    style = "green" if verdict.startswith("passed") else "dim" if verdict.startswith("skipped") else "red"
    return f"[{style}]{_safe(verdict)}[/{style}]"
