"""How `fleet decide` shows its results (a DecideRun, fleet/workflows/decide.py): one JSON document, or one block
per host: each decision, its value and its reason, then the roles that act."""

from __future__ import annotations

from dataclasses import dataclass

from fleet.report import Reporter


@dataclass(frozen=True)
class DecidePrinter:
    reporter: Reporter
    json_out: bool = False

    def finish(self, run) -> None:
        if self.json_out:
            self.reporter.json({name: {**d.to_json(), "roles": run.acting[name]} for name, d in run.decided.items()},
                               run.outcomes)
            return
        for name, decisions in run.decided.items():
            print_decisions(self.reporter, name, decisions, run.acting[name], run.skipped[name])


def print_decisions(reporter, name: str, d, acting: list[str], skipped: list[str]) -> None:
    """One block per host: each decision, its value and its reason; then the roles that act. Values and reasons
    quote the facts record (GPU names, versions, paths): remote text, printed only through markup_safe."""
    from rich.table import Table

    from fleet.report import markup_safe as escape

    status, style = ("REFUSED", "red") if d.refuse else ("ok", "green")
    reporter.host_block(name, status, "", style)
    rows = _rows(d, acting, skipped)
    if reporter.plain:   # a pipe: the tab-separated rows (plain_table)
        grid = Table.grid(padding=(0, 2))
        for _ in range(3):
            grid.add_column()
        for label, value, reason in rows:
            grid.add_row(f"[bold]{label}[/bold]", escape(value), escape(reason))
        reporter.print(grid)
    else:                # a terminal: URLs and paths stay whole (a person copies them), wrapped at words
        from fleet.report import terminal_safe
        from fleet.report.wrap import terminal_lines

        width = max(len(terminal_safe(value)) for _, value, _ in rows)
        lines = [(label, f"{terminal_safe(value).ljust(width)}  {terminal_safe(reason)}") for label, value, reason in rows]
        for line in terminal_lines(lines, reporter.env.console.width, hang=width + 2):
            reporter.env.console.print(line, soft_wrap=True)
    if d.refuse:
        reporter.print(f"[bold red]refused:[/bold red] {escape(d.refuse)}")


def _rows(d, acting: list[str], skipped: list[str]) -> list[tuple[str, str, str]]:
    cuda = "none" if d.cuda.wanted is None else f"{d.cuda.wanted} {d.cuda.action}" + (
        f" ({d.cuda.source})" if d.cuda.source else "")
    torch = f"{d.torch.version} {d.torch.source}" + (f" cu{d.torch.cuda.replace('.', '')}" if d.torch.cuda else " cpu")
    torch += "" if d.torch.supported else " UNSUPPORTED"
    rows = [
        ("cuda", cuda, d.cuda.reason),
        ("compat", "on" if d.compat.use else "off", d.compat.reason),
        ("torch", torch, d.torch.reason),
        ("nvpl", _library(d.nvpl), d.nvpl.reason),
        ("cudss", _library(d.cudss), d.cudss.reason),
        ("LD_LIBRARY_PATH", f"{len(d.ld_library_path)} dir{'s' if len(d.ld_library_path) != 1 else ''}", "\n".join(d.ld_library_path) or "nothing to add"),
    ]
    fabric = d.fabric or {}
    if fabric:   # the links between the GPUs (issue 28): the fabric manager, or the provider's fix
        reason = fabric.get("reason", "")
        if fabric.get("warn") and fabric["warn"] != reason:
            reason += f"; WARNING: {fabric['warn']}"
        rows.insert(-1, ("fabric", f"{fabric.get('gpus', 0)} GPU(s) {fabric.get('action')}", reason))
    health = d.health or {}
    if health.get("verdict") not in (None, "none"):   # the GPUs themselves (issue 36): what, which GPU, NVIDIA's action
        shown = "return this pod" if health["verdict"] == "return" else health["verdict"]
        rows.insert(-1, ("GPU health", shown, health.get("reason", "")))
    if d.refuse:
        return rows + [("roles", "none", "the host is refused: no role runs")]
    rows.append(("roles", f"{len(acting)} act", " ".join(acting) + (f" (skipped: {' '.join(skipped)})" if skipped else "")))
    return rows


def _library(library) -> str:
    return f"from {library.source}" if library.needed else "not needed"
