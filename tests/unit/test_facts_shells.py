"""The shells section run for real (this machine's bash, a temp HOME): values per shell kind and the lines
that changed LD_LIBRARY_PATH, named by file:line."""

import subprocess

import pytest

from fleet.decide.gpu import compat_harm
from fleet.decide.loader import judged_lines
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
    seen = shells.compat_lines(found)
    assert len(seen) == 1 and "harm" not in seen[0]          # the facts layer observes; decide judges
    observed = shells.observed(seen)[0]
    assert observed["says"] == f"~/.bashrc:9 (via ~/pod_setup.sh:2) puts {COMPAT} first" and "harm" not in observed
    harm = compat_harm("x86_64-dgpu", ["NVIDIA H100"], "580.159.04", "580.95.05")
    line = judged_lines([observed], harm)[0]
    assert line["where"] == "~/.bashrc:9" and line["origin"] == "~/pod_setup.sh:2"
    assert line["shells"] == ["interactive"]
    assert line["says"] == (f"~/.bashrc:9 (via ~/pod_setup.sh:2) puts {COMPAT} first: "
                            "error 803 under driver 580.159.04 (cuda-compat 580.95.05 is not newer)")
    assert list(line) == ["where", "origin", "file", "line", "text", "effect", "shells", "says", "harm", "claim"]
    assert line["claim"] == "neutralizes"
    etc = judged_lines([{**observed, "file": "/etc/environment", "where": "/etc/environment:3"}], harm)[0]
    assert etc["claim"].startswith("overrides in every shell (cron")


def test_fleets_own_hook_is_not_a_compat_line():
    change = {"before": None, "after": COMPAT, "file": shells.HOOK_FILE, "line": 1, "text": "", "via": []}
    assert shells.compat_lines({"home": "/root", "etc_environment": [], "interactive": {"ld_changes": [change]}}) == []


def test_a_missing_shell_trace_is_an_error():
    with pytest.raises(ValueError):
        shells.parse("@@home /root\n@@shell interactive\n@@rc 0\n")


# Each kind's startup file marks that it started, then waits (up to 5 s) until every traced kind has: the kinds are
# traced at once only if each sees all three markers. A python of the user's (a wrapper logging each start, then the
# real interpreter) is what python3, python and pip's #! name in every kind: each kind starts it once.
WAITING = """\
export PATH="$HOME/venv/bin:$PATH"
case $- in *i*) k=interactive ;; *) k=${FLEET_KIND:-noninteractive} ;; esac
: > "$HOME/started.$k"
for i in $(seq 50); do set -- "$HOME"/started.*; [ $# -ge 3 ] && break; sleep 0.1; done
export LD_LIBRARY_PATH=/opt/saw$#
export FLEET_KIND_SEEN=$k
"""


def test_every_kind_is_traced_at_once_and_starts_its_python_once(tmp_path):
    (tmp_path / ".bashrc").write_text(WAITING)
    (tmp_path / ".profile").write_text('FLEET_KIND=login . "$HOME/.bashrc"\n')
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python3").write_text('#!/bin/bash\necho "$FLEET_KIND_SEEN" >> "$HOME/python-starts"\n'
                                  'exec /usr/bin/python3 "$@"\n')
    (venv / "python3").chmod(0o755)
    (venv / "python").symlink_to("python3")
    (venv / "pip").write_text(f"#!{venv}/python3\nprint('pip')\n")
    (venv / "pip").chmod(0o755)
    found = run(tmp_path)
    assert {k: found[k]["LD_LIBRARY_PATH"] for k in shells.KINDS} == {k: "/opt/saw3" for k in shells.KINDS}
    starts = (tmp_path / "python-starts").read_text().split()
    assert sorted(starts) == sorted(shells.KINDS)            # one start per kind, for python3, python and pip
    for kind in shells.KINDS:
        assert found[kind]["commands"]["pip"]["python"] == f"{venv}/python3"
        assert set(found[kind]["pythons"]) == {f"{venv}/python3", f"{venv}/python"}
        assert all(p["ran"] and p["prefix"] for p in found[kind]["pythons"].values())
