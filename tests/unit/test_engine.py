"""The engine without a remote host: the eight roles planned against hand-written facts records, the shell it
would send, and the whole flow (probe, plan, apply, re-probe, record) through a local connection on roles
that only touch tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from fleet import sections
from fleet.connection import Connection, LocalConnection, Result
from fleet.engine import Setup, TaskReport, apply, check_sections, converge as converge_host, decide_tasks, maybe_sudo
from fleet.engine.plan import Plan
from fleet.remote.verify_record import verify_record
from fleet.record import store
from fleet.inventory import Host
from fleet.roles import load_role, load_roles, roles_dirs
from resource_shell import make, syntax_ok

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"
COMPAT = "/usr/local/cuda-13.0/compat"
X86_LIB = "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
SBSA_LIB = "/usr/local/cuda-13.0/targets/sbsa-linux/lib"
SITE = "/opt/fleet/venv/lib/python3.12/site-packages"

CASES = {  # id: (record, inventory vars)
    "pod-570": ("h100-pod-570", {}),
    "pod-580": ("h100-pod-580-compat", {}),
    "thor-jetson": ("thor", {"torch_source": "jetson"}),
    "thor": ("thor", {}),
    "spark": ("spark", {}),
    "cpu-only": ("cpu-only", {}),
}


@pytest.fixture(scope="module")
def shipped():
    return load_roles(None, roles_dirs())


def plan_of(shipped, case: str, user: str = "root"):
    record, variables = CASES[case]
    facts = json.loads((RECORDS / f"{record}.json").read_text())
    host = Host(case, address="192.0.2.1", user=user, vars=dict(variables))
    return decide_tasks(shipped, host, facts)


def enabled(plan) -> dict[str, object]:
    return {t.id: t for t in plan.tasks if t.enabled}


GATE_ON = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build", "on")


def gated(env_sh: str, tmp_path: Path, gate: tuple[str, str] | None = GATE_ON) -> str:
    """env.sh reading a kernel driver line and the cuda-compat gate's record from tmp_path instead of
    /proc/driver/nvidia/version and /var/lib/fleet/cuda-compat-gate (the gate's verdict for that driver)."""
    driver, state = tmp_path / "nvidia-version", tmp_path / "cuda-compat-gate"
    if gate:
        driver.write_text(gate[0] + "\n")
        state.write_text(f"{gate[0]}\n{gate[1]}\nwhy\n")
    return (env_sh.replace("/proc/driver/nvidia/version", str(driver))
            .replace("/var/lib/fleet/cuda-compat-gate", str(state)))


def sourced(env_sh: str, tmp_path: Path, before: str = "/usr/lib/other",
            gate: tuple[str, str] | None = GATE_ON) -> dict[str, str]:
    """Source the rendered env.sh twice in bash, as a shell hook would: the variables it leaves (the gate's
    record, by default, says compat is on for the kernel driver there)."""
    path = tmp_path / "env.sh"
    path.write_text(gated(env_sh, tmp_path, gate))
    out = subprocess.run(
        ["bash", "-c", f". '{path}'; . '{path}'; printf '%s\\n' \"$LD_LIBRARY_PATH\" \"$CUDA_HOME\" "
                       "\"$CUTLASS_HOME\" \"$PATH\""],
        env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": before}, capture_output=True, text=True, check=True)
    ld, cuda_home, cutlass, path_var = out.stdout.split("\n")[:4]
    return {"LD_LIBRARY_PATH": ld, "CUDA_HOME": cuda_home, "CUTLASS_HOME": cutlass, "PATH": path_var}


# -- the eight roles against the records ---------------------------------------------------------------

def test_pod_570_gets_compat_first_on_the_library_path(shipped, tmp_path):
    plan = plan_of(shipped, "pod-570")
    tasks = enabled(plan)
    # no systemd in the record (a pod): the gate and its check, no unit
    assert set(tasks) == {"cuda_toolkit.0", "cuda_compat.0", "cuda_compat.1", "cuda_compat.4", "env_hooks.0",
                          "env_hooks.1", "env_hooks.2", "env_hooks.3", "env_hooks.4", "env_hooks.5", "env_hooks.6",
                          "env_hooks.7", "cutlass.1", "torch.1",
                          "verify.0"}
    compat = tasks["cuda_compat.0"].resource.p
    assert compat["packages"] == ["cuda-compat-13-0"] and compat["hold"] is True
    assert tasks["cuda_toolkit.0"].resource.p["packages"] == ["cuda-toolkit-13-0"]
    env = sourced(tasks["env_hooks.0"].resource.p["content"], tmp_path)
    assert env["LD_LIBRARY_PATH"] == f"{COMPAT}:{X86_LIB}:/usr/lib/other"  # once, though sourced twice
    # the gate's verdict decides: off for the driver it saw (a newer one), or no record and no gate at all
    assert sourced(tasks["env_hooks.0"].resource.p["content"], tmp_path,
                   gate=(GATE_ON[0], "off"))["LD_LIBRARY_PATH"] == f"{X86_LIB}:/usr/lib/other"
    (tmp_path / "none").mkdir()
    assert sourced(tasks["env_hooks.0"].resource.p["content"], tmp_path / "none",
                   gate=None)["LD_LIBRARY_PATH"] == f"{X86_LIB}:/usr/lib/other"
    assert env["CUDA_HOME"] == "/usr/local/cuda-13.0" and env["CUTLASS_HOME"] == "/opt/cutlass"
    # the venv's bin first, then the toolkit's: python3/pip are the proved venv's, nvcc the toolkit's (issue 35; root's
    # system tools keep /usr/bin/python3 by their absolute #! line, tests/lab/test_user_commands_lab.py)
    assert env["PATH"] == "/opt/fleet/venv/bin:/usr/local/cuda-13.0/bin:/usr/bin:/bin"


@pytest.mark.parametrize("case, first", [("pod-570", f"{COMPAT}:{X86_LIB}"), ("pod-580", X86_LIB)])
@pytest.mark.parametrize("before", [f"{COMPAT}:/usr/lib/other", f"/usr/lib/other:{COMPAT}/",
                                    f"/usr/local/cuda/compat/lib:/usr/lib/other:{X86_LIB}",
                                    # a stub directory (CUDA_ERROR_STUB_LIBRARY 34 for all a shell starts) goes too
                                    f"/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs:/usr/lib/other",
                                    f"/usr/lib/other:/usr/local/cuda/lib64/stubs/"])
def test_env_sh_takes_every_other_compat_directory_off(shipped, tmp_path, case, first, before):
    """Whoever put compat on the path (container env, a line above the hook), env.sh takes it off; compat
    comes back first only where the decisions use it (pod-570)."""
    content = enabled(plan_of(shipped, case))["env_hooks.0"].resource.p["content"]
    assert sourced(content, tmp_path, before=before)["LD_LIBRARY_PATH"] == f"{first}:/usr/lib/other"


@pytest.mark.parametrize("case, gate, before, after", [
    ("pod-580", None, f"/usr/lib/libfoo.so:{COMPAT}/libcuda.so.1 /usr/lib/libbar.so", "/usr/lib/libfoo.so /usr/lib/libbar.so"),
    ("pod-580", None, "/usr/local/cuda/lib64/stubs/libcuda.so", ""),
    ("pod-570", GATE_ON, f"{COMPAT}/libcuda.so.1", f"{COMPAT}/libcuda.so.1"),     # compat in use: it stays
    ("pod-570", (GATE_ON[0], "off"), f"{COMPAT}/libcuda.so.1:/usr/lib/libfoo.so", "/usr/lib/libfoo.so"),
])
def test_env_sh_takes_a_harmful_preload_out_and_keeps_the_others(shipped, tmp_path, case, gate, before, after):
    """An LD_PRELOAD set by a startup line wins over every path: a stub, or compat where the gate says off, goes."""
    content = enabled(plan_of(shipped, case))["env_hooks.0"].resource.p["content"]
    path = tmp_path / "env.sh"
    path.write_text(gated(content, tmp_path, gate))
    out = subprocess.run(["bash", "-c", f". '{path}'; . '{path}'; printf '%s|%s' \"${{LD_PRELOAD-unset}}\" x"],
                         env={"PATH": "/usr/bin:/bin", "LD_PRELOAD": before}, capture_output=True, text=True,
                         check=True).stdout
    assert out == f"{after or 'unset'}|x"


def test_env_sh_and_the_facts_agree_on_what_a_compat_directory_is(shipped, tmp_path):
    from fleet.facts.shells import COMPAT_DIR
    content = enabled(plan_of(shipped, "pod-580"))["env_hooks.0"].resource.p["content"]
    for d in (COMPAT, COMPAT + "/", "/usr/local/cuda/compat/lib", "/usr/local/cuda/compat/lib.real",
              "/usr/local/cuda-12.8/compat", "/opt/compat", "/usr/local/cuda-13.0/lib64", "/srv/compatibility"):
        kept = sourced(content, tmp_path, before=d)["LD_LIBRARY_PATH"] != X86_LIB
        assert kept == (COMPAT_DIR.search(d) is None), d


def test_pod_580_never_gets_compat(shipped, tmp_path):
    plan = plan_of(shipped, "pod-580")
    tasks = enabled(plan)
    assert "cuda_compat.0" not in tasks and "cuda_toolkit.0" not in tasks
    skipped = next(t for t in plan.tasks if t.id == "cuda_compat.0")
    assert skipped.skip_condition == "condition is false: decisions.compat.use"
    assert skipped.skip_reason.startswith("cuda-compat is installed but not used here: full support: kernel driver")
    # compat is installed there: the gate's check still runs, and keeps fleet's drop-in away
    assert set(t for t in tasks if t.startswith("cuda_compat")) == {"cuda_compat.4"}
    assert tasks["cuda_compat.4"].resource.p["decided"] is False
    content = tasks["env_hooks.0"].resource.p["content"]
    assert sourced(content, tmp_path)["LD_LIBRARY_PATH"] == f"{X86_LIB}:/usr/lib/other"
    assert not [line for line in content.splitlines() if COMPAT in line and not line.startswith("#")]


def test_thor_with_the_jetson_index_gets_nvpl_and_cudss_wheels(shipped, tmp_path):
    tasks = enabled(plan_of(shipped, "thor-jetson"))
    assert set(tasks) == {"nvpl.0", "cudss.0", "env_hooks.0", "env_hooks.1", "env_hooks.2", "env_hooks.3",
                          "env_hooks.4", "env_hooks.5", "env_hooks.6", "env_hooks.7", "cutlass.1", "torch.1", "verify.0"}
    for task_id, packages in (("nvpl.0", ["nvpl-blas", "nvpl-lapack"]), ("cudss.0", ["nvidia-cudss-cu13==0.7.1.4"])):
        assert tasks[task_id].spec.type == "pip"
        assert {k: tasks[task_id].resource.p[k] for k in ("packages", "venv", "index_url")} == {
            "packages": packages, "venv": "/opt/fleet/venv", "index_url": "https://pypi.org/simple"}
    assert tasks["torch.1"].resource.p["index_url"] == "https://pypi.jetson-ai-lab.io/sbsa/cu130"
    env = sourced(tasks["env_hooks.0"].resource.p["content"], tmp_path, before="")
    assert env["LD_LIBRARY_PATH"] == f"{SBSA_LIB}:{SITE}/nvpl/lib:{SITE}/nvidia/cu13/lib"


@pytest.mark.parametrize("case", ["thor", "spark"])
def test_official_torch_on_arm_needs_neither_nvpl_nor_cudss_nor_compat(shipped, case, tmp_path):
    tasks = enabled(plan_of(shipped, case))
    assert not {t for t in tasks if t.split(".")[0] in ("nvpl", "cudss", "cuda_compat", "cuda_toolkit")}
    assert tasks["torch.1"].resource.p["index_url"] == "https://download.pytorch.org/whl/cu130"
    assert sourced(tasks["env_hooks.0"].resource.p["content"], tmp_path, before="")["LD_LIBRARY_PATH"] == SBSA_LIB


def test_a_host_without_a_gpu_gets_cpu_torch_and_nothing_else(shipped):
    plan = plan_of(shipped, "cpu-only")
    tasks = enabled(plan)
    assert set(tasks) == {"torch.1", "verify.0"}
    assert tasks["torch.1"].resource.p["index_url"] == "https://download.pytorch.org/whl/cpu"
    cutlass = next(t for t in plan.tasks if t.id == "cutlass.1")
    assert cutlass.spec.name == "CUTLASS at v4.3.0"  # a skipped task's name is rendered too


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("user", ["root", "ubuntu"])
def test_every_snippet_and_both_remote_scripts_parse(shipped, case, user):
    plan = plan_of(shipped, case, user)
    conn = RecordingConnection(Host(case, address="192.0.2.1", user=user))
    for task in enabled(plan).values():
        syntax_ok(task.resource.check())
        syntax_ok(task.resource.apply())
    syntax_ok(sections.together(check_sections(plan)))
    planned = tuple(t for t in enabled(plan).values() if t.spec.type != "assert")
    entries = tuple(TaskReport(t.spec.role, t.spec.name, "changed", "", id=t.id) for t in planned)
    apply(conn, Host(case, user=user), Plan(entries, planned), lambda host, msg: None)
    (apply_script,) = conn.scripts
    syntax_ok(apply_script)
    assert [f"fleet_ready {t.id} " in apply_script for t in planned] == [True] * len(planned)
    assert ("sudo -n -H bash" in apply_script) == (user != "root")


class RecordingConnection(Connection):
    """Takes scripts and answers nothing: what the engine would send, to inspect."""

    def __init__(self, host):
        super().__init__(host)
        self.scripts = []

    def run(self, script, **kw):
        self.scripts.append(script)
        self.remote_commands += 1
        return Result(0, "", "")


# -- sudo: only for the tasks that need it ------------------------------------------------------------------

def task_of(resource, sudo=None):
    from fleet.roles import Task, TaskSpec
    return Task(TaskSpec("r", 0, "t", resource.type_name, {}, None, sudo, "r.yaml:1"), resource, True)


def test_sudo_only_where_a_task_needs_root_and_the_user_is_not_root():
    spark, pod = False, True        # whether the user is root
    system_file = task_of(make("file", path="/etc/fleet/env.sh", content="x"))
    home_block = task_of(make("block", path="~/.bashrc", block="x"))
    snippet = system_file.resource.apply()
    assert "\nsudo -n -H bash \"$fleet_s\" </dev/null;" in maybe_sudo(snippet, system_file, spark)
    assert maybe_sudo(snippet, system_file, pod) == snippet
    assert maybe_sudo(snippet, system_file, spark, check=True) == snippet  # checks read as the user
    assert maybe_sudo(home_block.resource.apply(), home_block, spark) == home_block.resource.apply()
    forced = task_of(make("directory", path="/srv/mine"), sudo=False)
    assert maybe_sudo("x", forced, spark) == "x"


def test_a_snippet_too_long_for_one_argument_still_runs_under_sudo(tmp_path):
    """A big file (past the 100 KB argument limit) written on a non-root host: the section has no stdin of
    its own to carry the script, so it must reach sudo another way."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sudo").write_text('#!/bin/bash\necho "sudo $*" >> "$SUDO_LOG"\n'
                                  'while [[ "$1" == -* ]]; do shift; done\nexec "$@"\n')
    (bin_dir / "sudo").chmod(0o755)
    content = "0123456789abcdef\n" * 9000  # 153 KB
    big = task_of(make("file", path=str(tmp_path / "big.txt"), content=content))
    body = maybe_sudo(big.resource.apply(), big, False)
    script = sections.section("apply.r.0", body)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", SUDO_LOG=str(tmp_path / "sudo.log"))
    out = subprocess.run(["bash", "-s"], input=script, env=env, capture_output=True, text=True).stdout
    assert sections.split_sections(out)["apply.r.0"].rc == 0, out
    assert (tmp_path / "big.txt").read_text() == content
    assert (tmp_path / "sudo.log").read_text().startswith("sudo -n -H bash /tmp/")


# -- verify results ----------------------------------------------------------------------------------------

def test_a_failed_verify_names_each_missing_library_and_its_role():
    data = {"passed": False, "missing_libraries": ["libcudss.so.0", "libnvpl_lapack_lp64_gomp.so.0"],
            "checks": [{"name": "libraries_resolve", "passed": False, "detail": "not found"},
                       {"name": "torch_imports", "passed": False, "detail": "ImportError"}]}
    providers = {"libcudss.so.0": "cudss", "libnvpl_lapack_lp64_gomp.so.0": "nvpl"}
    record = verify_record(data, providers)
    assert record["missing_providers"] == providers
    assert record["summary"] == ("verify failed: libraries_resolve: not found; torch_imports: ImportError; missing "
                                 "libcudss.so.0 (provided by role cudss); libnvpl_lapack_lp64_gomp.so.0 (provided "
                                 "by role nvpl)")
    ok = verify_record({"passed": True, "checks": [{"name": "cuda_available", "passed": True}]}, {})
    assert ok["summary"] == "verify passed: cuda_available" and ok["at"].endswith("+00:00")


def test_a_failed_cuda_check_says_its_cause_never_a_bare_name():
    detail = ("in an interactive shell: CUDA error 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (...) from "
              "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05: ...; fix: take /usr/local/cuda-13.0/compat off")
    record = verify_record({"passed": False, "checks": [
        {"name": "cuda_available", "passed": True, "detail": "up"},
        {"name": "cuda_available_interactive", "passed": False, "detail": detail}],
        "perf": {"skipped": "perf skipped: 1 process, 58 GB in use"}}, {})
    assert record["summary"] == f"verify failed: cuda_available_interactive: {detail} (perf skipped: 1 process, 58 GB in use)"


# -- the whole flow, locally, on roles that only touch tmp_path ----------------------------------------------

DEMO_ROLE = """\
    description: a role that writes only under {root}
    defaults: {{demo_root: "{root}", greeting: hello}}
    tasks:
      - name: the directory
        directory: {{path: "{{{{ demo_root }}}}/etc", mode: "0755"}}
      - name: a file from a template
        file: {{path: "{{{{ demo_root }}}}/etc/env.sh", template: env.sh.j2}}
      - name: the hook at the top
        block: {{path: "{{{{ demo_root }}}}/bashrc", block: ". {{{{ demo_root }}}}/etc/env.sh", position: top}}
      - name: never here
        directory: {{path: "{{{{ demo_root }}}}/never"}}
        when: "decisions.compat.use"
      - name: a guarded command
        command: {{cmd: "touch {{{{ demo_root }}}}/made", creates: "{{{{ demo_root }}}}/made"}}
      - name: the file is there
        assert: {{script: "test -s {{{{ demo_root }}}}/etc/env.sh", msg: env.sh written}}
"""


@pytest.fixture
def demo(tmp_path):
    root = tmp_path / "host"
    roles_dir = tmp_path / "roles" / "demo"
    (roles_dir / "templates").mkdir(parents=True)
    (roles_dir / "role.yaml").write_text(textwrap.dedent(DEMO_ROLE.format(root=root)))
    (roles_dir / "templates" / "env.sh.j2").write_text("export GREETING={{ greeting | shq }}  # {{ host.name }}\n")
    root.mkdir()
    (root / "bashrc").write_text("case $- in *i*) ;; *) return;; esac\nalias ll='ls -l'\n")
    host = Host("local", connection="local", vars={})
    return root, load_role(roles_dir / "role.yaml"), host, tmp_path / "facts"


def converge(role, host, facts_dir, *, check_mode=False, variables=None):
    host.vars = dict(variables or {})
    conn = LocalConnection(host)
    report = converge_host(conn, host, Setup([role], facts_dir=facts_dir, check_mode=check_mode))
    return report, conn.remote_commands


def statuses(report) -> dict[str, str]:
    return {t.task: t.status for t in report.tasks}


def test_check_mode_lists_the_changes_and_makes_none(demo):
    root, role, host, facts_dir = demo
    before = sorted(p.name for p in root.iterdir())
    report, _ = converge(role, host, facts_dir, check_mode=True)
    # the assert is judged by apply only after the four changes: never counted as a change itself, but "ok" as
    # the apply that follows counts it when it passes (issue 25)
    assert statuses(report) == {"the directory": "changed", "a file from a template": "changed",
                                "the hook at the top": "changed", "never here": "skipped",
                                "a guarded command": "changed", "the file is there": "ok"}
    assert next(t.reason for t in report.tasks if t.task == "the file is there").startswith(
        "judged after the planned changes (4)")
    diff = next(t.diff for t in report.tasks if t.task == "the hook at the top")
    assert f"+. {root}/etc/env.sh" in diff
    assert sorted(p.name for p in root.iterdir()) == before


def test_check_counts_each_task_as_the_apply_that_follows_does(demo):
    """--check is the plan: task by task, the status the apply then reports, the assert included (issue 25)."""
    root, role, host, facts_dir = demo
    planned, _ = converge(role, host, facts_dir, check_mode=True)
    applied, _ = converge(role, host, facts_dir)
    assert [(t.id, t.status) for t in planned.tasks] == [(t.id, t.status) for t in applied.tasks]
    assert {k: planned.to_json()[k] for k in ("ok", "changed", "skipped", "failed")} == \
        {k: applied.to_json()[k] for k in ("ok", "changed", "skipped", "failed")}


def test_apply_converges_and_a_second_run_changes_nothing_in_one_command(demo):
    root, role, host, facts_dir = demo
    first, commands = converge(role, host, facts_dir)
    assert statuses(first) == {"the directory": "changed", "a file from a template": "changed",
                               "the hook at the top": "changed", "never here": "skipped",
                               "a guarded command": "changed", "the file is there": "ok"}
    assert commands == 4  # facts, checks (nothing recorded yet to render them from), apply, re-probe
    assert (root / "etc" / "env.sh").read_text() == "export GREETING=hello  # local\n"
    assert (root / "bashrc").read_text().startswith(f"# BEGIN fleet\n. {root}/etc/env.sh\n# END fleet\ncase")
    assert not (root / "never").exists()
    recorded = store.read(facts_dir, "local")
    assert recorded["host"] == "local" and recorded["platform"]
    snapshot = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}

    second, commands = converge(role, host, facts_dir)
    assert set(statuses(second).values()) == {"ok", "skipped"} and commands == 1
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == snapshot
    assert second.to_json()["changed"] == 0 and second.to_json()["failed"] == 0


def test_a_changed_variable_changes_exactly_its_file(demo):
    root, role, host, facts_dir = demo
    converge(role, host, facts_dir)
    report, _ = converge(role, host, facts_dir, variables={"greeting": "it's me"})
    changed = [t for t in report.tasks if t.status == "changed"]
    assert [t.task for t in changed] == ["a file from a template"]
    assert "-export GREETING=hello" in changed[0].diff and "+export GREETING='it'\"'\"'s me'" in changed[0].diff
    assert (root / "etc" / "env.sh").read_text() == "export GREETING='it'\"'\"'s me'  # local\n"


def test_a_failing_apply_stops_the_host_and_names_what_did_not_run(demo, tmp_path):
    root, _, host, facts_dir = demo
    role_dir = tmp_path / "roles" / "broken"
    role_dir.mkdir(parents=True)
    (role_dir / "role.yaml").write_text(textwrap.dedent(f"""\
        tasks:
          - name: fails
            command: {{cmd: "echo no space left >&2; exit 3", creates: "{root}/a"}}
          - name: after it
            directory: {{path: "{root}/b"}}
          - name: claims success
            command: {{cmd: "true", creates: "{root}/c"}}
        """))
    report, _ = converge(load_role(role_dir / "role.yaml"), host, facts_dir)
    by_name = {t.task: t for t in report.tasks}
    assert by_name["fails"].status == "failed" and by_name["fails"].reason == "apply failed (exit 3): no space left"
    assert (by_name["after it"].status, by_name["after it"].reason) == ("failed", "not run: it needs 'broken: fails', which did not succeed")
    assert not (root / "b").exists() and report.failed

    (role_dir / "role.yaml").write_text(textwrap.dedent(f"""\
        tasks:
          - name: claims success
            command: {{cmd: "true", creates: "{root}/c"}}
        """))
    report, _ = converge(load_role(role_dir / "role.yaml"), host, facts_dir)
    (entry,) = report.tasks
    assert (entry.status, entry.reason) == ("failed", f"applied, but the check still says: needs to run")


def test_env_sh_is_posix_sh_for_profile_d(shipped, tmp_path):
    """/etc/profile.d is read by dash too (a login `sh`): same result; the venv's and the toolkit's bin first, once
    however often it is sourced (issue 35)."""
    path = tmp_path / "env.sh"
    path.write_text(gated(enabled(plan_of(shipped, "pod-570"))["env_hooks.0"].resource.p["content"], tmp_path))
    out = subprocess.run(["dash", "-c", f". '{path}'; . '{path}'; echo \"$LD_LIBRARY_PATH|$PATH\""],
                         env={"PATH": "/opt/fleet/venv/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": f"{COMPAT}/:/x"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"{COMPAT}:{X86_LIB}:/x|/opt/fleet/venv/bin:/usr/local/cuda-13.0/bin:/usr/bin:/bin"


def test_verify_proves_the_users_shells_wherever_env_hooks_is_the_hosts_role(shipped):
    """python3/pip the venv's and nvcc/CUDA_HOME the toolkit's in every kind of shell are what env_hooks makes so:
    verify demands them wherever the HOST's roles include it (its inventory's list, else the built-in nine), whatever
    the run renders: a plain `fleet verify` (the verify role alone) proves what apply's verify proves (issue 45).
    Never where the host's own roles leave env_hooks out (inventories/lab-fabric.yaml: roles [fabric_manager,
    verify], its boards' verify passing, tests/lab/test_fabric_lab.py)."""
    def config(roles, host_roles=None):
        host = Host("pod-570", address="192.0.2.1", user="root", vars=dict(CASES["pod-570"][1]))
        host.roles = host_roles
        facts = json.loads((RECORDS / f"{CASES['pod-570'][0]}.json").read_text())
        verify = next(t for t in decide_tasks(roles, host, facts).tasks if t.resource.type_name == "verify")
        return json.loads(verify.resource.p["config"])
    every = config(shipped)
    assert every["venv_first"] is True and every["toolkit"] == "/usr/local/cuda-13.0"
    alone = config([r for r in shipped if r.name == "verify"])     # `fleet verify`: the run renders verify alone
    assert alone == every
    without = config([r for r in shipped if r.name != "env_hooks"], host_roles=["fabric_manager", "verify"])
    assert without["venv_first"] is False and without["toolkit"] == ""
