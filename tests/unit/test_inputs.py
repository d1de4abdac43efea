"""Inputs that reached Python unchecked (issue 39, family 4), each refused in one sentence naming where it came from
(the flag, the environment variable, the file:line), exit 2, no host contacted:
- numbers from flags and FLEET_* variables (0, -1, nan, inf: a busy heartbeat loop, OverflowError tracebacks, a
  keep-alive thread dying), all read by fleet/parse.py, as the variables are (tests/unit/test_variables.py);
- a YAML merge key (`<<: *pod`): supported as YAML 1.1 defines it, with the lines of the values it brings;
- a role's `when:`, values and templates rendered in Jinja's immutable sandbox: a shared role's attempt at
  os.system on the controller is refused at its file:line and has no effect.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from fleet import parse
from fleet.cli import main
from fleet.env import Environment
from fleet.errors import InputError
from fleet.inventory import load_inventory

RECORD = Path(__file__).resolve().parents[1] / "data" / "records" / "h100-pod-570.json"
BAD_NUMBERS = ["0", "-1", "nan", "inf", "-inf", "1e12", "ten", ""]


def fleet(tmp_path, *argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=400, soft_wrap=True),
                      err_console=Console(file=err, width=400, soft_wrap=True), cwd=tmp_path)
    try:
        status = main(list(argv), env)
    except SystemExit as exc:           # argparse's own exit, as the fleet command line has it
        status = exc.code
    return status, out.getvalue(), err.getvalue()


def inventory(tmp_path, counting_port) -> str:
    path = tmp_path / "inv.yaml"
    path.write_text(f"hosts:\n  pod: {{address: 127.0.0.1, port: {counting_port.port}}}\n")
    return str(path)


FLAGS = [("apply", "--connect-timeout", "0 -1 nan inf -inf 1e12 ten"), ("apply", "--wait", "-1 nan inf 1e12 ten"),
         ("apply", "--dead-after", "0 0.5 -1 nan inf 1e12"), ("apply", "--forks", "0 -1 nan 1.5 ten"),
         ("facts", "--connect-timeout", "0 nan inf"), ("run", "--timeout", "0 -1 nan inf 1e12"),
         ("script", "--wait", "nan -1"), ("bootstrap", "--wait", "nan inf -1"),
         ("bootstrap", "--connect-timeout", "0 nan"), ("bootstrap", "--port", "0 65536 nan -22")]


@pytest.mark.parametrize("command, flag, values", FLAGS, ids=[f"{c}{f}" for c, f, _ in FLAGS])
def test_a_bad_number_in_a_flag_is_exit_2_naming_the_flag_before_any_host(command, flag, values, tmp_path, counting_port,
                                                                          capsys):
    inv = inventory(tmp_path, counting_port)
    for value in values.split():
        target = ["root@127.0.0.1", "--inventory", str(tmp_path / "pods.yaml")] if command == "bootstrap" else [inv]
        extra = ["--", "true"] if command == "run" else []
        status, out, err = fleet(tmp_path, command, *target, f"{flag}={value}", *extra)
        printed = capsys.readouterr().err            # argparse writes to the process's stderr
        assert status == 2, (flag, value, printed, err)
        assert "error: argument " in printed and flag in printed and repr(value) in printed and "write" in printed, printed
        assert "Traceback" not in printed + err
    assert not counting_port.contacted()
    assert not (tmp_path / "pods.yaml").exists()


@pytest.mark.parametrize("name", ["FLEET_DEAD_AFTER", "FLEET_HEARTBEAT"])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e12", "ten", "0.01"])
def test_a_bad_number_in_a_fleet_environment_variable_is_exit_2_naming_it(name, value, tmp_path, counting_port,
                                                                           monkeypatch):
    monkeypatch.setenv(name, value)
    status, out, err = fleet(tmp_path, "apply", inventory(tmp_path, counting_port))
    message = " ".join(err.split())
    assert status == 2, message
    assert message.startswith(f"error: environment variable {name}={value!r} "), message
    assert "unset it for the default" in message and "Traceback" not in message
    assert not counting_port.contacted()


def test_the_same_parser_reads_a_flag_a_variable_and_the_environment():
    for text in ("30", " 30 ", "30.0"):
        assert parse.seconds(text) == 30.0
        assert parse.from_env("X", parse.seconds, 5, {"X": text}) == 30.0
        assert parse.flag(parse.seconds)(text) == 30.0
    assert parse.from_env("X", parse.seconds, 5, {}) == 5
    assert parse.seconds("0", zero=True) == 0.0
    with pytest.raises(InputError, match=r"^environment variable X='nan' is not a number of seconds"):
        parse.from_env("X", parse.seconds, 5, {"X": "nan"})


# -- YAML merge keys ----------------------------------------------------------------------------------------------

def test_a_merge_key_brings_the_anchor_s_settings_and_the_host_s_own_win(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text("hosts:\n"
                    "  pod-1: &pod\n"
                    "    address: 192.0.2.1\n"
                    "    port: 17322\n"
                    "    vars: {python_env: /workspace/venv}\n"
                    "  pod-2:\n"
                    "    port: 2222\n"
                    "    <<: *pod\n"
                    "    address: 192.0.2.2\n"
                    "  pod-3: {<<: [*pod], vars: {python_env: venv}}\n")
    inv = load_inventory(path)
    assert [(h.address, h.port, h.vars) for h in inv.hosts.values()] == [
        ("192.0.2.1", 17322, {"python_env": "/workspace/venv"}), ("192.0.2.2", 2222, {"python_env": "/workspace/venv"}),
        ("192.0.2.1", 17322, {"python_env": "venv"})]
    from fleet.engine.session import check_variables as check_hosts
    with pytest.raises(InputError, match=rf"^{path}:10: python_env='venv' is a path on the host and must be absolute"):
        check_hosts(list(inv.hosts.values()))
    assert inv.hosts["pod-2"].var_where["python_env"] == f"{path}:5"     # the merged value's own line


@pytest.mark.parametrize("text, line", [("hosts:\n  a:\n    <<: 5\n", 3), ("hosts:\n  a: {<<: [x, y]}\n", 2),
                                        ("x: &a [1]\nhosts:\n  a:\n    <<: *a\n", 4)])
def test_a_merge_key_of_anything_but_a_mapping_is_refused_at_its_line(text, line, tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_inventory(path)
    assert str(caught.value).startswith(f"{path}:{line}: a merge key (<<) takes an alias of a mapping, like <<: *pod")
    assert caught.value.exit_status == 2


def test_fleet_apply_with_a_merge_key_is_not_an_internal_error(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text("vars: {}\nhosts:\n  a: &pod {address: 127.0.0.1, port: 1}\n  b: {<<: *pod, port: oops}\n")
    status, out, err = fleet(tmp_path, "apply", str(path), "--check")
    assert status == 2 and " ".join(err.split()).startswith(f"error: {path}:4: port of host 'b' must be a number"), err


# -- role templates in the sandbox --------------------------------------------------------------------------------

ESCAPES = {
    "when": ('when: "cycler.__init__.__globals__.os.system(\'touch {mark}\') == 0"', 2),
    "value": ('tasks:\n  - name: t\n    command: {{cmd: "{{{{ lipsum.__globals__.os.system(\'touch {mark}\') }}}}", creates: /x}}', 4),
    "template": ("tasks:\n  - name: t\n    file: {{path: /tmp/x, template: t.j2}}", None),
    "mutation": ('when: "[].append(1) or true"', 2),
}


@pytest.mark.parametrize("kind", sorted(ESCAPES))
def test_a_shared_role_cannot_reach_python_on_the_controller(kind, tmp_path):
    mark = tmp_path / "ran-on-the-controller"
    role = tmp_path / "roles" / "shared"
    (role / "templates").mkdir(parents=True)
    text, line = ESCAPES[kind]
    body = text.format(mark=mark)
    tasks = "" if body.startswith("tasks:") else "tasks:\n  - name: t\n    command: {cmd: \"true\", creates: /x}\n"
    (role / "role.yaml").write_text("description: a role from elsewhere\n" + body + "\n" + tasks)
    (role / "templates" / "t.j2").write_text(f"line one\n{{{{ range.__init__.__globals__ }}}}{{{{ cycler.__init__."
                                             f"__globals__.os.system('touch {mark}') }}}}\n")
    (tmp_path / "inv.yaml").write_text("roles_path: roles\nroles: [shared]\nhosts:\n  pod: {address: 192.0.2.1}\n")
    status, out, err = fleet(tmp_path, "script", str(tmp_path / "inv.yaml"), "--limit", "pod",
                             "--from-facts", str(RECORD))
    message = " ".join(err.split())
    assert status == 2, message
    where = f"{role / 'templates' / 't.j2'}:2" if kind == "template" else f"{role / 'role.yaml'}:{line}"
    assert message.startswith(f"error: {where}"), message
    assert "is unsafe" in message or "is not reachable from a role" in message, message
    assert not mark.exists(), "the role ran a command on the controller"


def test_a_role_reaching_for_python_stops_apply_check_at_load_before_any_host(tmp_path, counting_port):
    """The report's case: `fleet apply --check` with a shared role whose `when:` calls os.system. Refused when the
    role loads (a name starting with '_' is out of a role's reach), exit 2, the host never contacted."""
    mark = tmp_path / "ran-on-the-controller"
    role = tmp_path / "roles" / "shared"
    role.mkdir(parents=True)
    (role / "role.yaml").write_text(f"description: x\nwhen: \"cycler.__init__.__globals__.os.system('touch {mark}')"
                                    " == 0\"\ntasks:\n  - name: t\n    command: {cmd: \"true\", creates: /x}\n")
    (tmp_path / "inv.yaml").write_text(f"roles_path: roles\nroles: [shared]\nhosts:\n  pod: {{address: 127.0.0.1, "
                                       f"port: {counting_port.port}}}\n")
    status, out, err = fleet(tmp_path, "apply", str(tmp_path / "inv.yaml"), "--check")
    message = " ".join(err.split())
    assert status == 2 and message.startswith(f"error: {role / 'role.yaml'}:2: 'when' is not a valid expression ("
                                              "'__globals__' is not reachable from a role"), message
    assert not counting_port.contacted() and not mark.exists()
