"""The two engines behind one schema: SQLite (the standard library) and PostgreSQL (psycopg 3, imported only when
a postgresql:// store is opened).

    reports   one row per change of a host's report: id, report_id, host, kind (apply, facts, script, ...),
              at_s (when it ran, epoch seconds), received_s, fleet_version, status, exit, digest, changes (the
              drift from the row before, JSON), document (the facts: JSON text on SQLite, jsonb on PostgreSQL)
    hosts     one row per host: first_seen, last_seen, last_at, and its newest row's kind, status, exit, digest,
              report (that row's id), shown (what every answer shows: verify, health, driver, as a small JSON
              object) and document, so "the latest record per host where ..." reads one table
    receipts  every report id ever stored (until the retention purges it): a report sent twice counts once

The SQL is written once with `?` placeholders; PostgreSQL's `%s` is put in by `sql()`. The only differences
are the column types below, the row lock and how a JSON path is read (query.py).
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from fleet.errors import InputError

SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
  id {serial} PRIMARY KEY,
  report_id TEXT NOT NULL,
  host TEXT NOT NULL,
  kind TEXT NOT NULL,
  at_s DOUBLE PRECISION NOT NULL,
  received_s DOUBLE PRECISION NOT NULL,
  fleet_version TEXT,
  status TEXT NOT NULL,
  exit INTEGER,
  digest TEXT NOT NULL,
  changes TEXT NOT NULL,
  document {json} NOT NULL
);
CREATE INDEX IF NOT EXISTS reports_host_at ON reports (host, at_s);
CREATE INDEX IF NOT EXISTS reports_at ON reports (at_s);
CREATE TABLE IF NOT EXISTS hosts (
  host TEXT PRIMARY KEY,
  first_seen DOUBLE PRECISION NOT NULL,
  last_seen DOUBLE PRECISION NOT NULL,
  last_at DOUBLE PRECISION NOT NULL,
  kind TEXT,
  status TEXT,
  exit INTEGER,
  digest TEXT,
  report BIGINT,
  shown TEXT,
  document {json}
);
CREATE TABLE IF NOT EXISTS receipts (
  report_id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  at_s DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_at ON receipts (at_s);
"""


class SQLite:
    name = "sqlite"
    lock_row = ""                   # BEGIN IMMEDIATE took the database's write lock already
    json_param = "?"
    returning_id = ""

    def connect(self, url: str):
        import sqlite3

        path = path_of(url)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(path), timeout=60, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")      # readers never wait for the writer
            conn.execute("PRAGMA synchronous=NORMAL")    # WAL keeps it consistent; a power cut may lose the last
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"cannot open the history store {path} ({exc}); fix the path or its permissions, "
                             "or name another with --store/FLEET_STORE") from None
        return _AutoBegin(conn)

    def create(self, conn) -> None:
        conn.raw.executescript(SCHEMA.format(serial="INTEGER", json="TEXT"))

    def sql(self, text: str) -> str:
        return text

    def begin(self, cur) -> None:
        cur.execute("BEGIN IMMEDIATE")

    def last_id(self, cur) -> int:
        return cur.lastrowid

    @staticmethod
    def load(document):
        return json.loads(document) if isinstance(document, str) else document

    @staticmethod
    def path_expr(path: list[str]) -> tuple[str, tuple]:
        """SQL reading one JSON path of hosts.document, and its parameters."""
        parts = "".join(f"[{p}]" if p.isdigit() else "." + json.dumps(p) for p in path)
        return "document -> ?", ("$" + parts,)

    @staticmethod
    def value(raw):
        """`->` answers JSON text (true stays true, not 1): the same values PostgreSQL's jsonb gives."""
        return json.loads(raw) if raw is not None else None


class _AutoBegin:
    """sqlite3 in autocommit mode (isolation_level=None) with explicit BEGIN, behind the DB-API names."""

    def __init__(self, raw):
        self.raw = raw

    def cursor(self):
        return self.raw.cursor()

    def commit(self):
        if self.raw.in_transaction:
            self.raw.execute("COMMIT")

    def rollback(self):
        if self.raw.in_transaction:
            self.raw.execute("ROLLBACK")

    def close(self):
        self.raw.close()


class Postgres:
    name = "postgresql"
    lock_row = " FOR UPDATE"         # two reports of one host at once: the second waits for the first
    json_param = "?::jsonb"
    returning_id = " RETURNING id"

    def connect(self, url: str):
        try:
            import psycopg
        except ImportError:
            raise InputError("a postgresql:// store needs psycopg 3: pip install 'fleet[postgres]'") from None
        try:
            return psycopg.connect(url, connect_timeout=20)
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            # libpq says where it tried first ('connection to server on socket "..." failed: FATAL: ...'): the
            # server's own words are what a user acts on ("too many connections for role"), kept whole
            reason = " ".join(reason[reason.index("FATAL:"):].split()) if "FATAL:" in reason else reason
            raise InputError(f"cannot connect to the history store {url} ({reason}); check the server, and "
                             "the password in ~/.pgpass, PGPASSFILE, PGSERVICEFILE or PGPASSWORD") from None

    def create(self, conn) -> None:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(461046)")   # two servers starting at once: one creates
            for statement in SCHEMA.format(serial="BIGSERIAL", json="JSONB").split(";"):
                if statement.strip():
                    cur.execute(statement)
        conn.commit()

    def sql(self, text: str) -> str:
        return text.replace("%", "%%").replace("?", "%s")

    def begin(self, cur) -> None:
        """psycopg opens a transaction at the first statement."""

    def last_id(self, cur) -> int:
        return cur.fetchone()[0]

    @staticmethod
    def load(document):
        return json.loads(document) if isinstance(document, str) else document

    @staticmethod
    def path_expr(path: list[str]) -> tuple[str, tuple]:
        return "document #> ?::text[]", (path,)

    @staticmethod
    def value(raw):
        return raw


def engine_for(url: str):
    return SQLite() if urlsplit(url).scheme == "sqlite" else Postgres()


def path_of(url: str):
    """sqlite:///facts/history.sqlite3 -> facts/history.sqlite3; sqlite:////var/lib/x.db -> /var/lib/x.db."""
    from pathlib import Path

    return Path(urlsplit(url).path[1:] if url.startswith("sqlite:///") else urlsplit(url).path)
