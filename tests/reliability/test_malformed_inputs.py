"""Malformed inventories and role files, hand-written and generated: each is exit 2 with file:line, no traceback,
and no host contacted (any connection attempt fails the test loudly)."""

from __future__ import annotations

import re
import textwrap

import pytest

from reliability_helpers import run

VALID = """\
vars: {cuda_version: "13.0"}
hosts:
  pod-1:
    address: 192.0.2.10
    port: 22
    user: root
    vars: {python_env: /opt/venv}
  pod-2: {address: 192.0.2.11}
groups:
  pods: {hosts: [pod-1, pod-2]}
"""

HAND_WRITTEN_INVENTORIES = {
    "tab indentation": "hosts:\n\tpod: {address: 1.2.3.4}\n",
    "unclosed flow mapping": "hosts:\n  pod: {address: 1.2.3.4\n  other: {}\n",
    "unclosed quote": 'hosts:\n  pod: {address: "1.2.3.4}\n',
    "duplicate host": "hosts:\n  pod: {address: 1.2.3.4}\n  pod: {address: 1.2.3.5}\n",
    "duplicate key in host": "hosts:\n  pod:\n    address: 1.2.3.4\n    address: 1.2.3.5\n",
    "hosts is a list": "hosts:\n  - pod\n",
    "hosts missing": "vars: {a: 1}\n",
    "top level list": "- hosts\n",
    "top level scalar": "just text\n",
    "unknown top key": "hostz:\n  pod: {address: 1.2.3.4}\n",
    "unknown host key": "hosts:\n  pod: {address: 1.2.3.4, adress: x}\n",
    "port a string": "hosts:\n  pod: {address: 1.2.3.4, port: twenty}\n",
    "port out of range": "hosts:\n  pod: {address: 1.2.3.4, port: 70000}\n",
    "port a bool": "hosts:\n  pod: {address: 1.2.3.4, port: true}\n",
    "no address": "hosts:\n  pod: {user: root}\n",
    "address a list": "hosts:\n  pod: {address: [1, 2]}\n",
    "bad connection": "hosts:\n  pod: {address: 1.2.3.4, connection: telnet}\n",
    "bad lab profile": "hosts:\n  pod: {address: 1.2.3.4, lab: gb200}\n",
    "bad host name": "hosts:\n  'pod/../../x': {address: 1.2.3.4}\n",
    "host name ending .prev": "hosts:\n  pod: {address: 1.2.3.4}\n  pod.prev: {address: 1.2.3.5}\n",
    "names differing in case": "hosts:\n  pod: {address: 1.2.3.4}\n  Pod: {address: 1.2.3.5}\n",
    "key file missing": "hosts:\n  pod: {address: 1.2.3.4, key: ./nope}\n",
    "vars a list": "vars: [a, b]\nhosts:\n  pod: {address: 1.2.3.4}\n",
    "bad variable name": "vars: {1abc: x}\nhosts:\n  pod: {address: 1.2.3.4}\n",
    "group names unknown host": "hosts:\n  pod: {address: 1.2.3.4}\ngroups:\n  g: {hosts: [nope]}\n",
    "group same name as host": "hosts:\n  pod: {address: 1.2.3.4}\ngroups:\n  pod: [pod]\n",
    "group hosts a mapping": "hosts:\n  pod: {address: 1.2.3.4}\ngroups:\n  g: {hosts: {pod: 1}}\n",
    "key that is a list": "hosts:\n  ? [a, b]\n  : {address: 1.2.3.4}\n",
    "facts_dir a number": "facts_dir: 7\nhosts:\n  pod: {address: 1.2.3.4}\n",
    "roles_path missing dir": "roles_path: [no-such-dir]\nhosts:\n  pod: {address: 1.2.3.4}\n",
    "recursive alias": "hosts: &h\n  pod: {address: 1.2.3.4, vars: {me: *h}}\n",
    "alias bomb": "".join(
        [f"{c}: &{c} [{', '.join(['*' + p] * 9) if p else ', '.join(['lol'] * 9)}]\n"
         for p, c in zip(["", "a", "b", "c", "d", "e", "f"], "abcdefg")]) + "hosts: *g\n",
    "undefined alias": "hosts:\n  pod: *nothing\n",
    "binary garbage": "hosts:\n  pod: {address: \x00\x01}\n",
    "document separator mess": "hosts: {}\n---\nhosts: {}\n",
}

ROLE_OK = """\
description: a role
tasks:
  - name: a file
    file: {path: /tmp/x, content: "y"}
"""

