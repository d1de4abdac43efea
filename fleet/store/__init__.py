"""The history store: every host's reports, append-only, one row per change (issue 46).

One schema on two engines (fleet/store/db.py): SQLite beside the facts records by default (no setup), or a shared
PostgreSQL through psycopg 3 (the `postgres` extra). Where it is: `--store`/FLEET_STORE, else the inventory's
`store:`, else `sqlite:///<facts_dir>/history.sqlite3`.

A report is one host's result of one run, as the sinks, `fleet serve` and `fleet collect` hand it in
(fleet/store/schema.py checks it): its `facts` are the document kept and queried. A report whose facts, status and
exit are what the host's report before it said (the same digest: fleet/facts/rows.py flatten's rows, so exactly what
`fleet facts --drift` would call no change) adds no row; it moves the host's last_seen. Every report id is
remembered (receipts): a report sent twice, by a pod whose first send's answer was lost or by a server restarted
mid-stream, counts once.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from fleet.errors import InputError
from fleet.store import db

DEFAULT_EXPIRE_AFTER = 7 * 86400     # PuppetDB's node-ttl default
DEFAULT_RETAIN = 365 * 86400         # history kept a year (PuppetDB's users lose theirs after 14 days)
# when and why verify ran, and the fingerprint of the files it proved: they differ between two runs that proved the
# same (a pod's start script runs verify every time)
BOOKKEEPING = {"verify.at", "verify.checked_at", "verify.reason", "verify.reused", "verify.fingerprint",
               "verify.summary_at"}
MAX_CHANGES = 200                    # fact paths kept per row's "what changed"


@dataclass(frozen=True)
class Settings:
    url: str
    expire_after: float = DEFAULT_EXPIRE_AFTER
    retain: float = DEFAULT_RETAIN


def check_url(url: str, where: str) -> str:
    """The URL as given (fleet.parse.store_url), or an InputError naming where it came from."""
    from fleet import parse

    try:
        return parse.store_url(url)
    except parse.Rejected as exc:
        raise InputError(f"{where}: {exc}") from None


def settings(inventory=None, url: str | None = None, env=None) -> Settings:
    """Where the store is and how long hosts and history live: `url` (a flag) > FLEET_STORE > the inventory's
    `store:` > SQLite beside the facts records."""
    env = os.environ if env is None else env
    opts = getattr(inventory, "store", None) or {}
    expire, retain = opts.get("expire_after", DEFAULT_EXPIRE_AFTER), opts.get("retain", DEFAULT_RETAIN)
    if url:
        return Settings(check_url(url, "--store"), expire, retain)
    if env.get("FLEET_STORE", "").strip():
        return Settings(check_url(env["FLEET_STORE"].strip(), "environment variable FLEET_STORE"), expire, retain)
    if opts.get("url"):
        return Settings(opts["url"], expire, retain)   # checked (and made absolute) when the inventory was read
    if inventory is None:
        raise InputError("no store named: give --store URL or set FLEET_STORE (sqlite:///PATH or "
                         "postgresql://USER@HOST/DB)")
    return Settings(f"sqlite:///{Path(inventory.facts_dir) / 'history.sqlite3'}", expire, retain)


def describe(url: str) -> str:
    """The URL as it may be shown (it never carries a password: check_url refused those)."""
    return url


# Connections one open store holds at most. A run's hosts report from one thread each (1,000 at once by default), and
# PostgreSQL refuses clients past its max_connections (100 by default, shared by every client of the server): one
# connection per host thread lost every report past the limit ("too many clients already"; issue 46, 300 hosts). A
# report is one short transaction, so a few connections, each lent to one thread at a time, carry them all; 8 is
# `fleet serve`'s default workers. SQLite writes one at a time whatever: one connection.
POSTGRES_CONNECTIONS = 8


class Store:
    """One open store. Thread-safe: a thread borrows a connection for one transaction (`_conn`), at most
    POSTGRES_CONNECTIONS at once on PostgreSQL, SQLite's one; a borrower waits while all are lent."""

    def __init__(self, url: str):
        self.url = url
        self.engine = db.engine_for(url)
        self._slots = threading.BoundedSemaphore(1 if self.engine.name == "sqlite" else POSTGRES_CONNECTIONS)
        self._guard = threading.Lock()     # the lists below
        self._idle: list = []              # open, lent to nobody
        self._all: list = []               # every open connection, lent or not (close() closes them)
        with self._conn() as conn:
            self.engine.create(conn)

    # -- connections ------------------------------------------------------------------------------------
    def _conn(self):
        return _Borrow(self)

    def _take(self):
        """An idle connection, else a new one (the caller holds a slot)."""
        with self._guard:
            if self._idle:
                return self._idle.pop()
        conn = self.engine.connect(self.url)
        with self._guard:
            self._all.append(conn)
        return conn

    def _give_back(self, conn) -> None:
        with self._guard:
            if conn in self._all:
                self._idle.append(conn)

    def _forget(self, conn) -> None:
        with self._guard:
            if conn in self._all:
                self._all.remove(conn)
            if conn in self._idle:
                self._idle.remove(conn)
        try:
            conn.close()
        except Exception:   # already broken
            pass

    def close(self) -> None:
        with self._guard:
            conns, self._all, self._idle = list(self._all), [], []
        for conn in conns:
            try:
                conn.close()
            except Exception:   # closing at exit: nothing left to save
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- writing ------------------------------------------------------------------------------------------
    def add(self, report: dict, *, received: float | None = None, merge: bool = False) -> str:
        """Store one checked report (schema.check): "stored" (a new row), "unchanged" (same digest as the host's
        report before it: last_seen moved) or "duplicate" (its report id was stored before: nothing done).
        `merge`: its facts are a part of the host's (fleet health's verdict), laid over the host's last ones."""
        at = report["at_s"]
        seen = report["status"] != "unreachable"       # last_seen: when the host itself last answered
        e = self.engine
        with self._conn() as conn:
            cur = conn.cursor()
            e.begin(cur)
            cur.execute(e.sql("INSERT INTO receipts (report_id, host, at_s) VALUES (?, ?, ?) "
                              "ON CONFLICT (report_id) DO NOTHING"), (report["report_id"], report["host"], at))
            if cur.rowcount == 0:
                conn.rollback()
                return "duplicate"
            cur.execute(e.sql("INSERT INTO hosts (host, first_seen, last_seen, last_at) VALUES (?, ?, ?, ?) "
                              "ON CONFLICT (host) DO NOTHING"), (report["host"], at, at, -1.0))
            cur.execute(e.sql("SELECT first_seen, last_seen, last_at FROM hosts WHERE host = ?" + e.lock_row),
                        (report["host"],))
            first_seen, last_seen, last_at = cur.fetchone()
            cur.execute(e.sql("SELECT digest, id FROM reports WHERE host = ? AND at_s <= ? "
                              "ORDER BY at_s DESC, id DESC LIMIT 1"), (report["host"], at))
            before = cur.fetchone()
            kept: list = []

            def previous():   # the report before it, read only where needed (a converged host's never is)
                if before is not None and not kept:
                    cur.execute(e.sql("SELECT document FROM reports WHERE id = ?"), (before[1],))
                    kept.append(e.load(cur.fetchone()[0]))
                return kept[0] if kept else None

            # a report without facts (a host that did not answer, a run that gathers none) keeps the host's last
            # facts: only its status is new
            facts = report.get("facts") or previous() or {}
            if merge and report.get("facts") and previous():     # a run that saw part of the host (fleet health)
                facts = {**previous(), **report["facts"]}
            digest = digest_of(facts, report["status"], report.get("exit"))
            outcome = "unchanged" if before is not None and before[0] == digest else "stored"
            row_id = document = None
            if outcome == "stored":
                document = json.dumps(facts, sort_keys=True, separators=(",", ":"))
                changes = _changes(previous(), facts) if before is not None else []
                cur.execute(e.sql("INSERT INTO reports (report_id, host, kind, at_s, received_s, fleet_version, "
                                  "status, exit, digest, changes, document) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                  + e.json_param + ")" + e.returning_id),
                            (report["report_id"], report["host"], report["kind"], at, received or time.time(),
                             report.get("fleet_version"), report["status"], report.get("exit"), digest,
                             json.dumps(changes), document))
                row_id = e.last_id(cur)
            if at >= last_at:     # the newest report of the host: the one queries see
                seen_at = at if seen or last_at < 0 else last_seen
                if row_id is None:
                    cur.execute(e.sql("UPDATE hosts SET last_seen = ?, last_at = ?, kind = ? WHERE host = ?"),
                                (seen_at, at, report["kind"], report["host"]))
                else:
                    cur.execute(e.sql("UPDATE hosts SET last_seen = ?, last_at = ?, kind = ?, status = ?, exit = ?, "
                                      "digest = ?, report = ?, shown = ?, document = " + e.json_param
                                      + " WHERE host = ?"),
                                (seen_at, at, report["kind"], report["status"], report.get("exit"), digest, row_id,
                                 json.dumps(shown_of(facts)), document, report["host"]))
            if at < first_seen:
                cur.execute(e.sql("UPDATE hosts SET first_seen = ? WHERE host = ?"), (at, report["host"]))
            conn.commit()
            return outcome

    def purge(self, retain: float, *, now: float | None = None) -> int:
        """History older than `retain` seconds goes (a host's newest row stays while the host does); hosts not
        seen for that long go too. Returns the rows removed."""
        cutoff = (now or time.time()) - retain
        e = self.engine
        with self._conn() as conn:
            cur = conn.cursor()
            e.begin(cur)
            cur.execute(e.sql("DELETE FROM hosts WHERE last_seen < ?"), (cutoff,))
            cur.execute(e.sql("DELETE FROM reports WHERE at_s < ? AND id NOT IN "
                              "(SELECT report FROM hosts WHERE report IS NOT NULL)"), (cutoff,))
            removed = cur.rowcount
            cur.execute(e.sql("DELETE FROM receipts WHERE at_s < ?"), (cutoff,))
            conn.commit()
            return removed

    # -- reading (fleet/store/query.py builds on these) ------------------------------------------------------
    def rows(self, sql: str, params=()) -> list[tuple]:
        with self._conn() as conn:
            cur = conn.cursor()
            cur.execute(self.engine.sql(sql), params)
            found = cur.fetchall()
            conn.rollback()        # a read: end its transaction (PostgreSQL would hold its snapshot)
            return found


