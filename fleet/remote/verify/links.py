"""Several GPUs: the links between them (issue 28). Peer access between every pair the topology links, what
`nvidia-smi topo -m` says of each pair, and an all-reduce over every GPU (NCCL, one process per rank: the program
started again as `--allreduce`) judged against what the links should give.

Bus bandwidth (NCCL's busbw = algbw * 2(n-1)/n for all-reduce: nccl-tests doc/PERFORMANCE.md) a large all-reduce
should reach over each kind of link, GB/s. NVLink4 (H100 SXM, 18 links, 900 GB/s per GPU both ways: H100 data
sheet): nccl-tests on 8-GPU HGX H100 report ~450-480 GB/s busbw (NVIDIA's DGX H100 figures); NVLink3 (A100 SXM,
600 GB/s both ways) ~230; PCIe Gen5 x16 64 GB/s per direction, ~50 achieved; Gen4 ~25. Judged against half of
it, so only a lost link (NVLink traffic gone to PCIe), not a slow run, fails.
"""

import json
import os
import re
import subprocess
import sys
import time

LINK_BUSBW = {"nvlink4": 450.0, "nvlink3": 230.0, "nvlink": 100.0, "pcie": 25.0}


LINK_FLOOR_SHARE = 0.5


ALLREDUCE_TIMEOUT = 180   # seconds for the whole spawned all-reduce (NCCL init, warm-up, timing)


def allreduce_worker():
    """One rank of the all-reduce (`python PROGRAM --allreduce`, RANK/WORLD_SIZE/FLEET_AR_ELEMS in the environment):
    rank 0 prints `@@fleet-allreduce {bytes, seconds, algbw, busbw, correct}`."""
    import datetime

    import torch
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    x = torch.ones(int(os.environ["FLEET_AR_ELEMS"]), device="cuda", dtype=torch.float32)
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    iters = 10
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t = (time.perf_counter() - start) / iters
    ok = bool(torch.allclose(x[:8], torch.full((8,), float(world) ** (3 + iters), device="cuda")))
    if rank == 0:
        size = x.numel() * 4
        algbw = size / t / 1e9
        print("@@fleet-allreduce " + json.dumps({"bytes": size, "seconds": t, "algbw": algbw,
                                                 "busbw": algbw * 2 * (world - 1) / world, "correct": ok}))
    dist.destroy_process_group()


def topology():
    """`nvidia-smi topo -m` as the host says it now -> {(i, j): "NV18" | "PIX" | ...} for i < j, or None."""
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out)   # the real one underlines its header even into a pipe
    lines = [line for line in out.splitlines() if line.strip()]
    header = next((line for line in lines if re.match(r"^\s+GPU0\b", line)), None)
    if header is None:
        return None
    cols = [i for i, name in enumerate(header.split()) if re.fullmatch(r"GPU\d+", name)]
    pairs = {}
    for line in lines:
        cells = line.split()
        if line is header or not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        row = int(cells[0][3:])
        for col_index, i in enumerate(cols):
            if i + 1 < len(cells) and col_index > row:
                pairs[(row, col_index)] = cells[i + 1]
    return pairs


def link_kind(name, cells):
    """What the links should give: "nvlink4" (H100/H200/H800 over NVLink), "nvlink3" (A100), "nvlink", or "pcie"."""
    if cells and all(c.startswith("NV") for c in cells):
        if re.search(r"H100|H200|H800|H20\b|GH200", name):
            return "nvlink4"
        return "nvlink3" if "A100" in name else "nvlink"
    return "pcie"


