"""Copy bandwidth through the copy engines (issue 48 item 2): every GPU's pinned host-to-device and device-to-host
copies, and every ordered pair's device-to-device copies, read and write, as NVIDIA's nvbandwidth measures them
(github.com/NVIDIA/nvbandwidth: host_to_device_memcpy_ce, device_to_host_memcpy_ce, device_to_device_memcpy_read_ce
"a copy from the peer to the target, issued in the target's context", _write_ce "from the target to the peer, in the
target's context"), judged against the copy rows of CONFIG_JSON (fleet/knowledge/copy_floors.py, each with its
source), naming the GPU or the pair that falls short and why, read from the topology (links.py): a pair on PCIe, a GPU
whose every pair is short.

How each copy is issued: write as torch issues a copy between two GPUs (on the source device's current stream:
ATen's copy_device_to_device, which enables the source's peer access to the destination on first use); read with
the driver's cuMemcpyDtoDAsync on a stream of the destination (the target's context pulls from its peer), after a
one-byte torch copy in every direction has enabled each peer access (else the driver stages the copy through the host
and the pair reads as PCIe). Each figure is
the best of two timed batches of ITERS copies after a warm-up, COPY_BYTES each (nvbandwidth's default buffer is
512 MiB; 256 MiB keeps 8 GPUs' 56 ordered pairs, read and write, within a few seconds). The seconds are recorded.
"""

import ctypes
import time

COPY_BYTES = 256 << 20
ITERS = 4


def _timed(torch, devices, fn, iters=ITERS):
    """Seconds per call of fn, the best of two batches after a warm-up, every device in `devices` synchronized."""
    def sync():
        for d in devices:
            torch.cuda.synchronize(d)
    fn()
    sync()
    best = None
    for _ in range(2):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        took = (time.perf_counter() - start) / iters
        best = took if best is None else min(best, took)
    return best


