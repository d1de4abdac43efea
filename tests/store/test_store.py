"""The history store on both engines: append-only, one row per change, every report id counted once, the
newest report per host what queries see, history purged after its retention."""

import pytest

from fleet.store import open_store, query
from store_helpers import record, report

T0 = 1_790_000_000.0


@pytest.fixture
def store(store_url):
    with open_store(store_url) as opened:
        yield opened


def count(store, table="reports", host=None):
    sql = f"SELECT COUNT(*) FROM {table}" + (" WHERE host = ?" if host else "")
    return store.rows(sql, (host,) if host else ())[0][0]


def test_a_report_that_changes_nothing_adds_no_row_but_moves_last_seen(store):
    assert store.add(report("pod-a", T0)) == "stored"
    assert store.add(report("pod-a", T0 + 60)) == "unchanged"
    assert count(store) == 1
    (row,) = query.hosts(store, now=T0 + 120)
    assert (row.first_seen, row.last_seen) == (T0, T0 + 60)


def test_only_what_drift_ignores_may_differ_for_a_report_to_count_as_unchanged(store):
    first = record("pod-a")
    moved = record("pod-a", gathered_at="2030-01-01T00:00:00+00:00")
    moved["system"] = {**first["system"], "disk_free_gb": 1.5}      # a reading that moves on its own (fleet/facts/readings.py)
    assert store.add(report("pod-a", T0, facts=first)) == "stored"
    assert store.add(report("pod-a", T0 + 1, facts=moved)) == "unchanged"
    assert store.add(report("pod-a", T0 + 2, facts=record("pod-a", driver="580.65.06"))) == "stored"
    assert store.add(report("pod-a", T0 + 3, facts=record("pod-a", driver="580.65.06"), status="failed")) == "stored"
    assert count(store) == 3


def test_a_report_sent_twice_counts_once(store):
    sent = report("pod-a", T0, facts=record("pod-a", driver="580.65.06"))
    assert store.add(sent) == "stored"
    assert store.add(sent) == "duplicate"
    assert store.add(report("pod-a", T0 + 5)) == "stored"
    assert store.add(sent) == "duplicate"          # still a duplicate after a newer report
    assert count(store) == 2
    assert count(store, "receipts") == 2


def test_history_keeps_every_change_with_what_changed(store):
    store.add(report("pod-a", T0))
    store.add(report("pod-a", T0 + 10, facts=record("pod-a", driver="580.65.06")))
    store.add(report("pod-a", T0 + 20, facts=record("pod-a", driver="580.65.06", verdict="degraded")))
    rows = query.history(store, "pod-a")
    assert [r["driver"] for r in rows] == ["570.133.20", "580.65.06", "580.65.06"]
    assert rows[0]["changes"] == []
    assert {"path": "driver.version", "before": "570.133.20", "after": "580.65.06"} in rows[1]["changes"]
    assert sorted(c["path"] for c in rows[2]["changes"]) == ["health.reason", "health.verdict"]
    assert [r["at"] for r in query.history(store, "pod-a", since=T0 + 10)] == [rows[1]["at"], rows[2]["at"]]


def test_a_report_that_arrives_late_joins_the_history_but_not_the_latest(store):
    store.add(report("pod-a", T0 + 100, facts=record("pod-a", driver="580.159.04")))
    assert store.add(report("pod-a", T0, facts=record("pod-a", driver="570.133.20"))) == "stored"
    (row,) = query.hosts(store, now=T0 + 100)
    assert row.shown["driver"] == "580.159.04" and row.first_seen == T0 and row.last_seen == T0 + 100
    assert [r["driver"] for r in query.history(store, "pod-a")] == ["570.133.20", "580.159.04"]


def test_an_unreachable_host_keeps_its_facts_and_its_last_seen(store):
    store.add(report("pod-a", T0, facts=record("pod-a", driver="580.65.06")))
    assert store.add(report("pod-a", T0 + 50, status="unreachable", facts={})) == "stored"
    (row,) = query.hosts(store, now=T0 + 60)
    assert (row.status, row.shown["driver"], row.last_seen) == ("unreachable", "580.65.06", T0)
    assert [r.host for r in query.hosts(store, failed=True, now=T0 + 60)] == ["pod-a"]


