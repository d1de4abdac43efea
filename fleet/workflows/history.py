"""`fleet facts`'s questions over the history store (--where, --failed, --stale, --history, --since) as one job:
a Question in, one HistoryAnswer back; the store alone is read, no host is contacted (the printer is
fleet/report/history.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Question:
    """What was asked (the flags, parsed): hosts matching `where` (ANDed), failed, not seen for `stale` seconds;
    or one host's `history`; or what changed `since` (a date or a span back from now, as given)."""
    where: tuple[str, ...] = ()
    failed: bool = False
    stale: float | None = None
    history: str | None = None
    since: str | None = None
    now: str | None = None        # --now: the time asked at (default: the clock's)
    export: bool = False          # --format md|csv|html: the matching hosts' newest records, side by side


@dataclass
class HistoryAnswer:
    """`doc`: the answer as --json prints it; `kind`: hosts, history or since; the rows each table reads; for an
    export, the matching hosts' newest `records`."""
    kind: str
    doc: dict
    where: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    since: str | None = None
    records: dict | None = None
    now: float = field(default_factory=time.time)
    status: int = 0               # ExitStatus.OK: a question that could be answered


def ask(inventory, only: set[str] | None, question: Question) -> HistoryAnswer:
    """Answer `question` from the inventory's store (FLEET_STORE over it; SQLite beside the facts records);
    `only`: the hosts --limit selected (None: every host the store knows). Bad input is an InputError, before the
    store is opened."""
    from fleet.store import open_store, query, settings

    where = [query.parse_where(text) for text in question.where]
    now = query.parse_now(question.now) if question.now else time.time()
    since = query.parse_since(question.since, now) if question.since else None
    found = settings(inventory)
    with open_store(found.url) as store:
        if question.history:
            rows = query.history(store, question.history, since=since)
            return HistoryAnswer("history", {"store": found.url, "host": question.history, "history": rows},
                                 rows=rows, now=now)
        matching = [row for row in query.hosts(store, where=where, failed=question.failed, stale=question.stale,
                                               expire_after=found.expire_after, now=now)
                    if only is None or row.host in only]
        if since is not None:
            names = {row.host for row in matching}
            entries = [e for e in query.changed_since(store, since) if e["host"] in names]
            return HistoryAnswer("since", {"store": found.url, "since": query._iso(since), "changed": entries},
                                 rows=entries, since=query._iso(since), now=now)
        records = query.documents(store, [row.host for row in matching]) if question.export else None
    return HistoryAnswer("hosts", {"store": found.url, "hosts": [row.as_json() for row in matching]}, where=where,
                         rows=matching, records=records, now=now)