class _Borrow:
    """`with store._conn() as conn`: a connection lent to this thread for one transaction, rolled back on error; a
    connection that broke (a server that restarted) is closed, and the next borrower connects again."""

    def __init__(self, store: Store):
        self.store = store

    def __enter__(self):
        self.store._slots.acquire()
        try:
            self.conn = self.store._take()
        except BaseException:
            self.store._slots.release()
            raise
        return self.conn

    def __exit__(self, kind, value, tb):
        try:
            if kind is not None:
                try:
                    self.conn.rollback()
                except Exception:   # the connection itself broke: the original error says why
                    pass
            if getattr(self.conn, "broken", False) or getattr(self.conn, "closed", False):
                self.store._forget(self.conn)
            else:
                self.store._give_back(self.conn)
        finally:
            self.store._slots.release()


SHOWN = {"verify": ("verify", "passed"), "health": ("health", "verdict"), "driver": ("driver", "version")}


def shown_of(facts: dict) -> dict:
    """What every answer shows of a host (kept beside its document: no JSON path read per host to show it)."""
    out = {}
    for name, path in SHOWN.items():
        value = facts
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        out[name] = value if isinstance(value, (str, int, float, bool)) or value is None else json.dumps(value)
    return out


def open_store(url: str) -> Store:
    return Store(url)


