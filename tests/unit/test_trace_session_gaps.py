"""Issue 45's gaps, asked of this machine's real bash and awk as the probe runs them, each held to what a plain shell of
that kind prints: a variable a startup line unsets names that line; each kind's `ulimit -n`/`-l` with the line that
lowered it; the VAR=VALUE lines NCCL reads from its config files (~/.nccl.conf or $NCCL_CONF_FILE, /etc/nccl.conf)
where the kind's environment lacks the name; and what sshd gives every session before any startup file (the first
SetEnv line of the config of the sshd the session descends from, ~/.ssh/environment under PermitUserEnvironment),
each with its file:line, judged by the same table (fleet/remote/families.py) in decide and in verify."""

from __future__ import annotations

import subprocess

import pytest

from fleet.facts import shells
from fleet.remote import families, trace

from test_trace_families import awk, ps4

BASHRC = """\
export NCCL_P2P_DISABLE=1 CUDA_LAUNCH_BLOCKING=1
case $- in *i*) ;; *) return;; esac
ulimit -n 256
unset CUDA_LAUNCH_BLOCKING NCCL_NVLS_ENABLE
export TORCH_NCCL_BLOCKING_WAIT=1
unset TORCH_NCCL_BLOCKING_WAIT
export TORCH_NCCL_BLOCKING_WAIT=0
"""
NCCL_CONF = "NCCL_ALGO=Ring\n# a comment\nNCCL_P2P_DISABLE=0\nNCCL_NVLS_ENABLE=0\n"
SSHD_CONFIG = """\
Port 2222
AcceptEnv LANG LC_*
AcceptEnv NCCL_*
PermitUserEnvironment yes
SetEnv PATH=/usr/bin:/bin NCCL_NVLS_ENABLE=0 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=1
SetEnv NCCL_DEBUG=TRACE
Match User nobody
  SetEnv NCCL_P2P_LEVEL=LOC
"""


def run_trace(home, *, sshd_config=None, extra_env=None) -> str:
    """shells.command() under this machine's bash. With sshd_config: started by a parent whose arguments are an sshd
    listener's (`sshd -D -f FILE`), as the probe's ancestors are on a host."""
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", **(extra_env or {})}
    if sshd_config is None:
        argv = ["bash", "-c", shells.command()]
    else:
        env["FLEET_T"] = shells.command()
        argv = ["bash", "-c", 'bash -c "$FLEET_T"; true', "sshd", "-D", "-f", str(sshd_config)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env).stdout


def plain(home, flags, ask, extra_env=None) -> str:
    return subprocess.run(["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "SSH_CLIENT=127.0.0.1 50000 22",
                           *[f"{k}={v}" for k, v in (extra_env or {}).items()], "setsid", "-w", "bash", *flags,
                           "-c", ask], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL).stdout


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    (home / ".bashrc").write_text(BASHRC)
    (home / ".nccl.conf").write_text(NCCL_CONF)
    text = run_trace(home)
    return home, text, shells.parse(text)


def test_awk_names_the_line_that_unset_a_family_variable_and_forgets_it_once_set_again():
    out = awk([ps4("/root/.bashrc", 1, None, "/usr/bin", "unset NCCL_DEBUG CUDA_LAUNCH_BLOCKING"),
               ps4("/root/.bashrc", 2, None, "/usr/bin", "export CUDA_LAUNCH_BLOCKING=0"),
               ps4("/root/.bashrc", 3, None, "/usr/bin", "unset -v TORCH_NCCL_BLOCKING_WAIT"),
               ps4("/root/.bashrc", 4, None, "/usr/bin", "true"),
               "@@fam CUDA_LAUNCH_BLOCKING=0"])
    gone = sorted(line.split("\t")[1:5] for line in out.splitlines() if line.startswith("@@famunset\t"))
    assert gone == [["NCCL_DEBUG", "0", "/root/.bashrc", "1"], ["TORCH_NCCL_BLOCKING_WAIT", "0", "/root/.bashrc", "3"]]
    assert "@@famset\tCUDA_LAUNCH_BLOCKING\t0\t/root/.bashrc\t2\texport CUDA_LAUNCH_BLOCKING=0\t" in out.splitlines()