HAND_WRITTEN_ROLES = {
    "role not a mapping": "- tasks\n",
    "unknown role key": "descripton: x\ntasks: []\n",
    "task without a type": "tasks:\n  - name: nothing\n",
    "two types in a task": "tasks:\n  - name: x\n    file: {path: /a, content: b}\n    command: {cmd: c}\n",
    "unknown resource type": "tasks:\n  - name: x\n    filez: {path: /a}\n",
    "unknown parameter": "tasks:\n  - name: x\n    file: {path: /a, contnt: b}\n",
    "missing required parameter": "tasks:\n  - name: x\n    apt: {}\n",
    "block holding its END marker": "tasks:\n  - name: x\n    block: {path: /a, block: \"a\\n# END fleet\\nb\"}\n",
    "bad mode": "tasks:\n  - name: x\n    file: {path: /a, content: b, mode: \"999\"}\n",
    "bad sha256": "tasks:\n  - name: x\n    archive: {url: file:///a, dest: /b, creates: /b/c, sha256: abc}\n",
    "defaults a list": "defaults: [a]\ntasks: []\n",
    "yaml syntax": "tasks:\n  - name: x\n    file: {path: /a, content: b\n",
    "recursive alias in role": "tasks: &t\n  - name: x\n    command: {cmd: *t}\n",
}


@pytest.fixture(autouse=True)
def no_host_contacted(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a host was contacted for bad input")
    monkeypatch.setattr("fleet.connection.connect", refuse)
    monkeypatch.setattr("fleet.connection.parallel.open_connection", refuse)


def assert_bad_input(path, code, out, err, *, where=None):
    where = where or path
    assert code == 2, f"exit {code}\n{out}\n{err}"
    assert "Traceback" not in out + err and "internal error" not in err
    assert re.search(rf"{re.escape(str(where))}:\d+", err), err


def generated_inventories() -> dict[str, str]:
    """Mutations of a valid inventory, one per line: its value turned into an unclosed list, the line doubled
    (a duplicate key), a tab before it; plus a few wrong types."""
    out = {}
    lines = VALID.splitlines(keepends=True)
    for i, line in enumerate(lines):
        key, colon, value = line.partition(":")
        if colon and value.strip():
            out[f"line {i + 1}: value cut to an unclosed list"] = "".join(lines[:i] + [f"{key}: [[[\n"] + lines[i + 1:])
        if line.startswith("  "):
            out[f"line {i + 1}: doubled"] = "".join(lines[:i + 1] + [line] + lines[i + 1:])
        out[f"line {i + 1}: a tab before it"] = "".join(lines[:i] + ["\t" + line] + lines[i + 1:])
    out["port -1"] = VALID.replace("port: 22", "port: -1")
    out["user a number"] = VALID.replace("user: root", "user: 0")
    out["vars a string"] = VALID.replace("vars: {python_env: /opt/venv}", "vars: python_env")
    out["group names a host that is not there"] = VALID.replace("hosts: [pod-1, pod-2]", "hosts: [pod-1, pod-9]")
    return out


GENERATED = generated_inventories()


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN_INVENTORIES))
def test_hand_written_bad_inventory(tmp_path, name):
    path = tmp_path / "inv.yaml"
    path.write_text(HAND_WRITTEN_INVENTORIES[name], encoding="utf-8", errors="surrogateescape")
    assert_bad_input(path, *run(["apply", str(path), "--check"], tmp_path))


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_bad_inventory(tmp_path, name):
    path = tmp_path / "inv.yaml"
    path.write_text(GENERATED[name])
    code, out, err = run(["apply", str(path), "--check"], tmp_path)
    assert_bad_input(path, code, out, err)


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN_ROLES))
def test_bad_role_file(tmp_path, name):
    role = tmp_path / "roles" / "mine" / "role.yaml"
    role.parent.mkdir(parents=True)
    role.write_text(HAND_WRITTEN_ROLES[name])
    inv = tmp_path / "inv.yaml"
    inv.write_text("roles_path: [roles]\nhosts:\n  pod: {address: 192.0.2.10}\n")
    assert_bad_input(inv, *run(["apply", str(inv), "--check", "--roles", "mine"], tmp_path), where=role)


def test_the_valid_ones_are_valid(tmp_path):
    """The mutations start from inputs that load: what fails is the mutation, not the template."""
    from fleet.inventory import load_inventory
    from fleet.roles import load_role

    (tmp_path / "inv.yaml").write_text(VALID)
    (tmp_path / "role.yaml").write_text(ROLE_OK)
    assert set(load_inventory(tmp_path / "inv.yaml").hosts) == {"pod-1", "pod-2"}
    assert load_role(tmp_path / "role.yaml").tasks


def test_there_are_at_least_forty_cases():
    assert len(HAND_WRITTEN_INVENTORIES) + len(GENERATED) + len(HAND_WRITTEN_ROLES) >= 40
