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


def sections(run: str, name: str = "transcript.txt") -> dict[str, list[str]]:
    """The transcript by its '# ...' notes: each note's title (up to ':') -> its steps ('$ command' ... '[exit N]');
    a note inside a trap (the old fleet's run on trap 4) stays with that trap."""
    text = (DATA / run / name).read_text()
    out: dict[str, list[str]] = {}
    title = ""
    for block in re.split(r"\n\n(?=# )", text):      # a note follows a blank line; output may hold "# " lines
        head = block.split("\n", 1)[0].lstrip("# ").split(":")[0]
        title = title if head.startswith("fleet as it was before") else head
        out.setdefault(title, []).extend(re.split(r"\n(?=\$ )", block)[1:])
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


# `after/`: the same machine, the same traps, fleet with issue 23's work (main at bc11c70); its
# run-loader.sh added two traps of the family (a compat line at the top of /etc/ld.so.conf; a stub libcuda in
# /etc/ld.so.preload) with `fleet facts` before each apply.

@pytest.fixture(scope="module")
def after():
    return sections("after")


def load_after(name: str) -> dict:
    import json
    return json.loads((DATA / "after" / name).read_text())


@pytest.mark.parametrize("trap", ["TRAP 1 (the issue's)", "TRAP 2 (the issue's)", "TRAP 3 (ours)", "TRAP 4 (ours)"])
def test_after_each_trap_broke_a_kind_before_apply_and_every_kind_has_cuda_after_it(after, trap):
    steps = after[trap]
    seen = asks(steps)
    assert seen[0] != CLEAN and any(code == 803 for code, _, _ in seen[0].values())     # the trap is real
    assert seen[-1] == CLEAN                                                           # asked after fleet apply
    assert exit_of(applies(steps)[-1]) == 0


def test_after_the_bash_profile_guard_is_claimed_and_true(after):
    steps = after["TRAP 1 (the issue's)"]
    check = next(s for s in steps if "--check" in s.split("\n", 1)[0])
    assert "would change env_hooks: guard at the end of ~/.bash_profile" in check
    assert "neutralizes ~/.bash_profile:1 puts /usr/local/cuda-13.0/compat first" in check
    # verify itself saw the login shell fail, naming the kind, the libcuda and the line
    assert ("cuda_available_login: in a login shell (bash -l): CUDA error 803" in check and
            "loaded because ~/.bash_profile:1 puts /usr/local/cuda-13.0/compat first on LD_LIBRARY_PATH" in check)
    assert asks(steps)[-1]["bash -l"] == (0, "True", DRIVER_LIB)


def test_after_the_ld_cache_entry_is_named_moved_aside_and_gone_from_the_cache(after):
    steps = after["TRAP 2 (the issue's)"]
    check = next(s for s in steps if "--check" in s.split("\n", 1)[0])
    assert ("moves /etc/ld.so.conf.d/000-cuda-compat.conf aside to "
            "/var/lib/fleet/aside/etc/ld.so.conf.d/000-cuda-compat.conf") in check
    assert "loaded because /etc/ld.so.conf.d/000-cuda-compat.conf:1 puts /usr/local/cuda-13.0/compat in the ld cache" in check
    assert "off LD_LIBRARY_PATH" not in check                       # the fix names the mechanism at fault
    cache = next(s for s in steps if s.startswith("$ bash -c ldconfig -p") and "ls /etc/ld.so.conf.d" in s)
    assert "compat" not in cache and "000-cuda-compat.conf" not in cache   # the loader's own answer, after apply


def test_after_a_preloaded_compat_libcuda_is_taken_out_and_kept_aside(after):
    steps = after["TRAP 4 (ours)"]
    old = next(s for s in steps if s.startswith("$ FOLD apply"))      # fleet before this work, on the same trap
    assert exit_of(old) == 1 and "verify failed" in old and "ld.so.preload" not in old
    assert asks(steps)[1] == ALL_803                                     # ... and it left every kind on 803
    new = applies(steps)[-1]
    assert "took /etc/ld.so.preload:1 (/usr/local/cuda-13.0/compat/libcuda.so.1) out, kept in " \
           "/var/lib/fleet/aside/etc/ld.so.preload" in new


