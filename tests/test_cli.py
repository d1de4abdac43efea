"""The command line: it explains itself, registers every command, and `fleet run` works end to end locally."""

import io
import json
import subprocess
import sys

import pytest
from rich.console import Console

from fleet.cli import build_parser, main
from fleet.commands import NAMES
from fleet.env import Environment


def captured_env(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    return env, out, err


def registered_commands() -> dict:
    parser = build_parser()
    (action,) = [a for a in parser._actions if a.dest == "command"]
    return action.choices


def test_every_command_is_registered():
    assert set(registered_commands()) == set(NAMES)


def test_fleet_help_explains_itself(capsys, tmp_path):
    env, _, _ = captured_env(tmp_path)
    assert main(["--help"], env) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: fleet")
    assert "GPU hosts" in text and "JSON facts" in text
    assert "examples:" in text and "fleet run inventories/fleet.yaml -- nvidia-smi" in text
    assert "exit status: 0 ok, 1 a host failed" in text
    for name in registered_commands():
        assert f"    {name}" in text  # listed with its one-line help


def test_fleet_run_help_explains_itself(capsys, tmp_path):
    env, _, _ = captured_env(tmp_path)
    assert main(["run", "--help"], env) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: fleet run")
    assert "in parallel" in text or "at once" in text
    for flag in ("INVENTORY", "--limit", "--json", "--forks", "--timeout", "--sudo", "--accept-new-host-keys",
                 "--connect-timeout", "--wait", "-- COMMAND"):
        assert flag in text, flag
    assert "Exit status is 1 if any host failed or was unreachable" in " ".join(text.split())


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_command_has_help(name, capsys, tmp_path):
    if name not in registered_commands():
        pytest.fail(f"fleet.commands.{name} is missing")
    env, _, _ = captured_env(tmp_path)
    assert main([name, "--help"], env) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: fleet {name}")
    assert len(text.splitlines()) > 3


def test_the_installed_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "fleet", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: fleet")


def test_no_command_shows_help_and_exits_2(capsys, tmp_path):
    env, _, _ = captured_env(tmp_path)
    assert main([], env) == 2
    assert capsys.readouterr().out.startswith("usage: fleet")


def test_bad_flag_exits_2(capsys, tmp_path):
    env, _, _ = captured_env(tmp_path)
    assert main(["run", "--no-such-flag", "x.yaml"], env) == 2
    assert "unrecognized argument --no-such-flag" in capsys.readouterr().err


# -- fleet run on this machine (connection: local) --------------------------------------------------------

LOCAL = """\
hosts:
  one: {connection: local, vars: {torch_min_free_gb: 1}}   # a known variable: an unknown one is a warning
  two: {connection: local}
groups:
  both: [one, two]
"""


@pytest.fixture
def local_inventory(tmp_path):
    path = tmp_path / "local.yaml"
    path.write_text(LOCAL)
    return str(path)


def test_run_needs_a_command(local_inventory, tmp_path):
    env, _, err = captured_env(tmp_path)
    assert main(["run", local_inventory], env) == 2
    assert "no command given; write it after --" in err.getvalue()


def test_run_streams_host_prefixed_lines_and_says_how_each_ended_on_stderr(local_inventory, tmp_path):
    env, out, err = captured_env(tmp_path)
    assert main(["run", local_inventory, "--", "echo hi from $((40 + 2)); echo oops >&2; printf 'a\\rb\\rdone'"],
                env) == 0
    assert sorted(out.getvalue().splitlines()) == ["one: done", "one: hi from 42", "two: done", "two: hi from 42"]
    lines = err.getvalue().splitlines()
    assert sorted(line for line in lines if "stderr:" in line) == ["one stderr: oops", "two stderr: oops"]
    assert sorted(line.split(" (")[0] for line in lines if "stderr:" not in line) == ["one exit 0", "two exit 0"]


def test_run_json_document(local_inventory, tmp_path):
    env, out, _ = captured_env(tmp_path)
    status = main(["run", local_inventory, "--json", "--limit", "both", "--", "printf", "%s|", "a b", "$HOME"], env)
    doc = json.loads(out.getvalue())
    assert status == 0
    assert set(doc) == {"format", "hosts", "stats"} and doc["format"] == 1
    assert doc["hosts"]["one"] == {"exit": 0, "stdout": "a b|$HOME|", "stderr": "", "error": None}  # words quoted
    assert [s["remote_commands"] for s in doc["stats"].values()] == [1, 1]
    assert all(isinstance(s["seconds"], float) for s in doc["stats"].values())


def test_run_one_failing_host_exits_1_and_the_other_finishes(local_inventory, tmp_path):
    env, out, _ = captured_env(tmp_path)
    marker = tmp_path / "ran-on"
    command = f'if [ ! -e {marker} ]; then touch {marker}; exit 3; fi; echo second'
    status = main(["run", local_inventory, "--json", "--forks", "1", "--", command], env)
    doc = json.loads(out.getvalue())
    assert status == 1
    assert doc["hosts"]["one"]["exit"] == 3 and doc["hosts"]["two"] == {
        "exit": 0, "stdout": "second\n", "stderr": "", "error": None}


def test_run_timeout(local_inventory, tmp_path):
    env, out, _ = captured_env(tmp_path)
    assert main(["run", local_inventory, "--json", "--limit", "one", "--timeout", "0.2", "--", "sleep 30"], env) == 1
    doc = json.loads(out.getvalue())
    assert list(doc["hosts"]) == ["one"] and doc["hosts"]["one"]["exit"] == 124


class _Watched(io.StringIO):
    """stdout that makes a file the moment a given line is printed on it (the remote command waits for it)."""

    def __init__(self, line: str, then: "Path"):
        super().__init__()
        self.line, self.then = line, then

    def write(self, text):
        n = super().write(text)
        if self.line in self.getvalue() and not self.then.exists():
            self.then.touch()
        return n


def test_run_prints_a_line_while_the_command_still_runs(tmp_path):
    """The command prints 'first', then waits (up to 60 s) for a file that only the sight of 'first' on fleet's
    stdout makes: output held until the command ends would never show it, and 'second' would not come."""
    gate = tmp_path / "gate"
    inv = tmp_path / "local.yaml"
    inv.write_text("hosts:\n  here: {connection: local}\n")
    out, err = _Watched("here: first", gate), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True))
    command = f"echo first; i=0; while [ ! -e {gate} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; " \
              f"[ -e {gate} ] && echo second"
    assert main(["run", str(inv), "--", command], env) == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["here: first", "here: second"]