def test_awk_names_the_last_ulimit_line_that_set_each_limit_and_not_a_query():
    out = awk([ps4("/etc/profile.d/l.sh", 4, None, "/usr/bin", "ulimit -Sn 4096"),
               ps4("/root/.bashrc", 7, None, "/usr/bin", "ulimit -l 64"),
               ps4("/root/.bashrc", 8, None, "/usr/bin", "ulimit -n"),
               ps4("/root/.bashrc", 9, None, "/usr/bin", "true")])
    set_by = sorted(line.split("\t")[1:6] for line in out.splitlines() if line.startswith("@@limset\t"))
    assert set_by == [["memlock", "0", "/root/.bashrc", "7", "ulimit -l 64"],
                      ["nofile", "0", "/etc/profile.d/l.sh", "4", "ulimit -Sn 4096"]]


def test_each_kinds_limits_are_what_a_plain_shell_of_that_kind_says(traced):
    home, _, found = traced
    for kind, flags in (("noninteractive", ()), ("interactive", ("+m", "-i")), ("login", ("-l",))):
        asked = plain(home, flags, "ulimit -n; ulimit -l").split()
        assert [str(found[kind]["limits"]["nofile"]), str(found[kind]["limits"]["memlock"])] == asked, kind
    assert found["interactive"]["limits"]["nofile"] == 256
    assert shells.where(found["interactive"]["limits_set_by"]["nofile"], str(home)) == "~/.bashrc:3"
    assert found["noninteractive"]["limits_set_by"] == {}      # ~/.bashrc returned before its ulimit line
    assert found["bare"]["limits"]["nofile"] == found["noninteractive"]["limits"]["nofile"]


def test_a_variable_a_startup_line_unset_names_that_line(traced):
    home, _, found = traced
    asked = plain(home, ("+m", "-i"), 'echo "${CUDA_LAUNCH_BLOCKING-unset}"').split()
    assert asked == ["unset"]
    unset = found["interactive"]["unset_by"]
    assert shells.where(unset["CUDA_LAUNCH_BLOCKING"], str(home)) == "~/.bashrc:4"
    assert "NCCL_NVLS_ENABLE" in unset and "TORCH_NCCL_BLOCKING_WAIT" not in unset   # set again at line 7
    assert found["noninteractive"]["unset_by"] == {}


def test_ncclconf_lines_are_read_where_the_environment_lacks_the_name(traced):
    home, _, found = traced
    conf = str(home / ".nccl.conf")
    # `ssh host cmd` exports NCCL_P2P_DISABLE=1 (~/.bashrc:1): the environment wins over the file (NCCL's param.cc)
    assert found["noninteractive"]["nccl_conf"] == {
        "NCCL_ALGO": {"value": "Ring", "file": conf, "line": 1},
        "NCCL_NVLS_ENABLE": {"value": "0", "file": conf, "line": 4}}
    assert found["bare"]["nccl_conf"]["NCCL_P2P_DISABLE"] == {"value": "0", "file": conf, "line": 3}


def test_nccl_conf_file_takes_the_users_files_place_in_the_kinds_that_set_it(tmp_path):
    (tmp_path / ".bashrc").write_text('export NCCL_CONF_FILE="$HOME/other.conf"\n')
    (tmp_path / ".nccl.conf").write_text("NCCL_ALGO=Ring\n")
    (tmp_path / "other.conf").write_text("NCCL_PROTO=Simple\n")
    found = shells.parse(run_trace(tmp_path))
    assert found["noninteractive"]["nccl_conf"] == {
        "NCCL_PROTO": {"value": "Simple", "file": str(tmp_path / "other.conf"), "line": 1}}
    assert found["bare"]["nccl_conf"] == {"NCCL_ALGO": {"value": "Ring", "file": str(tmp_path / ".nccl.conf"), "line": 1}}