def test_after_pull_mode_s_script_fixes_both_traps_and_then_changes_nothing(after):
    steps = after["PULL MODE"]
    seen = asks(steps)
    assert seen[0] == ALL_803 and seen[-1] == CLEAN
    runs = [s for s in steps if s.startswith("$ env -i") and "pod.sh" in s.split("\n", 1)[0]]
    assert "moved /etc/ld.so.conf.d/000-cuda-compat.conf aside" in runs[0] and "block written to ~/.bash_profile" in runs[0]
    assert runs[0].rstrip().endswith("changed=2\n[exit 0]") and runs[1].rstrip().endswith("changed=0\n[exit 0]")
    assert "verify passed" in runs[1] and "cuda_available_bare, cuda_available_interactive, cuda_available_login" in runs[1]


def test_after_a_second_apply_is_one_command_and_changes_nothing():
    for name in ("apply-noop.json", "apply-loader-noop.json"):
        doc = load_after(name)
        assert doc["hosts"]["h100"]["changed"] == 0 and doc["hosts"]["h100"]["failed"] == 0
        assert doc["stats"]["h100"]["remote_commands"] == 1


def test_after_the_facts_name_the_step_before_apply_and_the_driver_libcuda_after():
    before_a = load_after("facts-loader-A-before.json")["loader"]["kinds"]
    assert {k: (v["version"], v["step"], v["set_by"]) for k, v in before_a.items()} == {
        k: ("580.95.05", "ld cache", "/etc/ld.so.conf:1") for k in ("bare", "ssh", "interactive", "login")}
    before_b = load_after("facts-loader-B-before.json")["loader"]["kinds"]
    assert all(v["stub"] and v["set_by"] == "/etc/ld.so.preload:1" for v in before_b.values()), before_b
    final = load_after("facts-loader-after.json")
    assert all(v["real"].endswith("libcuda.so.580.159.04") and not v["stub"] for v in final["loader"]["kinds"].values())
    assert final["verify"]["passed"] is True and final["verify"]["stale"] == []


def test_after_neither_loader_trap_left_an_entry_or_a_broken_preload(after):
    loader = sections("after", "transcript-loader.txt")
    text = (DATA / "after" / "transcript-loader.txt").read_text()
    for trap in ("LOADER TRAP A", "LOADER TRAP B"):
        seen = asks(loader[trap])
        assert seen[0] != CLEAN and seen[-1] == CLEAN, (trap, seen)
    assert "cannot be preloaded" not in text
    b = loader["LOADER TRAP B"]
    assert asks(b)[0] == {kind: (34, "False", "/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs/libcuda.so")
                          for kind in KINDS}


def test_the_session_s_final_main_converged_a_fresh_h100_then_changed_nothing_in_one_command():
    """tests/data/h100-device/session-final: the final code (stdin scripts, trust checks, quiet output) on the
    real H100: verify passed in every kind, a second apply 0 changes in 1 command, --check's detailed exit 0."""
    import json
    final = DATA.parent / "session-final"
    text = (final / "final.txt").read_text()
    assert re.findall(r"\[exit (\d+)\]", text) == ["0", "0", "0", "0"]
    assert "h100\t6\t6\t0\t15\tpassed\t" in text and "h100: 0 to change, 12 in state (15 skipped)" in text
    assert "cuda_available_bare, cuda_available_interactive, cuda_available_login" in text
    assert re.search(r"^paths\./opt/torch/\.venv\t-$", text, re.M) and re.search(r"^python\.untrusted\t-$", text, re.M)
    doc = json.loads((final / "noop.json").read_text())
    assert doc["hosts"]["h100"]["changed"] == 0 and doc["stats"]["h100"]["remote_commands"] == 1
