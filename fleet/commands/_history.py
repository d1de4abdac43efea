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
    group.add_argument("--now", metavar="DATE", default=None,
                       help="ask as of DATE (2026-11-29T12:00, UTC unless it says): what --stale, --since 7d and "
                            "expire_after count from; default: now")


def asked(args: argparse.Namespace) -> bool:
    return any(getattr(args, flag, None) not in (None, False) for flag in FLAGS)


def question(args: argparse.Namespace):
    """The question the flags ask (fleet/workflows/history.py answers it; fleet/report/history.py prints it)."""
    from fleet.workflows.history import Question

    return Question(where=tuple(args.where or ()), failed=args.failed, stale=args.stale, history=args.history,
                    since=args.since, now=args.now, export=args.format != "table" and not args.history and not args.since)
