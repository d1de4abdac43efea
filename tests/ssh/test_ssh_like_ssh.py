"""~/.ssh/config is honoured the way ssh honours it; fabric's and invoke's own config files are not."""

import io
import json

from mockserver import USER_KEY
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment


def run_json(tmp_path, inventory_text: str, *argv: str) -> tuple[int, dict, str]:
    inventory = tmp_path / "pods.yaml"
    inventory.write_text(inventory_text)
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    code = main(["run", str(inventory), "--json", *argv, "--", "echo", "hi"], env)
    try:
        return code, json.loads(out.getvalue()), err.getvalue()
    except ValueError:
        raise AssertionError(out.getvalue() + err.getvalue()) from None


def ssh_config(home, text: str) -> None:
    (home / ".ssh").mkdir(mode=0o700, exist_ok=True)
    (home / ".ssh" / "config").write_text(text)


def test_hostname_port_user_and_identityfile_come_from_ssh_config(server, known, tmp_path, isolated_home):
    server.allow("echo hi")
    ssh_config(isolated_home, f"Host mockpod\n    HostName 127.0.0.1\n    Port {server.port}\n    User root\n"
                              f"    IdentityFile {USER_KEY}\n")
    code, doc, err = run_json(tmp_path, "hosts:\n  pod-a: {address: mockpod}\n")
    assert code == 0, (doc, err)
    assert doc["hosts"]["pod-a"]["stdout"] == "hi\n"


def test_the_inventory_wins_over_ssh_config(server, known, tmp_path, isolated_home):
    server.allow("echo hi")
    # The config points at a port where nothing listens and a user the server does not know.
    ssh_config(isolated_home, "Host 127.0.0.1\n    Port 1\n    User nobody\n    IdentityFile /nonexistent\n")
    code, doc, err = run_json(tmp_path, f"hosts:\n  pod-a: {{address: 127.0.0.1, port: {server.port}, user: root, "
                                        f"key: {USER_KEY}}}\n")
    assert code == 0, (doc, err)


def test_ssh_config_is_used_only_where_the_inventory_is_silent(server, known, tmp_path, isolated_home):
    # The inventory gives the port; the config's wrong port must not win, its user does apply.
    ssh_config(isolated_home, "Host 127.0.0.1\n    Port 1\n    User nobody\n")
    code, doc, _ = run_json(tmp_path, f"hosts:\n  pod-a: {{address: 127.0.0.1, port: {server.port}, key: {USER_KEY}}}\n")
    assert code == 1
    assert "nobody@127.0.0.1" in doc["hosts"]["pod-a"]["error"] and "refused our credentials" in doc["hosts"]["pod-a"]["error"]


def test_fabric_and_invoke_config_files_are_never_read(server, known, tmp_path, isolated_home):
    server.allow("echo hi")
    for name in (".fabric.yaml", ".fabric.json", ".invoke.yaml"):
        (isolated_home / name).write_text(":- [this is not valid\n")   # fabric would raise on reading any of them
    code, doc, err = run_json(tmp_path, f"hosts:\n  pod-a: {{address: 127.0.0.1, port: {server.port}, key: {USER_KEY}}}\n")
    assert code == 0, (doc, err)
    assert doc["hosts"]["pod-a"]["stdout"] == "hi\n"
