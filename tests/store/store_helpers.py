"""Reports shaped like fleet's, for the store's tests and bench/store.py."""

import copy
import json
import uuid
from datetime import datetime, timezone
from pathlib import Path

from fleet.store import schema

RECORD = json.loads((Path(__file__).parents[1] / "data" / "records" / "h100-pod-570.json").read_text())


def record(host: str, driver: str = "570.133.20", verdict: str = "healthy", **changes) -> dict:
    facts = copy.deepcopy(RECORD)
    facts["host"] = host
    facts["driver"]["version"] = driver
    facts["health"] = {"verdict": verdict, "reason": f"{verdict} by the test"}
    facts.update(changes)
    return facts


def report(host: str, at: float, *, status: str = "ok", kind: str = "facts", facts: dict | None = None,
           report_id: str | None = None, **extra) -> dict:
    sent = schema.envelope(report_id=report_id or uuid.uuid4().hex, host=host, kind=kind,
                           at=datetime.fromtimestamp(at, timezone.utc), status=status,
                           facts=record(host) if facts is None else facts, **extra)
    return schema.check(sent, now=at)
