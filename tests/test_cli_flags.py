"""-v/-q/--debug anywhere on the line, FLEET_INVENTORY, and --limit globs with exclusions, through main()."""

import io
import json

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "local.yaml"
    path.write_text("hosts:\n  desk-1: {connection: local}\n  desk-2: {connection: local}\n"
                    "  lab-1: {connection: local}\ngroups:\n  desks: {hosts: [desk-1, desk-2]}\n")
    return str(path)


def fleet(*argv):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=120), err_console=Console(file=err, width=120, soft_wrap=True))
    code = main(list(argv), env)
    return code, out.getvalue(), err.getvalue(), env


@pytest.mark.parametrize("argv", [
    ("--debug", "-v", "run", "{inv}", "--", "true"),
    ("run", "{inv}", "--debug", "-v", "--", "true"),
    ("run", "--debug", "{inv}", "-v", "--", "true"),
    ("-v", "run", "{inv}", "--debug", "--", "true"),
])
def test_debug_and_verbose_anywhere_before_the_remote_command(inventory, argv):
    code, out, err, env = fleet(*(a.format(inv=inventory) for a in argv))
    assert code == 0, out + err
    assert env.debug is True
    assert "desk-1 remote command 1: exit 0" in err      # -v: one line per remote command


def test_flags_after_the_double_dash_belong_to_the_remote_command(inventory):
    code, out, err, env = fleet("run", inventory, "--json", "--", "echo", "-v", "--debug")
    assert code == 0 and env.debug is False
    assert json.loads(out)["hosts"]["desk-1"]["stdout"] == "-v --debug\n"
    assert "remote command" not in err


def test_quiet_and_verbose_exclude_each_other(inventory, capsys):
    code, _, _, _ = fleet("run", inventory, "-q", "-v", "--", "true")
    assert code == 2 and "not allowed with argument" in capsys.readouterr().err   # argparse's own usage line


def test_fleet_inventory_is_the_default_inventory(inventory, monkeypatch):
    monkeypatch.setenv("FLEET_INVENTORY", inventory)
    code, out, _, _ = fleet("run", "--json", "--limit", "lab-1", "--", "echo", "hi")
    assert code == 0
    assert json.loads(out)["hosts"] == {"lab-1": {"exit": 0, "stdout": "hi\n", "stderr": "", "error": None}}


def test_no_inventory_and_no_fleet_inventory_is_bad_input(monkeypatch):
    monkeypatch.delenv("FLEET_INVENTORY", raising=False)
    code, _, err, _ = fleet("facts")
    assert code == 2
    assert "fleet facts needs an inventory" in err and "FLEET_INVENTORY" in err


@pytest.mark.parametrize("limit, hosts", [
    ("desk-*", ["desk-1", "desk-2"]),
    ("*,!desk-2", ["desk-1", "lab-1"]),
    ("!desks", ["lab-1"]),                   # only exclusions: from all hosts
    ("desk?", ["desk-1", "desk-2"]),         # a glob over group names too ("desks")
    ("lab-1,desk-1", ["desk-1", "lab-1"]),   # inventory order
])
def test_limit_globs_and_exclusions(inventory, limit, hosts):
    code, out, err, _ = fleet("run", inventory, "--json", "--limit", limit, "--", "true")
    assert code == 0, err
    assert list(json.loads(out)["hosts"]) == hosts


def test_a_glob_that_matches_nothing_is_bad_input(inventory):
    code, _, err, _ = fleet("run", inventory, "--limit", "pod-*", "--", "true")
    assert code == 2
    assert "--limit glob 'pod-*' matches neither a host nor a group" in err


@pytest.mark.parametrize("limit", ["", " ", ","])
def test_an_empty_limit_touches_no_host_and_is_bad_input(inventory, limit):
    """`--limit "$POD"` with POD unset must not run on every host (issue 25)."""
    code, out, err, _ = fleet("run", inventory, "--json", "--limit", limit, "--", "true")
    assert code == 2 and out == ""
    assert "--limit names no host (it is empty: an unset shell variable?)" in err


def test_a_limit_whose_exclusions_take_out_every_host_is_bad_input(inventory):
    code, out, err, _ = fleet("run", inventory, "--json", "--limit", "desk-*,!desks", "--", "true")
    assert code == 2 and out == ""
    assert "--limit 'desk-*,!desks' selects no host" in err


def test_detailed_exitcode_without_check_is_bad_input(inventory, tmp_path):
    code, out, err, _ = fleet("apply", inventory, "--detailed-exitcode")
    assert code == 2
    assert "--detailed-exitcode only has a meaning with --check" in err and "add --check" in err
    assert not (tmp_path / "facts").exists()             # no host was touched: nothing probed, nothing recorded


@pytest.mark.parametrize("command", [
    ("apply", "{inv}"), ("verify", "{inv}"), ("script", "{inv}", "--limit", "desk-1"),
    ("bootstrap", "root@192.0.2.1", "--wait", "0", "--inventory", "{dir}/pods.yaml"),
])
def test_set_with_an_unknown_variable_is_bad_input_with_the_closest_name(inventory, tmp_path, command):
    argv = [a.format(inv=inventory, dir=tmp_path) for a in command]
    code, out, err, _ = fleet(*argv, "--set", "torch_verison=2.11.0")
    assert code == 2, out + err
    err = " ".join(err.split())
    assert "--set torch_verison: unknown variable 'torch_verison'" in err and "did you mean 'torch_version'" in err
    assert not (tmp_path / "facts").exists() and not (tmp_path / "pods.yaml").exists()   # nothing touched


def test_set_a_bad_value_names_the_flag(inventory):
    code, out, err, _ = fleet("apply", inventory, "--set", "verify_perf=maybe")
    err = " ".join(err.split())
    assert code == 2 and "--set verify_perf: verify_perf='maybe' is not true or false" in err, out + err


def test_run_keeps_remote_stderr_on_stderr_in_text_mode(inventory):
    code, out, err, _ = fleet("run", inventory, "--limit", "desk-1", "--", "echo to-out; echo to-err >&2")
    assert code == 0, out + err
    assert "to-out" in out and "to-err" not in out      # a pipe gets the command's stdout only
    assert "desk-1 stderr: to-err" in err
    code, out, err, _ = fleet("run", inventory, "--limit", "desk-1", "--json", "--", "echo to-out; echo to-err >&2")
    doc = json.loads(out)["hosts"]["desk-1"]             # --json unchanged: both streams, apart
    assert (doc["stdout"], doc["stderr"]) == ("to-out\n", "to-err\n")


@pytest.mark.parametrize("argv, usage, hint", [
    (["apply", "x.yaml", "--chek"], "usage: fleet apply", "did you mean --check?"),
    (["apply", "x.yaml", "--dry-run"], "usage: fleet apply", "did you mean --check?"),
    (["verify", "x.yaml", "-e", "torch_version=2.11.0"], "usage: fleet verify", "did you mean --set NAME=VALUE for -e?"),
    (["facts", "x.yaml", "--no-color"], "usage: fleet facts", "did you mean --color never?"),
    (["lab", "up", "--rest"], "usage: fleet lab up", "did you mean --reset?"),
])
def test_an_unknown_flag_gets_its_subcommand_s_usage_and_the_closest_flag(argv, usage, hint, capsys):
    from fleet.cli import main

    assert main(argv) == 2                                  # bad input; the inventory is never read
    err = capsys.readouterr().err
    assert err.startswith(usage) and hint in err and "COMMAND ..." not in err, err
