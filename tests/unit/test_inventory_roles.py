"""Which roles each host runs: `roles:` at top, group and host level (host > group > top, the most specific
list wins whole), extra roles only from the declared roles_path, --roles narrowing each host's list, and the
--check header saying where every role came from."""

import io
from pathlib import Path

import pytest
from rich.console import Console

from fleet.report.apply import print_role_origins
from fleet.env import Environment
from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet.report import Reporter
from fleet.roles import DEFAULT_ORDER, available_roles, roles_dirs, roles_for_hosts

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

INVENTORY = """\
roles_path: [my-roles]
roles: [cuda_toolkit, torch, verify]
hosts:
  plain: {address: 192.0.2.1}
  in-group: {address: 192.0.2.2}
  own: {address: 192.0.2.3, roles: [greeting, verify]}
  nothing-named: {address: 192.0.2.4}
groups:
  pods: {hosts: [in-group, own], roles: [env_hooks, greeting]}
"""

GREETING = """\
description: a user's own role
tasks:
  - name: a greeting file
    file: {path: /etc/greeting, content: "hello\\n"}
"""


def inventory(tmp_path: Path, text: str = INVENTORY):
    (tmp_path / "my-roles" / "greeting").mkdir(parents=True)
    (tmp_path / "my-roles" / "greeting" / "role.yaml").write_text(GREETING)
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    return load_inventory(path)


def names(by_host):
    return {host: [r.name for r in roles] for host, roles in by_host.items()}


def test_host_beats_group_beats_top_and_the_default_is_the_built_in_eight(tmp_path):
    inv = inventory(tmp_path, INVENTORY.replace("roles: [cuda_toolkit, torch, verify]\n", ""))
    by_host = roles_for_hosts(inv.hosts.values(), roles_dirs(inv.roles_path))
    assert names(by_host) == {"plain": list(DEFAULT_ORDER), "in-group": ["env_hooks", "greeting"],
                              "own": ["greeting", "verify"], "nothing-named": list(DEFAULT_ORDER)}
    inv = inventory(tmp_path / "2")
    by_host = roles_for_hosts(inv.hosts.values(), roles_dirs(inv.roles_path))
    assert names(by_host)["plain"] == ["cuda_toolkit", "torch", "verify"]
    assert inv.hosts["own"].roles_from.startswith("host own (") and inv.hosts["own"].roles_from.endswith(":6)")
    assert inv.hosts["in-group"].roles_from.startswith("group pods (")
    assert inv.hosts["plain"].roles_from.startswith("the inventory (") and inv.hosts["plain"].roles_from.endswith(":2)")


def test_each_role_file_is_loaded_once_and_knows_its_origin(tmp_path):
    inv = inventory(tmp_path)
    by_host = roles_for_hosts(inv.hosts.values(), roles_dirs(inv.roles_path))
    assert by_host["in-group"][1] is by_host["own"][0]                   # one Role object for "greeting"
    assert by_host["own"][0].origin == str((tmp_path / "my-roles" / "greeting").resolve())
    assert by_host["own"][1].origin == "built-in"
    assert available_roles(inv.roles_path)["greeting"] == by_host["own"][0].origin


def test_roles_flag_narrows_each_hosts_list_in_the_order_given(tmp_path):
    inv = inventory(tmp_path)
    by_host = roles_for_hosts(inv.hosts.values(), roles_dirs(inv.roles_path), ["verify", "greeting"])
    assert names(by_host) == {"plain": ["verify"], "in-group": ["greeting"], "own": ["verify", "greeting"],
                              "nothing-named": ["verify"]}
    with pytest.raises(InputError, match="did you mean 'verify'"):
        roles_for_hosts(inv.hosts.values(), roles_dirs(inv.roles_path), ["verfy"])
    with pytest.raises(InputError, match="none of these is among the roles of the selected hosts"):
        roles_for_hosts([inv.hosts["own"]], roles_dirs(inv.roles_path), ["cutlass"])


def test_a_role_outside_roles_path_cannot_be_named(tmp_path, monkeypatch):
    (tmp_path / "roles" / "planted").mkdir(parents=True)
    (tmp_path / "roles" / "planted" / "role.yaml").write_text(GREETING)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "inv.yaml"
    path.write_text("roles: [planted]\nhosts:\n  a: {address: 192.0.2.1}\n")
    with pytest.raises(InputError, match=r"inv.yaml:1: no role named 'planted' \(built-in, or in roles_path: "
                                         r"none declared\)"):
        load_inventory(path)


def test_check_header_says_where_each_role_came_from(tmp_path):
    inv = inventory(tmp_path)
    hosts = list(inv.hosts.values())
    by_host = roles_for_hosts(hosts, roles_dirs(inv.roles_path))
    out = io.StringIO()
    print_role_origins(Reporter(Environment(console=Console(file=out, width=300), err_console=Console(
        file=io.StringIO()))), hosts, by_host)
    lines = out.getvalue().splitlines()
    mine = str((tmp_path / "my-roles" / "greeting").resolve())
    assert lines[0].startswith("roles plain, nothing-named: cuda_toolkit torch verify (built-in) (named by the "
                               "inventory (")
    assert lines[1].startswith(f"roles in-group: env_hooks (built-in); greeting ({mine}) (named by group pods")
    assert lines[2].startswith(f"roles own: greeting ({mine}); verify (built-in) (named by host own")
    assert len(lines) == 3


def test_with_no_roles_anywhere_the_header_is_one_line_without_a_source(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text("hosts:\n  a: {address: 192.0.2.1}\n  b: {address: 192.0.2.2}\n")
    inv = load_inventory(path)
    hosts = list(inv.hosts.values())
    out = io.StringIO()
    print_role_origins(Reporter(Environment(console=Console(file=out, width=300), err_console=Console(
        file=io.StringIO()))), hosts, roles_for_hosts(hosts, roles_dirs()))
    assert out.getvalue() == f"roles a, b: {' '.join(DEFAULT_ORDER)} (built-in)\n"
