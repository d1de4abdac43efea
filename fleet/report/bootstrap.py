"""How `fleet bootstrap` shows its result (a BootstrapResult, fleet/workflows/bootstrap.py): the summary a person
reads, as `key: value` lines in a pipe or a grid on a terminal (the inventory entry, the host key, GPU health, the
platform, what changed and each failure with its fix, the phases' times, verify, where torch is, how to connect, what
to run next), or one JSON document."""

from __future__ import annotations


def print_result(reporter, result, *, json_out: bool) -> None:
    """The summary a person reads (or one JSON document): changes, phase times, verify, how to connect."""
    if json_out:
        _print_json(reporter, result)
        return
    console = reporter.env.console
    from fleet.report import markup_safe as escape   # remote text: no secrets, no terminal escapes

    state = "[green]verify passed[/green]" if result.ok else "[bold red]FAILED[/bold red]"
    reporter.rule(f"[bold]bootstrap {escape(result.name)}[/bold] {state}")   # '== ...' in a pipe
    rows = _summary_rows(result)
    if reporter.plain:   # a pipe or a file: `key: value` lines, no padding, as grep and awk read them, never wrapped
        for key, value in rows:
            console.print(f"{key}: {escape(value)}" if key else escape(value), soft_wrap=True)
    else:                # a terminal: keys in one column, each value wrapped at words inside its own
        from fleet.report import terminal_safe
        from fleet.report.wrap import terminal_lines

        for line in terminal_lines([(key, terminal_safe(value)) for key, value in rows], console.width):
            console.print(line, soft_wrap=True)    # a token wider than the terminal: its own line, whole
    if result.error:
        reporter.error(result.error)


def first_line(reason: str, width: int = 160) -> str:
    """A failure's reason as one line: raw apt or pip output folded, cut to `width` (-v and the run log keep it)."""
    text = " ".join(reason.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _summary_rows(result) -> list[tuple[str, str]]:
    rows = []
    if result.error:
        rows.append(("error", result.error))
    from fleet.inventory.home import shown

    where = shown(result.inventory)     # ~/.config/fleet/pods.yaml, as a person types it
    if result.existing and result.kept:
        kept = ", ".join(f"{n}={str(v).lower() if isinstance(v, bool) else v}" for n, v in result.kept.items())
        rows.append(("inventory", f"already in {where} as {result.name}; --set kept in its vars: {kept}"))
    elif result.existing:
        rows.append(("inventory", f"already in {where} as {result.name}; left as it was"))
    elif result.added:
        kept = [f"{n}={str(v).lower() if isinstance(v, bool) else v}" for n, v in result.target.vars.items()]
        kept += [f"cuda_keyring_pins for {len(result.target.pins)} URL(s)"] if result.target.pins else []
        rows.append(("inventory", f"added to {where} as {result.name}"
                     + (f", with its vars: {', '.join(kept)}" if kept else "")))
    else:
        rows.append(("inventory", f"not added to {where} (nothing written)"))
    rows.append(("host key", result.host_key or "already known"))
    if result.health is not None:     # keep or return, in a renter's terms (a pod to return: the error says how)
        advice = result.health.advice if result.health.verdict != "return" else ""
        rows.append(("GPU health", result.health.reason + (f"; {advice}" if advice else "")))
    facts = result.facts or {}
    if facts:
        gpus = ", ".join(sorted({g.get("name") or "?" for g in facts.get("gpus") or []})) or "no GPU"
        driver = (facts.get("driver") or {}).get("version")
        rows.append(("platform", f"{facts.get('platform')}: {gpus}" + (f", driver {driver}" if driver else "")))
    if result.report is not None:
        changed = result.changed
        rows.append(("changed", f"{len(changed)} task(s)" if changed else "nothing: the pod was in state"))
        rows += [("", f"  {t.role}: {t.task}") for t in changed]
        from fleet.report.apply import fix_for, fixed

        rows += [("fixed" if i == 0 else "", line) for i, line in enumerate(fixed(result.report))]
        said = set()
        for task in (t for t in result.report.tasks if t.status == "failed"):   # every one; each fix once
            fix = fix_for(task.reason, result.name, str(result.inventory))
            rows += [("failed", f"{task.role}: {task.task}"), ("", f"  {first_line(task.reason)}")]
            rows += [("", f"  fix: {fix}")] if fix not in said else []
            said.add(fix)
    phases = " · ".join(f"{k} {v:.1f}s" for k, v in result.phases.items())
    rows.append(("phases", f"{phases} · total {result.seconds:.1f}s · {result.remote_commands} remote commands"))
    verify = result.verify or {}
    if verify:
        rows.append(("verify", verify.get("summary") or ("passed" if verify.get("passed") else "failed")))
    from fleet.decide import DEFAULTS
    from fleet.report.apply import reach_sentence
    reach = reach_sentence(facts.get("torch"), str(result.vars.get("python_env") or DEFAULTS["python_env"]))
    if reach:
        rows.append(("torch", reach))
    rows.append(("connect", result.target.ssh_line()))
    if result.added or result.existing:
        rows.append(("next", fix_commands(result.name, str(result.inventory))["apply"]))
    return rows


def fix_commands(name: str, inventory: str) -> dict:
    from fleet.report.fixes import commands

    return commands(name, inventory)


def _print_json(reporter, result) -> None:
    from fleet.connection.parallel import Outcome

    host = result.report.to_json() if result.report is not None else {
        "ok": 0, "changed": 0, "failed": 1, "skipped": 0, "unreachable": not result.phases.get("facts"),
        "error": result.error, "tasks": []}
    host["bootstrap"] = {
        "ok": result.ok, "error": result.error, "inventory": str(result.inventory), "existing": result.existing,
        "added": result.added, "host_key": result.host_key, "phases": result.phases,
        "health": result.health.to_json() if result.health is not None else None, "platform":
        (result.facts or {}).get("platform"), "verify": result.verify, "connect": result.target.ssh_line()}
    outcome = Outcome(result.name, remote_commands=result.remote_commands, seconds=result.seconds)
    reporter.json({result.name: host}, {result.name: outcome})
