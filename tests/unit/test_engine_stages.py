"""The engine's stages as values: plan() of an Observed, report() from values, observe() leaving what it was
given as it was, and one decide-and-render per probe. Real roles rendered from real captured facts records;
the probes run through the local connection on roles that touch only tmp_path."""

from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import json
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from types import MappingProxyType

import pytest

from fleet import remote, sections
from fleet.connection import LocalConnection
from fleet.engine import (HostReport, Observed, Setup, converge, decide_tasks, judge, last_facts,
                          observe, plan, report)
from fleet.engine.decided import READINGS, reads_readings, without_readings
from fleet.engine.observe import read_check
from fleet.engine.plan import confirm
from fleet.resources.base import Seen
from fleet.inventory import Host
from fleet.resources.base import CheckResult
from fleet.roles import load_role, load_roles, roles_dirs

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"

ROLE = """\
description: writes only under {root}
tasks:
  - name: in state
    directory: {{path: "{root}/a"}}
  - name: out of state
    file: {{path: "{root}/f.txt", content: "new\\n"}}
  - name: cannot check
    directory: {{path: "{root}/c"}}
  - name: not here
    directory: {{path: "{root}/never"}}
    when: "false"
  - name: the check
    assert: {{script: "true", msg: all good}}
"""


@pytest.fixture
def role(tmp_path):
    path = tmp_path / "roles" / "demo" / "role.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(ROLE.format(root=tmp_path / "host"))
    return load_role(path)


def record(name: str = "cpu-only") -> dict:
    return json.loads((RECORDS / f"{name}.json").read_text())


def observed_with(role, checks: dict) -> Observed:
    facts = record()
    decided = decide_tasks([role], Host("h", address="192.0.2.1"), facts)
    return Observed("h", facts, decided, MappingProxyType(checks))


ANSWERS = {"demo.0": CheckResult(True, "exists"),
           "demo.1": CheckResult(False, "differs", diff="old\n"),
           "demo.2": CheckResult(False, "check did not run", error="no answer"),
           "demo.4": CheckResult(True, "passed")}


def test_plan_of_an_observed_host_says_what_each_task_is_and_what_to_apply(role):
    planned = plan(observed_with(role, ANSWERS))
    assert [(e.task, e.status) for e in planned.entries] == [
        ("in state", "ok"), ("out of state", "changed"), ("cannot check", "failed"), ("not here", "skipped")]
    by_name = {e.task: e for e in planned.entries}
    assert by_name["cannot check"].reason == "check failed: no answer"
    assert by_name["not here"].reason == "condition is false: false"
    assert "-old\n+new\n" in by_name["out of state"].diff
    assert [t.id for t in planned.to_apply] == ["demo.1"]     # the assert is judged, never applied
    with pytest.raises(dataclasses.FrozenInstanceError):
        planned.to_apply = ()


def test_judge_and_report_are_built_from_the_values(role):
    observed = observed_with(role, {**ANSWERS, "demo.4": CheckResult(False, "not yet")})
    setup = Setup([role], facts_dir=Path("unused"), check_mode=True)
    judged = judge(observed, setup.check_mode)    # nothing pending: apply would judge it on this state, and fail
    assert [(e.task, e.status, e.reason) for e in judged.entries] == [("the check", "failed", "would fail: not yet")]
    pending = judge(observed, setup.check_mode, pending=1)   # apply judges it only after the planned change,
    # and counts it "ok" when it passes then: the plan counts it so (issue 25), saying what it says now
    assert [(e.status, e.reason) for e in pending.entries] == [("ok", "judged after the planned changes (1); "
                                                                "now: not yet")]
    host = Host("h", address="192.0.2.1")
    built = report(host, setup, observed, plan(observed).entries + pending.entries, phases={"probe": 0.5})
    assert isinstance(built, HostReport) and built.failed          # the check that could not run
    doc = built.to_json()
    assert (doc["ok"], doc["changed"], doc["failed"], doc["skipped"], doc["check"]) == (2, 1, 1, 1, True)
    assert doc["phases"] == {"probe": 0.5} and doc["reasons"] == observed.decisions_json["reasons"]
    refused = report(host, setup, observed, refuse="no driver")
    assert refused.to_json()["failed"] == 1 and refused.error == "refused: no driver"
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.error = "changed later"


def test_a_reused_verify_is_folded_into_new_facts_never_into_the_given_ones():
    roles = load_roles(None, roles_dirs())
    decided = decide_tasks(roles, Host("h", address="192.0.2.1"), record("h100-pod-580-compat"))
    verify = next(t for t in decided.tasks if t.id == "verify.0")
    facts = {"verify": {"passed": True, "summary": "verify passed: x", "at": "2026-11-20T10:00:00+00:00"}}
    before = copy.deepcopy(facts)
    sec = sections.Section("check.verify.0", 0, "@@fleet:fingerprint abc@@\n@@fleet:verify-reused@@")
    result, fold = read_check(verify, sec, Seen(facts, 86400.0, None))
    folded = fold["verify"]
    assert result.in_state and result.reason == "verify passed: x"
    assert folded["reused"] is True and folded["reason"].startswith("reused: nothing it proved has changed")
    assert facts == before


