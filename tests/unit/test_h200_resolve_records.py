"""Issue 45 item 4 on the lent H200 (bench/h200/resolve.sh; its transcript under tests/data/h200-device/<run>/): each
trap set by hand after a converged apply, every kind asked by a plain SSH client (ask_kinds.py), then what fleet said
(the host's own verify record, one `CHECK {json}` line per check), then undone.

RUNS lists the runs whose transcripts are committed: the lead adds "resolve" once bench/h200/resolve.sh has run
there. What each trap must show is EXPECTED, the same table the lab asserts (tests/lab/test_resolve_lab.py); the
script's own TRAPS table must name each of them (a test below), so the two cannot drift apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "h200-device"
RUNS: list[str] = ["resolve"]      # tests/data/h200-device/resolve/ (bench/h200/resolve.sh on the lent one-GPU H200)
# trap -> (the kind it changes as ask_kinds.py names it, the check that must fail, words its detail must hold)
EXPECTED = {
    "alias": ("bash -i", "user_commands_interactive", ["an alias: `alias python3=/usr/bin/python3` at ~/.bashrc:",
                                                       "remove the alias at ~/.bashrc:"]),
    "function": ("bash -i", "user_commands_interactive", ["a shell function defined at ~/.bashrc:",
                                                          "remove the function python3() at ~/.bashrc:"]),
    "hash": ("bash -i", "user_commands_interactive", ["by `hash -p ", "remove the `hash -p` at ~/.bashrc:"]),
    "PATH": ("bash -i", "user_commands_interactive", ["PATH last set at ~/.bashrc:", "env_hooks_venv_on_path"]),
    "PYTHONPATH": ("bash -l", "user_commands_login", ["PYTHONPATH=/root/pytorch-src (set at ~/.profile:",
                                                      "take /root/pytorch-src off PYTHONPATH at ~/.profile:"]),
    "PYTHONHOME": ("bash -l", "user_commands_login", ["PYTHONHOME=/usr/lib/nothing-here (set at ~/.profile:",
                                                      "remove PYTHONHOME at ~/.profile:"]),
    "pth": ("ssh host cmd", "torch_imports", ["zz-pytorch-src.pth:2 (a .pth file site.py reads at every start)",
                                              "delete line 2 of "]),
    "user-site": ("bash -l", "user_commands_login", ["holds a torch, found before site-packages",
                                                     "PYTHONNOUSERSITE=1"]),
    "venv-activated": ("bash -i", "user_commands_interactive", ["the environment /opt/projenv activated at",
                                                                "set python_env=/opt/projenv"]),
    "conda-activated": ("bash -i", "user_commands_interactive", ["the environment /opt/condaenv activated at",
                                                                 "set python_env=/opt/condaenv"]),
}

# an activation after fleet's guard: the environment that kind runs, and the variable its activate script sets
ACTIVATED = {"venv-activated": ("/opt/projenv", "virtual_env"), "conda-activated": ("/opt/condaenv", "conda_prefix")}


def sections(text: str) -> dict[str, str]:
    """The transcript cut at each `# trap NAME:` note -> {NAME: its text up to the next note of a trap, the last one up
    to `# every trap undone` (the host asked again once put back is no trap's)}."""
    parts = re.split(r"^# trap ([\w-]+): ", text.split("\n# every trap undone")[0], flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def kinds(section: str) -> dict[str, dict]:
    """ask_kinds.py's JSON lines in a section -> {kind: answer}."""
    return {row["kind"]: row for row in (json.loads(line) for line in section.splitlines()
                                         if line.startswith('{"kind"'))}


def checks(section: str) -> dict[str, dict]:
    return {c["name"]: c for c in (json.loads(line[6:]) for line in section.splitlines() if line.startswith("CHECK "))}


def held(run: str) -> None:
    """Every trap of the run: the host's plain shell of that kind got another python (or no torch), and fleet's
    check of that kind failed naming the cause's line and its own fix; after the last, verify passed again."""
    text = (DATA / run / "transcript.txt").read_text()
    found = sections(text)
    assert set(found) == set(EXPECTED), sorted(found)
    for name, (kind, check, words) in EXPECTED.items():
        asked = kinds(found[name])[kind]
        torch = asked.get("python3_torch") or {}
        assert "error" in torch or not str(torch.get("torch", "")).startswith("/"), (name, asked)
        got = checks(found[name])[check]
        assert not got["passed"] and all(w in got["detail"] for w in words), (name, got)
        # the env hook's fix only where PATH order is a cause that detail names (on the H200 the user-site trap's PATH
        # line also sends `pip` to /usr/bin/pip, which the lab's hosts do not have: that part is PATH's, rightly)
        if "PATH last set" not in got["detail"]:
            assert "env_hooks_venv_on_path" not in got["detail"], (name, got)
        if name in ACTIVATED:    # the user's environment runs, and VIRTUAL_ENV / CONDA_PREFIX agree with it
            env, var = ACTIVATED[name]
            assert torch.get("prefix") == env and torch.get(var) == env, (name, asked)
    tail = text[text.index("# every trap undone"):]
    assert re.search(r"^h100\t.*\tpassed\t", tail, re.M), tail[:2000]


def test_the_h200_script_sets_each_trap_the_lab_asserts():
    script = (ROOT / "bench" / "h200" / "resolve.sh").read_text()
    names = re.findall(r'^  "([\w-]+)\|', script, re.M)
    assert names == list(EXPECTED), names
    assert "ask \"trap $name\"" in script and "checks" in script


def test_each_committed_h200_run_names_each_cause_with_its_line_and_fix():
    for run in RUNS:
        held(run)
