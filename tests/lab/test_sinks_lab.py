"""Every command that reaches hosts leaves a run record (fleet/record/sinks.py): fleet facts, health and verify hand
each host's report to every sink of the run once, and the run log holds a line for each host. What the records say
of a host is held against the host itself."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.record import runlog, sinks

from helpers import ok, sh

PODS = ["pod-570", "pod-580"]


class Counting:
    """A sink of the test's own: what it was told, in order."""

    def __init__(self):
        self.calls: list[tuple] = []

    def begin(self, run):
        self.calls.append(("begin", run.command))

    def host(self, run, name, report):
        self.calls.append(("host", name, report["status"]))

    def end(self, run, status):
        self.calls.append(("end", int(status)))


@pytest.fixture
def counting(monkeypatch):
    made: list[Counting] = []
    real = sinks.for_run

    def for_run(run, **kw):
        made.append(Counting())
        return [*real(run, **kw), made[-1]]

    monkeypatch.setattr(sinks, "for_run", for_run)
    return made


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True)))
    return code, out.getvalue(), err.getvalue()


def logs(home) -> list:
    return sorted((home / ".local" / "state" / "fleet" / "runs").glob("*.jsonl"))


def told_once(sink: Counting, command: str, code: int) -> None:
    assert sink.calls[0] == ("begin", command) and sink.calls[-1] == ("end", code)
    assert sorted(call[1] for call in sink.calls[1:-1]) == PODS, sink.calls      # each host once


def test_fleet_facts_records_each_host_and_leaves_a_run_record(lab, isolated_home, counting):
    lab.reset(PODS)
    inv = str(lab.inventory_path)
    code, out, err = fleet("facts", inv, "--limit", ",".join(PODS), "--json")
    assert code == 0, err
    told_once(counting[-1], "facts", 0)
    [log] = logs(isolated_home)
    head, *hosts = runlog.read(log)   # texts said by reference given back
    assert head["argv"][:2] == ["fleet", "facts"] and sorted(h["host"] for h in hosts) == PODS
    for pod in PODS:   # the record the facts sink kept says what the host itself says
        record = json.loads((lab.inventory.facts_dir / f"{pod}.json").read_text())
        assert record["system"]["hostname"] == ok(lab, pod, "hostname").strip()
        assert record["system"]["kernel"] == ok(lab, pod, "uname -r").strip()


def test_fleet_health_leaves_a_run_record_and_no_facts_record(lab, isolated_home, counting):
    inv = str(lab.inventory_path)
    before = {pod: (lab.inventory.facts_dir / f"{pod}.json").read_bytes()
              if (lab.inventory.facts_dir / f"{pod}.json").exists() else None for pod in PODS}
    code, out, err = fleet("health", inv, "--limit", ",".join(PODS), "--json")
    told_once(counting[-1], "health", code)
    doc = json.loads(out)
    [log] = logs(isolated_home)
    head, *hosts = runlog.read(log)   # texts said by reference given back
    assert sorted(h["host"] for h in hosts) == PODS
    for line in hosts:   # the log holds the verdict the command printed, and the GPUs the host's nvidia-smi lists
        assert line["verdict"] == doc["hosts"][line["host"]]["verdict"]
        listed = ok(lab, line["host"], "nvidia-smi -L").count("GPU ")
        assert len(line["facts"]["health"]["gpus"]) == listed
    assert before == {pod: (lab.inventory.facts_dir / f"{pod}.json").read_bytes()
                      if (lab.inventory.facts_dir / f"{pod}.json").exists() else None for pod in PODS}


def test_fleet_verify_leaves_a_run_record_for_each_host(lab, isolated_home, counting):
    lab.reset(PODS)
    inv = str(lab.inventory_path)
    code, out, err = fleet("verify", inv, "--limit", ",".join(PODS))
    told_once(counting[-1], "verify", code)
    [log] = logs(isolated_home)
    assert log.name.endswith("-verify.jsonl") and f"run log: {log}" in err
    head, *hosts = runlog.read(log)   # texts said by reference given back
    assert head["argv"][:2] == ["fleet", "verify"] and sorted(h["host"] for h in hosts) == PODS
    for line in hosts:   # a fresh pod has no venv: verify failed, as a plain shell there finds
        task = next(t for t in line["tasks"] if t["role"] == "verify")
        assert line["status"] == "failed" and task["status"] == "failed" and line["verify"] == "failed", line
        assert "/opt/fleet/venv/bin/python" in task["reason"]
        assert sh(lab, line["host"], "/opt/fleet/venv/bin/python -c pass").exit == 127
    assert code == 1
