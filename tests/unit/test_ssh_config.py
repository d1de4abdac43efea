"""fleet.connection.ssh_config: ~/.ssh/config applied to an inventory host, inventory values winning where given."""

import pytest

from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet.connection.ssh_config import resolve


@pytest.fixture
def config(tmp_path):
    key = tmp_path / "thor_key"
    key.write_text("not read here")
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
