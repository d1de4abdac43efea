"""A pod's report sender (fleet/remote/report_send.py, the very text `fleet script --report` ships), run by a
plain python3 as the start script runs it, against a real `fleet serve` process, and into a directory that
`fleet collect` reads: nothing lost while the server is down, nothing counted twice when it restarts."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from fleet import remote
from fleet.store import open_store, query
from fleet_lab.report_server import ServeProcess
from tests_cli import fleet_facts

TOKEN = "pod-report-token-0123456789abcdef"


def send(tmp_path, target, *, exit_code=0, changed=0, token=TOKEN, verify=None, health=None):
    verify_path = tmp_path / "verify.json"
    if verify is not None:
        verify_path.write_text(json.dumps(verify))
    env = {"PATH": os.environ["PATH"], "FLEET_REPORT_SPOOL": str(tmp_path / "spool")}
    if token is not None:
        env["FLEET_REPORT_TOKEN"] = token
    argv = ["python3", "-s", "-c", remote.source("report_send"), target, "pod-a", "0.1.0", str(exit_code),
            str(changed), str(verify_path)]
    assert TOKEN not in " ".join(argv)
    done = subprocess.run(argv, env=env, capture_output=True, text=True,
                          **({"input": health} if health is not None else {"stdin": subprocess.DEVNULL}))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def spooled(tmp_path):
    return sorted(p.name for p in (tmp_path / "spool").iterdir())


def receipts(store_url):
    with open_store(store_url) as store:
        return store.rows("SELECT COUNT(*) FROM receipts")[0][0], store.rows("SELECT COUNT(*) FROM reports")[0][0]


def test_reports_wait_for_a_server_that_is_down_and_count_once_after_its_restart(tmp_path, store_url):
    server = ServeProcess(store_url, TOKEN, cwd=tmp_path).start()
    try:
        assert send(tmp_path, server.url, verify={"passed": True, "summary": "verify passed"}) == \
            "report: 1 sent, 0 kept to send next time, 0 refused"
        server.kill()                                                     # the server dies
        assert send(tmp_path, server.url, exit_code=1).startswith("report: 0 sent, 1 kept to send next time")
        assert send(tmp_path, server.url, exit_code=1).startswith("report: 0 sent, 2 kept")
        kept = spooled(tmp_path)
        assert len(kept) == 2
        # a report the server stored but whose answer the pod never got: sent again after the restart
        server.start()
        first = json.loads((tmp_path / "spool" / kept[0]).read_text())
        with open_store(store_url) as store:
            from fleet.store import schema
            assert store.add(schema.check(first)) == "stored"
        assert send(tmp_path, server.url, exit_code=0) == "report: 3 sent, 0 kept to send next time, 0 refused"
        assert spooled(tmp_path) == []
    finally:
        server.kill()
    assert receipts(store_url) == (4, 3)      # 4 reports, each once; the last two runs said the same: one row
    with open_store(store_url) as store:
        rows = query.history(store, "pod-a")
    assert [(r["status"], r["exit"], r["verify"]) for r in rows] == [("ok", 0, True), ("failed", 1, True),
                                                                     ("ok", 0, True)]


def test_a_wrong_token_sets_the_report_aside_and_no_token_keeps_it(tmp_path, store_url):
    server = ServeProcess(store_url, TOKEN, cwd=tmp_path).start()
    try:
        said = send(tmp_path, server.url, token=None)
        assert said == ("report: 0 sent, 1 kept to send next time, 0 refused "
                        "(FLEET_REPORT_TOKEN is not set in this environment)")
        said = send(tmp_path, server.url, token="not-the-fleets-token-0123456789")
        assert said.startswith("report: 0 sent, 0 kept to send next time, 2 refused")
        assert "401: no or a wrong token" in said
        assert all(name.endswith(".json.refused") for name in spooled(tmp_path))
    finally:
        server.kill()
    assert receipts(store_url) == (0, 0)


def test_a_directory_target_and_fleet_collect(tmp_path, store_url, monkeypatch):
    shared = tmp_path / "shared"
    assert send(tmp_path, f"dir:{shared}", verify={"passed": False, "summary": "verify failed: cuda"}) == \
        "report: 1 sent, 0 kept to send next time, 0 refused"
    (name,) = [p.name for p in shared.iterdir()]
    (shared / "other-host.json").write_text(json.dumps({**json.loads((shared / name).read_text()),
                                                       "report_id": "f" * 32, "host": "pod-b"}))
    (shared / "big.json").write_bytes(b" " * (600 * 1024))
    (shared / "link.json").symlink_to("/etc/passwd")
    (shared / "markup.json").write_text('{"schema": 1, "host": "\\u001b[2J[red]x"}')
    monkeypatch.setenv("FLEET_STORE", store_url)
    out, code = collect(tmp_path, shared, "--keep")
    assert code == 1 and out["stored"] == 1
    assert set(out["refused"]) == {"other-host.json", "big.json", "link.json", "markup.json"}
    assert "names another host" in out["refused"]["other-host.json"]
    assert sorted(p.name for p in shared.iterdir()) == sorted(
        [name, "other-host.json.refused", "big.json.refused", "link.json", "markup.json.refused"])
    (shared / "link.json").unlink()                  # a link is never followed, nor moved: refused each time
    out, code = collect(tmp_path, shared)            # again: the same report counts once
    assert (code, out["duplicate"], out["stored"]) == (0, 1, 0)
    assert not (shared / name).exists()
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("hosts:\n  desk: {connection: local}\n")
    code, shown, _ = fleet_facts(tmp_path, inventory, "--where", "verify.passed == false", "--json")
    assert [(h["host"], h["verify"]) for h in json.loads(shown)["hosts"]] == [("pod-a", False)]


def collect(tmp_path, directory, *argv):
    import io

    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment

    out = io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=io.StringIO()), cwd=tmp_path)
    code = main(["collect", str(directory), "--json", *argv], env)
    return json.loads(out.getvalue()), code


def test_the_health_sections_on_the_senders_stdin_travel_in_the_report(tmp_path):
    """fleet/remote/report.sh pipes the GPU health sections' output in; the report carries it (the controller
    judges it: fleet/store/pod_health.py); with nothing on stdin the report has none."""
    text = "\n@@fleet:begin facts.health@@\n@@query event 0\n0, NVIDIA H200\n@@fleet:end facts.health 0@@\n"
    out = tmp_path / "shared"
    assert send(tmp_path, f"dir:{out}", health=text) == "report: 1 sent, 0 kept to send next time, 0 refused"
    assert send(tmp_path, f"dir:{out}") == "report: 1 sent, 0 kept to send next time, 0 refused"
    first, second = [json.loads(p.read_text()) for p in sorted(out.iterdir())]
    assert first["facts"]["health_sections"] == text and "health_sections" not in second["facts"]
