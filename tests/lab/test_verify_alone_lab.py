"""A plain `fleet verify` proves what apply's verify proves (issue 45, item 1): the user's shells are judged by the
host's own roles, not by the roles of the run, so `fleet verify` (which runs the verify role alone) still fails
where a kind of shell the user opens gets another python than the venv's. Each trap set by hand on the lab's
pod-580 after a converged apply and proven by asking a plain shell of that kind on the host, then undone."""

from __future__ import annotations

import contextlib
import json
import pathlib
import shlex

import pytest

from helpers import ok
from test_apply_lab import fleet_json

HOST = "pod-580"
FRESH = "env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def typed(lab, kind: str, command: str) -> str:
    """What `command` prints in a shell of that kind on the host, started as a user's is (no help from fleet)."""
    flag = {"interactive": "-i", "login": "-l"}[kind]
    return ok(lab, HOST, f"{FRESH} setsid -w bash {flag} -c {shlex.quote(command)} </dev/null 2>/dev/null").strip()


@pytest.fixture(scope="module")
def converged(lab, converged_fresh):
    code, doc = converged_fresh(HOST)
    assert code == 0, json.dumps(doc["hosts"][HOST], indent=1)[-3000:]
    return str(lab.inventory_path)


@contextlib.contextmanager
def trap(lab, file: str, line: str):
    """`line` appended to `file` on the host, and the file put back whatever the test found."""
    ok(lab, HOST, f"cp -p {file} {file}.va && printf '%s\\n' {shlex.quote(line)} >> {file}")
    try:
        yield
    finally:
        ok(lab, HOST, f"mv -f {file}.va {file}")


def verify_record(inventory) -> tuple[int, dict]:
    code, _ = fleet_json("verify", inventory, "--limit", HOST)
    record = json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())["verify"]
    return code, {c["name"]: c for c in record["checks"]}


@pytest.mark.parametrize("kind, file", [("interactive", "/root/.bashrc"), ("login", "/root/.profile")])
def test_a_path_line_after_fleets_guard_fails_a_plain_fleet_verify_in_that_kind(lab, converged, kind, file):
    _, clean = verify_record(converged)
    assert clean[f"user_commands_{kind}"]["passed"], clean[f"user_commands_{kind}"]
    venv_python = typed(lab, kind, "command -v python3")
    with trap(lab, file, "export PATH=/usr/bin:$PATH"):
        # the host itself: that kind of shell now runs the system's python3, which has no torch
        assert typed(lab, kind, "command -v python3") == "/usr/bin/python3" != venv_python
        assert "ModuleNotFoundError" in typed(lab, kind, "python3 -c 'import torch' 2>&1 || true")
        code, checks = verify_record(converged)
    assert code != 0
    check = checks[f"user_commands_{kind}"]
    assert not check["passed"] and "`python3` is /usr/bin/python3" in check["detail"], check
    code, checks = verify_record(converged)   # the file put back: a plain verify passes again
    assert code == 0 and checks[f"user_commands_{kind}"]["passed"]
