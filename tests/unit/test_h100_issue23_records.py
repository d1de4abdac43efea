"""Issue 23 on the real H100 (driver 580.159.04, cuda-compat 580.95.05 installed, so compat must reach no
process), over real SSH (the carried sshd), run by tests/data/h100-device/issue23/run.sh on 2026-11-24.
Each trap is set by hand, then `fleet apply`, then every kind of process is asked by a plain paramiko client
(ask.py, not fleet's code) which libcuda.so.1 it loads, what cuInit answers and whether torch has CUDA.
`before/`: fleet as it was before this issue's work (main at e86dd01): the records, unedited."""

import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "h100-device" / "issue23"
COMPAT_LIB = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
DRIVER_LIB = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
KINDS = ("ssh host cmd", "bash -l", "bash -i", "bare (env -i)")


def sections(run: str) -> dict[str, list[str]]:
    """The transcript by its '# ...' notes: each note's title (up to ':') -> its steps ('$ command' ... '[exit N]')."""
    text = (DATA / run / "transcript.txt").read_text()
    out: dict[str, list[str]] = {}
    for block in re.split(r"\n(?=# )", text):
        title = block.split("\n", 1)[0].lstrip("# ").split(":")[0]
        out[title] = re.split(r"\n(?=\$ )", block)[1:]
    return out


def asked(step: str) -> dict[str, tuple[int, str, str]]:
    """ask.py's answer: kind -> (cuInit code, torch.cuda.is_available, the libcuda file loaded)."""
    rows = re.findall(r"^(ssh host cmd|bash -l|bash -i|bare \(env -i\))\s+cuInit (\d+) torch.cuda.is_available (\w+) "
                      r"libcuda (\S+)", step, re.M)
    assert len(rows) == 4, step
    return {kind: (int(code), avail, lib) for kind, code, avail, lib in rows}


def exit_of(step: str) -> int:
    return int(re.findall(r"\[exit (\d+)\]", step)[-1])


def asks(steps):
    return [asked(s) for s in steps if "ask.py" in s.split("\n", 1)[0]]


def applies(steps):
    return [s for s in steps if s.startswith("$ F apply") and "--check" not in s.split("\n", 1)[0]]


CLEAN = {kind: (0, "True", DRIVER_LIB) for kind in KINDS}
ALL_803 = {kind: (803, "False", COMPAT_LIB) for kind in KINDS}


@pytest.fixture(scope="module")
def before():
    return sections("before")


def test_before_the_baseline_converged_host_gave_every_kind_the_driver_libcuda(before):
    assert asks(before["BASELINE"]) == [CLEAN]


def test_before_a_bash_profile_left_login_shells_on_803_while_apply_said_verify_passed(before):
    trap = before["TRAP 1 (the issue's)"]
    first, after = asks(trap)
    assert first["bash -l"] == after["bash -l"] == (803, "False", COMPAT_LIB)
    assert {k: v for k, v in after.items() if k != "bash -l"} == {k: CLEAN[k] for k in KINDS if k != "bash -l"}
    apply = applies(trap)[0]
    assert exit_of(apply) == 0 and "in state: nothing to change" in apply
    assert re.search(r"^h100\t\d+\t0\t0\t\d+\tpassed\t", apply, re.M)      # the recap: verify passed


def test_before_the_ld_cache_entry_gave_every_kind_803_and_the_fix_named_ld_library_path(before):
    trap = before["TRAP 2 (the issue's)"]
    assert asks(trap) == [ALL_803, ALL_803]
    apply = applies(trap)[0]
    assert exit_of(apply) == 1
    assert "fix: take /usr/local/cuda-13.0/compat off LD_LIBRARY_PATH (fleet apply does it in every shell" in apply
    assert "000-cuda-compat.conf" not in apply       # nothing named the file at fault


def test_before_a_bash_login_left_login_shells_on_803_after_a_green_apply(before):
    trap = before["TRAP 3 (ours)"]
    first, after = asks(trap)
    assert first["bash -l"] == after["bash -l"] == (803, "False", COMPAT_LIB)
    assert exit_of(applies(trap)[0]) == 0


def test_before_pull_mode_s_script_left_every_kind_on_803_saying_changed_0(before):
    trap = before["PULL MODE"]
    assert asks(trap) == [ALL_803, ALL_803]
    runs = [s for s in trap if s.startswith("$ env -i") and "pod.sh" in s.split("\n", 1)[0]]
    assert len(runs) == 2 and all("changed=0" in r and exit_of(r) == 1 for r in runs)
    assert "take /usr/local/cuda-13.0/compat off LD_LIBRARY_PATH" in runs[0]
