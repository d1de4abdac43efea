"""`fleet facts INVENTORY`: gather (one remote command per host), record, and compare hosts side by side."""

from __future__ import annotations

import argparse

from fleet.commands import _common

HELP = "gather and record every host's facts; compare hosts side by side"
DESCRIPTION = """\
Gather each selected host's facts with one remote command (in parallel), write them to
<facts_dir>/<host>.json (the previous record is kept as <host>.prev.json), and show them: on a terminal a
short view per host (verify, platform, GPUs, driver, CUDA, compat, torch and its python, and the libcuda and
python each kind of process gets); with --all, or in a pipe, one column per host and one row per fact, rows
where hosts differ first, identical rows folded in a pipe unless --all.

  fleet facts inventories/fleet.yaml
  fleet facts inventories/lab.yaml --limit pods --json
  fleet facts inventories/fleet.yaml --cached --drift     what changed since the record before, no SSH
  fleet facts inventories/fleet.yaml --cached --format html -o facts.html   a page to open in a browser

--format md|csv|html prints every fact (differing rows first) as Markdown, CSV or one self-contained HTML
page (verify and its perf figures per host, each record's age; no external assets).

The last verify is shown as passed only while what it proved is as the host shows it now (its fingerprint:
torch, the driver, the libcuda each shell loads, the variables verify reads); otherwise verify.passed says
"stale" and verify.stale why ("torch changed: 2.11.0+cu130 -> -", "variable verify_perf changed").

Each record holds the GPUs' health (facts.health: every field per GPU, the kernel log's Xid events) and its
verdict (health.verdict: healthy, degraded or return; health.reason names the GPU, the field and NVIDIA's
action), compared across hosts like any fact; `fleet health` runs that check alone.

Exit status is 1 if any host was unreachable (its column shows the age of its last record).
"""


def register(subparsers) -> None:
    parser = _common.command(subparsers, "facts", HELP, DESCRIPTION)
    _common.add_inventory(parser)
    _common.add_json(parser)
    parser.add_argument("--cached", action="store_true",
                        help="read the records written last time instead of contacting hosts")
    parser.add_argument("--all", action="store_true", dest="show_all",
                        help="every fact, one column per host (on a terminal the default is a short view per "
                             "host; in a pipe, rows where hosts differ, identical ones folded)")
    parser.add_argument("--drift", action="store_true",
                        help="show, per host, what changed since the previous record")
    parser.add_argument("--format", choices=("table", "md", "csv", "html"), default="table",
                        help="table (default: drawn on a terminal, tab-separated in a pipe), md, csv or html")
    parser.add_argument("-o", "--output", metavar="FILE", default=None,
                        help="write the md/csv/html report to FILE (atomically) instead of stdout")
    _common.add_connect(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    from fleet.errors import ExitStatus
    from fleet.inventory import load_inventory
    from fleet.record import store
    from fleet.engine.session import check_variables

    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit)
    if not args.cached:
        # The probe is rendered from each host's variables (where the venv is, ...): a misspelt or mistyped one
        # is bad input here as in apply (exit 2, file:line, nobody contacted). --cached renders nothing from
        # them and contacts nobody: it shows the records as they were written.
        check_variables(hosts, inventory.roles_path)
    reporter = reporter_for(args, env)
    if args.cached:
        outcomes = _read_cached(hosts, inventory.facts_dir)
    else:
        outcomes = _gather_live(args, env, reporter, hosts, inventory.facts_dir, inventory.roles_path)
    records = {name: outcome.value for name, outcome in outcomes.items()}
    last = {name: record or store.read(inventory.facts_dir, name) for name, record in records.items()}
    if args.json:
        _print_json(reporter, records, outcomes, inventory.facts_dir, args.drift)
    elif args.format != "table":
        _export(args, env, reporter, outcomes, last)
    else:
        _print_tables(reporter, outcomes, last, inventory.facts_dir, args)
    if any(outcome.interrupted for outcome in outcomes.values()):
        return ExitStatus.INTERRUPTED
    failed = any(outcome.error for outcome in outcomes.values())
    return ExitStatus.HOST_FAILED if failed else ExitStatus.OK


def with_verify_variables(facts: dict, host, roles) -> dict:
    """The facts with the last verify judged on the variables it read too (the inventory's and the verify role's
    defaults, as apply renders them): a changed verify_perf makes it stale ("variable verify_perf changed")."""
    from fleet.engine.decided import variables_read
    from fleet.engine.session import variables
    from fleet.facts import fingerprint

    verify = facts.get("verify")
    role = next((r for r in roles if any(t.type == "verify" for t in r.tasks)), None)
    if not isinstance(verify, dict) or role is None:
        return facts
    now = variables_read(role, variables(facts, host.vars))
    reasons = fingerprint.stale_reasons(verify, facts.get("verify_fingerprint"), facts.get("torch"), now)
    return {**facts, "verify": fingerprint.judged(verify, reasons)}


def _gather_live(args, env, reporter, hosts, facts_dir, roles_path=None):
    from fleet.engine import session
    from fleet.record import store
    from fleet.connection.parallel import on_hosts

    from fleet.roles import roles_dirs, roles_for_hosts

    roles = roles_for_hosts(hosts, roles_dirs(roles_path or []))

    def work(conn, host):
        # the last record says where the venv was (a pod's /workspace volume): the probe asks that python
        facts = session.gather(conn, host, store.read(facts_dir, host.name))
        facts = with_verify_variables(facts, host, roles.get(host.name, []))
        session.record(facts_dir, host.name, facts)
        return facts

    options = _common.connect_options(args, reporter)
    return on_hosts(hosts, work, options=options, forks=args.forks, debug=env.debug)


