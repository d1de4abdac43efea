"""`fleet script`: the rendered bash runs here for real (bash, the resources' own snippets), on roles that only
touch a temp directory, with facts gathered from this machine in one command."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.connection import LocalConnection
from fleet.env import Environment
from fleet.inventory import Host
from fleet.remote.verify_record import verify_record
from fleet.roles import load_roles
from fleet.workflows.script import gather_plan, render_script, verify_record_program

HOSTILE = "it's $(touch PWNED) `touch PWNED` \"; touch PWNED; \""

ROLES = {
    "files": """
        description: files and commands in a temp dir
        tasks:
          - name: "write {{ hostile }}"
            file: {path: "{{ work }}/a.txt", content: "v={{ hostile }}\\n", mode: "0640"}
          - name: block in a file someone else owns
            block: {path: "{{ work }}/rc", block: "export A={{ hostile | shq }}", position: top}
          - name: already done, so never applied
            command: {cmd: "touch {{ work }}/must-not-exist", creates: "{{ work }}"}
          - name: counted once
            command: {cmd: "echo run >> {{ work }}/runs", creates: "{{ work }}/runs"}
          - name: never enabled
            command: {cmd: "touch {{ work }}/disabled", creates: "{{ work }}/disabled"}
            when: "false"
        """,
    "check": """
        description: a verify of its own (the verify resource type)
        tasks:
          - name: the files are there
            verify:
              script: |
                import json, os
                ok = os.path.exists({{ (work ~ '/a.txt') | tojson }})
                print(json.dumps({"passed": ok, "checks": [{"name": "a_txt", "passed": ok, "detail": "a.txt"}],
                                  "missing_libraries": []}))
        """,
    "broken": """
        description: an apply that fails
        tasks:
          - name: fails
            command: {cmd: "echo going down; exit 3", creates: "{{ work }}/never"}
          - name: after the failure
            command: {cmd: "touch {{ work }}/after", creates: "{{ work }}/after"}
        """,
}


@pytest.fixture(scope="module")
def facts_here():
    """This machine's real facts, gathered once (the probe is read-only)."""
    from fleet.engine import probe
    from fleet.sections import split_sections

    conn = LocalConnection(Host("here", connection="local"))
    return probe.parse(split_sections(conn.run(probe.script(probe.Needs.of({}))).stdout), "here")


def setup(tmp_path, names):
    roles_dir = tmp_path / "roles"
    for name, text in ROLES.items():
        (roles_dir / name).mkdir(parents=True)
        (roles_dir / name / "role.yaml").write_text(textwrap.dedent(text))
    work = tmp_path / "work"
    work.mkdir()
    host = Host("here", connection="local", vars={"work": str(work), "hostile": HOSTILE})
    return host, load_roles(names, [roles_dir]), work


def script_for(tmp_path, names):
    host, roles, work = setup(tmp_path, names)
    conn = LocalConnection(host)
    plan = gather_plan(conn, host, roles)
    assert conn.remote_commands == 1                       # the facts, in one command
    for task in plan.tasks:   # a role's why: with newlines must stay inside its comment line
        if task.spec.role == "files" and task.enabled:
            task.why = "line one\ntouch PWNED\n# still a comment"
    path = tmp_path / "fleet.sh"
    path.write_text(render_script(plan, host, verify_path=str(tmp_path / "verify.json")))
    return path, work


# As root the script takes the host's apply lock in /var/lib/fleet, as on a pod. Here that is this machine's, which
# every lab host sees (its overlay's lower layer is this machine's /): so as root it runs in a mount namespace of its
# own whose /var/lib is an overlay writing into a directory of the test's.
PRIVATE_VAR_LIB = ('mount -t overlay overlay -o lowerdir=/var/lib,upperdir="$1",workdir="$2" /var/lib && '
                   'shift 2 && exec bash "$@"')


def run(path, cwd):
    if os.geteuid() != 0:
        return subprocess.run(["bash", str(path)], capture_output=True, text=True, cwd=cwd, timeout=600)
    private = Path(tempfile.mkdtemp(prefix="fleet-var-lib-"))
    try:
        (private / "upper").mkdir()
        (private / "work").mkdir()
        return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", PRIVATE_VAR_LIB, "sh",
                               str(private / "upper"), str(private / "work"), str(path)],
                              capture_output=True, text=True, cwd=cwd, timeout=600)
    finally:
        shutil.rmtree(private, ignore_errors=True)


@pytest.fixture(scope="module")
def files_and_check(tmp_path_factory):
    """The script of the `files` and `check` roles, made and run twice in a directory of its own, the verify record
    as the first run left it: the two tests below read these same runs (each made and ran its own script before,
    half a minute each on a loaded machine)."""
    tmp_path = tmp_path_factory.mktemp("files-and-check")
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:     # a home of its own, as conftest's isolated_home gives each test
        for name, value in (("HOME", home), ("XDG_CONFIG_HOME", home / ".config"),
                            ("XDG_STATE_HOME", home / ".local" / "state")):
            mp.setenv(name, str(value))
        mp.delenv("SSH_AUTH_SOCK", raising=False)
        path, work = script_for(tmp_path, ["files", "check"])
        first = run(path, tmp_path)
        record = (tmp_path / "verify.json").read_text() if (tmp_path / "verify.json").exists() else None
        second = run(path, tmp_path)
    return {"dir": tmp_path, "work": work, "first": first, "record": record, "second": second}


