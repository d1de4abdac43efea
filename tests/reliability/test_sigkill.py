"""SIGKILL at the worst moment: while a facts record is being written, while the .bashrc block is being
rewritten. Every file is whole afterwards: the old one or the new one, never a mix or a truncation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fleet.record import store
from fleet_lab.testing import wait_for
from resource_shell import apply_text, make

WRITER = """
import sys
from fleet.record import store
facts_dir = sys.argv[1]
for i in range(1, 100000):
    store.write(facts_dir, "pod", {"host": "pod", "n": i, "pad": [str(i) * 64] * 20000})  # ~1-2 MB each
    print(i, flush=True)
"""


def whole_record(path):
    record = json.loads(path.read_text())   # a truncated file would not parse
    assert record["pad"] == [str(record["n"]) * 64] * 20000
    return record["n"]


@pytest.mark.parametrize("after", [2, 3, 5])
def test_killed_while_writing_a_facts_record(tmp_path, after):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(after):
            assert proc.stdout.readline(), "the writer ended early"
        # the writer is now in its next write (it writes without pause): kill it there
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    n = whole_record(tmp_path / "pod.json")
    assert n in (after, after + 1)                            # old or new
    assert whole_record(tmp_path / "pod.prev.json") in (n - 1, n)
    store.write(tmp_path, "pod", {"host": "pod", "n": 0, "pad": [""] * 20000})   # and the next write works
    assert store.read(tmp_path, "pod")["n"] == 0


@pytest.mark.parametrize("round_", range(3))
def test_killed_while_rewriting_the_bashrc_block(tmp_path, round_):
    bashrc = tmp_path / ".bashrc"
    old = ("# a long .bashrc\n" + "alias x='echo 0123456789'\n" * 400000).encode()   # ~10 MB: awk takes a while
    bashrc.write_bytes(old)
    res = make("block", path=str(bashrc), block=f". /etc/fleet/env.sh  # round {round_}", position="top")
    proc = subprocess.Popen(["bash", "-c", apply_text(res)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        # the rewrite has begun once its temp file exists; kill the whole process group in the middle of it
        wait_for(lambda: any(p.name.startswith(".fleet-block.") for p in tmp_path.iterdir()) or proc.poll() is not None,
                 "the block's temp file", every=0.005)
        time.sleep(0.01 * round_)   # a little later each round: early, mid, late in the write
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    new = f"# BEGIN fleet\n. /etc/fleet/env.sh  # round {round_}\n# END fleet\n".encode() + old
    assert bashrc.read_bytes() in (old, new)
    # the next apply converges it, whatever was left
    subprocess.run(["bash", "-c", apply_text(res)], check=True, capture_output=True)
    assert bashrc.read_bytes() == new
