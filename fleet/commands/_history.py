"""`fleet facts`'s questions over the history store (--where, --failed, --stale, --history, --since): the flags,
and the one function that answers them. They read the store alone: no host is contacted."""

from __future__ import annotations

import argparse

from fleet import parse

FLAGS = ("where", "failed", "stale", "history", "since")


def add_arguments(parser: argparse.ArgumentParser) -> None:
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


def asked(args: argparse.Namespace) -> bool:
    return any(getattr(args, flag, None) not in (None, False) for flag in FLAGS)


def run(args: argparse.Namespace, env) -> int:
    import json
    import time

    from fleet.errors import ExitStatus
    from fleet.inventory import load_inventory
    from fleet.report import reporter_for
    from fleet.report import history as printer
    from fleet.store import open_store, query, settings

    where = [query.parse_where(text) for text in args.where or []]
    since = query.parse_since(args.since) if args.since else None
    inventory = load_inventory(args.inventory)
    only = {h.name for h in inventory.select(args.limit)} if getattr(args, "limit", None) else None
    found = settings(inventory)
    reporter = reporter_for(args, env)
    now = time.time()
    with open_store(found.url) as store:
        if args.history:
            rows = query.history(store, args.history, since=since)
            doc = {"store": found.url, "host": args.history, "history": rows}
            shown = printer.history_table(args.history, rows)
        else:
            matching = [row for row in query.hosts(store, where=where, failed=args.failed, stale=args.stale,
                                                   expire_after=found.expire_after, now=now)
                        if only is None or row.host in only]
            if since is not None:
                names = {row.host for row in matching}
                entries = [e for e in query.changed_since(store, since) if e["host"] in names]
                doc = {"store": found.url, "since": query._iso(since), "changed": entries}
                shown = printer.since_table(entries, query._iso(since))
            else:
                doc = {"store": found.url, "hosts": [row.as_json() for row in matching]}
                shown = printer.hosts_table(matching, where, now=now)
        if getattr(args, "format", "table") != "table" and not args.history and since is None:
            records = query.documents(store, [row.host for row in matching])
            return _export(args, env, reporter, matching, records, now)
    if args.json:
        # JSON escapes every control character (ensure_ascii: C1 ones too): a report's text stays data
        env.console.file.write(json.dumps(doc, indent=2, ensure_ascii=True, default=str) + "\n")
        env.console.file.flush()
    else:
        reporter.print(shown)
    return ExitStatus.OK


def _export(args, env, reporter, matching, records: dict, now: float) -> int:
    """--format md|csv|html over the hosts a question selected: their newest records side by side, as
    `fleet facts --format` shows gathered ones (every remote string escaped by those printers)."""
    from datetime import datetime, timezone

    from fleet import __version__
    from fleet.atomic import write_atomic
    from fleet.errors import ExitStatus
    from fleet.record.store import describe_age
    from fleet.report import compare, export, html, safe_value

    last = safe_value(records)
    ages = {row.host: describe_age(now - row.last_seen) + (" (expired)" if row.expired else "") for row in matching}
    columns = [compare.Column(row.host, age=ages[row.host]) for row in matching if row.host in last]
    comparison = compare.compare({c.host: last[c.host] for c in columns}, columns)
    if args.format == "html":
        text = html.render(comparison, last, ages, version=__version__,
                           generated=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    else:
        text = (export.markdown if args.format == "md" else export.csv_text)(comparison, ages)
    if args.output:
        path = env.cwd / args.output
        write_atomic(path, text.encode(), mode=0o644)
        reporter.progress("facts", f"{args.format} report of {len(columns)} host(s) written to {path}")
    else:
        env.console.file.write(text)
        env.console.file.flush()
    return ExitStatus.OK