def test_decide_and_verify_judge_the_conf_the_unset_and_the_limit_naming_each_line(traced, monkeypatch):
    from fleet.decide import families as decide_families
    from fleet.remote.verify import jobenv
    from verify_program import fresh

    home, text, found = traced
    findings, notes = decide_families.judge(found, shells.where)
    assert not [f for f in findings if f["variable"] in ("NCCL_ALGO", "NCCL_NVLS_ENABLE")]
    assert any("~/.nccl.conf:1 sets NCCL_ALGO='Ring'" in n and "may slow a job" in n for n in notes)
    assert any("~/.nccl.conf:4 sets NCCL_NVLS_ENABLE='0'" in n and "deliberate" in n for n in notes)
    assert any(n.startswith("interactive shells: ~/.bashrc:3 sets ulimit -n 256: few open files") for n in notes)
    # the table calls NCCL_NVLS_ENABLE deliberate: unsetting it is said, naming the line
    assert any(n.startswith("interactive shells: ~/.bashrc:4 unsets NCCL_NVLS_ENABLE") for n in notes)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FLEET_VERIFY_TRACE", "true")
    program = fresh(run=False)
    program.shells = trace.parse(text)
    jobenv.job_variables(program)
    checks = {c["name"]: c for c in program.checks}
    detail = checks["job_variables_interactive"]["detail"]
    assert "ulimit -n 256 set at ~/.bashrc:3" in detail
    assert "NCCL_ALGO='Ring' set at ~/.nccl.conf:1 (NCCL's config file)" in detail
    assert "NCCL_NVLS_ENABLE unset at ~/.bashrc:4 (a deliberate setting there)" in detail


def test_a_failing_row_in_an_nccl_conf_fails_verify_naming_the_file_and_line(tmp_path, monkeypatch):
    from fleet.remote.verify import jobenv
    from verify_program import fresh

    (tmp_path / ".nccl.conf").write_text("\nNCCL_P2P_LEVEL=LOC\n")
    text = run_trace(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("FLEET_VERIFY_TRACE", "true")
    program = fresh(run=False)
    program.shells = trace.parse(text)
    jobenv.job_variables(program)
    for check in program.checks:
        assert not check["passed"] and "NCCL_P2P_LEVEL='LOC' set at ~/.nccl.conf:2" in check["detail"], check


def test_the_session_takes_the_first_setenv_line_of_the_sshds_own_config_and_the_users_environment(tmp_path):
    config = tmp_path / "sshd_config"
    config.write_text(SSHD_CONFIG)
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "environment").write_text("# mine\nCUDA_DEVICE_ORDER=PCI_BUS_ID\nNCCL_SOCKET_IFNAME=eth0\n")
    (tmp_path / ".bashrc").write_text("")
    found = shells.parse(run_trace(tmp_path, sshd_config=config))
    rows = {(e["name"], e["file"], e["line"], e["value"]) for e in found["etc_environment"]}
    env_file = str(tmp_path / ".ssh" / "environment")
    assert rows >= {("NCCL_NVLS_ENABLE", str(config), 5, "0"), ("NCCL_SOCKET_IFNAME", str(config), 5, "lo"),
                    ("CUDA_DEVICE_ORDER", env_file, 2, "PCI_BUS_ID"), ("NCCL_SOCKET_IFNAME", env_file, 3, "eth0")}
    assert not [r for r in rows if r[0] in ("NCCL_DEBUG", "NCCL_P2P_LEVEL") or r[3] == "1"]   # the first line, first value
    for kind in ("noninteractive", "interactive", "login"):
        shell = found[kind]
        # SetEnv comes after ~/.ssh/environment (OpenSSH session.c do_setup_env)
        assert shell["families"]["NCCL_SOCKET_IFNAME"] == "lo" and shell["families"]["NCCL_NVLS_ENABLE"] == "0"
        assert shell["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        setter = shell["set_by"]["NCCL_NVLS_ENABLE"]
        assert (setter["file"], setter["line"], setter["text"]) == (str(config), 5, "SetEnv NCCL_NVLS_ENABLE=0")
    assert found["bare"]["families"] == {}      # a process that reads no startup file starts without sshd's
    from fleet.decide import families as decide_families
    _, notes = decide_families.judge(found, shells.where)
    assert any("~/sshd_config:5 sets NCCL_NVLS_ENABLE='0'" in n and "deliberate" in n for n in notes)
    # AcceptEnv: every line kept; the one that admits a family's names is said (LANG LC_* is not)
    assert found["accept_env"] == [{"file": str(config), "line": 2, "patterns": ["LANG", "LC_*"]},
                                   {"file": str(config), "line": 3, "patterns": ["NCCL_*"]}]
    said = [n for n in notes if "AcceptEnv" in n]
    assert len(said) == 1 and f"{config}:3 AcceptEnv lets a client send NCCL_*" in said[0]


def test_without_an_sshd_ancestor_the_session_reads_no_users_environment(tmp_path):
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "environment").write_text("NCCL_SOCKET_IFNAME=eth0\n")
    found = shells.parse(run_trace(tmp_path))
    # this machine's /etc/ssh/sshd_config leaves PermitUserEnvironment at its default, no
    assert not [e for e in found["etc_environment"] if e["file"].endswith("/.ssh/environment")]
    assert "NCCL_SOCKET_IFNAME" not in found["noninteractive"]["families"]