def links(run, torch, look, allreduce=True):
    """Peer access between every pair the topology links, then an all-reduce over every GPU (NCCL) judged against
    what the topology should give. One GPU: nothing to link."""
    n = torch.cuda.device_count()
    run.out["links"] = {"gpus": n}
    if n <= 1:
        run.check("gpu_links", True, "one GPU: no links to check")
        return
    topo = topology() or {}
    run.out["links"]["topology"] = {f"{i}-{j}": c for (i, j), c in sorted(topo.items())}
    nv = {p for p, c in topo.items() if c.startswith("NV")}
    no_peer, pcie_on_nv, unexpected = [], [], []
    for i in range(n):
        for j in range(i + 1, n):
            cell = topo.get((i, j))
            if not torch.cuda.can_device_access_peer(i, j):
                if cell is None or cell.startswith("NV") or not nv:
                    no_peer.append(f"GPU {i}-{j} ({cell or 'link unknown'})")
                else:   # a PCIe pair on an NVSwitch board: not expected to peer (nvlink_topology names why)
                    unexpected.append(f"{i}-{j}")
            if nv and cell and not cell.startswith("NV"):
                pcie_on_nv.append((i, j, cell))
    cause = "a GPU off the fabric or the fabric manager not running"
    reached = (f"every pair of {n} GPUs reaches its peer" if not unexpected else
               f"every NVLink pair of {n} GPUs reaches its peer; the {len(unexpected)} PCIe pair(s) "
               f"{', '.join(unexpected[:7])}{' ...' if len(unexpected) > 7 else ''} do not (see nvlink_topology)")
    run.check("peer_access", not no_peer, reached if not no_peer else
          "no peer access between " + ", ".join(no_peer) + f": {cause}")
    if pcie_on_nv:   # an NVSwitch pod where some pairs are PCIe: the GPU in every such pair left the fabric
        counts = {}
        for i, j, _ in pcie_on_nv:
            counts[i], counts[j] = counts.get(i, 0) + 1, counts.get(j, 0) + 1
        off = sorted(g for g, c in counts.items() if c == n - 1) or sorted(counts)
        run.check("nvlink_topology", False, f"GPU {', '.join(map(str, off))}: its pairs are PCIe "
              f"({', '.join(f'{i}-{j} {c}' for i, j, c in pcie_on_nv[:6])}) while the others are NVLink: "
              "off the fabric (nvidia-smi -q, Fabric State/Status), its NVLink peers lost")
    if not allreduce:
        return
    if look and look.get("busy"):
        run.out["links"]["allreduce"] = {"skipped": f"all-reduce skipped: {look['busy']}"}
        run.check("allreduce", True, run.out["links"]["allreduce"]["skipped"])
        return
    name = torch.cuda.get_device_name(0)
    kind = link_kind(name, [topo.get((i, j)) for i in range(n) for j in range(i + 1, n)] if topo else [])
    free = min(torch.cuda.mem_get_info(i)[0] for i in range(n))
    elems = max(1 << 20, min(1 << 28, int(run.config.memory_share * free / 4)))   # up to 1 GiB fp32, within the share
    procs, env = [], {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29500 + os.getpid() % 1000),
                      "WORLD_SIZE": str(n), "FLEET_AR_ELEMS": str(elems)}
    for rank in range(n):
        procs.append(subprocess.Popen([sys.executable, run.program, "--allreduce"], env={**env, "RANK": str(rank)},
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    deadline, outs = time.time() + ALLREDUCE_TIMEOUT, []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, deadline - time.time()))[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            run.check("allreduce", False, f"all-reduce over {n} GPUs did not finish in {ALLREDUCE_TIMEOUT} s: {cause}")
            return
    found = re.search(r"^@@fleet-allreduce (.*)$", outs[0] or "", re.M)
    if not found or any(p.returncode for p in procs):
        tail = " ".join((outs[0] or "").strip().splitlines()[-2:])[:300]
        run.check("allreduce", False, f"all-reduce over {n} GPUs failed: {tail}")
        return
    result = json.loads(found.group(1))
    expect = LINK_BUSBW[kind]
    floor = expect * LINK_FLOOR_SHARE
    result.update(kind=kind, expected_busbw=expect, floor=floor)
    run.out["links"]["allreduce"] = result
    busbw = result["busbw"]
    size = f"{result['bytes'] / 2**20:.0f} MiB"
    if not result["correct"]:
        run.check("allreduce", False, f"all-reduce of {size} over {n} GPUs gave a wrong sum")
    elif busbw < floor:
        why = ("PCIe-level: NVLink traffic fell back to PCIe (" + cause + ")" if kind.startswith("nvlink")
               else "under what PCIe should give")
        run.check("allreduce", False, f"all-reduce of {size} over {n} GPUs: bus bandwidth {busbw:.0f} GB/s, under "
              f"{floor:.0f} (half the ~{expect:.0f} {kind} gives): {why}")
    else:
        run.check("allreduce", True, f"all-reduce of {size} over {n} GPUs: bus bandwidth {busbw:.0f} GB/s "
              f"(~{expect:.0f} expected over {kind})")
