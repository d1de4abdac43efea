"""A report as the store takes it: the one check every way in goes through (the sinks, `fleet serve`,
`fleet collect`), so a report from a pod is refused or kept as data, never anything else.

    {"schema": 1, "report_id": "0f3c...", "host": "pod-a", "kind": "script", "at": "2026-11-28T23:05:00+00:00",
     "fleet_version": "0.1.0", "status": "ok" | "failed" | ..., "exit": 0, "changed": 2,
     "facts": {...}}       # the facts record (a controller run), or what a pod's start script knows (verify, driver)

Refused, each with one sentence: a field missing or of the wrong type, a key not listed here, a host name that
cannot name a facts file, facts that name another host (`facts.host`, `facts.verify.host`), a time that does not
parse or lies more than a day ahead, nesting deeper than MAX_DEPTH. Strings are kept exactly as sent: every
printer escapes them (terminal_safe, Rich's escape, html.escape), none runs or renders them.
"""

from __future__ import annotations

import math
import re
import time
from datetime import datetime, timezone

from fleet.jsontext import finite
from fleet.store import pod_health

SCHEMA_VERSION = 1
KINDS = ("apply", "facts", "verify", "health", "bootstrap", "script", "run")
STATUSES = ("ok", "failed", "unreachable", "refused", "interrupted", "changed", "pending")
FIELDS = {"schema", "report_id", "host", "kind", "at", "fleet_version", "status", "exit", "changed", "facts"}
MAX_BYTES = 512 * 1024       # a facts record is about 9 KB (2.3 KB gzipped); a verify record far less
MAX_DEPTH = 24
REPORT_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}\Z")
HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@:+-]{0,127}\Z")   # as fleet.record.store names facts files
FUTURE_SLACK = 86400


class Refused(ValueError):
    """A report the store will not take: str(exc) is the sentence to answer with."""


def check(report, *, now: float | None = None, known_finite: bool = False) -> dict:
    """The report with `at_s` (epoch seconds) added, or Refused. A pod's NaN or Infinity is stored as null (issue 49:
    no reader of the store, PostgreSQL's jsonb included, takes them). `known_finite`: the facts hold no NaN or Infinity
    already (the controller's own, from a report fleet.facts.scrub.scrubbed made): only their depth is walked, with
    the same refusal (~0.16 -> ~0.05 ms on a 30 KB record, each host at every run; issue 46)."""
    if not isinstance(report, dict):
        raise Refused(f"a report is a JSON object, not {type(report).__name__}")
    # in place: callers keep the object they handed in (the facts are made finite below, in their depth's walk)
    report.update(finite({key: value for key, value in report.items() if key != "facts"}))
    unknown = sorted(set(report) - FIELDS)
    if unknown:
        raise Refused(f"unknown field(s) {', '.join(map(repr, unknown[:5]))}; a report has only "
                      f"{', '.join(sorted(FIELDS))}")
    if report.get("schema") != SCHEMA_VERSION:
        raise Refused(f"schema must be {SCHEMA_VERSION} (this fleet's report format), not {report.get('schema')!r}")
    for name, pattern in (("report_id", REPORT_ID), ("host", HOST)):
        value = report.get(name)
        if not isinstance(value, str) or not pattern.match(value) or value.lower().endswith(".prev"):
            raise Refused(f"{name} {_short(value)} is not valid: letters, digits and _ - (a host also . @ : +), "
                          f"{'16 to 64' if name == 'report_id' else '1 to 128'} characters")
    if report.get("kind") not in KINDS:
        raise Refused(f"kind {_short(report.get('kind'))} is not one of {', '.join(KINDS)}")
    if report.get("status") not in STATUSES:
        raise Refused(f"status {_short(report.get('status'))} is not one of {', '.join(STATUSES)}")
    for name, least, most in (("exit", -1, 255), ("changed", 0, 999_999)):
        value = report.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= most:
            raise Refused(f"{name} must be a whole number from {least} to {most} or null, not {_short(value)}")
    version = report.get("fleet_version")
    if version is not None and (not isinstance(version, str) or len(version) > 64):
        raise Refused("fleet_version must be a string of at most 64 characters")
    facts = report.get("facts")
    if facts is None:
        facts = {}
    if not isinstance(facts, dict):
        raise Refused(f"facts must be a JSON object, not {type(facts).__name__}")
    if known_finite:
        _depth_within(facts)
        if "health_sections" in facts:   # judged below, in place: the caller's facts stay as they were
            facts = dict(facts)
    else:
        facts = _finite_within(facts)
    if "facts" in report:
        report["facts"] = facts
    for where, named in (("facts.host", facts.get("host")),
                         ("facts.verify.host", (facts.get("verify") or {}).get("host")
                          if isinstance(facts.get("verify"), dict) else None)):
        if named is not None and named != report["host"]:
            raise Refused(f"{where} names another host ({_short(named)}) than the report's host "
                          f"{report['host']!r}: a host reports for itself alone")
    try:
        facts = pod_health.judged(facts)   # a pod's health sections, judged as `fleet health` judges them
    except ValueError as exc:
        raise Refused(str(exc)) from None
    at_s = _time(report.get("at"))
    if at_s > (now or time.time()) + FUTURE_SLACK:
        raise Refused(f"at {_short(report.get('at'))} lies more than a day ahead of this server's clock")
    return {**report, "facts": facts, "at_s": at_s}


def envelope(*, report_id: str, host: str, kind: str, at: datetime, status: str, facts: dict | None,
             exit: int | None = None, changed: int | None = None) -> dict:
    """A report as the controller's own runs make it (the history sink)."""
    from fleet import __version__

    return {"schema": SCHEMA_VERSION, "report_id": report_id, "host": host, "kind": kind,
            "at": at.astimezone(timezone.utc).isoformat(), "fleet_version": __version__, "status": status,
            "exit": exit, "changed": changed, "facts": facts or {}}


def _time(value) -> float:
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise Refused(f"at {_short(value)} is not an ISO 8601 time (2026-11-28T23:05:00+00:00)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def _finite_within(value, level: int = 0):
    """The facts with every NaN and Infinity null (fleet.jsontext.finite), or Refused where a dict or list lies
    MAX_DEPTH levels down (the facts themselves are level 0): one walk for both."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dict, list, tuple)):
        if level >= MAX_DEPTH:
            raise Refused(f"facts nest deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):   # a text, a whole number or null inside: kept without a call (issue 46)
            return {key: item if item is None or type(item) in _KEPT else _finite_within(item, level + 1)
                    for key, item in value.items()}
        return [item if item is None or type(item) in _KEPT else _finite_within(item, level + 1) for item in value]
    return value


_KEPT = {str, bool, int}


def _depth_within(value, level: int = 0) -> None:
    """Refused where a dict or list lies MAX_DEPTH levels down, as _finite_within refuses it; nothing copied."""
    if level >= MAX_DEPTH:
        raise Refused(f"facts nest deeper than {MAX_DEPTH} levels")
    for item in value.values() if isinstance(value, dict) else value:
        if type(item) not in _FLAT and isinstance(item, (dict, list, tuple)):
            _depth_within(item, level + 1)


_FLAT = {str, int, bool, float, type(None)}


def _short(value) -> str:
    """A sent value quoted for an answer: repr (escapes shown as escapes), cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
