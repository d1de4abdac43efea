"""`fleet facts INVENTORY --where/--failed/--stale/--history/--since`, on a terminal and in --json, over a store
the test fills (both engines); no host is contacted (the inventory's host is a port nothing answers on)."""

import io
import json
import time

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.store import open_store
from store_helpers import record, report

NOW = time.time()


@pytest.fixture
def filled(tmp_path, store_url, counting_port, monkeypatch):
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"store: {{expire_after: 2h}}\nhosts:\n  pod-570: {{address: 127.0.0.1, port: {counting_port.port}}}\n")
    monkeypatch.setenv("FLEET_STORE", store_url)
    with open_store(store_url) as store:
        store.add(report("pod-570", NOW - 3 * 3600, facts=record("pod-570", driver="570.133.20")))
        store.add(report("pod-580", NOW - 600, facts=record("pod-580", driver="580.65.06", verdict="degraded")))
        store.add(report("pod-580", NOW - 60, facts=record("pod-580", driver="580.159.04", verdict="degraded"),
                         status="failed", kind="apply"))
    yield inv
    assert not counting_port.contacted()


def fleet(tmp_path, *argv, width=200):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=width, color_system=None, soft_wrap=True,
                                      force_terminal=True),
                      err_console=Console(file=err, width=200, color_system=None, soft_wrap=True), cwd=tmp_path)
    code = main(["facts", *map(str, argv)], env)
    return code, out.getvalue(), err.getvalue()


def test_where_in_json_and_on_a_terminal(tmp_path, filled):
    code, out, _ = fleet(tmp_path, filled, "--where", "driver.version < 580.159.04", "--json")
    assert code == 0
    doc = json.loads(out)
    assert [(h["host"], h["driver"], h["expired"]) for h in doc["hosts"]] == [("pod-570", "570.133.20", True)]
    code, out, _ = fleet(tmp_path, filled, "--where", "driver.version >= 580", "--where", "health.verdict != healthy")
    assert code == 0 and "pod-580" in out and "pod-570" not in out and "580.159.04" in out and "degraded" in out


def test_failed_stale_and_expired(tmp_path, filled):
    doc = json.loads(fleet(tmp_path, filled, "--failed", "--json")[1])
    assert [(h["host"], h["status"], h["kind"]) for h in doc["hosts"]] == [("pod-580", "failed", "apply")]
    doc = json.loads(fleet(tmp_path, filled, "--stale", "1h", "--json")[1])
    assert [h["host"] for h in doc["hosts"]] == ["pod-570"]
    code, out, _ = fleet(tmp_path, filled, "--stale", "1h")
    assert "expired" in out          # not seen for the inventory's expire_after (2h)


def test_asked_as_of_a_later_time_a_host_seen_now_shows_expired(tmp_path, filled):
    """--now moves the questions' clock (no sleep): pod-580, seen a minute ago, is neither stale nor expired now;
    asked as of three hours ahead it is both, as pod-570 is now; a --now that is no time is bad input."""
    from datetime import datetime, timezone

    doc = json.loads(fleet(tmp_path, filled, "--stale", "1h", "--json")[1])
    assert [(h["host"], h["expired"]) for h in doc["hosts"]] == [("pod-570", True)]
    later = datetime.fromtimestamp(NOW + 3 * 3600, timezone.utc).isoformat()
    doc = json.loads(fleet(tmp_path, filled, "--stale", "1h", "--now", later, "--json")[1])
    assert sorted((h["host"], h["expired"]) for h in doc["hosts"]) == [("pod-570", True), ("pod-580", True)]
    code, _, err = fleet(tmp_path, filled, "--stale", "1h", "--now", "tomorrow")
    assert code == 2 and "--now 'tomorrow' is not a date or time" in err


def test_history_and_since(tmp_path, filled):
    doc = json.loads(fleet(tmp_path, filled, "--history", "pod-580", "--json")[1])
    assert [r["driver"] for r in doc["history"]] == ["580.65.06", "580.159.04"]
    assert {"path": "driver.version", "before": "580.65.06", "after": "580.159.04"} in doc["history"][1]["changes"]
    code, out, _ = fleet(tmp_path, filled, "--history", "pod-580")
    assert code == 0 and "driver.version: 580.65.06 -> 580.159.04" in out
    doc = json.loads(fleet(tmp_path, filled, "--since", "2h", "--json")[1])
    assert [(e["host"], e["reports"]) for e in doc["changed"]] == [("pod-580", 2)]


def test_a_bad_filter_is_bad_input(tmp_path, filled):
    code, _, err = fleet(tmp_path, filled, "--where", "driver.version ~ 580")
    assert code == 2 and "--where 'driver.version ~ 580' is not a filter" in err


def test_the_facts_report_of_the_hosts_a_question_selects(tmp_path, filled):
    code, out, err = fleet(tmp_path, filled, "--where", "driver.version >= 580", "--format", "html", "-o", "q.html")
    assert code == 0, err
    page = (tmp_path / "q.html").read_text()
    assert "<title>fleet facts: pod-580</title>" in page and "580.159.04" in page
    code, out, _ = fleet(tmp_path, filled, "--stale", "1h", "--format", "csv")
    header = out.splitlines()[0]
    assert code == 0 and "pod-570" in header and "pod-580" not in header and "570.133.20" in out
