"""Several GPUs: the links between them (issues 28, 48). Peer access between every pair the topology links, what
`nvidia-smi topo -m` says of each pair, and an all-reduce over every GPU (allreduce.py: NCCL, one process per rank)
judged against the row of the knowledge table that matches the GPU, the count, the link and NVLink SHARP; then each
kind of shell whose NCCL variables differ from this process's, all within the multi-GPU time budget
(Config.multi_gpu_budget, 60 s on 8 GPUs: issue 48), each part's seconds in out["links"]["time"].
"""

import re
import subprocess
import time

from . import allreduce as ar
from .gpus import smi

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
    what the topology should give, then in each kind of shell whose NCCL variables differ. One GPU: nothing to
    link."""
    n = torch.cuda.device_count()
    run.out["links"] = {"gpus": n}
    if n <= 1:
        run.check("gpu_links", True, "one GPU: no links to check")
        return
    clock = Clock(run.config.multi_gpu_budget, n)
    run.out["links"]["time"] = clock.parts
    topo = topology() or {}
    clock.lap("topology")
    run.out["links"]["topology"] = {f"{i}-{j}": c for (i, j), c in sorted(topo.items())}
    peers(run, torch, n, topo)
    clock.lap("peer_access")
    if not allreduce:
        return
    if look and look.get("busy"):
        run.out["links"]["allreduce"] = {"skipped": f"all-reduce skipped: {look['busy']}"}
        run.check("allreduce", True, run.out["links"]["allreduce"]["skipped"])
        return
    reduce_every_kind(run, torch, n, topo, clock)
    clock.done()


def peers(run, torch, n, topo):
    """peer_access (every NVLink pair reaches its peer) and nvlink_topology (a GPU whose pairs fell to PCIe)."""
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


def free_memory(torch, n):
    """The least free memory of the GPUs, bytes: torch's (cudaMemGetInfo), else nvidia-smi's memory.free (the lab's
    stand-in torch has no mem_get_info); None where neither answers."""
    if hasattr(torch.cuda, "mem_get_info"):
        return min(torch.cuda.mem_get_info(i)[0] for i in range(n))
    rows = smi("--query-gpu=memory.free") or []
    return min([float(r[0]) * 2**20 for r in rows if r and r[0].replace(".", "", 1).isdigit()], default=None)


class Clock:
    """The multi-GPU proof's seconds, part by part, against its budget (issue 48: the whole proof on 8 GPUs in under
    60 s; DCGM's level 2 takes 2.5-10.5 min there): `parts` is what the record keeps."""

    def __init__(self, budget, n):
        self.started = self.last = time.perf_counter()
        self.parts = {"budget_s": budget if budget % 1 else int(budget), "gpus": n}

    def lap(self, name):
        now = time.perf_counter()
        self.parts[f"{name}_s"] = round(now - self.last, 3)
        self.last = now

    def left(self):
        return self.parts["budget_s"] - (time.perf_counter() - self.started)

    def done(self):
        self.parts["total_s"] = round(time.perf_counter() - self.started, 3)
        self.parts["within_budget"] = self.parts["total_s"] <= self.parts["budget_s"]


def reduce_every_kind(run, torch, n, topo, clock):
    """The all-reduce here (`ssh host cmd`'s environment), sized from the row and the free memory; then in each kind
    of shell whose NCCL variables differ from this process's, where the budget leaves room for one more."""
    name = torch.cuda.get_device_name(0)
    kind = link_kind(name, [topo.get((i, j)) for i in range(n) for j in range(i + 1, n)] if topo else [])
    free = free_memory(torch, n)
    here = ar.nccl_env()
    nvls = ar.nvls_state(here, ar.nccl_conf())
    row, note = ar.pick_row(run.config.allreduce, name, kind, n, nvls["enabled"])
    row = row or ar.fallback_row(run.config.allreduce, kind)
    size = ar.message_bytes(row, free, run.config.memory_share)
    result, error, seconds = ar.launch(run, n, size // 4)
    clock.lap("allreduce")
    if result is None:
        run.out["links"]["allreduce"] = {"error": error, "bytes": size}
        run.check("allreduce", False, f"all-reduce of {size // 2**20} MiB over {n} GPUs {error}: a GPU off the "
                  "fabric, the fabric manager not running, or NCCL kept off its transports (NCCL_* in "
                  f"{', '.join(sorted(here)) or 'no variable here'})")
        return
    result.update(kind=kind, nvls=nvls, row=row, expected_busbw=row["peak"], floor=row["floor"], warn=row["warn"])
    run.out["links"]["allreduce"] = result
    ar.judge(run, result, row, note, topo, n)
    reports = run.kind_reports
    mine = {k: v for k, v in here.items() if k not in ar.NVLS_GUARD}
    bare = (reports.get("bare") or {}).get("nccl")
    if bare is not None and {k: v for k, v in bare.items() if k not in ar.NVLS_GUARD} != mine:
        run.out["links"]["allreduce_bare"] = {"not_run": "a bare process (env -i) reads no startup file: no NCCL "
                                              "variable reaches it but a service's or container's own; NCCL's config "
                                              "files, which it reads as every kind does, are in this run's"}
    for other in ("interactive", "login"):
        theirs = (reports.get(other) or {}).get("nccl")
        if theirs is None:
            continue
        theirs = {k: v for k, v in theirs.items() if k not in ar.NVLS_GUARD}
        if theirs == mine:
            continue
        differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        entry = run.out["links"][f"allreduce_{other}"] = {"differs": {k: theirs.get(k) for k in differ}}
        if clock.left() < seconds:
            entry["skipped"] = (f"not run: {clock.left():.0f} s of the {clock.parts['budget_s']:g} s budget left, one "
                                f"all-reduce took {seconds:.0f} s")
            run.check(f"allreduce_{other}", True, f"in {ar.SHELLS[other]} NCCL's variables differ ({', '.join(differ)}): "
                      + entry["skipped"])
            continue
        got, error, _ = ar.launch(run, n, size // 4, other)
        clock.lap(f"allreduce_{other}")
        if got is None:
            entry["error"] = error
            run.check(f"allreduce_{other}", False, f"all-reduce over {n} GPUs in {ar.SHELLS[other]} {error}")
            continue
        got.update(nvls=ar.nvls_state(got.get("env") or {}, got.get("conf") or []))
        mine_row, mine_note = ar.pick_row(run.config.allreduce, name, kind, n, got["nvls"]["enabled"])
        entry.update(got, row=mine_row or row)
        ar.judge(run, entry, mine_row or row, mine_note if mine_row else note, topo, n, other)
