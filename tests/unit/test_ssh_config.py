"""fleet.connection.ssh_config: ~/.ssh/config applied to an inventory host, inventory values winning where given."""

import pytest

from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet.connection.ssh_config import resolve


@pytest.fixture
def config(tmp_path):
    key = tmp_path / "thor_key"
    key.write_text("not read here")
    key.chmod(0o600)
    path = tmp_path / "ssh_config"
    path.write_text(f"Host thor\n    HostName 10.20.0.7\n    Port 2222\n    User nvidia\n    IdentityFile {key}\n"
                    "    IdentityFile /does/not/exist\n    ProxyJump ops@bastion.example.org:2200,jump2\n\n"
                    "Host jump2\n    HostName 10.20.0.1\n    User hop\n\n"
                    "Host *\n    User fallback\n")
    return path, str(key)


def host(tmp_path, spec: str):
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"hosts:\n  h: {spec}\n")
    return load_inventory(inv).hosts["h"]


def test_config_fills_what_the_inventory_does_not_say(tmp_path, config):
    path, key = config
    target = resolve(host(tmp_path, "{address: thor}"), path)
    assert (target.hostname, target.port, target.user, target.key_files) == ("10.20.0.7", 2222, "nvidia", [key])
    assert [(j.hostname, j.port, j.user) for j in target.jumps] == [("bastion.example.org", 2200, "ops"),
                                                                       ("10.20.0.1", 22, "hop")]
    assert target.via == " via ops@bastion.example.org:2200 via jump2"


def test_inventory_values_win(tmp_path, config):
    path, _ = config
    key = tmp_path / "mine"
    key.write_text("x")
    key.chmod(0o600)
    target = resolve(host(tmp_path, f"{{address: thor, port: 22, user: root, key: {key}}}"), path)
    assert (target.hostname, target.port, target.user, target.key_files) == ("10.20.0.7", 22, "root", [str(key)])


def test_no_config_means_fleet_defaults(tmp_path):
    target = resolve(host(tmp_path, "{address: 203.0.113.10}"), tmp_path / "missing")
    assert (target.hostname, target.port, target.user, target.key_files, target.jumps) == \
        ("203.0.113.10", 22, "root", [], [])


def test_host_star_user_applies_when_the_inventory_is_silent(tmp_path, config):
    path, _ = config
    assert resolve(host(tmp_path, "{address: 203.0.113.10}"), path).user == "fallback"
    assert resolve(host(tmp_path, "{address: 203.0.113.10, user: root}"), path).user == "root"


def test_proxyjump_none_means_no_jump(tmp_path):
    path = tmp_path / "cfg"
    path.write_text("Host pod\n    ProxyJump none\n")
    assert resolve(host(tmp_path, "{address: pod}"), path).jumps == []


def test_a_bad_port_in_the_config_is_bad_input(tmp_path):
    path = tmp_path / "cfg"
    path.write_text("Host pod\n    Port twenty-two\n")
    with pytest.raises(InputError, match=r":2: Port 'twenty-two' \(for pod\) is not a port number"):
        resolve(host(tmp_path, "{address: pod}"), path)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_others_may_read_is_refused_as_ssh_refuses_it(tmp_path, mode, counting_port):
    """OpenSSH's sshkey_perm_ok: this user's key with any group/other bit is not used. `fleet run` says so before
    any host is contacted (exit 2), naming the file and the fix; 0600 and 0400 are used."""
    import io

    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment

    key = tmp_path / "id_pod"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n")
    key.chmod(mode)
    (tmp_path / "inv.yaml").write_text(f"hosts:\n  pod: {{address: 127.0.0.1, port: {counting_port.port}, "
                                       f"key: {key}}}\n")
    err = io.StringIO()
    env = Environment(console=Console(file=io.StringIO()), err_console=Console(file=err, width=300, soft_wrap=True), cwd=tmp_path)
    assert main(["run", str(tmp_path / "inv.yaml"), "--", "true"], env) == 2
    assert not counting_port.contacted()
    assert f"private key {key} is readable by others (mode {mode:04o})" in err.getvalue()
    assert f"chmod 600 {key}" in err.getvalue()
    for good in (0o600, 0o400):
        key.chmod(good)
        assert resolve(host(tmp_path, f"{{address: 10.0.0.1, key: {key}}}"), tmp_path / "none").key_files == [str(key)]
