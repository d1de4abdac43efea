"""The shells' trace reads PS4's fields whatever their values (the `@unset@` word beside the `@@` separators), and
records every variable of the families a GPU job reads (fleet/remote/families.py) in each kind of shell with the line
that set it; each asked of this machine's real bash and awk, and held to what a plain shell of that kind prints."""

import subprocess

import pytest

from fleet.facts import shells
from fleet.remote import families, trace


def awk(lines: list[str]) -> str:
    """shells_trace.awk over raw xtrace lines, run by this machine's awk as the probe runs it."""
    return subprocess.run(["awk", "-v", f"fam={families.FAMILY_ERE}", "-v", f"famw={shells._FAMW}",
                           "-v", f"secret={families.SECRET_ERE}", shells._AWK], input="\n".join(lines) + "\n",
                          capture_output=True, text=True, check=True).stdout


def ps4(file: str, line: int, ld: str | None, path: str, cmd: str) -> str:
    """One trace line as the PS4 shells.command() sets prints it (LD_LIBRARY_PATH, then the tracked variables)."""
    tracked = [path] + ["@unset@"] * (len(trace.TRACKED) - 1)
    return f"+@@{file}@@{line}@@{'@unset@' if ld is None else ld}@@" + "@%".join(tracked) + f"@@ {cmd}"


def test_an_unset_ld_library_path_is_read_as_unset_and_names_no_other_setter():
    """shells_trace.awk split PS4 at the first `@@`, so `@unset@@@` read as `@unset` and PATH's field gained an `@`:
    the line that unset LD_LIBRARY_PATH was named as PATH's setter. Fails without the fix."""
    out = awk([ps4("/root/.bashrc", 1, "/opt/a", "/usr/bin:/bin", "unset LD_LIBRARY_PATH"),
               ps4("/root/.bashrc", 2, None, "/usr/bin:/bin", "true"),
               ps4("/root/.bashrc", 3, None, "/usr/bin:/bin", "export LD_LIBRARY_PATH=/opt/b"),
               ps4("/root/.bashrc", 4, "/opt/b", "/usr/bin:/bin", "true")])
    changes = [line.split("\t") for line in out.splitlines() if line.startswith("@@change\t")]
    assert [(c[3], c[4], c[5]) for c in changes] == [("1", "/opt/a", "@unset@"), ("3", "@unset@", "/opt/b")]
    assert not [line for line in out.splitlines() if line.startswith("@@set\t")]   # PATH never changed
    parsed = trace.parse("@@shell login\n" + out)["login"]
    assert [(c["before"], c["after"]) for c in parsed["ld_changes"]] == [("/opt/a", None), (None, "/opt/b")]
    assert "PATH" not in parsed["set_by"]


def test_a_tracked_variable_after_an_unset_ld_library_path_keeps_its_setter():
    out = awk([ps4("/root/.profile", 1, None, "/usr/bin", "export PATH=/opt/bin:/usr/bin"),
               ps4("/root/.profile", 2, None, "/opt/bin:/usr/bin", "true")])
    assert out.splitlines() == ["@@set\t1\t0\t/root/.profile\t1\texport PATH=/opt/bin:/usr/bin\t"]


