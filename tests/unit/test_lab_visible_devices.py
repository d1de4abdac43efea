"""The lab's stand-in libcuda honours CUDA_VISIBLE_DEVICES as the real driver does: every value the lent H200 was
asked (tests/data/captured/h200-device/visible.txt, driver 580.159.04, one GPU) gets the same cuInit answer and
the same count from the stand-in built for a one-GPU host, its UUID put where the H200's was; and on an eight-GPU
board the order, the stop at the first invalid entry and UUID prefixes pick the GPUs the guide says."""

import ctypes
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fleet_lab import native

CAPTURED = Path(__file__).parents[1] / "data" / "captured" / "h200-device" / "visible.txt"
H200_UUID = "GPU-b07a36d3-7282-1504-cfd0-b1522df2a917"
LAB_UUID = "GPU-1234abcd-7282-1504-cfd0-b1522df2a900"
LINE = re.compile(r"^CUDA_VISIBLE_DEVICES='(?P<value>[^']*)': cuInit (?P<init>\d+), cuDeviceGetCount \S+ "
                  r"count (?P<count>-?\d+), torch (?P<torch>\d+) (True|False)$")

# A child process per value: the stand-in reads CUDA_VISIBLE_DEVICES once, at cuInit, as the real one does.
ASK = """import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
code = lib.cuInit(0)
count = ctypes.c_int(-1)
if code == 0:
    lib.cuDeviceGetCount(ctypes.byref(count))
peers = []
for i in range(count.value):
    for j in range(count.value):
        can = ctypes.c_int(0)
        lib.cuDeviceCanAccessPeer(ctypes.byref(can), i, j)
        peers.append(can.value)
print(code, count.value, sum(peers))
"""


def _build(tmp_path: Path, gpus: int, off_fabric: str = "") -> Path:
    proc = tmp_path / f"proc{gpus}"
    proc.mkdir()
    (proc / "version").write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release "
                                  "Build  (lab)\n")
    (proc / "fleet-lab-gpu").write_text(f"name=NVIDIA H200\ncompute_cap=9.0\nclass=datacenter\nuuid={LAB_UUID}\n"
                                        f"gpus={gpus}\noff_fabric={off_fabric}\n")
    obj = native.SharedObject("libcuda.c", "libcuda.so.1", {"LAB_DRIVER": native.c_string("580.159.04"),
                                                            "LAB_COMPAT": "0", "LAB_PROC": native.c_string(str(proc))})
    return native.build(obj, tmp_path / f"libcuda{gpus}.so.1")


def _ask(lib: Path, value: str | None) -> tuple[int, int, int]:
    env = {"PATH": "/usr/bin:/bin"}
    if value is not None:
        env["CUDA_VISIBLE_DEVICES"] = value
    out = subprocess.run([sys.executable, "-c", ASK, str(lib)], env=env, capture_output=True, text=True, check=True)
    code, count, peers = out.stdout.split()
    return int(code), int(count), int(peers)


def test_every_captured_value_gets_the_real_drivers_answer(tmp_path):
    rows = [LINE.match(line) for line in CAPTURED.read_text().splitlines() if not line.startswith("#")]
    assert rows and all(rows), CAPTURED.read_text()
    lib = _build(tmp_path, 1)
    for row in rows:
        value = None if row["value"] == "<unset>" else row["value"].replace(H200_UUID, LAB_UUID).replace(
            H200_UUID[:12], LAB_UUID[:12])
        code, count, _ = _ask(lib, value)
        assert (code, count) == (int(row["init"]), int(row["count"])), (row.group(0), value, code, count)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("board"), 8)


@pytest.mark.parametrize("value,count", [
    (None, 8), ("", 0), ("7", 1), ("3,1", 2), ("0,1,8,2", 2), ("0,0", 1), (" 2 , 3", 2),
    (LAB_UUID[:-2] + "05", 1), ("GPU-1234", 0),     # a prefix all eight share names no one GPU
    (LAB_UUID[:-2] + "05,1," + "MIG-x,2", 2), ("8", 0), ("1,-1", 1)])
def test_an_eight_gpu_board_sees_the_listed_gpus_up_to_the_first_invalid(board, value, count):
    code, seen, peers = _ask(board, value)
    assert (code, seen) == ((0, count) if count else (100, -1)), (value, code, seen)
    assert peers == count * (count - 1)     # every visible pair reaches the other over the fabric


def test_peer_access_follows_the_physical_gpu_behind_each_visible_ordinal(tmp_path):
    lib = _build(tmp_path, 8, off_fabric="3")
    assert _ask(lib, "3,1,2")[2] == 2       # GPU 3 (ordinal 0) is off the fabric: only 1<->2
    assert _ask(lib, "1,2")[2] == 2
