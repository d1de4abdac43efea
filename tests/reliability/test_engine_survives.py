"""The engine keeps the report and the facts record whatever the host answers: a verify result of an unexpected
shape, a verify.json it cannot write, a damaged cached record; and it runs one apply per host at a time.
All on this machine through the local connection, with roles that touch only tmp_path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap

import pytest

from fleet.engine import hostlock
from fleet.connection import LocalConnection
from fleet.engine import Setup, converge as converge_host
from fleet.errors import HostError, InputError
from fleet.record import store
from fleet.inventory import Host
from fleet.roles import load_role

ROLE = """\
description: writes under {root}, then verifies with a JSON answer
tasks:
  - name: a file
    file: {{path: "{root}/etc/env.sh", content: "export A=1\\n"}}
  - name: verify
    verify: {{interpreter: bash, msg: verify, script: {script}}}
"""


def role_with_verify(tmp_path, answer: str):
    root = tmp_path / "host"
    root.mkdir(exist_ok=True)
    path = tmp_path / "roles" / "demo" / "role.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ROLE.format(root=root, script=json.dumps(f"echo '{answer}'")))
    return load_role(path)


def converge(tmp_path, role, **kw):
    host = Host("here", connection="local")
    notes = []
    setup = Setup([role], facts_dir=tmp_path / "facts", progress=lambda h, m: notes.append(m),
                  record_path=str(tmp_path / "var" / "verify.json"), **kw)   # never this machine's /var/lib/fleet
    return converge_host(LocalConnection(host), host, setup), notes


@pytest.fixture
def verify_file(tmp_path):
    return tmp_path / "var" / "verify.json"


@pytest.mark.parametrize("answer", [
    '{"passed": true, "checks": "all good"}',
    '{"passed": false, "checks": [{"passed": false}]}',
    '{"passed": false, "checks": [{"name": ["x"], "passed": false}]}',
])
def test_a_verify_result_of_an_unexpected_shape_fails_the_host_and_keeps_report_and_record(tmp_path, answer):
    report, _ = converge(tmp_path, role_with_verify(tmp_path, answer))
    assert report.failed
    text = (report.error or "") + " ".join(t.reason for t in report.tasks)
    assert "shape fleet cannot read" in text
    assert [t.task for t in report.tasks if t.status == "changed"] == ["a file"]   # the apply is reported
    assert store.read(tmp_path / "facts", "here")["host"] == "here"


def test_a_verify_json_that_cannot_be_written_keeps_report_and_record(tmp_path, verify_file, monkeypatch):
    blocker = tmp_path / "var"
    blocker.write_text("a file where a directory should be\n")
    report, _ = converge(tmp_path, role_with_verify(tmp_path, '{"passed": true, "checks": []}'))
    assert report.error.startswith("could not record the verify result on the host: here: could not write")
    assert store.read(tmp_path / "facts", "here")["verify"]["passed"] is True
    assert blocker.read_text() == "a file where a directory should be\n"


def test_a_verify_that_is_written_is_whole(tmp_path, verify_file):
    report, _ = converge(tmp_path, role_with_verify(tmp_path, '{"passed": true, "checks": []}'))
    assert not report.failed and json.loads(verify_file.read_text())["passed"] is True


@pytest.mark.parametrize("damage", [b"{\"host\": \"here\", \"trunc", b"\xff\xfe garbage",
                                    b'{"host": "here", "gpus": "not a list", "system": 7}'])
def test_a_damaged_cached_record_is_noted_and_replaced_not_a_failure(tmp_path, damage):
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "here.json").write_bytes(damage)
    role = role_with_verify(tmp_path, '{"passed": true, "checks": []}')
    report, notes = converge(tmp_path, role)
    assert not report.failed, report.error
    assert store.read(tmp_path / "facts", "here")["host"] == "here"   # replaced by a whole record
    again, notes = converge(tmp_path, role)
    assert not again.failed and not any("ignoring" in n for n in notes)
    assert store.read(tmp_path / "facts", "here", previous=True)["host"] == "here"


def test_the_damaged_record_is_named_in_a_note(tmp_path):
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "here.json").write_text("{oops")
    _, notes = converge(tmp_path, role_with_verify(tmp_path, '{"passed": true, "checks": []}'))
    assert any(n.startswith("note: ignoring the last facts record") and "here.json" in n for n in notes)


def test_a_second_apply_to_the_same_host_is_refused_naming_the_holder(tmp_path, isolated_home):
    host = Host("here", connection="local")
    conn = LocalConnection(host)
    holder = subprocess.Popen(["bash", "-c", hostlock.wrap("echo held; read -t 60 _", conn)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, start_new_session=True,
                              env=dict(os.environ, HOME=str(isolated_home)))
    try:
        assert holder.stdout.readline() == "held\n"     # it holds the lock now
        role = role_with_verify(tmp_path, '{"passed": true, "checks": []}')
        with pytest.raises(HostError, match=r"another apply is running on this host \(fleet apply from .* \(pid "
                                            rf"{os.getpid()}\), remote pid {holder.pid}"):
            converge_host(conn, host, Setup([role], facts_dir=tmp_path / "facts",
                                            record_path=str(tmp_path / "var" / "verify.json")))
        assert not (tmp_path / "host" / "etc" / "env.sh").exists()   # nothing was changed
    finally:
        holder.stdin.close()   # `read` ends: the holder exits and its lock goes with it
        holder.wait(timeout=600)
    report, _ = converge(tmp_path, role)
    assert not report.failed and (tmp_path / "host" / "etc" / "env.sh").exists()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path, isolated_home):
    host = Host("here", connection="local")
    conn = LocalConnection(host)
    holder = subprocess.Popen(["bash", "-c", hostlock.wrap("echo held; sleep 60", conn)], stdout=subprocess.PIPE,
                              text=True, start_new_session=True, env=dict(os.environ, HOME=str(isolated_home)))
    assert holder.stdout.readline() == "held\n"
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    report, _ = converge(tmp_path, role_with_verify(tmp_path, '{"passed": true, "checks": []}'))
    assert not report.failed


def test_two_bootstraps_of_one_name_or_one_pod_fail_before_contacting(tmp_path, monkeypatch):
    from fleet.workflows.bootstrap import bootstrap
    from fleet.workflows.ssh_line import parse_target

    contacted = []
    monkeypatch.setattr("fleet.connection.connect", lambda *a, **k: contacted.append(a) or (_ for _ in ()).throw(
        AssertionError("contacted")))
    inv = tmp_path / "pods.yaml"
    first = hostlock.reserve(inv, "pod-10", ("203.0.113.10", 22))   # a bootstrap of 203.0.113.10 is running
    try:
        with pytest.raises(InputError, match=r"another fleet bootstrap is working on the name 'pod-10' .*pid "
                                             rf"{os.getpid()}.*nothing was contacted"):
            bootstrap(parse_target("ssh root@198.51.100.10"), inventory_path=inv)   # derives pod-10 too
        with pytest.raises(InputError, match=r"working on the pod 203\.0\.113\.10:22"):
            bootstrap(parse_target("ssh root@203.0.113.10"), inventory_path=inv, name="other")
    finally:
        first.close()
    assert contacted == [] and not inv.exists()
    again = hostlock.reserve(inv, "pod-10", ("203.0.113.10", 22))   # released: free again
    again.close()
