"""The run's sinks (fleet/record/sinks.py): each host's report goes to every sink once; a sink that fails is one
line and the run goes on; the facts records and the run log are sinks."""

from __future__ import annotations

import json
import os
import stat

from fleet.connection.parallel import Outcome
from fleet.record import runlog, store
from fleet.record.sinks import Run, Sinks, for_run, report_of


class Counting:
    def __init__(self):
        self.calls = []

    def begin(self, run):
        self.calls.append(("begin", None))

    def host(self, run, name, report):
        self.calls.append(("host", name))

    def end(self, run, status):
        self.calls.append(("end", status))


class Down:
    def begin(self, run):
        raise RuntimeError("history store down")

    def host(self, run, name, report):
        raise OSError("could not reach the history store at db:5432; start it or drop it from the run")

    def end(self, run, status):
        pass


def test_every_sink_is_told_each_host_once_and_one_that_is_down_costs_nothing(tmp_path):
    run, counting = Run("facts", tmp_path / "inv.yaml"), Counting()
    sinks = Sinks([Down(), counting])
    sinks.begin(run)
    for name in ("a", "b"):
        sinks.host(run, name, report_of(Outcome(name, value={}), {}))
    sinks.end(run, 0)
    assert counting.calls == [("begin", None), ("host", "a"), ("host", "b"), ("end", 0)]
    assert sinks.told == {"a", "b"} and not sinks.failed
    assert sinks.warnings == ["Down: RuntimeError: history store down",
                              *["could not reach the history store at db:5432; start it or drop it from the run"] * 2]


def test_the_facts_records_are_a_sink_and_a_record_it_cannot_write_fails_that_host(tmp_path):
    run = Run("facts", None)
    records = store.FactsRecords(tmp_path / "facts")
    records.host(run, "pod-a", {"status": "ok", "record": {"host": "pod-a", "system": {"hostname": "a"}}})
    records.host(run, "pod-b", {"status": "unreachable", "record": None})      # its last record stays as it was
    assert store.read(tmp_path / "facts", "pod-a")["system"] == {"hostname": "a"}
    assert not (tmp_path / "facts" / "pod-b.json").exists()

    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "pod-a.json").mkdir()           # a directory where the record goes: the write fails
    sinks = Sinks([store.FactsRecords(tmp_path / "ro")])
    sinks.host(run, "pod-a", {"status": "ok", "record": {"host": "pod-a"}})
    assert list(sinks.failed) == ["pod-a"] and "could not write its facts record" in sinks.warnings[0]
    assert sinks.failed["pod-a"].startswith("pod-a: could not write its facts record")


def test_the_run_log_is_a_sink_head_first_then_each_host_without_its_record(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    run = Run("health", tmp_path / "inv.yaml", argv=("fleet", "health", "inv.yaml"))
    log = runlog.RunLog()
    sinks = Sinks([log])
    sinks.begin(run)
    sinks.host(run, "pod-a", report_of(Outcome("pod-a", value=1, remote_commands=1, seconds=0.25),
                                       {"verdict": "healthy", "token": "hf_abcdefghijklmnopqrstuvwxyz0123"},
                                       record={"host": "pod-a"}))
    sinks.host(run, "pod-b", report_of(Outcome("pod-b", error="pod-b: unreachable", unreachable=True),
                                       {"error": "pod-b: unreachable"}))
    sinks.end(run, 1)
    assert log.written is not None and log.written.parent == runlog.runs_dir()
    assert log.written.name.endswith("-health.jsonl")
    head, a, b = [json.loads(line) for line in log.written.read_text().splitlines()]
    assert head["argv"] == ["fleet", "health", "inv.yaml"] and head["check"] is False
    assert a["host"] == "pod-a" and a["status"] == "ok" and a["verdict"] == "healthy" and "record" not in a
    assert a["stats"] == {"remote_commands": 1, "seconds": 0.25}
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in log.written.read_text()      # secrets masked
    assert b["host"] == "pod-b" and b["status"] == "unreachable"
    assert stat.S_IMODE(os.stat(log.written).st_mode) == 0o600


def test_for_run_keeps_facts_records_only_where_the_run_gathers_facts(tmp_path):
    run = Run("apply", tmp_path / "inv.yaml", facts_dir=tmp_path / "facts")
    kinds = [type(sink).__name__ for sink in for_run(run)]
    assert kinds == ["FactsRecords", "RunLog", "HistorySink"]       # every run's reports into the history store
    assert [type(sink).__name__ for sink in for_run(Run("health", None))] == ["RunLog", "HistorySink"]
    assert [type(sink).__name__ for sink in for_run(Run("apply", None, check=True))] == ["RunLog"]   # --check


def test_report_of_says_each_host_s_status():
    assert report_of(Outcome("a", value={}), {})["status"] == "ok"
    assert report_of(Outcome("a", value={}), {"failed": 1})["status"] == "failed"
    assert report_of(Outcome("a", error="x", unreachable=True), {})["status"] == "unreachable"
    assert report_of(Outcome("a", error="x", refused=True), {})["status"] == "refused"
    assert report_of(Outcome("a", error="x", interrupted=True), {})["status"] == "interrupted"


def test_the_run_log_says_a_shared_text_once_and_reads_back_whole(tmp_path):
    """A reason every host's task repeats (env_hooks' 3 KB of them, issue 46) is written once, in the head; each
    place that said it holds a reference, and runlog.read gives every line back as the hosts said it."""
    reason = "the hook sources /etc/fleet/env.sh " + "because every shell kind must see it; " * 80
    run, path = Run("apply", tmp_path / "inv.yaml", argv=("fleet", "apply", "inv.yaml")), tmp_path / "run.jsonl"
    log = runlog.RunLog(path)
    sinks = Sinks([log])
    sinks.begin(run)
    docs = {name: {"tasks": [{"role": "env_hooks", "status": "ok", "reason": reason, "short": "ok"}] * 3}
            for name in ("pod-a", "pod-b")}
    for name, doc in docs.items():
        sinks.host(run, name, report_of(Outcome(name, value=1), doc))
    sinks.end(run, 0)
    text = path.read_text()
    assert text.count(reason) == 1 and len(text) < len(reason) + 2000
    head, *hosts = runlog.read(path)
    assert head["format"] == 2 and "said" not in head
    assert {h["host"]: h["tasks"] for h in hosts} == {name: doc["tasks"] for name, doc in docs.items()}
    raw = [json.loads(line) for line in text.splitlines()]
    assert raw[1]["tasks"][0]["reason"] == {"said": "1"} and raw[0]["said"] == {"1": reason}