def test_converges_then_changes_nothing(files_and_check):
    tmp_path, work, first = files_and_check["dir"], files_and_check["work"], files_and_check["first"]
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.splitlines()[-1] == "changed=3"
    assert (work / "a.txt").read_text() == "v=" + HOSTILE + "\n"
    assert oct((work / "a.txt").stat().st_mode & 0o777) == "0o640"
    assert (work / "rc").read_text().splitlines()[1] == "export A=" + __import__("shlex").quote(HOSTILE)
    assert not (work / "must-not-exist").exists() and not (work / "disabled").exists()
    second = files_and_check["second"]
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stdout.splitlines()[-1] == "changed=0"
    assert (work / "runs").read_text() == "run\n"
    assert not list(tmp_path.rglob("PWNED"))               # no value ever ran as code, comments included


def testverify_record_is_written_as_the_engine_writes_it(files_and_check):
    out = files_and_check["first"]
    assert "verify  verify passed: a_txt" in out.stdout
    assert files_and_check["record"] is not None, out.stdout + out.stderr
    record = json.loads(files_and_check["record"])
    expected = verify_record({"passed": True, "checks": [{"name": "a_txt", "passed": True, "detail": "a.txt"}],
                                      "missing_libraries": []}, {})
    assert {k: v for k, v in record.items() if k != "at"} == {k: v for k, v in expected.items() if k != "at"}


def test_a_failing_apply_stops_the_script_naming_the_task(tmp_path):
    path, work = script_for(tmp_path, ["files", "broken", "check"])
    out = run(path, tmp_path)
    assert out.returncode == 1
    assert "FAILED  broken: fails: apply failed (exit 3)" in out.stderr
    assert "going down" in out.stdout
    assert out.stdout.splitlines()[-1] == "changed=3"
    assert not (work / "after").exists() and not (tmp_path / "verify.json").exists()


def test_failed_verify_exits_non_zero_and_is_recorded(tmp_path):
    path, work = script_for(tmp_path, ["check"])          # a.txt never written: the assert fails
    out = run(path, tmp_path)
    assert out.returncode == 1 and out.stdout.splitlines()[-1] == "changed=0"
    assert "FAILED  check: the files are there: verify failed: a_txt" in out.stderr
    assert json.loads((tmp_path / "verify.json").read_text())["passed"] is False


def test_each_check_is_called_before_its_apply_and_comments_cannot_carry_code(tmp_path):
    path, _ = script_for(tmp_path, ["files"])
    text = path.read_text()
    body = text[text.index("fleet_task() {"):]
    assert body.index('"fleet_check_$n"') < body.index('"fleet_apply_$n"')
    assert "#   files         4 task(s)  line one touch PWNED # still a comment" in text
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_the_verify_program_is_the_engines_own_function(tmp_path):
    data = {"passed": False, "checks": [{"name": "libraries_resolve", "passed": False, "detail": "x"}],
            "missing_libraries": ["libcudss.so.0"]}
    providers = {"libcudss.so.0": {"provider": "cudss", "fleet_role": True, "reason": "r"}}
    dest = tmp_path / "v" / "verify.json"
    res = subprocess.run(["python3", "-c", verify_record_program(), str(dest), json.dumps(providers), "1"],
                         input="noise\n" + json.dumps(data) + "\n", capture_output=True, text=True)
    assert res.returncode == 1
    written = json.loads(dest.read_text())
    expected = verify_record(data, providers)
    assert res.stdout.strip() == expected["summary"]
    assert {k: v for k, v in written.items() if k != "at"} == {k: v for k, v in expected.items() if k != "at"}


def test_cli_writes_the_script_for_one_host(tmp_path):
    host, _, _ = setup(tmp_path, ["files"])
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"roles_path: roles\nroles: [files, verify]\nhosts:\n  here: {{connection: local, vars: {{work: {json.dumps(host.vars['work'])}, "
                   f"hostile: x}}}}\n  there: {{connection: local}}\n")
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True), cwd=tmp_path)
    assert main(["script", str(inv), "--limit", "here", "--roles", "files", "-o", "here.sh"], env) == 0
    assert (tmp_path / "here.sh").stat().st_mode & 0o777 == 0o700   # owner-only: it can hold credentials
    assert run(tmp_path / "here.sh", tmp_path).stdout.splitlines()[-1] == "changed=3"
    assert main(["script", str(inv), "--roles", "files"], env) == 2
    assert "exactly one host" in err.getvalue()


def test_a_non_root_user_gets_sudo_for_root_applies_only(tmp_path):
    host, roles, _ = setup(tmp_path, ["files", "check"])
    plan = gather_plan(LocalConnection(host), host, roles)
    text = render_script(plan, host, root=False)
    checks = re.findall(r"^fleet_check_\d+\(\) \((.*?)\n\)$", text, re.S | re.M)
    assert len(checks) == 5 and not any("sudo -n" in body for body in checks)     # checks read as the user
    apply_0 = text[text.index("fleet_apply_0() ("):text.index("fleet_apply_1() (")]
    assert apply_0.count('sudo -n -H bash "$fleet_s" </dev/null') == 1             # /.../a.txt is not under ~
    assert '| sudo -n -H "$fleet_prog" -I -c ' in text                          # verify.json, as the engine
    assert "sudo -n" not in render_script(plan, host, root=True)


def test_a_refused_host_gets_no_script(tmp_path):
    from fleet.errors import HostError

    host, roles, _ = setup(tmp_path, ["files"])
    plan = gather_plan(LocalConnection(host), host, roles)
    plan.decisions.refuse = "NVIDIA GeForce on driver 535 cannot run CUDA 13.0"
    with pytest.raises(HostError, match="here: refused: NVIDIA GeForce .*; no script written"):
        render_script(plan, host)