def digest_of(facts: dict, status: str, exit_code) -> str:
    """What "nothing changed" means: the rows `fleet facts --drift` compares (fleet/facts/rows.py flatten, less
    what moves on its own: fleet/facts/readings.py), the status and the exit code."""
    from fleet.facts.rows import flatten

    rows = flatten(facts)
    # the rows sorted by path (a path is there once: sorting the (path, value) pairs gives this order), by C set and
    # sort operations: a filter calling a function per path cost ~0.2 ms a host (issue 46)
    kept = sorted(rows.keys() - _left_out(rows.keys()))
    text = json.dumps([[(path, rows[path]) for path in kept], status, exit_code], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


_JUDGED: set[str] = set()      # every path judged so far: the same few hundred paths on every host
_LEFT_OUT: set[str] = set()    # those of them left out of the digest


def _left_out(paths) -> set[str]:
    """The paths left out of the digest: a reading (fleet/facts/readings.py) or BOOKKEEPING, no change of the host.
    Each path judged once a process: the readings' pattern matched against every row of every host cost ~0.3 ms a
    host (issue 46)."""
    new = paths - _JUDGED
    if not new:
        return _LEFT_OUT
    from fleet.facts.readings import moves_on_its_own

    out = {path for path in new if moves_on_its_own(path) or path in BOOKKEEPING}
    if len(_JUDGED) < 100_000:   # a bound: a fleet's records have a few thousand paths, never unbounded
        _LEFT_OUT.update(out)    # before _JUDGED: a path judged is never missing from _LEFT_OUT
        _JUDGED.update(new)
    return _LEFT_OUT | out


def _changes(previous: dict | None, current: dict) -> list[list[str]]:
    from fleet.facts.rows import drift

    return [list(change) for change in drift(previous, current)[:MAX_CHANGES]]