def _read_cached(hosts, facts_dir):
    from fleet.record import store
    from fleet.connection.parallel import Outcome

    outcomes = {}
    for host in hosts:
        record = store.read(facts_dir, host.name)
        error = None if record else f"{host.name}: no record in {facts_dir}; run `fleet facts` without --cached"
        outcomes[host.name] = Outcome(host.name, value=record, error=error)
    return outcomes


def _print_json(reporter, records, outcomes, facts_dir, with_drift: bool) -> None:
    from fleet.record import store

    extra = {}
    errors = {name: o.error for name, o in outcomes.items() if o.error}
    if errors:
        extra["errors"] = {name: {"error": error, "unreachable": outcomes[name].unreachable,
                                  "last_record_age_s": _age(store.read(facts_dir, name))}
                           for name, error in errors.items()}
    if with_drift:
        extra["drift"] = {name: [{"path": p, "before": b, "after": a} for p, b, a in _drift(facts_dir, name)]
                          for name in outcomes}
    reporter.json(records, outcomes, **extra)


def _print_tables(reporter, outcomes, last, facts_dir, args) -> None:
    from rich.markup import escape

    from fleet.report import compare
    from fleet.record import store
    from fleet.report import safe_value

    last = safe_value(last)  # remote text (OS name, GPU name, raw probe text): no secrets, no terminal escapes

    for name, outcome in outcomes.items():
        if outcome.error:
            reporter.error(outcome.error)
        for problem in (outcome.value or {}).get("probe", {}).get("errors", []):
            reporter.warn(f"{name}: {problem}")
    columns = [_column(name, outcome, last[name], cached=args.cached) for name, outcome in outcomes.items()]
    if not reporter.plain and not args.show_all:   # a person at a terminal: each host at a glance
        from fleet.report.glance import glance

        for column in columns:
            reporter.print(glance(column.host, last[column.host], column, args.inventory))
        reporter.note("every fact, hosts side by side: fleet facts --all (or --json)")
    else:
        # With one host there is nothing to compare: fold nothing.
        show_all = args.show_all or sum(1 for record in last.values() if record) < 2
        comparison = compare.compare(last, columns)
        if reporter.plain or compare.fits(comparison, reporter.env.console.width):
            reporter.print(compare.render(comparison, show_all=show_all))
        else:   # a terminal too narrow for every fact name whole beside each host's column
            reporter.print(compare.render_stacked(comparison))
    if args.drift:
        for name in outcomes:
            previous = store.read(facts_dir, name, previous=True)
            since = f"previous record {store.describe_age(store.age_seconds(previous))}" if previous else "no previous record"
            changes = safe_value(_drift(facts_dir, name))
            if changes:
                reporter.print(compare.render_drift(name, changes, since=since))
            else:   # one line, not a table with no rows
                reporter.print(f"{escape(name)}: no change since the {'previous record' if previous else 'first record'}"
                               f" [dim]({escape(since)})[/dim]")
    if not args.cached:
        written = sum(1 for o in outcomes.values() if not o.error)
        timing = ", ".join(f"{name} {o.seconds:.2f}s/{o.remote_commands} cmd" for name, o in outcomes.items())
        reporter.note(f"{written} record(s) written to {facts_dir} ({timing})")


def _export(args, env, reporter, outcomes, last) -> None:
    """md, csv or html: every row (differing first), each host's record age."""
    from datetime import datetime, timezone

    from fleet import __version__
    from fleet.atomic import write_atomic
    from fleet.report import compare
    from fleet.report import export
    from fleet.report import html
    from fleet.record import store
    from fleet.report import safe_value

    last = safe_value(last)  # remote text: no secrets, no terminal escapes, in a report as on a terminal
    for outcome in outcomes.values():
        if outcome.error:
            reporter.error(outcome.error)
    columns = [_column(name, outcome, last[name], cached=args.cached) for name, outcome in outcomes.items()]
    comparison = compare.compare(last, columns)
    ages = {name: store.describe_age(store.age_seconds(record)) if record else None for name, record in last.items()}
    if args.format == "html":
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        text = html.render(comparison, last, ages, generated=now, version=__version__)
    else:
        text = (export.markdown if args.format == "md" else export.csv_text)(comparison, ages)
    if args.output:
        path = env.cwd / args.output
        write_atomic(path, text.encode(), mode=0o644)
        reporter.progress("facts", f"{args.format} report written to {path}")
    else:
        env.console.file.write(text)
        env.console.file.flush()


def _column(name, outcome, record, *, cached: bool):
    from fleet.report import compare
    from fleet.record import store
    from fleet.report import safe_value

    age = store.describe_age(store.age_seconds(record)) if record else None
    if outcome.error:
        label = ("not gathered" if cached or not (outcome.unreachable or outcome.refused)
                 else "refused" if outcome.refused else "unreachable")
        return compare.Column(name, reachable=False, age=age, error=safe_value(outcome.error), label=label)
    return compare.Column(name, age=age if cached else None)


def _drift(facts_dir, name):
    from fleet.report import compare
    from fleet.record import store

    current = store.read(facts_dir, name)
    previous = store.read(facts_dir, name, previous=True)
    return compare.drift(previous, current) if current and previous else []


def _age(record):
    from fleet.record import store

    seconds = store.age_seconds(record) if record else None
    return round(seconds, 1) if seconds is not None else None
