"""HistorySink is a fleet.record.sinks.Sink: each host's report of a run into the store; a store that cannot be
opened costs one line on stderr, never the run; `fleet facts` on a real (local) host leaves its report there."""

import json
import socket
import time

from fleet.record.sinks import Run, Sink
from fleet.store import Settings, open_store, query
from fleet.store.sink import HistorySink
from store_helpers import record
from tests_cli import fleet_facts


def test_each_hosts_report_of_a_run_goes_into_the_store(store_url):
    sink: Sink = HistorySink(Settings(store_url))
    run = Run("apply", None)
    sink.begin(run)
    sink.host(run, "pod-a", {"status": "ok", "record": record("pod-a"), "changes": ["torch: install"]})
    sink.host(run, "pod-b", {"status": "unreachable", "record": None})
    sink.host(run, "pod-a", {"status": "ok", "record": record("pod-a")})        # the same run, the same host: once
    sink.end(run, 1)
    with open_store(store_url) as store:
        rows = {row.host: (row.kind, row.status) for row in query.hosts(store)}
        assert rows == {"pod-a": ("apply", "ok"), "pod-b": ("apply", "unreachable")}
        assert store.rows("SELECT COUNT(*) FROM receipts")[0][0] == 2


def test_a_store_that_cannot_be_opened_is_one_warning_and_the_run_goes_on(tmp_path):
    from fleet.record.sinks import Sinks

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    sinks = Sinks([HistorySink(Settings(f"sqlite:///{blocker}/history.sqlite3"))])
    run = Run("facts", None)
    sinks.begin(run)
    for name in ("pod-a", "pod-b"):
        sinks.host(run, name, {"status": "ok", "record": record(name)})
    sinks.end(run, 0)
    assert sinks.failed == {}                      # never the run's failure
    (warning,) = sinks.warnings
    assert warning.startswith("history store sqlite:///") and "not reachable, this run is not kept there" in warning


def test_fleet_facts_on_a_real_host_keeps_its_report(tmp_path, monkeypatch, store_url):
    monkeypatch.setenv("FLEET_STORE", store_url)
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("hosts:\n  here: {connection: local}\n")
    code, out, err = fleet_facts(tmp_path, inventory, "--json")
    assert code == 0, err
    code, out, err = fleet_facts(tmp_path, inventory, "--where", "system.hostname == " + socket.gethostname(),
                                 "--json")
    (host,) = json.loads(out)["hosts"]
    assert (host["host"], host["kind"], host["status"]) == ("here", "facts", "ok")


def test_a_run_that_gathers_no_facts_keeps_the_hosts_last_facts(store_url):
    sink = HistorySink(Settings(store_url))
    first, health = Run("facts", None), Run("health", None)
    sink.host(first, "pod-a", {"status": "ok", "record": record("pod-a", driver="580.65.06")})
    sink.host(health, "pod-a", {"status": "failed", "record": None, "changed": 0})
    sink.end(health, 5)
    with open_store(store_url) as store:
        (row,) = query.hosts(store)
        assert (row.kind, row.status, row.shown["driver"]) == ("health", "failed", "580.65.06")


def test_the_sink_of_a_run_finds_the_inventorys_store(tmp_path, monkeypatch):
    from fleet.inventory import load_inventory
    from fleet.store.sink import sink_for

    monkeypatch.delenv("FLEET_STORE", raising=False)
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("store: sqlite:///db/h.sqlite3\nhosts:\n  here: {connection: local}\n")
    loaded = load_inventory(inventory, keys_must_exist=False)
    assert sink_for(Run("apply", inventory), inventory=loaded).settings.url == \
        f"sqlite:///{tmp_path / 'db' / 'h.sqlite3'}"
    assert sink_for(Run("bootstrap", None), facts_dir=tmp_path / "facts").settings.url == \
        f"sqlite:///{tmp_path / 'facts' / 'history.sqlite3'}"


def test_fleet_healths_verdict_lays_over_the_hosts_last_facts(store_url):
    sink = HistorySink(Settings(store_url))
    sink.host(Run("facts", None), "pod-a", {"status": "ok", "record": record("pod-a", driver="580.65.06")})
    sink.host(Run("health", None), "pod-a", {"status": "ok", "record": None, "verdict": "return",
                                             "reason": "GPU 0: row remap failed; return this pod"})
    sink.end(Run("health", None), 5)
    with open_store(store_url) as store:
        (row,) = query.hosts(store, where=[query.parse_where("health.verdict == return")])
        assert (row.kind, row.shown["health"], row.shown["driver"]) == ("health", "return", "580.65.06")
        (last,) = query.history(store, "pod-a")[1:]
        assert {"path": "health.verdict", "before": "healthy", "after": "return"} in last["changes"]


def test_the_store_keeps_the_record_scrubbed_as_the_facts_records_keep_it(store_url, tmp_path):
    """A secret a host printed into its facts (an env dump's token) is masked in the history store too: the sinks
    scrub each report once and every sink writes that (the store took the raw record before)."""
    from fleet.record.sinks import Sinks
    from fleet.record.store import FactsRecords

    secret = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmNoP"
    leaky = record("pod-a")
    leaky["env"] = {"LD_LIBRARY_PATH": f"/opt/x HF_TOKEN={secret}", "hook_installed": True}
    sinks = Sinks([FactsRecords(tmp_path / "facts"), HistorySink(Settings(store_url))])
    run = Run("facts", None)
    sinks.begin(run)
    sinks.host(run, "pod-a", {"status": "ok", "record": leaky})
    sinks.end(run, 0)
    assert not sinks.warnings
    assert secret not in (tmp_path / "facts" / "pod-a.json").read_text()
    with open_store(store_url) as store:
        (document,) = [row[0] for row in store.rows("SELECT document FROM reports WHERE host = 'pod-a'")]
    text = document if isinstance(document, str) else json.dumps(document)
    assert "HF_TOKEN=***" in text and secret not in text


