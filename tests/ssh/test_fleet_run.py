"""`fleet run` through the command line, over SSH to the in-process server."""

import io
import json

import paramiko
from mockserver import USER_KEY, booting_later, fleet_known_hosts, free_port, record_known
from mockssh.server import SERVER_KEY_PATH
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.connection.hostkeys import fingerprint


def captured_env(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    return env, out, err


def inventory(tmp_path, port: int, down_port: int | None = None) -> str:
    text = ("hosts:\n"
            f"  pod-a: {{address: 127.0.0.1, port: {port}, key: {USER_KEY}}}\n"
            f"  pod-b: {{address: 127.0.0.1, port: {port}, key: {USER_KEY}}}\n")
    if down_port:
        text += f"  pod-down: {{address: 127.0.0.1, port: {down_port}, key: {USER_KEY}}}\n"
    path = tmp_path / "pods.yaml"
    path.write_text(text)
    return str(path)


def test_json_over_ssh_with_one_host_unreachable(server, known, tmp_path):
    server.allow("echo hi")
    env, out, err = captured_env(tmp_path)

    status = main(["run", inventory(tmp_path, server.port, free_port()), "--json", "--", "echo", "hi"], env)

    doc = json.loads(out.getvalue())
    assert status == 1
    assert list(doc["hosts"]) == ["pod-a", "pod-b", "pod-down"]
    for name in ("pod-a", "pod-b"):
        assert doc["hosts"][name] == {"exit": 0, "stdout": "hi\n", "stderr": "", "error": None}
        assert doc["stats"][name]["remote_commands"] == 1
    down = doc["hosts"]["pod-down"]
    assert down["exit"] is None and "pod-down: cannot reach" in down["error"] and "connection refused" in down["error"]
    assert doc["stats"]["pod-down"]["remote_commands"] == 0
    assert "Traceback" not in out.getvalue() + err.getvalue()


def test_all_reachable_exits_0_and_groups_output(server, known, tmp_path):
    server.allow("hostname >/dev/null && echo ok")
    env, out, err = captured_env(tmp_path)
    assert main(["run", inventory(tmp_path, server.port), "--", "hostname >/dev/null && echo ok"], env) == 0
    assert sorted(out.getvalue().splitlines()) == ["pod-a: ok", "pod-b: ok"]
    assert err.getvalue().count("exit 0") == 2


def test_unknown_key_refused_then_accepted_with_the_flag(server, tmp_path):
    server.allow("true")
    inv = inventory(tmp_path, server.port)
    expected_fp = fingerprint(paramiko.RSAKey(filename=SERVER_KEY_PATH))

    env, out, err = captured_env(tmp_path)
    assert main(["run", inv, "--", "true"], env) == 1
    text = " ".join(err.getvalue().split())
    assert out.getvalue() == "" and "REFUSED" in text and "UNREACHABLE" not in text and "unknown host key" in text and expected_fp in text
    assert "--accept-new-host-keys" in text

    env, out, err = captured_env(tmp_path)
    assert main(["run", inv, "--accept-new-host-keys", "--forks", "1", "--", "true"], env) == 0
    assert expected_fp in err.getvalue() and "accepted new host key" in err.getvalue()
    assert fleet_known_hosts().read_text().count("\n") == 1  # pod-b found pod-a's recorded key

    env, out, err = captured_env(tmp_path)
    assert main(["run", inv, "--", "true"], env) == 0  # no flag needed any more
    assert [line.split(" (")[0] for line in err.getvalue().splitlines()] == ["pod-a exit 0", "pod-b exit 0"]


def test_wait_flag_retries_a_host_still_booting(tmp_path):
    port = free_port()
    record_known(port)
    env, out, _ = captured_env(tmp_path)
    with booting_later(port, "echo booted") as up:
        status = main(["run", inventory(tmp_path, port), "--json", "--wait", "20", "--", "echo booted"], env)
    doc = json.loads(out.getvalue())
    assert status == 0 and up.is_set()
    assert [h["stdout"] for h in doc["hosts"].values()] == ["booted\n", "booted\n"]
