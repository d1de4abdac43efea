"""decide.shells judges what each kind of process reaches, from the facts this machine's real bash gives (a temp
HOME, facts.shells' own trace): a CUDA_VISIBLE_DEVICES hiding GPUs is named with its value and file:line, another
toolkit's nvcc and CUDA_HOME are named, a python3 without the proved torch and a pip that refuses are named; the
driver's visibility rule agrees with the lent H200's answers."""

import re
import subprocess
from pathlib import Path

import pytest

from fleet.decide import shells as judge
from fleet.facts import shells
from toolkits import lay_toolkit

CAPTURED = Path(__file__).parents[1] / "data" / "captured" / "h200-device" / "visible.txt"
UUID = "GPU-b07a36d3-7282-1504-cfd0-b1522df2a917"
ONE = [{"index": 0, "uuid": UUID}]


def test_the_visibility_rule_is_the_real_drivers():
    for line in CAPTURED.read_text().splitlines():
        found = re.match(r"CUDA_VISIBLE_DEVICES='([^']*)': cuInit (\d+).* torch (\d+) ", line)
        if found:
            value = None if found[1] == "<unset>" else found[1]
            assert len(judge.visible(value, ONE)) == int(found[3]), line
    eight = [{"uuid": f"GPU-aaaa{i:04x}"} for i in range(8)]
    assert judge.visible("3,1,9,2", eight) == [3, 1] and judge.visible("GPU-aaaa0005", eight) == [5]
    assert judge.visible("GPU-aaaa", eight) == [] and judge.visible("0,0", eight) == [0]


def facts_of(home: Path, toolkit: Path, torch: str | None = None) -> dict:
    out = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=300,
                         env={"HOME": str(home), "PATH": "/usr/bin:/bin"}).stdout
    return {"shells": shells.parse(out), "gpus": ONE, "torch": {"path": torch} if torch else None}


@pytest.fixture(scope="module")
def trapped(tmp_path_factory):
    """The issue's traps and two of the family, in one HOME: CUDA_VISIBLE_DEVICES=1 at the top of ~/.bashrc,
    another toolkit's nvcc first and its CUDA_HOME at the end of ~/.bashrc, CUDA_VISIBLE_DEVICES emptied for login
    shells, CUDA_PATH pointing at the old toolkit in ~/.profile."""
    root = tmp_path_factory.mktemp("traps")
    home, old, new = root / "home", root / "cuda-12.4", root / "cuda-13.0"
    home.mkdir()
    lay_toolkit(old, "12.4.1")
    lay_toolkit(new, "13.0.2")
    (home / ".bashrc").write_text(f"export CUDA_VISIBLE_DEVICES=1\ncase $- in *i*) ;; *) return;; esac\n"
                                  f"export PATH={old}/bin:$PATH\nexport CUDA_HOME={old}\n")
    (home / ".profile").write_text(f". ~/.bashrc\nexport CUDA_VISIBLE_DEVICES=\nexport CUDA_PATH={old}\n")
    facts = facts_of(home, new)
    return home, old, new, facts, judge.judge(facts, str(new), "/opt/fleet/venv")


def test_hidden_gpus_are_named_with_the_variable_value_and_line(trapped):
    home, old, new, facts, said = trapped
    hidden = {f["kind"]: f for f in said["findings"] if f["mechanism"] == "visibility"}
    assert set(hidden) == {"noninteractive", "interactive", "login"}
    assert hidden["interactive"]["where"] == "~/.bashrc:1" and hidden["interactive"]["value"] == "1"
    assert hidden["login"]["where"] == "~/.profile:2" and hidden["login"]["value"] == ""
    assert "0 of the host's 1 GPUs visible (cuInit 100" in hidden["noninteractive"]["says"]


def test_another_toolkits_nvcc_and_cuda_home_are_named(trapped):
    home, old, new, facts, said = trapped
    toolkit = [f for f in said["findings"] if f["mechanism"] == "toolkit"]
    nvcc = next(f for f in toolkit if f["kind"] == "interactive" and f["variable"] == "PATH")
    assert f"runs {old}/bin/nvcc (CUDA 12.4.1)" in nvcc["says"] and nvcc["where"] == "~/.bashrc:3"
    home_ = next(f for f in toolkit if f["kind"] == "interactive" and f["variable"] == "CUDA_HOME")
    assert home_["value"] == str(old) and home_["where"] == "~/.bashrc:4"
    path = next(f for f in toolkit if f["kind"] == "login" and f["variable"] == "CUDA_PATH")
    assert path["where"] == "~/.profile:3"


def test_a_python3_without_the_proved_torch_is_named(trapped):
    home, old, new, facts, said = trapped
    python = [f["says"] for f in said["findings"] if f["mechanism"] == "python" and f["kind"] == "noninteractive"]
    assert any("`python3` is /usr/bin/python3" in s and "has no torch" in s for s in python), python


def test_the_bare_kind_keeps_its_gpu_and_is_judged_on_visibility_only(trapped):
    home, old, new, facts, said = trapped
    assert facts["shells"]["bare"]["CUDA_VISIBLE_DEVICES"] is None
    assert not [f for f in said["findings"] if f["kind"] == "bare"]


def test_a_torch_in_the_systems_python_is_named_with_why_fleet_does_not_use_it():
    shells = {"home": "/root", "noninteractive": {"commands": {"python3": {"path": "/usr/bin/python3"}},
                                                  "pythons": {"/usr/bin/python3": {"torch": "/usr/lib/python3/dist-packages/torch"}}}}
    said = judge.judge({"shells": shells, "gpus": ONE}, None, "/opt/fleet/venv",
                       "/opt/fleet/venv/lib/python3.12/site-packages/torch")
    assert any("/usr/bin/python3 has its own torch at /usr/lib/python3/dist-packages/torch: not used" in n and
               "set python_env" in n for n in said["notes"]), said["notes"]
