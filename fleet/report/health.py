"""How `fleet health` shows its results (a HealthRun, fleet/workflows/health.py): one JSON document, or a table of
each host's verdict with its findings and NVIDIA's action, and what each host cost."""

from __future__ import annotations

from dataclasses import dataclass

from fleet.report import Reporter

STYLE = {"healthy": "green", "none": "dim", "degraded": "yellow", "return": "red", "unknown": "yellow"}


@dataclass(frozen=True)
class HealthPrinter:
    reporter: Reporter
    json_out: bool = False

    def finish(self, run) -> None:
        if self.json_out:
            self.reporter.json({name: run.documents[name] if name in run.verdicts else None
                                for name in run.outcomes}, run.outcomes,
                               errors={name: o.error for name, o in run.outcomes.items() if o.error})
        else:
            print_verdicts(self.reporter, run.outcomes, run.verdicts)
        for warning in run.warnings:
            self.reporter.warn(warning)


def print_verdicts(reporter: Reporter, outcomes, verdicts) -> None:
    if not reporter.plain:
        _on_terminal(reporter, outcomes, verdicts)
        return
    from rich.markup import escape
    from rich.table import Table

    from fleet.report import safe_value

    table = Table(title="GPU health", title_justify="left")
    for name in ("host", "verdict", "GPUs", "findings (NVIDIA's action), keep or return"):
        table.add_column(name, overflow="fold")
    for name, outcome in outcomes.items():
        if outcome.error:
            table.add_row(escape(name), "[red]unreachable[/red]", "-", escape(safe_value(outcome.error)))
            continue
        v = verdicts[name]
        lines = [f.line() for f in v.findings] or [v.reason]
        lines.append(v.advice)
        style = STYLE.get(v.verdict, "")
        table.add_row(escape(name), f"[{style}]{'return this pod' if v.verdict == 'return' else v.verdict}[/{style}]",
                      str(v.gpus), escape(safe_value("\n".join(lines))))
    reporter.print(table)
    reporter.note(", ".join(f"{name} {o.seconds:.2f}s/{o.remote_commands} cmd" for name, o in outcomes.items()))


def _on_terminal(reporter: Reporter, outcomes, verdicts) -> None:
    """Each host: its name, verdict and GPU count, then each finding and the keep-or-return advice under it, wrapped
    at words: a GPU's UUID and bus id stay whole on one line (a table's narrow findings column folded the UUID the
    renter copies into a report to the provider)."""
    from fleet.report import safe_value, terminal_safe
    from fleet.report.wrap import terminal_lines

    rows = []
    for name, outcome in outcomes.items():
        if outcome.error:
            rows.append((terminal_safe(name), f"unreachable: {terminal_safe(safe_value(outcome.error))}"))
            continue
        v = verdicts[name]
        said = "return this pod" if v.verdict == "return" else v.verdict
        rows.append((terminal_safe(name), f"{said}, {v.gpus} GPU(s)"))
        rows += [("", f"  {terminal_safe(safe_value(line))}") for line in [f.line() for f in v.findings] or [v.reason]]
        rows.append(("", f"  {v.advice}"))
    reporter.rule("[bold]GPU health[/bold]")
    for line in terminal_lines(rows, reporter.env.console.width):
        reporter.env.console.print(line, soft_wrap=True)
    reporter.note(", ".join(f"{name} {o.seconds:.2f}s/{o.remote_commands} cmd" for name, o in outcomes.items()))
