"""`fleet facts` on a terminal: a short view per host, what a pod renter looks for, verify first.

    glance(name, record, column) -> Table   verify, platform, GPUs, driver, CUDA, compat, torch and the python that
                                            reaches it, and the libcuda and python each kind of process gets

Names (the left column) never wrap; a long value wraps under itself. `fleet facts --all` is the full table
(fleet/report/compare.py), `--json` the records.
"""

from __future__ import annotations

from rich import box
from rich.markup import escape
from rich.table import Table

# Each kind of process, as the loader facts name it, and the shell facts that give its PATH.
KINDS = (("ssh", "ssh cmd", "noninteractive"), ("interactive", "interactive", "interactive"),
         ("login", "login", "login"), ("bare", "no startup file", None))


def glance(name: str, record: dict | None, column, inventory: str | None = None) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 0), title_justify="left",
                  title=f"[bold]{escape(name)}[/bold]" + _when(column))
    table.add_column("what", no_wrap=True, style="dim")
    table.add_column("value", overflow="fold")
    if not record:
        table.add_row("facts", escape(column.error or "no record"))
        return table
    for label, value in rows(record, name, inventory):
        table.add_row(label, value)
    return table


def _when(column) -> str:
    if not column.reachable:
        return f" [red]{escape(column.label)}[/red]" + (f" [dim](record {escape(column.age)})[/dim]" if column.age else "")
    return f" [dim](record {escape(column.age)})[/dim]" if column.age else ""


def rows(record: dict, name: str | None = None, inventory: str | None = None) -> list[tuple[str, str]]:
    """(label, value markup) per line of one host's view; a stale verify names the command that runs it again."""
    from fleet.report.fixes import commands

    out = [("verify", _verify(record.get("verify"), commands(name or record.get("host"), inventory)["verify"]))]
    system = record.get("system") or {}
    out.append(("platform", escape(f"{record.get('platform') or '-'} ({system.get('os_name') or '-'}, "
                                   f"{system.get('arch') or '-'})")))
    out.append(("gpus", escape(_gpus(record.get("gpus") or []))))
    driver = record.get("driver") or {}
    out.append(("driver", escape(f"{driver.get('version') or '-'}" + (f" (CUDA up to {driver['cuda_max']})"
                                                                   if driver.get("cuda_max") else ""))))
    cuda = record.get("cuda") or {}
    versions = ", ".join(t.get("full_version") or t.get("version") or "?" for t in cuda.get("toolkits") or [])
    out.append(("cuda", escape(f"{versions or 'none'}" + (f" (default {cuda['default']})" if cuda.get("default")
                                                           else ""))))
    out.append(("compat", escape(_compat(cuda.get("compat")))))
    out.append(("torch", escape(_torch(record.get("torch") or {}, record.get("python") or {}))))
    out.append(("libcuda", escape(_per_kind(record, _libcuda))))
    out.append(("python", escape(_per_kind(record, _python))))
    return out


def _verify(verify, again: str = "fleet verify") -> str:
    if not isinstance(verify, dict) or not verify:
        return "[yellow]never run[/yellow] (fleet apply runs it; fleet verify runs it now)"
    verdict = str(verify.get("verdict") or ("passed" if verify.get("passed") is True else "failed"))
    at = str(verify.get("at") or "").replace("T", " ")[:16]
    stale = verify.get("stale") or []
    if stale:
        return (f"[yellow]stale[/yellow] (passed {escape(at)}; since then: {escape('; '.join(map(str, stale)))}): "
                f"{escape(again)} runs it again")
    if verdict == "passed":
        return f"[green]passed[/green] {escape(at)}"
    failed = [c.get("name") for c in verify.get("checks") or [] if isinstance(c, dict) and c.get("passed") is False]
    return f"[red]{escape(verdict)}[/red] {escape(at)}" + (f": {escape(', '.join(map(str, failed)))}" if failed else "")


def _gpus(gpus: list) -> str:
    if not gpus:
        return "none"
    groups: dict[str, int] = {}
    for gpu in gpus:
        memory = f", {round(gpu['memory_mb'] / 1024)} GB" if gpu.get("memory_mb") else ""
        key = f"{gpu.get('name') or 'GPU'} (sm {gpu.get('compute_cap') or '?'}{memory})"
        groups[key] = groups.get(key, 0) + 1
    return ", ".join(f"{n}x {key}" for key, n in groups.items())


def _compat(compat) -> str:
    if not isinstance(compat, dict) or not compat.get("path"):
        return "not installed"
    where = [w for w, on in (("first on LD_LIBRARY_PATH", compat.get("first_on_ld_library_path")),
                             ("in the ld cache", compat.get("registered_ldconfig"))) if on]
    state = "in use" if compat.get("in_use") else "installed, not in use (the driver is new enough)"
    return f"{compat.get('version') or '?'} {state}" + (f" ({', '.join(where)})" if where else "")


def _torch(torch: dict, python: dict) -> str:
    if not torch.get("version"):
        return f"not installed ({torch['error']})" if torch.get("error") else "not installed"
    cuda = f" (CUDA {torch['cuda']})" if torch.get("cuda") else ""
    return f"{torch['version']}{cuda}: {python.get('executable') or '-'}"


def _libcuda(record: dict, kind: str, _path_of: str | None) -> str:
    seen = ((record.get("loader") or {}).get("kinds") or {}).get(kind) or {}
    if not seen.get("libcuda"):
        return "none found"
    what = "STUB (no GPU use)" if seen.get("stub") else "compat" if seen.get("compat") else "driver"
    by = f" from {seen['set_by']}" if seen.get("set_by") else ""
    return f"{what} {seen.get('version') or '?'} via {seen.get('step') or '?'}{by}"


def _python(record: dict, _kind: str, path_of: str | None) -> str:
    venv = (record.get("python") or {}).get("env")
    if path_of is None:
        return f"no PATH of fleet's: call {venv}/bin/python by its path" if venv else "-"
    path = ((record.get("shells") or {}).get(path_of) or {}).get("PATH") or ""
    dirs = path.split(":")
    if not venv or f"{venv}/bin" not in dirs:
        return "the venv is not on PATH" if venv else "-"
    place = dirs.index(f"{venv}/bin")
    if place == 0:
        return f"{venv}/bin first on PATH"
    return f"{venv}/bin on PATH after {place} other dir{'s' if place > 1 else ''} (a python3 in one of them wins)"


def _per_kind(record: dict, describe) -> str:
    """One line per distinct answer, naming the kinds that get it ("every kind" when all agree)."""
    answers: dict[str, list[str]] = {}
    for kind, label, path_of in KINDS:
        answers.setdefault(describe(record, kind, path_of), []).append(label)
    if len(answers) == 1:
        return f"every kind: {next(iter(answers))}"
    return "\n".join(f"{', '.join(kinds)}: {answer}" for answer, kinds in answers.items())