BASHRC = """\
export NCCL_P2P_DISABLE=1
export NCCL_IB_TOKEN=abc123 MY_NOTE=x
case $- in *i*) ;; *) return;; esac
export TORCH_SHOW_CPP_STACKTRACES='a b'
OMP_NUM_THREADS=4
export OMP_NUM_THREADS
NCCL_ALGO=Ring true
CUBLAS_LOGINFO_DBG=0
"""
PROFILE = """\
. ~/.bashrc
export CUDA_LAUNCH_BLOCKING=1
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    (home / ".bashrc").write_text(BASHRC)
    (home / ".profile").write_text(PROFILE)
    text = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=600,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}).stdout
    return home, text, shells.parse(text)


def plain(home, *flags: str) -> dict:
    """What a plain bash of this kind exports of the families (env -i, as sshd starts a session: Debian's bash reads
    ~/.bashrc in `ssh host cmd` because SSH_CLIENT says sshd started it)."""
    out = subprocess.run(["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "SSH_CLIENT=127.0.0.1 50000 22", "bash",
                          *flags, "-c", "env"],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL).stdout
    pairs = (line.partition("=") for line in out.splitlines())
    return {k: v for k, _, v in pairs if families.is_family(k) and k not in trace.VARS}


def test_each_kind_records_the_families_a_plain_shell_of_that_kind_exports(traced):
    home, _, found = traced
    for kind, flags in (("noninteractive", ()), ("interactive", ("+m", "-i")), ("login", ("-l",))):
        got = {k: v for k, v in found[kind]["families"].items() if k not in trace.VARS}
        assert got == plain(home, *flags), kind
    assert found["noninteractive"]["families"] == {"NCCL_P2P_DISABLE": "1"}
    assert found["interactive"]["families"]["TORCH_SHOW_CPP_STACKTRACES"] == "a b"
    assert found["login"]["families"]["CUDA_LAUNCH_BLOCKING"] == "1"
    assert found["bare"]["families"] == {}


def test_each_family_variable_is_named_with_the_line_that_set_it(traced):
    home, _, found = traced
    where = {kind: {name: shells.where(setter, str(home)) for name, setter in found[kind]["set_by"].items()}
             for kind in shells.KINDS}
    assert where["noninteractive"]["NCCL_P2P_DISABLE"] == "~/.bashrc:1"
    assert where["interactive"]["TORCH_SHOW_CPP_STACKTRACES"] == "~/.bashrc:4"
    assert where["interactive"]["OMP_NUM_THREADS"] == "~/.bashrc:5"     # the line with its value, not `export NAME`
    assert where["login"]["CUDA_LAUNCH_BLOCKING"] == "~/.profile:2"
    assert where["login"]["NCCL_P2P_DISABLE"] == "~/.profile:1 (via ~/.bashrc:1)"
    # a variable set only for one command, and one never exported, is no family variable of the kind
    assert "NCCL_ALGO" not in found["interactive"]["families"] and "CUBLAS_LOGINFO_DBG" not in found["interactive"]["families"]


def test_a_name_that_looks_like_a_secret_never_leaves_the_host(traced):
    _, text, found = traced
    assert "NCCL_IB_TOKEN" not in text and "abc123" not in text
    assert "MY_NOTE" not in text   # no family: neither its value nor its line
    assert all("NCCL_IB_TOKEN" not in found[k]["families"] for k in shells.KINDS)


def test_only_the_setting_lines_of_the_families_leave_the_host(traced):
    _, text, _ = traced
    setters = [line.split("\t")[5] for line in text.splitlines() if line.startswith("@@famset\t")]
    assert setters and all(any(p in s for p in families.PREFIXES) for s in setters)
    assert "case $-" not in text and "return" not in text


def test_the_table_judges_what_its_sources_say():
    judged = {f["variable"]: f["severity"] for f in families.judge(
        {"NCCL_P2P_DISABLE": "1", "CUDA_LAUNCH_BLOCKING": "1", "OMP_NUM_THREADS": "1", "NCCL_NVLS_ENABLE": "0",
         "NCCL_DEBUG": "WARN", "CUDA_VISIBLE_DEVICES": "", "NCCL_P2P_LEVEL": "NVL", "PYTORCH_NO_CUDA_MEMORY_CACHING": "0"})}
    assert judged == {"NCCL_P2P_DISABLE": "fail", "CUDA_LAUNCH_BLOCKING": "fail", "OMP_NUM_THREADS": "warn",
                      "NCCL_NVLS_ENABLE": "deliberate", "NCCL_P2P_LEVEL": "warn"}
    assert all(r.source and r.does for r in families.RULES)
    assert all(families.is_family(r.name) for r in families.RULES)


def test_decide_names_each_breaking_variable_with_its_value_kind_and_line(traced):
    from fleet.decide import shells as decide_shells

    home, _, found = traced
    said = decide_shells.judge({"shells": found, "gpus": []}, None, "/opt/fleet/venv")
    family = {(f["kind"], f["variable"]): f for f in said["findings"] if f["mechanism"] == "family"}
    assert set(family) == {("noninteractive", "NCCL_P2P_DISABLE"), ("interactive", "NCCL_P2P_DISABLE"),
                           ("login", "NCCL_P2P_DISABLE"), ("login", "CUDA_LAUNCH_BLOCKING")}
    assert family["noninteractive", "NCCL_P2P_DISABLE"]["says"].startswith(
        "`ssh host cmd`: ~/.bashrc:1 sets NCCL_P2P_DISABLE='1': turns off NCCL's peer-to-peer transport")
    assert family["login", "CUDA_LAUNCH_BLOCKING"]["fix"].endswith(": ~/.profile:2")
    assert not [n for n in said["notes"] if "OMP_NUM_THREADS" in n]   # 4 threads: no row judges it


def test_a_deliberate_variable_is_said_as_deliberate_never_a_finding():
    from fleet.decide import shells as decide_shells

    shell = {"families": {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}, "set_by": {}}
    said = decide_shells.judge({"shells": {"noninteractive": shell, "login": shell}, "gpus": []}, None, "/v")
    assert not [f for f in said["findings"] if f["mechanism"] == "family"]
    assert [n for n in said["notes"] if "deliberate" in n and "NCCL_NVLS_ENABLE='0'" in n
            and "`ssh host cmd`, login shells" in n]


def test_verify_fails_the_kinds_a_breaking_variable_reaches_naming_it_on_the_host(traced, monkeypatch):
    from fleet.remote.verify import jobenv
    from verify_program import fresh

    home, text, _ = traced
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FLEET_VERIFY_TRACE", "true")
    program = fresh(run=False)
    program.shells = trace.parse(text)     # what Run.shell_trace reads the host's trace with
    jobenv.job_variables(program)
    checks = {c["name"]: c for c in program.checks}
    assert not checks["job_variables_ssh"]["passed"] and not checks["job_variables_login"]["passed"]
    assert "NCCL_P2P_DISABLE='1' set at ~/.bashrc:1" in checks["job_variables_ssh"]["detail"]
    assert "CUDA_LAUNCH_BLOCKING='1' set at ~/.profile:2" in checks["job_variables_login"]["detail"]
    assert "NCCL_P2P_DISABLE='1' set at ~/.bashrc:1 (read from ~/.profile:1)" in checks["job_variables_login"]["detail"]


def test_verify_passes_a_kind_whose_variables_only_note(tmp_path, monkeypatch):
    from fleet.remote.verify import jobenv
    from verify_program import fresh

    (tmp_path / ".bashrc").write_text("export OMP_NUM_THREADS=1 NCCL_DEBUG=INFO\n")
    text = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=600,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}).stdout
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("FLEET_VERIFY_TRACE", "true")
    program = fresh(run=False)
    program.shells = trace.parse(text)
    jobenv.job_variables(program)
    checks = {c["name"]: c for c in program.checks}
    assert all(c["passed"] for c in checks.values()) and set(checks) == {
        "job_variables_ssh", "job_variables_interactive", "job_variables_login"}
    assert "OMP_NUM_THREADS='1' set at ~/.bashrc:1: one OpenMP thread" in checks["job_variables_ssh"]["detail"]


@pytest.mark.parametrize("kind", ["noninteractive", "interactive", "login", "bare"])
def test_a_family_variable_in_any_kind_changes_the_fingerprint_and_its_line_alone_does_not(kind):
    """The reuse fingerprint covers the families: a verify passed without NCCL_P2P_DISABLE=1 is not reused with it
    (this machine's bash runs the fingerprint's own program over the trace, as the probe feeds it)."""
    import os

    from fleet.facts import fingerprint

    def parts(extra: dict[str, str]) -> dict:
        trace = "".join(f"@@shell {k}\n@@value PATH=/usr/bin\n{extra.get(k, '')}@@rc 0\n"
                        for k in ("noninteractive", "interactive", "login", "bare"))
        out = subprocess.run(["bash", "-c", fingerprint.fingerprint_script("/opt/fleet/venv"), "fp",
                              fingerprint.TRACE_ON_STDIN], input=trace, capture_output=True, text=True, timeout=60,
                             env=dict(os.environ))
        return fingerprint.parse(out.stdout)

    clean = parts({})
    trapped = parts({kind: "@@fam NCCL_P2P_DISABLE=1\n@@famset\tNCCL_P2P_DISABLE\t1\t/root/.bashrc\t1\tx\t\n"})
    moved = parts({kind: "@@fam NCCL_P2P_DISABLE=1\n@@famset\tNCCL_P2P_DISABLE\t1\t/root/.bashrc\t7\tx\t\n"})
    assert [k for k in clean if clean[k] != trapped[k]] == [f"env.{kind}"]
    assert moved == trapped
    why = fingerprint.stale_reasons({"fingerprint_parts": clean}, trapped)
    assert why and "every variable of the families a GPU job reads" in why[0]


def test_the_plan_says_which_line_sets_a_breaking_variable_and_that_fleet_leaves_it():
    """env_hooks' reason in the plan (`fleet apply --check`) names the family finding, and that verify fails on it
    rather than the hook fixing it (a recorded pod's facts, the line added to its shells)."""
    import json
    from pathlib import Path

    from fleet.decide import decide
    from fleet.roles import load_roles, render_role, roles_dirs

    facts = json.loads((Path(__file__).parents[1] / "data" / "records" / "h100-pod-570.json").read_text())
    setter = {"file": "/root/.bashrc", "line": 1, "depth": 1, "text": "export NCCL_P2P_DISABLE=1", "via": []}
    facts["shells"] = {"home": "/root", "noninteractive": {"families": {"NCCL_P2P_DISABLE": "1"},
                                                            "set_by": {"NCCL_P2P_DISABLE": setter}}}
    role = next(r for r in load_roles(None, roles_dirs()) if r.name == "env_hooks")
    task = render_role(role, {}, facts, decide(facts, {}).to_json(),
                       {"name": "h", "user": "root", "root": True, "roles": ["env_hooks"]})[0]
    assert ("`ssh host cmd`: ~/.bashrc:1 sets NCCL_P2P_DISABLE='1': turns off NCCL's peer-to-peer transport"
            in task.why)
    assert ("as measured on the lent H200s) (fleet leaves it to you: verify fails naming it; fix: delete the line that "
            "sets NCCL_P2P_DISABLE") in task.why
