"""fleet.facts.paths: the trust check run by bash on this machine (root here, as on a host fleet runs as root)."""

from __future__ import annotations

import os
import subprocess

import pytest

from fleet.facts import paths
from fleet.facts.sources import BY_NAME
from fleet.shell import define

NOBODY = 65534


def trust(*targets: str) -> dict:
    # the source's command after the shared functions it declares (the probe defines them once at its top)
    script = define(BY_NAME["paths"].needs) + paths.command(list(targets))
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    return paths.parse(result.stdout)


@pytest.fixture
def base(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("needs root (chown to nobody), as CI runs")
    os.chmod(tmp_path, 0o755)
    return tmp_path


def test_root_owned_and_closed_is_trusted_even_where_it_does_not_exist_yet(base):
    (base / "opt").mkdir(mode=0o755)
    assert trust(str(base / "opt"), str(base / "opt/venv/bin/python")) == {
        str(base / "opt"): None, str(base / "opt/venv/bin/python"): None}


def test_a_1777_directory_trusts_only_an_existing_entry_of_root(base):
    ws = base / "ws"
    ws.mkdir()
    os.chmod(ws, 0o1777)
    assert trust(str(ws / "venv")) == {str(ws / "venv"): f"{ws} is owned by root with mode 1777"}   # plantable
    (ws / "venv").mkdir(mode=0o755)
    assert trust(str(ws / "venv")) == {str(ws / "venv"): None}
    os.chown(ws / "venv", NOBODY, NOBODY)
    assert trust(str(ws / "venv/bin")) == {str(ws / "venv/bin"): f"{ws / 'venv'} is owned by nobody with mode 755"}


def test_writable_by_others_without_sticky_or_by_a_group_not_roots(base):
    open_ = base / "open"
    open_.mkdir()
    os.chmod(open_, 0o777)
    (open_ / "venv").mkdir(mode=0o755)
    assert trust(str(open_ / "venv")) == {str(open_ / "venv"): f"{open_} is owned by root with mode 777"}
    group = base / "group"
    group.mkdir()
    os.chown(group, 0, NOBODY)
    os.chmod(group, 0o775)
    assert trust(str(group / "venv")) == {str(group / "venv"): f"{group} is owned by root with mode 775"}


def test_a_symlink_is_judged_by_its_target_too(base):
    theirs = base / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, NOBODY, NOBODY)
    (base / "link").symlink_to(theirs)
    assert trust(str(base / "link")) == {str(base / "link"): f"{theirs} is owned by nobody with mode 755"}


def test_parse_refuses_text_without_path_lines():
    with pytest.raises(ValueError):
        paths.parse("502 Bad Gateway\n")
