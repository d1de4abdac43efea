"""The lab's stand-in torch.distributed (fleet_lab/standin_torch/distributed.py) against the lent H200s' figures, with
verify's own all-reduce ranks (fleet/remote/verify/allreduce.py allreduce_worker) as the program: 2 GPUs over NVLink
~326 GB/s (tests/data/h200-multi/verify20: median 326.4), NCCL_P2P_DISABLE=1 ~28 (its p2p-disabled run: 28.2), the
same from ~/.nccl.conf-style config (NCCL_CONF_FILE) as NCCL reads it, and the sum each rank gets is the real sum.
The stand-in's tensor and collectives run as shipped; only its torch.cuda is a small stub here (no native libcuda),
which answers every pair's peer access unless NOPEER is set. Its time is slept, so the bounds leave this machine's
load room below the figure and none above it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "fleet_lab" / "standin_torch"
TORCH = '''from torch._tensor import Tensor, device, dtype, float32
from torch import cuda
def full(size, fill_value, device=None, dtype=None, **_):
    return Tensor._filled(tuple(size) if isinstance(size, (tuple, list)) else (size,), fill_value, dtype=dtype)
def ones(*size, device=None, dtype=None, **_):
    return full(size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size, 1.0)
def tensor(data, device=None, dtype=None, **_):
    return Tensor(data, dtype=dtype)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return a.allclose(b, rtol=rtol, atol=atol)
'''
CUDA = '''import os, time
_busy_until = 0.0
def _enqueue(seconds):
    global _busy_until
    _busy_until = max(_busy_until, time.perf_counter()) + seconds
def synchronize(device=None):
    time.sleep(max(0.0, _busy_until - time.perf_counter()))
def set_device(index):
    pass
def can_device_access_peer(i, j):
    return "NOPEER" not in os.environ
'''
RANK = "import sys; sys.path.insert(0, sys.argv[1]); from fleet.remote.verify import allreduce; allreduce.allreduce_worker()"


@pytest.fixture(scope="module")
def torch_dir(tmp_path_factory):
    top = tmp_path_factory.mktemp("standin")
    (top / "torch" / "cuda").mkdir(parents=True)
    for name in ("_tensor.py", "distributed.py"):
        shutil.copy(STANDIN / name, top / "torch" / name)
    (top / "torch" / "__init__.py").write_text(TORCH)
    (top / "torch" / "cuda" / "__init__.py").write_text(CUDA)
    return top


def allreduce(torch_dir, n, **env):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
    base.update(PYTHONPATH=str(torch_dir), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(n),
                FLEET_AR_ELEMS=str(1 << 28), HOME=str(torch_dir), **env)
    procs = [subprocess.Popen([sys.executable, "-c", RANK, str(ROOT)], env={**base, "RANK": str(r)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(n)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    return json.loads(outs[0].split("@@fleet-allreduce ", 1)[1])


def test_two_gpus_over_nvlink_give_the_lent_h200s_figure_and_the_right_sum(torch_dir):
    got = allreduce(torch_dir, 2)
    assert got["correct"] and got["bytes"] == 1 << 30 and got["env"] == {}
    assert 200 < got["busbw"] <= 326.5


def test_p2p_disabled_in_the_environment_or_ncclconf_gives_the_trap_run_figure(torch_dir):
    got = allreduce(torch_dir, 2, NCCL_P2P_DISABLE="1")
    assert got["correct"] and 20 < got["busbw"] <= 28.3 and got["env"] == {"NCCL_P2P_DISABLE": "1"}
    conf = torch_dir / "nccl.conf"
    conf.write_text("NCCL_NVLS_ENABLE=0\nNCCL_P2P_DISABLE=1\n")
    got = allreduce(torch_dir, 2, NCCL_CONF_FILE=str(conf))
    assert 20 < got["busbw"] <= 28.3
    assert {"file": str(conf), "line": 2, "name": "NCCL_P2P_DISABLE", "value": "1"} in got["conf"]


def test_four_gpus_and_a_pair_that_cannot_peer(torch_dir):
    assert 250 < allreduce(torch_dir, 4)["busbw"] <= 352.6
    assert 15 < allreduce(torch_dir, 4, NOPEER="1")["busbw"] <= 25.1