def local_demo(tmp_path):
    root = tmp_path / "host"
    root.mkdir(exist_ok=True)
    path = tmp_path / "roles" / "local" / "role.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(f"""\
        tasks:
          - name: a file
            file: {{path: "{root}/env.sh", content: "export A=1\\n"}}
        """))
    host = Host("here", connection="local")
    return load_role(path), host, Setup([load_role(path)], facts_dir=tmp_path / "facts")


def test_observe_leaves_the_last_facts_it_was_given_as_they_were(tmp_path):
    role, host, setup = local_demo(tmp_path)
    converge(LocalConnection(host), host, setup)
    last = last_facts(setup, host)
    given = copy.deepcopy(last)
    first = observe(LocalConnection(host), host, setup, last)
    assert last == given and first.facts is not last
    again = observe(LocalConnection(host), host, setup, first)     # the previous Observed as the guess
    assert again.checks["local.0"].in_state and first.facts["gathered_at"] <= again.facts["gathered_at"]


def count_decides(monkeypatch) -> list:
    calls = []
    observe_mod = importlib.import_module("fleet.engine.observe")   # the module (fleet.engine.observe is the stage)
    real = observe_mod.decide_tasks

    def counted(*args, **kw):
        calls.append(args[2].get("gathered_at"))
        return real(*args, **kw)

    monkeypatch.setattr(observe_mod, "decide_tasks", counted)
    return calls


def test_a_converged_host_is_decided_once_per_probe(tmp_path, monkeypatch):
    _, host, setup = local_demo(tmp_path)
    converge(LocalConnection(host), host, setup)
    last = last_facts(setup, host)
    calls = count_decides(monkeypatch)
    conn = LocalConnection(host)
    second = converge(conn, host, setup)
    assert [t.status for t in second.tasks] == ["ok"] and conn.remote_commands == 1
    # The guess from the last record stands for the live facts, which differ from it only in readings of the
    # moment; on a machine so loaded that a probe step timed out, they differ in more, and are decided again.
    moved = without_readings(last) != without_readings(second.facts)
    assert len(calls) == (2 if moved else 1), moved


def test_a_role_that_reads_a_reading_of_the_moment_is_decided_afresh(tmp_path, monkeypatch):
    _, host, _ = local_demo(tmp_path)
    path = tmp_path / "roles" / "reads" / "role.yaml"
    path.parent.mkdir(parents=True)
    path.write_text('tasks:\n  - name: free space\n    command: {cmd: "true", creates: "/"}\n'
                    '    when: "facts.system.disk_free_gb > 0"\n')
    setup = Setup([load_role(path)], facts_dir=tmp_path / "facts")
    assert setup.reads_readings
    converge(LocalConnection(host), host, setup)
    calls = count_decides(monkeypatch)
    converge(LocalConnection(host), host, setup)
    assert len(calls) == 2        # the guess, and the live facts decided again


@pytest.mark.parametrize("name", ["h100-pod-570", "thor", "spark", "cpu-only"])
def test_the_built_in_roles_render_the_same_whatever_the_readings_of_the_moment(name):
    """What lets one Decided stand for a later probe's facts: the readings change nothing that is rendered."""
    roles = load_roles(None, roles_dirs())
    assert not reads_readings(roles)
    facts = record(name)
    facts["verify"] = {"passed": True, "summary": "verify passed: torch_imports", "at": "2026-11-20T10:00:00+00:00"}
    facts["system"]["disks"] = [{"path": "/", "mount": "/", "filesystem": "/dev/vda", "size_gb": 252.0,
                                 "free_gb": 64.0}]
    moved = copy.deepcopy(facts)
    moved.update(gathered_at="2030-01-01T00:00:00Z", probe={"errors": [], "raw": {}, "notes": ["x"]})
    moved["system"].update(mem_available_mb=1, disk_free_gb=0.5)
    # each disk's free space moves too (bench/controller.py's first apply at 1,000 decided every host twice)
    moved["system"]["disks"] = [{**d, "free_gb": 0.5} for d in moved["system"]["disks"]]
    moved["verify"].update(checked_at="2030-01-01T00:00:00+00:00", reused=True, reason="reused: ...")
    assert without_readings(moved) == without_readings(facts) and moved != facts
    host = Host("h", address="192.0.2.1")
    a, b = decide_tasks(roles, host, facts), decide_tasks(roles, host, moved)
    assert a.decisions_json == b.decisions_json

    def shown(decided):
        return [(t.id, t.skip_reason) if not t.enabled else (t.id, t.resource.check(), t.resource.apply())
                for t in decided.tasks]

    assert shown(a) == shown(b) and len(shown(a)) > 10
    assert set(READINGS) == {None, "system", "verify"}