def test_filters_failed_stale_and_expired(store):
    store.add(report("pod-570", T0, facts=record("pod-570", driver="570.133.20")))
    store.add(report("pod-580", T0 + 3000, facts=record("pod-580", driver="580.65.06", verdict="degraded")))
    store.add(report("pod-new", T0 + 3000, facts=record("pod-new", driver="580.159.04"), status="failed"))
    now = T0 + 3600

    def names(**kw):
        return [row.host for row in query.hosts(store, now=now, **kw)]

    where = query.parse_where
    assert names(where=[where("driver.version < 580")]) == ["pod-570"]
    assert names(where=[where("driver.version < 580.159.04")]) == ["pod-570", "pod-580"]
    assert names(where=[where("driver.version >= 580"), where("health.verdict != healthy")]) == ["pod-580"]
    assert names(where=[where("status == failed")]) == ["pod-new"]
    assert names(where=[where("gpus.0.name == 'NVIDIA H100 80GB HBM3'")]) == ["pod-570", "pod-580", "pod-new"]
    assert names(where=[where("jetson == null")]) == ["pod-570", "pod-580", "pod-new"]
    assert names(failed=True) == ["pod-new"]
    assert names(stale=1800) == ["pod-570"]
    expired = {row.host: row.expired for row in query.hosts(store, now=now, expire_after=3000)}
    assert expired == {"pod-570": True, "pod-580": False, "pod-new": False}


def test_changed_since_names_each_fact_that_moved(store):
    store.add(report("pod-a", T0))
    store.add(report("pod-b", T0))
    store.add(report("pod-a", T0 + 100, facts=record("pod-a", driver="580.65.06")))
    store.add(report("pod-a", T0 + 200, facts=record("pod-a", driver="580.159.04")))
    (entry,) = query.changed_since(store, T0 + 50)
    assert entry["host"] == "pod-a" and entry["reports"] == 2 and entry["first_report"] is False
    assert entry["changes"] == [{"path": "driver.version", "before": "570.133.20", "after": "580.159.04"}]
    assert {e["host"]: e["first_report"] for e in query.changed_since(store, T0)} == {"pod-a": True, "pod-b": True}


def test_history_older_than_the_retention_is_purged_but_a_hosts_newest_row_stays(store):
    store.add(report("pod-a", T0, facts=record("pod-a", driver="570.133.20")))
    store.add(report("pod-a", T0 + 10, facts=record("pod-a", driver="580.65.06")))
    store.add(report("gone", T0, facts=record("gone")))
    store.add(report("pod-a", T0 + 5000, facts=record("pod-a", driver="580.65.06")))   # unchanged: seen again
    assert store.purge(1000, now=T0 + 5000) == 2        # pod-a's 570 row and the row of the host gone
    assert [r["driver"] for r in query.history(store, "pod-a")] == ["580.65.06"]
    assert [row.host for row in query.hosts(store, now=T0 + 5000)] == ["pod-a"]
    assert count(store, "receipts") == 1


def test_reopening_the_store_keeps_everything(store_url):
    with open_store(store_url) as first:
        first.add(report("pod-a", T0))
    with open_store(store_url) as again:
        assert [row.host for row in query.hosts(again, now=T0)] == ["pod-a"]
        assert again.add(report("pod-a", T0 + 1)) == "unchanged"


def test_a_postgresql_that_restarts_is_connected_to_again(pg_cluster):
    import psycopg

    url = pg_cluster.database("restarts")
    with open_store(url) as store:
        store.add(report("pod-a", T0))
        with psycopg.connect(pg_cluster.url(), autocommit=True) as admin:   # the server ends every session
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'restarts'")
        with pytest.raises(psycopg.OperationalError):
            store.add(report("pod-a", T0 + 1, facts=record("pod-a", driver="580.65.06")))
        assert store.add(report("pod-a", T0 + 2, facts=record("pod-a", driver="580.65.06"))) == "stored"


def test_a_pods_report_with_nan_is_stored_as_null_and_a_host_with_a_newline_refused():
    """Issue 49 at the store's door (fleet serve, fleet collect): a pod's NaN/Infinity becomes null before any
    reader sees it; `host: "pod-a\\n"` is refused ($ matched before a final newline)."""
    import json
    import math
    import time as _time

    import pytest

    from fleet.store import schema
    from store_helpers import record, report

    now = _time.time()
    checked = report("pod-a", now, facts={**record("pod-a"), "verify": {"passed": True, "ms": math.nan,
                                                                         "tflops": [math.inf, 1.5]}})
    sent = {k: v for k, v in checked.items() if k != "at_s"}
    assert checked["facts"]["verify"] == {"passed": True, "ms": None, "tflops": [None, 1.5]}
    json.dumps(checked, allow_nan=False)
    with pytest.raises(schema.Refused, match="host"):
        schema.check({**sent, "host": "pod-a\n"}, now=now)
