"""`fleet facts INVENTORY`: gather (one remote command per host), record, and compare hosts side by side."""

from __future__ import annotations

import argparse

from fleet.commands import _common, _history

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
    _history.add_arguments(parser)
    _common.add_connect(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    from fleet.report.facts import FactsView, printer_for
    from fleet.workflows.facts import FactsRequest, gather_hosts
    from fleet.workflows.history import ask

    reporter = reporter_for(env)
    inventory, hosts = _common.selected_hosts(args)
    view = FactsView(json=args.json, format=args.format, show_all=args.show_all, drift=args.drift,
                     output=env.cwd / args.output if args.output else None, history=_history.asked(args),
                     inventory=args.inventory)
    if view.history:   # a question over the history store: no host is contacted
        result = ask(inventory, {h.name for h in hosts} if args.limit else None, _history.question(args))
    else:
        request = FactsRequest(cached=args.cached, connect=_common.connect_options(args, reporter), forks=args.forks,
                               debug=env.debug, argv=("fleet", *getattr(args, "argv", [args.command])))
        result = gather_hosts(inventory, hosts, request)
    printer_for(reporter, view).finish(result)
    return result.status