def test_the_shipped_verify_record_module_is_standalone_stdlib_python():
    tree = ast.parse(remote.source("verify_record"))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and imported <= set(sys.stdlib_module_names)
    assert "fleet" not in imported and not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))


def test_a_role_s_own_json_assert_is_judged_on_its_own_and_never_becomes_the_host_s_verify(tmp_path):
    """verify is a resource type of its own: a user role's JSON assert, whatever its answer's extra fields, is
    judged by its checks and neither writes the host's verify record nor replaces facts.verify."""
    root = tmp_path / "host"
    root.mkdir()
    answer = {"passed": True, "checks": [{"name": "dataset_mounted", "passed": True}], "missing_libraries": 5}
    path = tmp_path / "roles" / "mine" / "role.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(f"""\
        tasks:
          - name: the dataset is there
            assert: {{json: true, msg: dataset, script: {json.dumps("echo " + shlex.quote(json.dumps(answer)))}}}
        """))
    host = Host("here", connection="local")
    setup = Setup([load_role(path)], facts_dir=tmp_path / "facts", record_path=str(tmp_path / "verify.json"))
    probed = observe(LocalConnection(host), host, setup, None).facts["verify"]
    built = converge(LocalConnection(host), host, setup)
    assert [(t.status, t.reason) for t in built.tasks] == [("ok", "all checks passed")] and not built.error
    assert not (tmp_path / "verify.json").exists()
    assert last_facts(setup, host)["verify"] == probed        # what the host's own verify record says, untouched


def left_out_after_apply(tmp_path, task_when: bool):
    """A role whose `when:` turns false once its task ran (as cuda_toolkit's does once the toolkit is there): it
    makes the venv's python, and is wanted only while the probe finds no venv."""
    venv = tmp_path / "venv"
    path = tmp_path / "roles" / "makes_venv" / "role.yaml"
    path.parent.mkdir(parents=True)
    when = '"not facts.python.env_exists"'
    path.write_text(textwrap.dedent(f"""\
        {'' if task_when else 'when: ' + when}
        tasks:
          - name: the venv's python
            file: {{path: "{venv}/bin/python", content: "#!/bin/sh\\nexec python3 \\"$@\\"\\n", mode: "0755"}}
            {'when: ' + when if task_when else ''}
        """))
    host = Host("here", connection="local", vars={"python_env": str(venv)})
    return host, Setup([load_role(path)], facts_dir=tmp_path / "facts")


@pytest.mark.parametrize("task_when", [False, True], ids=["role-when", "task-when"])
def test_an_apply_whose_changes_leave_every_task_out_is_confirmed_by_the_tasks_own_check(tmp_path, task_when):
    """The re-probe after changes wants no check at all (every task left out by the new facts): it sends no empty
    checks command (which failed with "the checks produced no output"), and the change is proved by the task's
    own check, run in that probe."""
    host, setup = left_out_after_apply(tmp_path, task_when)
    conn = LocalConnection(host)
    first = converge(conn, host, setup)
    assert first.error is None, first.error
    assert [(t.task, t.status) for t in first.tasks] == [("the venv's python", "changed")]
    # the probe, its checks (first contact: no record to guess them from), the apply, the probe after changes
    # (and no empty checks command after it)
    assert conn.remote_commands == 4
    # the host itself: the venv's python runs
    assert subprocess.run([tmp_path / "venv" / "bin" / "python", "-c", "print(6 * 7)"], capture_output=True,
                          text=True).stdout == "42\n"
    conn = LocalConnection(host)
    second = converge(conn, host, setup)
    assert second.error is None and [t.status for t in second.tasks] == ["skipped"] and conn.remote_commands == 1


def test_a_change_the_left_out_task_s_own_check_still_refuses_is_a_failure(tmp_path):
    """confirm reads a left-out task's check: where it says the change did not hold, the task failed."""
    host, setup = left_out_after_apply(tmp_path, False)
    conn = LocalConnection(host)
    first = observe(conn, host, setup, None)
    applied = plan(first)
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").write_text("#!/bin/sh\nexec python3 \"$@\"\n# not what the task wrote\n")
    (tmp_path / "venv" / "bin" / "python").chmod(0o755)
    again = observe(conn, host, setup, first, forced="after changes")
    assert not again.tasks[0].enabled and not again.checks
    confirmed = confirm(applied.entries, again)
    assert [(e.status, e.reason.split(":")[0]) for e in confirmed] == [("failed", "applied, but the check still says")]
