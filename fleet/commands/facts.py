"""`fleet facts INVENTORY`: gather (one remote command per host), record, and compare hosts side by side."""

from __future__ import annotations

import argparse

from fleet import parse
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
    _add_questions(parser)
    _common.add_connect(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    from fleet.report.facts import FactsView, printer_for
    from fleet.workflows.facts import FactsRequest, gather_hosts
    from fleet.workflows.history import ask

    question = _question(args)   # None: no question over the history store
    view = FactsView(json=args.json, format=args.format, show_all=args.show_all, drift=args.drift,
                     output=env.cwd / args.output if args.output else None, history=question is not None,
                     inventory=args.inventory)
    reporter = reporter_for(env)
    connect = _common.connect_options(args, reporter)
    inventory, hosts = _common.selected_hosts(args)
    if question is not None:   # a question over the history store: no host is contacted
        result = ask(inventory, {h.name for h in hosts} if args.limit else None, question)
    else:
        request = FactsRequest(cached=args.cached, connect=connect, forks=args.forks, debug=env.debug,
                               argv=("fleet", *getattr(args, "argv", [args.command])))
        result = gather_hosts(inventory, hosts, request)
    printer_for(reporter, view).finish(result)
    return result.status


QUESTIONS = ("where", "failed", "stale", "history", "since")


def _add_questions(parser: argparse.ArgumentParser) -> None:
    """The questions over the history store (fleet/workflows/history.py answers them): they read the store alone."""
    group = parser.add_argument_group(
        "questions over the history store (no host is contacted; the store: fleet/store, FLEET_STORE)")
    group.add_argument("--where", action="append", metavar="EXPR", default=None,
                       help="hosts whose newest report matches PATH OP VALUE (== != < <= > >=; versions compared "
                            "as versions), e.g. 'driver.version < 580'; repeatable, ANDed")
    group.add_argument("--failed", action="store_true", help="hosts whose last run did not end ok")
    group.add_argument("--stale", metavar="DURATION", type=parse.flag(parse.duration), default=None,
                       help="hosts not seen for DURATION (24h, 30m, 2d)")
    group.add_argument("--history", metavar="HOST", default=None,
                       help="HOST's reports, oldest first, each with what changed")
    group.add_argument("--since", metavar="DATE", default=None,
                       help="what changed since DATE (2026-11-20, 2026-11-20T12:00, or back from now: 7d)")
    group.add_argument("--now", metavar="DATE", default=None,
                       help="ask as of DATE (2026-11-29T12:00, UTC unless it says): what --stale, --since 7d and "
                            "expire_after count from; default: now")


def _question(args: argparse.Namespace):
    """The question the flags ask over the history store, or None where they ask none."""
    from fleet.workflows.history import Question

    if all(getattr(args, flag, None) in (None, False) for flag in QUESTIONS):
        return None
    return Question(where=tuple(args.where or ()), failed=args.failed, stale=args.stale, history=args.history,
                    since=args.since, now=args.now,
                    export=args.format != "table" and not args.history and not args.since)
