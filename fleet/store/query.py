"""Questions over the store: which hosts match a fact filter, which failed their last run, which have not been
seen for a while, one host's history, what changed since a date.

A filter is `path op value` (`driver.version < 580`, `health.verdict != healthy`, `status == failed`), op one of
== != < <= > >=, ANDed when there are several. The path is read from each host's newest document by the engine
itself (SQLite's `->`, PostgreSQL's `#>`), so only the values travel; they are compared here:

- a value that starts with a version (580, 580.65.06, 2.11.0+cu130, 16) against a version or a number: as
  versions, part by part as numbers (580.65.06 < 580.159.04, 2.9 < 2.10, `driver.version < 580`: every 57x
  and older, 580 counting as 580.0.0); `==` and `!=` on the filter's own parts (`== 580`: every 580.x);
- true/false/yes/no as booleans; anything else as text;
- `== null` (or none) matches a host without the fact, `!= null` one with it; a host without the fact matches
  every other `!=` (it is not healthy if it says nothing) and no ordering.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

from fleet.errors import InputError
from fleet.store import SHOWN

OPS = ("==", "!=", "<=", ">=", "<", ">")
COLUMNS = {"status", "kind", "exit"}            # the report's own fields, besides its facts
_WHERE = re.compile(r"^\s*([A-Za-z0-9_][A-Za-z0-9_.-]*)\s*(==|!=|<=|>=|<|>)\s*(.*?)\s*$", re.S)
_VERSION = re.compile(r"^\d+(?:\.\d+)*")
_NULL = {"null", "none", "-"}
_BOOL = {"true": True, "yes": True, "false": False, "no": False}


@dataclass(frozen=True)
class Where:
    text: str
    path: tuple[str, ...]
    op: str
    value: str


def parse_where(text: str) -> Where:
    """'driver.version < 580' -> Where; bad text is an InputError naming --where and a fix."""
    found = _WHERE.match(text)
    if not found or not found[3]:
        raise InputError(f"--where {text!r} is not a filter: write PATH OP VALUE with OP one of "
                         f"{' '.join(OPS)}, e.g. --where 'driver.version < 580'")
    value = found[3]
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return Where(text.strip(), tuple(found[1].split(".")), found[2], value)


def matches(actual, op: str, wanted: str) -> bool:
    """One filter on one value (see the module's doc)."""
    if wanted.lower() in _NULL and op in ("==", "!="):
        return (actual is None) == (op == "==")
    if actual is None or isinstance(actual, (dict, list)):
        return op == "!=" if actual is None else _compare(json.dumps(actual, sort_keys=True), op, wanted)
    if isinstance(actual, bool) or wanted.lower() in _BOOL and op in ("==", "!="):
        want = _BOOL.get(wanted.lower())
        have = actual if isinstance(actual, bool) else _BOOL.get(str(actual).lower())
        if want is not None and have is not None:
            return (have == want) == (op == "==") if op in ("==", "!=") else False
    text = str(actual)
    version = _VERSION.match(text)
    if version and _VERSION.fullmatch(wanted):
        have = tuple(int(part) for part in version[0].split("."))
        want = tuple(int(part) for part in wanted.split("."))
        if op in ("==", "!="):              # 580 == 580.65.06: the filter's parts alone
            return (have[:len(want)] == want) == (op == "==")
        return _compare(have, op, want)     # 580.65.06 < 580.159.04; 580.65.06 > 580 (580 is 580.0.0)
    return _compare(text, op, wanted)


def _compare(have, op: str, want) -> bool:
    return {"==": have == want, "!=": have != want, "<": have < want, "<=": have <= want,
            ">": have > want, ">=": have >= want}[op]


# -- the questions ---------------------------------------------------------------------------------------------

@dataclass
class HostRow:
    host: str
    first_seen: float
    last_seen: float
    kind: str | None
    status: str | None
    exit: int | None
    expired: bool
    shown: dict = field(default_factory=dict)     # verify, health, driver: the newest document's
    values: dict = field(default_factory=dict)    # each --where's text -> the host's value

    def as_json(self) -> dict:
        return {"host": self.host, "first_seen": _iso(self.first_seen), "last_seen": _iso(self.last_seen),
                "kind": self.kind, "status": self.status, "exit": self.exit, "expired": self.expired,
                **self.shown, "where": self.values}


def hosts(store, *, where: list[Where] = (), failed: bool = False, stale: float | None = None,
          expire_after: float | None = None, now: float | None = None) -> list[HostRow]:
    """Every host's newest report that passes the filters, by host name. `failed`: its last run did not end ok;
    `stale`: not seen for that many seconds; `expire_after`: hosts not seen for that long are marked expired."""
    now = now or time.time()
    e = store.engine
    exprs, params = [], []
    paths = [w.path for w in where if not _column(w)]
    for path in paths:
        sql, args = e.path_expr(list(path))
        exprs.append(sql)
        params.extend(args)
    conditions, cond_params = [], []
    if failed:
        conditions.append("status <> 'ok'")
    if stale is not None:
        conditions.append("last_seen < ?")
        cond_params.append(now - stale)
    sql = ("SELECT host, first_seen, last_seen, kind, status, exit, shown" + "".join(f", {x}" for x in exprs)
           + " FROM hosts WHERE report IS NOT NULL" + "".join(f" AND {c}" for c in conditions) + " ORDER BY host")
    found = []
    for row in store.rows(sql, (*params, *cond_params)):
        extracted = iter([e.value(raw) for raw in row[7:]])
        result = HostRow(row[0], row[1], row[2], row[3], row[4], row[5],
                         expire_after is not None and row[2] < now - expire_after, json.loads(row[6] or "{}"))
        for w in where:
            result.values[w.text] = getattr(result, w.path[0]) if _column(w) else next(extracted)
        if all(matches(result.values[w.text], w.op, w.value) for w in where):
            found.append(result)
    return found


def documents(store, names) -> dict[str, dict]:
    """The newest document of each named host (for the facts report of the hosts a question selected)."""
    wanted = set(names)
    return {host: store.engine.load(document) for host, document in
            store.rows("SELECT host, document FROM hosts WHERE report IS NOT NULL ORDER BY host") if host in wanted}


def history(store, host: str, *, since: float | None = None) -> list[dict]:
    """One host's rows, oldest first: when, what ran, how it ended, what changed from the row before."""
    e = store.engine
    exprs = [e.path_expr(list(path)) for path in SHOWN.values()]
    sql = ("SELECT at_s, kind, status, exit, fleet_version, changes" + "".join(f", {x[0]}" for x in exprs)
           + " FROM reports WHERE host = ?" + (" AND at_s >= ?" if since is not None else "") + " ORDER BY at_s, id")
    params = [arg for x in exprs for arg in x[1]] + [host] + ([since] if since is not None else [])
    rows = []
    for row in store.rows(sql, params):
        rows.append({"at": _iso(row[0]), "kind": row[1], "status": row[2], "exit": row[3], "fleet_version": row[4],
                     "changes": [{"path": p, "before": b, "after": a} for p, b, a in json.loads(row[5])],
                     **dict(zip(SHOWN, (e.value(raw) for raw in row[6:])))})
    return rows


def changed_since(store, since: float) -> list[dict]:
    """Per host with a stored change since `since`: how many rows, the newest, and each fact that changed (its
    value before the first of them, and after the last)."""
    from itertools import groupby

    found = []
    rows = store.rows("SELECT host, at_s, kind, status, changes FROM reports WHERE at_s >= ? ORDER BY host, at_s, id",
                      (since,))
    for host, group in groupby(rows, key=lambda row: row[0]):
        group = list(group)
        changes: dict[str, list] = {}
        for path, before, after in json.loads("[" + ",".join(row[4][1:-1] for row in group if row[4] != "[]") + "]"):
            seen = changes.setdefault(path, [before, after])
            seen[1] = after
        last = group[-1]
        found.append({"host": host, "reports": len(group), "last_at": _iso(last[1]), "kind": last[2],
                      "status": last[3], "first_report": group[0][4] == "[]" and _first_row(store, host, group[0][1]),
                      "changes": [{"path": p, "before": b, "after": a} for p, (b, a) in changes.items() if b != a]})
    return found


def _first_row(store, host: str, at: float) -> bool:
    return not store.rows("SELECT 1 FROM reports WHERE host = ? AND at_s < ? LIMIT 1", (host, at))


def parse_since(text: str, now: float | None = None) -> float:
    """'2026-11-20', '2026-11-20T12:00' (UTC unless it says) or a duration back from now ('7d', '12h')."""
    from fleet import parse

    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        try:
            return (now or time.time()) - parse.duration(text)
        except parse.Rejected:
            raise InputError(f"--since {text!r} is neither a date (2026-11-20, 2026-11-20T12:00) nor a duration "
                             "back from now (7d, 12h)") from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def parse_now(text: str) -> float:
    """--now: the time the questions are asked at, a date or time ('2026-11-29T12:00', UTC unless it says)."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--now {text!r} is not a date or time (2026-11-29, 2026-11-29T12:00:00+00:00)") from None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def _column(where: Where) -> bool:
    return len(where.path) == 1 and where.path[0] in COLUMNS


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")
