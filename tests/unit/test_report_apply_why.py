"""A role's `why:` is shown with -v once per role in apply's output (env_hooks has five tasks and one long why),
left out by default (a change is one line: issue 25), and kept in every task's reason in the JSON."""

import io
import re
import json

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

WHY = "the hook must have the last word in every kind of shell"


@pytest.fixture
def inventory(tmp_path):
    role = tmp_path / "roles" / "hooks"
    role.mkdir(parents=True)
    tasks = "".join(f"  - name: hook {n}\n"
                    f"    file: {{path: {tmp_path}/out/{n}.sh, content: \"# {n}\\n\", mode: \"0644\"}}\n"
                    for n in ("bashrc", "profile", "login"))
    (role / "role.yaml").write_text(f"why: \"{WHY}\"\ntasks:\n{tasks}")
    (tmp_path / "out").mkdir()
    inv = tmp_path / "inv.yaml"
    inv.write_text("roles_path: roles\nroles: [hooks]\nhosts:\n  here: {connection: local}\n")
    return inv


def fleet(tmp_path, *argv, terminal=False):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300, force_terminal=terminal, soft_wrap=True),
                      err_console=Console(file=err, width=300, soft_wrap=True), cwd=tmp_path)
    return main(list(argv), env), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
@pytest.mark.parametrize("check", [True, False], ids=["check", "apply"])
@pytest.mark.parametrize("verbose", [True, False], ids=["-v", "default"])
def test_the_why_is_shown_once_per_role_with_v(tmp_path, inventory, check, terminal, verbose):
    code, out, err = fleet(tmp_path, "apply", str(inventory), *(["--check"] if check else []),
                           *(["-v"] if verbose else []), terminal=terminal)
    assert code == 0, out + err
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in out.splitlines() if "hooks: hook " in line]
    assert len(lines) == 3, out                          # every task still has its own line and reason
    assert all(line.endswith("absent") for line in lines) or verbose, out
    assert out.count(WHY) == (1 if verbose else 0), out
    assert WHY in lines[0] or not verbose


def test_the_json_keeps_the_why_in_every_task(tmp_path, inventory):
    code, out, err = fleet(tmp_path, "apply", str(inventory), "--check", "--json")
    assert code == 0, err
    tasks = json.loads(out)["hosts"]["here"]["tasks"]
    assert len(tasks) == 3 and all(t["reason"].endswith(f" ({WHY})") for t in tasks), tasks
