"""How fast the GPU is, against the platform's perf row (Config.perf_table): bf16 matmul and causal attention, the
bandwidths a pod sells (device memory, host to device, device to host), and GPU health under load (issue 36):
clock-event reasons and the PCIe link sampled while every GPU works.

nvidia-smi's fields (nvidia-smi --help-query-gpu): an idle link drops its PCIe generation to save power and the
clocks show their limits only at work, so they are read under load. nvmlClocksEventReasons bits (nvml.h).
"""

import re
import time

from .gpus import smi

LOAD_FIELDS = ("index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
               "clocks_event_reasons.active,clocks.sm,clocks.max.sm,temperature.gpu,power.draw")


EVENT_BITS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
              0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
              0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}


SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


LOAD_SECONDS = 2.0        # matmuls on every GPU this long; sampled at 1/3 and 2/3 of it


BANDWIDTH_BYTES = 1 << 30  # at most 1 GiB a copy (pinned host memory, two device buffers), within the memory share


def timed(torch, fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def mig_share(name):
    """A MIG slice 'MIG 3g.40gb' has 3 of the GPU's 7 compute slices (NVIDIA MIG user guide, supported
    profiles on A100/H100): its peak and floors are that share of the whole GPU's."""
    found = re.search(r"MIG (\d+)g\.\d+gb", name)
    return int(found.group(1)) / 7 if found else 1.0


def perf(run, torch, name):
    """bf16 matmul and causal attention, sized to the config's memory_share of the free memory (the standard case fits
    in 10 % of an idle 80 GB H100), judged against the floor and the peak, scaled for a MIG slice."""
    row = run.config.perf_row(name)
    share = mig_share(name)
    if row and share < 1:
        row = {k: (v * share if k != "match" else v) for k, v in row.items()}
    free, _total = torch.cuda.mem_get_info()
    budget = run.config.memory_share * free
    n = min(8192, int((budget / 6) ** 0.5) // 256 * 256)          # three bf16 n*n tensors
    B, H, S, D = 16, 96, 4096, 128
    B = min(B, int(budget // (4 * H * S * D * 2)))                 # q, k, v, out in fp16
    if n < 1024 or B < 1:
        run.out["perf"] = {"skipped": f"perf skipped: {free / 2**30:.0f} GB free is too little for a fair test"}
        run.check("perf", True, run.out["perf"]["skipped"])
        return
    full = n == 8192 and B == 16
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t_mm = timed(torch, lambda: a @ b, 20)
    mm_tflops = 2 * n ** 3 / t_mm / 1e12
    del a, b
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    t_at = timed(torch, lambda: sdpa(q, k, v, is_causal=True), 10)
    del q, k, v
    flops = 4 * B * H * S * S * D / 2  # causal: half the score matrix is masked out (flash-attention benchmarks)
    at_tflops = flops / t_at / 1e12
    run.out["perf"] = {"gpu": name, "matmul_bf16_n": n, "matmul_ms": round(t_mm * 1e3, 3), "matmul_tflops": round(mm_tflops, 1),
                   "attention_case": f"B={B} H={H} S={S} D={D} fp16 causal", "attention_flops": flops,
                   "attention_ms": round(t_at * 1e3, 3), "attention_tflops": round(at_tflops, 1),
                   "peak_tflops": row and row["peak"], "matmul_floor": row and row["matmul_floor"],
                   "attention_floor": row and row["attention_floor"], "mig_share": round(share, 3),
                   "free_gb": round(free / 2**30, 1), "full_size": full}
    for what, value in (("matmul", mm_tflops), ("attention", at_tflops)):
        if row and value > row["peak"]:
            run.check(f"perf_{what}", False, f"{value:.0f} TFLOP/s is above the {name} dense peak of {row['peak']:.0f}: "
                                         "a FLOP-counting error, not a fast GPU")
        elif row and full and value < row[f"{what}_floor"]:
            run.check(f"perf_{what}", False, f"{value:.0f} TFLOP/s is under the floor of {row[what + '_floor']:.0f} for {name}")
        else:
            run.check(f"perf_{what}", True, f"{value:.0f} TFLOP/s" + ("" if row else " (no floor known for this GPU)")
                  + ("" if full else " (smaller than the standard case: no floor applied)"))


def bandwidth(run, torch, name):
    """Pinned host-to-device and device-to-host copies, and a device-to-device copy (traffic = read + write), on
    GPU 0, each timed after a warm-up, sized within the config's memory_share of the free memory."""
    row = run.config.perf_row(name)
    free, _total = torch.cuda.mem_get_info()
    size = min(BANDWIDTH_BYTES, int(run.config.memory_share * free / 2)) // (1 << 20) * (1 << 20)
    if size < (64 << 20):
        run.out["bandwidth"] = {"skipped": f"bandwidth skipped: {free / 2**30:.0f} GB free is too little"}
        run.check("bandwidth", True, run.out["bandwidth"]["skipped"])
        return
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    h2d = size / timed(torch, lambda: dev.copy_(host, non_blocking=True), 5) / 1e9
    d2h = size / timed(torch, lambda: host.copy_(dev, non_blocking=True), 5) / 1e9
    other = torch.empty_like(dev)
    d2d = size / timed(torch, lambda: other.copy_(dev), 10) / 1e9
    del host, dev, other
    figures = {"gpu": name, "bytes": size, "h2d_gbs": round(h2d, 1), "d2h_gbs": round(d2h, 1),
               "d2d_copy_gbs": round(d2d, 1), "d2d_traffic_gbs": round(2 * d2d, 1),
               "memory_tbs": row and row.get("memory_tbs"), "memory_floor_tbs": row and row.get("memory_floor_tbs"),
               "host_gbs": row and row.get("host_gbs"), "host_floor_gbs": row and row.get("host_floor_gbs")}
    run.out["bandwidth"] = figures
    judge_bandwidth(run, figures, row)


def judge_bandwidth(run, figures, row):
    """The measured bandwidths against the row's floors (0 or absent: no floor, figures recorded only)."""
    row = row or {}
    for name, value, floor, unit in (
            ("bandwidth_memory", figures["d2d_traffic_gbs"] / 1000, row.get("memory_floor_tbs"), "TB/s"),
            ("bandwidth_h2d", figures["h2d_gbs"], row.get("host_floor_gbs"), "GB/s"),
            ("bandwidth_d2h", figures["d2h_gbs"], row.get("host_floor_gbs"), "GB/s")):
        sheet = row.get("memory_tbs" if unit == "TB/s" else "host_gbs")
        of = f" of the datasheet's {sheet:g} {unit}" if sheet else ""
        if floor and value < floor:
            run.check(name, False, f"{value:.2f} {unit}{of} is under the floor of {floor:.2f} {unit}"
                  + (": a link trained down or slowed" if unit == "GB/s" else ": memory clocks held down"))
        else:
            run.check(name, True, f"{value:.2f} {unit}{of}" + ("" if floor else " (no floor known for this GPU)"))


def _number(text):
    return float(text) if re.fullmatch(r"-?\d+(\.\d+)?", text or "") else None


def load_sample(rows):
    """nvidia-smi's LOAD_FIELDS rows -> [{index, gen, gen_max, width, width_max, events, sm_mhz, sm_max_mhz,
    temperature, power_w}]."""
    out = []
    for row in rows or []:
        if len(row) != len(LOAD_FIELDS.split(",")) or not row[0].isdigit():
            continue
        mask = int(row[5], 16) if re.fullmatch(r"0x[0-9a-fA-F]+", row[5]) else 0
        out.append({"index": int(row[0]), "gen": _number(row[1]), "gen_max": _number(row[2]),
                    "width": _number(row[3]), "width_max": _number(row[4]),
                    "events": [name for bit, name in EVENT_BITS.items() if mask & bit],
                    "sm_mhz": _number(row[6]), "sm_max_mhz": _number(row[7]), "temperature": _number(row[8]),
                    "power_w": _number(row[9])})
    return out


def load_summary(samples):
    """Every sample of a GPU folded: its lowest PCIe generation and width under load, every clock-event reason seen
    (idle left out: the GPU was working), the hottest reading. -> [{index, gen, gen_max, width, width_max, events,
    temperature}]"""
    by_gpu = {}
    for sample in samples:
        for g in sample:
            seen = by_gpu.setdefault(g["index"], {"index": g["index"], "gen": g["gen"], "gen_max": g["gen_max"],
                                                  "width": g["width"], "width_max": g["width_max"], "events": [],
                                                  "temperature": g["temperature"], "sm_mhz": g["sm_mhz"]})
            for key in ("gen", "width"):
                if g[key] is not None and (seen[key] is None or g[key] < seen[key]):
                    seen[key] = g[key]
            seen["events"] = sorted(set(seen["events"]) | {e for e in g["events"] if e != "gpu_idle"})
            seen["temperature"] = max(t for t in (seen["temperature"], g["temperature"], -1) if t is not None)
            seen["sm_mhz"] = max(t for t in (seen["sm_mhz"], g["sm_mhz"], -1) if t is not None)
    return [by_gpu[i] for i in sorted(by_gpu)]


def under_load(run, torch, seconds=LOAD_SECONDS):
    """bf16 matmuls on every GPU for `seconds` (a thread per GPU: torch releases the GIL), nvidia-smi sampled while
    they run. Checks: no hardware or thermal slowdown under load, each link at its maximum generation and width."""
    import threading

    stop = threading.Event()
    batches, errors = {}, {}

    def work(device):
        try:
            a = torch.randn(4096, 4096, device=f"cuda:{device}", dtype=torch.bfloat16)
            b = torch.randn(4096, 4096, device=f"cuda:{device}", dtype=torch.bfloat16)
            while not stop.is_set():
                for _ in range(20):
                    a @ b
                torch.cuda.synchronize(device)
                batches[device] = batches.get(device, 0) + 1
        except Exception as exc:   # the load never reached this GPU: its readings prove nothing
            errors[device] = f"{type(exc).__name__}: {str(exc)[:200]}"

    devices = list(range(torch.cuda.device_count()))
    threads = [threading.Thread(target=work, args=(d,), daemon=True) for d in devices]
    started = time.perf_counter()
    for t in threads:
        t.start()
    samples = []
    for at in (seconds / 3, 2 * seconds / 3):
        time.sleep(max(0.0, started + at - time.perf_counter()))
        samples.append(load_sample(smi("--query-gpu=" + LOAD_FIELDS)))
    loaded = dict(batches)          # what had finished by the last sample
    stop.set()
    for t in threads:               # a batch is milliseconds on a GPU; a thread still inside one is left (daemon)
        t.join(timeout=5)
    summary = load_summary(samples)
    run.out["load"] = {"seconds": round(time.perf_counter() - started, 2), "gpus": summary, "samples": samples,
                   "batches": {str(d): loaded.get(d, 0) for d in devices}}
    idle = [d for d in devices if not loaded.get(d)]
    if errors or idle:
        run.check("under_load", False, "; ".join(
            [f"GPU {d}: the load did not run ({errors[d]})" for d in sorted(errors)] +
            [f"GPU {d}: no matmul finished in the {seconds:g} s sampled, so its readings are not under load"
             for d in idle if d not in errors]))
        return
    judge_load(run, summary)


def judge_load(run, summary):
    if not summary:
        run.check("under_load", True, "nvidia-smi gave no reading under load: not judged")
        return
    slow = [f"GPU {g['index']}: {', '.join(e for e in g['events'] if e in SLOWDOWNS)}" for g in summary
            if any(e in SLOWDOWNS for e in g["events"])]
    run.check("clocks_under_load", not slow, "; ".join(slow) + ": hardware or thermal slowdown while working "
          "(cooling or power: the provider's)" if slow else
          "no hardware or thermal slowdown under load (" + ", ".join(
              f"GPU {g['index']} {g['sm_mhz']:.0f} MHz {g['temperature']:.0f} C" for g in summary
              if g["sm_mhz"] is not None and g["temperature"] is not None) + ")")
    down = [f"GPU {g['index']}: Gen{g['gen']:.0f} x{g['width']:.0f} of Gen{g['gen_max']:.0f} x{g['width_max']:.0f}"
            for g in summary if None not in (g["gen"], g["gen_max"], g["width"], g["width_max"])
            and (g["gen"] < g["gen_max"] or g["width"] < g["width_max"])]
    run.check("pcie_under_load", not down, "; ".join(down) + ": the PCIe link runs below its maximum under load "
          "(the slot, riser or BIOS: the provider's)" if down else "every PCIe link at its maximum under load")