def test_a_limit_the_session_sets_is_healths_a_kind_that_keeps_it_says_nothing():
    assert families.judge_limits({"nofile": 256}, {}, {"nofile": 256}) == []
    low = families.judge_limits({"nofile": 256, "memlock": "unlimited"}, {}, {"nofile": 1048576, "memlock": 64})
    assert [(f["limit"], f["value"], f["setter"]) for f in low] == [("ulimit -n", 256, None)]
    assert families.judge_limits({"nofile": 65536}, {"nofile": {"file": "/root/.bashrc", "line": 2}}, {}) == []


def test_a_tracked_variable_the_session_gave_and_a_startup_line_unset_is_said_where_it_mattered(tmp_path, monkeypatch):
    """CUDA_VISIBLE_DEVICES=0 from sshd's SetEnv (a partition of the GPUs), unset by ~/.bashrc in interactive shells:
    the interactive kind has none, the line is named in the facts and in verify's detail; a name set again after its
    unset by a line the trace cannot read (`read`) is not called unset."""
    from fleet.remote.verify import jobenv
    from verify_program import fresh

    config = tmp_path / "sshd_config"
    config.write_text("SetEnv CUDA_VISIBLE_DEVICES=0 NCCL_DEBUG=WARN\n")
    (tmp_path / ".bashrc").write_text("case $- in *i*) ;; *) return;; esac\nunset CUDA_VISIBLE_DEVICES NCCL_DEBUG\n"
                                      "read -r NCCL_DEBUG <<< INFO; export NCCL_DEBUG\n")
    text = run_trace(tmp_path, sshd_config=config)
    found = shells.parse(text)
    assert plain(tmp_path, ("+m", "-i"), 'echo "${CUDA_VISIBLE_DEVICES-unset}"',
                 {"CUDA_VISIBLE_DEVICES": "0"}).split() == ["unset"]
    assert found["noninteractive"]["CUDA_VISIBLE_DEVICES"] == "0" and found["interactive"]["CUDA_VISIBLE_DEVICES"] is None
    assert shells.where(found["interactive"]["unset_by"]["CUDA_VISIBLE_DEVICES"], str(tmp_path)) == "~/.bashrc:2"
    assert "NCCL_DEBUG" not in found["interactive"]["unset_by"] and found["interactive"]["families"]["NCCL_DEBUG"] == "INFO"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("FLEET_VERIFY_TRACE", "true")
    program = fresh(run=False)
    program.shells = trace.parse(text)
    jobenv.job_variables(program)
    detail = {c["name"]: c["detail"] for c in program.checks}["job_variables_interactive"]
    assert f"CUDA_VISIBLE_DEVICES unset at ~/.bashrc:2, which {config}:1 gives every SSH session" in detail


