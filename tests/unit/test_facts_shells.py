"""The shells section run for real (this machine's bash, a temp HOME): values per shell kind and the lines
that changed LD_LIBRARY_PATH, named by file:line."""

import subprocess

import pytest

from fleet.facts import shells

COMPAT = "/usr/local/cuda-13.0/compat"

BASHRC = """\
export LD_LIBRARY_PATH=/opt/top${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# If not running interactively, don't do anything
case $- in
    *i*) ;;
      *) return;;
esac
read -r answer || true
echo 'welcome'
. "$HOME/pod_setup.sh"
"""
SETUP = f"""\
export CUDA_HOME=/usr/local/cuda-13.0
export LD_LIBRARY_PATH={COMPAT}:$LD_LIBRARY_PATH
export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123
"""
PROFILE = """\
if [ -f "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi
export LD_LIBRARY_PATH=/opt/login:$LD_LIBRARY_PATH
"""


def run(home) -> dict:
    out = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=600,
                         env={"HOME": str(home), "PATH": "/usr/bin:/bin"}).stdout
    return shells.parse(out)


@pytest.fixture
def traced(tmp_path):
    (tmp_path / ".bashrc").write_text(BASHRC)
    (tmp_path / "pod_setup.sh").write_text(SETUP)
    (tmp_path / ".profile").write_text(PROFILE)
    return tmp_path, run(tmp_path)


def test_each_shell_kind_gets_its_own_values(traced):
    home, found = traced
    assert found["home"] == str(home)
    assert found["noninteractive"]["LD_LIBRARY_PATH"] == "/opt/top"
    assert found["interactive"]["LD_LIBRARY_PATH"] == f"{COMPAT}:/opt/top"
    assert found["interactive"]["CUDA_HOME"] == "/usr/local/cuda-13.0"
    assert found["noninteractive"]["CUDA_HOME"] is None
    # login: ~/.profile sources ~/.bashrc (which returns early), then adds its own directory
    assert found["login"]["LD_LIBRARY_PATH"] == "/opt/login:/opt/top"
    assert all(found[k]["rc"] == 0 for k in shells.KINDS)


def test_every_line_that_changed_the_path_is_named(traced):
    home, found = traced
    inter = [(c["file"], c["line"]) for c in found["interactive"]["ld_changes"]]
    assert (str(home / ".bashrc"), 1) in inter
    assert (str(home / "pod_setup.sh"), 2) in inter
    sourced = next(c for c in found["interactive"]["ld_changes"] if c["file"].endswith("pod_setup.sh"))
    assert sourced["via"] == [f"{home}/.bashrc:9"] and sourced["before"] == "/opt/top"
    login = [(c["file"], c["line"]) for c in found["login"]["ld_changes"]]
    assert (str(home / ".profile"), 2) in login


def test_only_path_changing_lines_leave_the_host(traced):
    _, found = traced
    texts = " ".join(c["text"] for k in shells.KINDS for c in found[k]["ld_changes"])
    assert "hf_" not in texts and "welcome" not in texts


def test_compat_lines_name_the_user_line_and_the_harm(traced):
    home, found = traced
    lines = shells.compat_lines(found, "580.159.04", {"version": "580.95.05"}, "x86_64-dgpu", ["NVIDIA H100"])
    assert len(lines) == 1
    line = lines[0]
    assert line["where"] == "~/.bashrc:9" and line["origin"] == "~/pod_setup.sh:2"
    assert line["shells"] == ["interactive"]
    assert line["says"] == (f"~/.bashrc:9 (via ~/pod_setup.sh:2) puts {COMPAT} first: "
                            "error 803 under driver 580.159.04 (cuda-compat 580.95.05 is not newer)")


def test_compat_harm_follows_forward_compatibility_rules():
    # NVIDIA forward compatibility guide: a compat libcuda older than the kernel driver -> 803; GeForce -> 804
    change = {"before": None, "after": COMPAT, "file": "/etc/x", "line": 1, "text": "", "via": []}
    found = {"home": "/root", "etc_environment": [], "interactive": {"ld_changes": [change]}}
    assert "803" in shells.compat_lines(found, "580.159.04", {"version": "580.95.05"}, "x86_64-dgpu")[0]["harm"]
    assert "804" in shells.compat_lines(found, "570.1", {"version": "580.95.05"}, "x86_64-dgpu",
                                        ["NVIDIA GeForce RTX 4090"])[0]["harm"]
    assert "803" not in shells.compat_lines(found, "570.133.20", {"version": "580.95.05"}, "x86_64-dgpu")[0]["harm"]
    fleet_own = {**change, "file": shells.HOOK_FILE}
    assert shells.compat_lines({**found, "interactive": {"ld_changes": [fleet_own]}}, "570.1", None, "x") == []


def test_a_missing_shell_trace_is_an_error():
    with pytest.raises(ValueError):
        shells.parse("@@home /root\n@@shell interactive\n@@rc 0\n")
