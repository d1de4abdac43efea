"""A bad ~/.ssh/config is bad input: one sentence naming file:line and a fix, exit 2, no host contacted."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet.connection.ssh_config import resolve


def host(tmp_path, spec: str):
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"hosts:\n  h: {spec}\n")
    return load_inventory(inv).hosts["h"]


def config(tmp_path, text: str):
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, line, fix", [
    ("Host pod\n    HostName 10.0.0.1\n    Port\n", 3, r"`Port` is not a `Keyword value` line: give it its value"),
    ("# mine\nHost\n", 2, r"`Host` is not a `Keyword value` line"),
    ("Host pod\n  Match foo\n", 2, r"`Match foo` cannot be read \(Missing parameter to Match 'foo' keyword\): fix it"),
])
def test_an_unreadable_line_names_its_line(tmp_path, text, line, fix):
    path = config(tmp_path, text)
    with pytest.raises(InputError, match=rf"^{path}:{line}: {fix}"):
        resolve(host(tmp_path, "{address: pod}"), path)


@pytest.mark.parametrize("port", ["twenty-two", "0", "70000", "-1"])
def test_a_bad_port_names_its_line_and_a_fix(tmp_path, port):
    path = config(tmp_path, f"Host other\n    Port 2200\n\nHost pod\n    User me\n    Port {port}\n")
    with pytest.raises(InputError, match=rf"^{path}:6: Port '{port}' \(for pod\) is not a port number: write one "
                                         r"from 1 to 65535, e.g. Port 2222$"):
        resolve(host(tmp_path, "{address: pod}"), path)


@pytest.mark.parametrize("jump", ["http://bastion", "ops@", ":22", "bastion:abc", "-oProxyCommand=sh", "b:99999"])
def test_a_proxyjump_ssh_cannot_read_names_its_line(tmp_path, jump):
    path = config(tmp_path, f"Host pod\n    HostName 10.0.0.1\n    ProxyJump good.example.org,{jump}\n")
    with pytest.raises(InputError, match=rf"^{path}:3: ProxyJump '{jump}' \(for pod\) is not a jump host ssh can "
                                         r"read: write \[user@\]host\[:port\]"):
        resolve(host(tmp_path, "{address: pod}"), path)


@pytest.mark.parametrize("jump, want", [
    ("ssh://ops@bastion.example.org:2200", ("bastion.example.org", 2200, "ops")),
    ("[2001:db8::1]:2222", ("2001:db8::1", 2222, "root")),
    ("admin@fe80::1", ("fe80::1", 22, "admin")),
    ("bastion", ("10.9.9.9", 2022, "hop")),
])
def test_the_jump_forms_ssh_reads_are_read(tmp_path, jump, want):
    path = config(tmp_path, f"Host pod\n    ProxyJump {jump}\n\nHost bastion\n    HostName 10.9.9.9\n    Port 2022\n"
                            "    User hop\n")
    (hop,) = resolve(host(tmp_path, "{address: pod}"), path).jumps
    assert (hop.hostname, hop.port, hop.user) == want


@pytest.mark.parametrize("bad, line", [("    Port\n", 4), ("    Port 22x\n", 4), ("    ProxyJump a b\n", 4)])
@pytest.mark.parametrize("command", [["run", "--", "true"], ["facts"], ["apply", "--check"],
                                     ["script", "--limit", "bad"]])
def test_every_command_exits_2_before_contacting_any_host(tmp_path, isolated_home, counting_port, bad, line,
                                                         command):
    ssh = isolated_home / ".ssh"
    ssh.mkdir(mode=0o700)
    (ssh / "config").write_text(f"Host other\n    User x\nHost gpu-box\n{bad}")
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"hosts:\n  good: {{address: 127.0.0.1, port: {counting_port.port}}}\n  bad: {{address: gpu-box}}\n")
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200, soft_wrap=True),
                      err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    code = main([command[0], str(inv), *command[1:]], env)
    assert code == 2, out.getvalue() + err.getvalue()
    errors = [text for text in err.getvalue().splitlines() if text.startswith("error:")]   # progress may precede
    assert len(errors) == 1 and errors[0].startswith(f"error: {ssh / 'config'}:{line}: "), err.getvalue()
    assert "recap" not in out.getvalue() and "good" not in out.getvalue().replace("roles good, bad:", "")
    assert not counting_port.contacted(), "a host was contacted despite the bad ssh config"


def test_bootstrap_of_a_host_with_a_bad_config_line_exits_2_and_writes_nothing(tmp_path, isolated_home):
    ssh = isolated_home / ".ssh"
    ssh.mkdir(mode=0o700)
    (ssh / "config").write_text("Host gpu-box\n    Port 22x\n")
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200, soft_wrap=True),
                      err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    code = main(["bootstrap", "root@gpu-box", "--wait", "0"], env)
    assert code == 2, out.getvalue() + err.getvalue()
    assert err.getvalue().strip().splitlines()[-1].startswith(f"error: {ssh / 'config'}:2: Port '22x' (for gpu-box)")
    assert not (tmp_path / "inventories" / "pods.yaml").exists()
