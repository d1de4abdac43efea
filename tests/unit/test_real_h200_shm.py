"""Issue 45 item 5 on the lent one-GPU H200 (bench/h200/shm.sh, tests/data/h200-device/shm/): the pod's /dev/shm made
64 MB by hand after a converged apply. What the user got is asked first, by a plain SSH client in each kind of shell
(`ssh host cmd`, `bash -l`, `bash -i`): a real torch DataLoader with two workers; then what fleet said of it."""

from __future__ import annotations

import re
from pathlib import Path

TEXT = (Path(__file__).resolve().parents[1] / "data" / "h200-device" / "shm" / "transcript.txt").read_text()
KINDS = ("ssh", "login", "interactive")


def phase(name: str) -> str:
    """The transcript from the note that opens `name`'s phase to the next note."""
    start = TEXT.index(f"# {name}")
    end = TEXT.find("\n# ", start + 1)
    return TEXT[start:end if end > 0 else None]


def job(phase_name: str, kind: str) -> str:
    return re.search(rf"^--- {phase_name} / {kind} \(plain ssh\): (.*)$", TEXT, re.M)[1]


def health(text: str) -> tuple[str, int]:
    row = re.search(r"^h100\t(\w+)\t1\t(.*)$", text, re.M)
    exit_status = int(re.search(r"\$ F health .*?\n.*?\[exit (\d+)\]", text, re.S)[1])
    return row[1] + "\t" + row[2], exit_status


def test_the_job_ran_in_every_kind_before_failed_in_every_kind_on_64_mb_and_ran_again_once_put_back():
    assert "/dev/shm made small by hand: tmpfs                65536 " in TEXT
    for kind in KINDS:
        assert job("before", kind) == "exit 0 dataloader ok 16", kind
        assert job("restored", kind) == "exit 0 dataloader ok 16", kind
        small = job("small", kind)
        assert small.startswith("exit 1 RuntimeError: unable to allocate shared memory(shm)"), (kind, small)


def test_health_said_degraded_naming_dev_shm_and_its_fix_only_while_it_was_small():
    before, code = health(phase("/dev/shm as the machine has it"))
    assert before.startswith("healthy") and code == 0 and "/dev/shm" not in before
    small, code = health(phase("/dev/shm made small by hand"))
    assert small.startswith("degraded") and code == 6
    assert "/dev/shm=64 MB (64 MB free): DataLoader workers and NCCL's shared-memory transport fail" in small
    assert "--shm-size=1g" in small and "mount -o remount,size=1g /dev/shm" in small
    assert "keep it if your job needs neither DataLoader workers nor NCCL across processes" in small
    restored, code = health(phase("/dev/shm put back"))
    assert restored.startswith("healthy") and code == 0


def test_verify_and_the_facts_show_the_small_dev_shm():
    small = phase("/dev/shm made small by hand")
    assert "GPU health: degraded: host: /dev/shm=64 MB" in small           # fleet verify's own output
    assert "system.resources.shm.size_mb\t64\n" in small
    assert "system.resources.shm.size_mb\t131072\n" in phase("/dev/shm as the machine has it")
    assert "system.resources.shm.size_mb\t131072\n" in phase("/dev/shm put back")