def test_under_usepam_the_session_takes_pam_env_conf_then_etc_environment_and_setenv_last(tmp_path):
    """UsePAM yes in the serving sshd's config: pam_env's two files (bound over this machine's, in a mount namespace of
    the test's own), each line named; /etc/environment after pam_env.conf (pam_env reads its conf first), sshd's
    SetEnv after both (OpenSSH session.c); a pam_env.conf value that expands ${...} or @{...} is not read."""
    config = tmp_path / "sshd_config"
    config.write_text("UsePAM yes\nSetEnv NCCL_DEBUG=WARN\n")
    conf = tmp_path / "pam_env.conf"
    conf.write_text("# pam_env.conf(5)\nNCCL_ALGO DEFAULT=Tree\nNCCL_PROTO DEFAULT=LL OVERRIDE=Simple\n"
                    "NCCL_DEBUG DEFAULT=INFO\nCUDA_CACHE_PATH DEFAULT=@{HOME}/.nv\n")
    env = tmp_path / "environment"
    env.write_text('NCCL_ALGO="Ring"\nexport CUDA_LAUNCH_BLOCKING=1\n')
    (tmp_path / ".bashrc").write_text("")
    script = tmp_path / "trace.sh"
    limits = tmp_path / "limits.conf"
    limits.write_text("# limits.conf(5)\n*  soft  nofile  4096\nroot  hard  nofile  8192\nroot  -  memlock  unlimited\n"
                      "root  soft  nproc  100\n")
    script.write_text(f"mount --bind {conf} /etc/security/pam_env.conf && mount --bind {env} /etc/environment && "
                      f"mount --bind {limits} /etc/security/limits.conf && "
                      f"exec bash -c 'bash -c \"$FLEET_T\"; true' sshd -D -f {config}\n")
    text = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", str(script)], capture_output=True,
                          text=True, timeout=600, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
                                                       "FLEET_T": shells.command()}).stdout
    found = shells.parse(text)
    rows = [(e["name"], e["file"], e["line"], e["value"]) for e in found["etc_environment"]]
    assert rows == [("NCCL_ALGO", "/etc/security/pam_env.conf", 2, "Tree"),
                    ("NCCL_PROTO", "/etc/security/pam_env.conf", 3, "Simple"),
                    ("NCCL_DEBUG", "/etc/security/pam_env.conf", 4, "INFO"),
                    ("NCCL_ALGO", "/etc/environment", 1, "Ring"),
                    ("CUDA_LAUNCH_BLOCKING", "/etc/environment", 2, "1"),
                    ("NCCL_DEBUG", str(config), 2, "WARN")]
    shell = found["noninteractive"]
    assert {k: shell["families"][k] for k in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG", "CUDA_LAUNCH_BLOCKING")} == {
        "NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_DEBUG": "WARN", "CUDA_LAUNCH_BLOCKING": "1"}
    assert "CUDA_CACHE_PATH" not in shell["families"]
    assert shells.where(shell["set_by"]["CUDA_LAUNCH_BLOCKING"], str(tmp_path)) == "/etc/environment:2"
    assert shells.where(shell["set_by"]["NCCL_ALGO"], str(tmp_path)) == "/etc/environment:1"
    # pam_limits' lines for this user (root: `*` is not root's), which health names as the session's ulimit's source
    assert found["limits_conf"] == [
        {"file": "/etc/security/limits.conf", "line": 3, "type": "hard", "item": "nofile", "value": "8192"},
        {"file": "/etc/security/limits.conf", "line": 4, "type": "-", "item": "memlock", "value": "unlimited"}]
    assert families.limits_line(found["limits_conf"], "memlock", "unlimited") == "/etc/security/limits.conf:4"
    assert families.limits_line(found["limits_conf"], "nofile", 8192) is None     # hard: not what ulimit -n shows


def test_health_names_the_limits_conf_line_of_the_sessions_limit():
    from fleet.decide.health import _resource_findings

    rows = [{"file": "/etc/security/limits.d/90-x.conf", "line": 2, "type": "soft", "item": "nofile", "value": "512"}]
    found = {f.field: f.value for f in _resource_findings({"nofile": 512, "memlock_kb": 64}, rows)}
    assert found == {"ulimit -n": "512 (set at /etc/security/limits.d/90-x.conf:2)", "ulimit -l": "64 KB"}