def _nested(level: int, leaf=dict) -> dict:
    """Facts (level 0) whose deepest container, a `leaf()`, lies `level` levels down, dicts and lists in turn."""
    inner = leaf()
    for i in range(level - 1):
        inner = [inner] if i % 2 else {"d": inner}
    return {"x": inner}


def test_the_check_of_a_record_known_finite_walks_its_depth_only_with_the_same_refusal():
    """HistorySink hands the check facts a scrubbed report made finite (schema.check known_finite=True): only their depth
    is walked (issue 46), refused at the same level as the full walk; a pod's health text is judged on a copy."""
    import copy
    import time

    import pytest

    from fleet.store import schema
    from store_helpers import report

    now = time.time()
    for facts in (_nested(schema.MAX_DEPTH - 1), _nested(schema.MAX_DEPTH - 1, leaf=list), {"x": [[{"y": 1}]] * 3}):
        for finite in (False, True):
            sent = {k: v for k, v in report("pod-a", now, facts={}).items() if k != "at_s"}
            checked = schema.check({**sent, "facts": copy.deepcopy(facts)}, now=now, known_finite=finite)
            assert checked["facts"] == facts
    for facts in (_nested(schema.MAX_DEPTH), _nested(schema.MAX_DEPTH, leaf=list),
                  {"a": 1, **_nested(schema.MAX_DEPTH + 5)}):
        for finite in (False, True):
            sent = {k: v for k, v in report("pod-a", now, facts={}).items() if k != "at_s"}
            with pytest.raises(schema.Refused, match=f"nest deeper than {schema.MAX_DEPTH}"):
                schema.check({**sent, "facts": copy.deepcopy(facts)}, now=now, known_finite=finite)
    sent = {k: v for k, v in report("pod-a", now, facts={}).items() if k != "at_s"}
    facts = {"health_sections": "not framed"}
    checked = schema.check({**sent, "facts": facts}, now=now, known_finite=True)
    assert facts == {"health_sections": "not framed"} and checked["facts"]["health"]["verdict"]


def test_a_controller_record_nested_too_deep_is_one_warning_and_not_kept(store_url):
    from fleet.record.sinks import Sinks
    from fleet.store import schema

    sinks = Sinks([HistorySink(Settings(store_url))])
    run = Run("facts", None)
    sinks.begin(run)
    sinks.host(run, "pod-a", {"status": "ok", "record": {**record("pod-a"), **_nested(schema.MAX_DEPTH)}})
    sinks.host(run, "pod-b", {"status": "ok", "record": record("pod-b")})
    sinks.end(run, 0)
    assert sinks.failed == {}
    (warning,) = sinks.warnings
    assert "pod-a's report not kept" in warning and f"nest deeper than {schema.MAX_DEPTH}" in warning
    with open_store(store_url) as store:
        assert [row.host for row in query.hosts(store)] == ["pod-b"]


def test_a_run_of_more_hosts_than_the_server_takes_clients_keeps_every_hosts_report(pg_cluster):
    """A run's hosts report at once, a thread each (all of them at once by default), and PostgreSQL refuses a client
    past its max_connections (100 by default, for every client of the server): one connection per host thread lost
    every report past the limit (300 replayed hosts, issue 46). Here the store's role may hold no more connections
    than a store opens (fleet.store.POSTGRES_CONNECTIONS), and 40 hosts report at once through a run's sinks: every
    report is kept and nothing is said of the store; the server itself is asked."""
    import threading

    import psycopg

    from fleet.record.sinks import Sinks
    from fleet.store import POSTGRES_CONNECTIONS

    with psycopg.connect(pg_cluster.url(), autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "limited"')
        admin.execute("DROP ROLE IF EXISTS fleet_limited")
        admin.execute(f"CREATE ROLE fleet_limited LOGIN CONNECTION LIMIT {POSTGRES_CONNECTIONS}")
        admin.execute('CREATE DATABASE "limited" OWNER fleet_limited')
    url = pg_cluster.url("limited").replace("postgres@", "fleet_limited@", 1)
    sinks = Sinks([HistorySink(Settings(url))])
    run = Run("apply", None)
    sinks.begin(run)
    names = [f"pod-{i:02d}" for i in range(40)]
    start = threading.Barrier(len(names))

    def host(name: str) -> None:
        start.wait(60)
        sinks.host(run, name, {"status": "ok", "record": record(name), "changed": 0})

    threads = [threading.Thread(target=host, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    sinks.end(run, 0)
    assert sinks.warnings == [] and sinks.failed == {}
    with psycopg.connect(pg_cluster.url("limited"), autocommit=True) as reader:
        kept = {host for (host,) in reader.execute("SELECT host FROM reports WHERE kind = 'apply'")}
        assert kept == set(names)
        # the run's end closed every connection it opened (a server process ends just after its client closes)
        deadline = time.monotonic() + 30
        while reader.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = 'fleet_limited'").fetchone()[0]:
            assert time.monotonic() < deadline, "the run's connections were left open"
            time.sleep(0.05)
