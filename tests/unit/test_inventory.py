"""Inventory loading: variables, selection, and every bad case a person can write (tests/data/inventories/)."""

import io
import re
import socket
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.errors import InputError
from fleet.inventory import load_inventory

BAD = Path(__file__).resolve().parent.parent / "data" / "inventories"


def write(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def captured_env(tmp_path: Path):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    return env, out, err


class Listener:
    """A port where any connection attempt is queued, so a test can prove no host was contacted."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()

    def connections(self) -> int:
        count = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1


@pytest.fixture
def listener():
    listening = Listener()
    yield listening
    listening.sock.close()


# -- bad inventories: exit 2, file:line named, no traceback, nobody contacted -------------------------------

def expectations(path: Path) -> tuple[int | None, list[str]]:
    line, texts = None, []
    for raw in path.read_text().splitlines():
        if m := re.match(r"# expect-line: (\d+)$", raw):
            line = int(m[1])
        elif m := re.match(r"# expect: (.*)$", raw):
            texts.append(m[1])
    return line, texts


BAD_CASES = sorted(BAD.glob("*.yaml"))


def test_every_bad_case_has_a_file():
    names = {p.stem for p in BAD_CASES}
    assert {"syntax_error", "unknown_key", "wrong_type_port", "duplicate_host", "missing_address",
            "port_out_of_range", "missing_key_file", "unknown_group_member"} <= names


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda p: p.stem)
def test_bad_inventory_exits_2_naming_file_and_line(case, tmp_path, listener):
    port = listener.address[1]
    path = write(tmp_path, case.read_text().replace("PORT", str(port)), case.name)
    line, texts = expectations(case)
    env, out, err = captured_env(tmp_path)

    status = main(["run", str(path), "--", "true"], env)

    message = " ".join(err.getvalue().split())  # undo console wrapping
    assert status == 2
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert message.startswith(f"error: {path}:")
    if line is not None:
        assert f"{path}:{line}:" in message
    for text in texts:
        assert text in message
    assert listener.connections() == 0, "a host was contacted although the inventory is bad"


def test_listener_does_see_a_connection(listener):
    """The check above means something: a real connection attempt is seen."""
    socket.create_connection(listener.address, timeout=2).close()
    assert listener.connections() == 1


def test_every_problem_is_reported_at_once(tmp_path):
    path = write(tmp_path, "hosts:\n  a: {adress: 10.0.0.1}\n  b: {address: 10.0.0.2, port: 0}\n")
    with pytest.raises(InputError) as exc:
        load_inventory(path)
    lines = str(exc.value).splitlines()
    assert lines == [
        f"{path}:2: unknown key 'adress' in host 'a'; did you mean 'address'?",
        f"{path}:2: host 'a' has no address; add 'address: <ip or hostname>' (or 'connection: local' for this machine)",
        f"{path}:3: port 0 of host 'b' is out of range; use a number from 1 to 65535",
    ]


@pytest.mark.parametrize("text, expected", [
    ("", "has no 'hosts:' section"),
    ("- a\n- b\n", "an inventory is a mapping with 'hosts:'"),
    ("hosts:\n  a: {address: x, connection: telnet}\n", "connection is 'telnet'; write one of: ssh, local"),
    ("hosts:\n  a: {address: x, lab: jetson}\n", "lab settings of host 'a' are a mapping such as"),
    ("hosts:\n  a: {address: x, port: true}\n", "must be a number from 1 to 65535, not true/false"),
    ("hosts:\n  'bad name': {address: x}\n", "host name 'bad name' must be letters"),
    ("hosts:\n  a: {address: x}\ngroups:\n  a: [a]\n", "group 'a' has the same name as a host"),
    ("hosts:\n  a: {address: x}\ngroups:\n  g: {hosts: a}\n", "'hosts' of group 'g' must be a list"),
    ("hosts:\n  a: {address: x}\nvars: {2fast: 1}\n", "variable name '2fast' must be letters"),
    ("hosts:\n  a: {address: x}\nfacts_dir: [x]\n", "facts_dir must be a directory path, not a list"),
    ("hosts:\n  a: {address: x}\ngroups:\n  g: {hosts: [{name: a}]}\n", "group 'g' names unknown host"),
    ("hosts:\n  a: {address: x}\n  7: {address: y, prot: 22}\n", ":3: unknown key 'prot' in host '7'"),
    ("hosts:\n  a: {address: x}\n  ? [1, 2]\n  : {address: y}\n", ":3: a key must be a plain name, not a list or mapping"),
])
def test_more_mistakes_get_a_sentence_and_line(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as exc:
        load_inventory(path)
    assert expected in str(exc.value)
    assert str(exc.value).startswith(f"{path}:")


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_inventory(tmp_path / "absent.yaml")


# -- a good inventory ------------------------------------------------------------------------------------

GOOD = """\
facts_dir: records
vars: {cuda_version: "13.0", torch_index: all, level: all}
hosts:
  thor:
    address: 127.0.1.11
    user: ubuntu
    key: keys/id_ed25519
    lab: {profile: thor, driver: 580.00}
    vars: {level: host}
  pod-1: {address: 127.0.1.13, port: 17322, vars: {level: host, cuda_version: "12.8"}}
  pod-2: {address: 127.0.1.14}
  desk: {connection: local}
groups:
  pods:
    hosts: [pod-1, pod-2]
    vars: {level: group, torch_index: cu130}
  arm: [thor]
"""


@pytest.fixture
def good(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_ed25519").write_text("not read by the loader\n")
    return load_inventory(write(tmp_path, GOOD))


def test_hosts_and_defaults(good, tmp_path):
    thor, pod1, pod2, desk = (good.hosts[n] for n in ("thor", "pod-1", "pod-2", "desk"))
    assert (thor.address, thor.port, thor.user, thor.key) == ("127.0.1.11", 22, "ubuntu",
                                                               str(tmp_path / "keys" / "id_ed25519"))
    assert thor.lab == {"profile": "thor", "driver": 580.0}   # the lab's to read (fleet_lab), not fleet's
    assert (pod1.port, pod1.user, pod1.key, pod1.connection) == (17322, "root", None, "ssh")
    assert (pod1.target, pod2.target, desk.target) == ("root@127.0.1.13:17322", "root@127.0.1.14", "local")
    assert desk.connection == "local" and desk.address is None
    assert thor.line == 4 and desk.line == 12
    assert good.facts_dir == tmp_path / "records"
    assert good.groups == {"pods": ["pod-1", "pod-2"], "arm": ["thor"]}
    assert pod1.groups == ["pods"] and desk.groups == []


def test_vars_precedence_host_over_group_over_all(good):
    v = {n: h.vars for n, h in good.hosts.items()}
    assert v["pod-1"] == {"cuda_version": "12.8", "torch_index": "cu130", "level": "host"}   # host > group > all
    assert v["pod-2"] == {"cuda_version": "13.0", "torch_index": "cu130", "level": "group"}  # group > all
    assert v["thor"] == {"cuda_version": "13.0", "torch_index": "all", "level": "host"}      # host > all
    assert v["desk"] == {"cuda_version": "13.0", "torch_index": "all", "level": "all"}
    assert good.vars == {"cuda_version": "13.0", "torch_index": "all", "level": "all"}


def test_select(good):
    names = lambda limit: [h.name for h in good.select(limit)]  # noqa: E731
    assert names(None) == ["thor", "pod-1", "pod-2", "desk"]
    assert names(["pod-2"]) == ["pod-2"]
    assert names(["pods"]) == ["pod-1", "pod-2"]
    assert names(["desk,pods"]) == ["pod-1", "pod-2", "desk"]          # inventory order, not limit order
    assert names(["desk", "arm", "pod-1"]) == ["thor", "pod-1", "desk"]  # repeated --limit
    assert names(["pods, pod-1,"]) == ["pod-1", "pod-2"]                # spaces, duplicates, empty items


def test_select_unknown_name_suggests_the_closest(good):
    with pytest.raises(InputError) as exc:
        good.select(["pod"])
    assert "--limit names 'pod', which is neither a host nor a group" in str(exc.value)
    assert "did you mean 'pods'?" in str(exc.value) or "did you mean 'pod-1'?" in str(exc.value)
    with pytest.raises(InputError, match="hosts and groups: arm, desk, pod-1, pod-2, pods, thor"):
        good.select(["zzzzzz"])


def test_limit_unknown_through_the_cli_exits_2(tmp_path, good):
    env, out, err = captured_env(tmp_path)
    assert main(["run", str(good.path), "--limit", "nope", "--", "true"], env) == 2
    assert "--limit names 'nope'" in err.getvalue()


def test_shipped_example_inventories_load():
    root = Path(__file__).resolve().parents[2]
    shipped = sorted((root / "inventories").glob("*.yaml")) + [root / "examples" / "pods.yaml"]
    assert {p.name for p in shipped} >= {"pods.yaml", "fleet.yaml", "lab.yaml"}
    for path in shipped:
        inventory = load_inventory(path)
        assert inventory.hosts, path


def test_top_level_key_and_known_hosts_apply_to_hosts_without_their_own(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_ed25519").write_text("not read by the loader\n")
    (tmp_path / "keys" / "other").write_text("not read by the loader\n")
    inv = load_inventory(write(tmp_path, "key: keys/id_ed25519\nknown_hosts: lab_known_hosts\nhosts:\n"
                                         "  a: {address: x}\n  b: {address: y, key: keys/other, known_hosts: kh}\n"))
    a, b = inv.hosts["a"], inv.hosts["b"]
    assert (a.key, a.known_hosts) == (str(tmp_path / "keys" / "id_ed25519"), str(tmp_path / "lab_known_hosts"))
    assert (b.key, b.known_hosts) == (str(tmp_path / "keys" / "other"), str(tmp_path / "kh"))
    with pytest.raises(InputError, match=r"inv.yaml:1: key file 'gone' at the top level does not exist"):
        load_inventory(write(tmp_path, "key: gone\nhosts:\n  a: {address: x}\n"))