def _driver_copy():
    """cuMemcpyDtoDAsync_v2 from the driver (the libcuda torch loaded), or None where it cannot be had."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        fn = lib.cuMemcpyDtoDAsync_v2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def measure(torch, n, size):
    """Every figure, GB/s -> {"gpus": [{index, h2d_gbs, d2h_gbs}], "pairs": [{src, dst, read_gbs, write_gbs}],
    "read_via"}."""
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    bufs = [torch.empty(size, dtype=torch.uint8, device=f"cuda:{i}") for i in range(n)]
    gpus = []
    for i, dev in enumerate(bufs):
        with torch.cuda.device(i):
            h2d = _timed(torch, [i], lambda: dev.copy_(host, non_blocking=True))
            d2h = _timed(torch, [i], lambda: host.copy_(dev, non_blocking=True))
        gpus.append({"index": i, "h2d_gbs": round(size / h2d / 1e9, 1), "d2h_gbs": round(size / d2h / 1e9, 1)})
    del host
    pairs, driver = [], _driver_copy() if n > 1 else None
    for src in range(n):   # torch enables peer access from the source to the destination at its first copy: every
        for dst in range(n):   # direction once, so each read below meets a peer it may pull from
            if src != dst:
                bufs[dst][:1].copy_(bufs[src][:1])
    for d in range(n):
        torch.cuda.synchronize(d)
    for src in range(n):
        for dst in range(n):
            if src == dst:
                continue
            a, b = bufs[src], bufs[dst]
            write = _timed(torch, [src, dst], lambda a=a, b=b: b.copy_(a))   # torch issues it on the source
            read = None
            if driver is not None:
                with torch.cuda.device(dst):
                    stream = torch.cuda.current_stream(dst).cuda_stream

                    def pull(a=a, b=b, stream=stream):
                        return driver(b.data_ptr(), a.data_ptr(), size, stream)
                    if pull() == 0:
                        read = _timed(torch, [src, dst], pull)
            pairs.append({"src": src, "dst": dst, "write_gbs": round(size / write / 1e9, 1),
                          "read_gbs": round(size / read / 1e9, 1) if read else None})
    del bufs
    return {"gpus": gpus, "pairs": pairs,
            "read_via": "cuMemcpyDtoDAsync on the destination's stream" if driver else "not measured (no driver API)"}


def judge(run, figures, row, topo):
    """The figures against the copy row's floors -> the checks `copies_host` and (several GPUs) `copies_pairs`,
    naming what falls short and why (`topo`: links.topology's {(i, j): "NV18" | "PHB" | ...}, i < j)."""
    row = row or {}
    host_floor = row.get("host_floor_gbs")
    short = [f"GPU {g['index']} {name} {g[key]:g} GB/s" for g in figures["gpus"]
             for name, key in (("host-to-device", "h2d_gbs"), ("device-to-host", "d2h_gbs"))
             if host_floor and g[key] < host_floor]
    source = f" ({row['source']})" if row.get("source") else ""
    low = min((min(g["h2d_gbs"], g["d2h_gbs"]) for g in figures["gpus"]), default=None)
    if short:
        run.check("copies_host", False, f"pinned copies under the floor of {host_floor:g} GB/s{source}: "
                  + "; ".join(short) + ": the GPU's PCIe link trained down or slowed (see health's pcie.link fields)")
    else:
        run.check("copies_host", True, f"pinned host-to-device and device-to-host on {len(figures['gpus'])} GPU(s): "
                  f"lowest {low:g} GB/s" + (f", floor {host_floor:g}{source}" if host_floor else " (no floor known)"))
    if not figures["pairs"]:
        return
    read_floor = row.get("pair_read_floor_gbs")
    write_floor = row.get("pair_write_floor_gbs")
    shortfalls, per_gpu = [], {}
    for p in figures["pairs"]:
        i, j = sorted((p["src"], p["dst"]))
        cell = (topo or {}).get((i, j))
        for kind, floor in (("read", read_floor), ("write", write_floor)):
            value = p[f"{kind}_gbs"]
            if floor and value is not None and value < floor:
                shortfalls.append((p["src"], p["dst"], kind, value, floor, cell))
                for g in (p["src"], p["dst"]):
                    per_gpu[g] = per_gpu.get(g, 0) + 1
    lowest = min((p["read_gbs"] if p["read_gbs"] is not None else p["write_gbs"] for p in figures["pairs"]))
    if not shortfalls:
        floors = ", ".join(f"{k} {f:g}" for k, f in (("read", read_floor), ("write", write_floor)) if f)
        run.check("copies_pairs", True, f"{len(figures['pairs'])} ordered pairs, read and write through the copy "
                  f"engines: lowest {lowest:g} GB/s" + (f" (floors {floors} GB/s{source})" if floors else
                                                        " (no floor known for this GPU)"))
        return
    n = len(figures["gpus"])
    # a GPU in every shortfall with each of its n-1 peers: that GPU's links, not the pairs'
    whole = sorted(g for g, c in per_gpu.items() if c >= 2 * (n - 1) and n > 2)
    named = []
    for src, dst, kind, value, floor, cell in shortfalls[:8]:
        if cell and not cell.startswith("NV"):
            why = f"the pair is on PCIe ({cell} in nvidia-smi topo -m), not NVLink"
        elif whole and (src in whole or dst in whole):
            why = f"GPU {next(g for g in whole if g in (src, dst))} is short with every peer: its NVLinks"
        else:
            why = f"an NVLink pair ({cell or 'link unknown'}) slower than it should be"
        named.append(f"GPU {src} -> GPU {dst} {kind} {value:g} GB/s under {floor:g}: {why}")
    more = f" (and {len(shortfalls) - 8} more)" if len(shortfalls) > 8 else ""
    run.check("copies_pairs", False, "; ".join(named) + more + source)


def copies(run, torch, name, topo=None):
    """The step (runner.perf_smoke): measure within the config's memory share, record, judge."""
    start = time.perf_counter()
    n = torch.cuda.device_count()
    free = min(torch.cuda.mem_get_info(i)[0] for i in range(n))
    size = min(COPY_BYTES, int(run.config.memory_share * free / 2)) // (1 << 20) * (1 << 20)
    if size < (64 << 20):
        run.out["copies"] = {"skipped": f"copies skipped: {free / 2**30:.0f} GB free is too little"}
        run.check("copies_host", True, run.out["copies"]["skipped"])
        return
    figures = measure(torch, n, size)
    row = run.config.copy_row(name)
    figures.update(bytes=size, seconds=round(time.perf_counter() - start, 2), floors=row)
    run.out["copies"] = figures
    judge(run, figures, row, topo)
