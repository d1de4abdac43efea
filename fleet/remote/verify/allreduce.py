"""The all-reduce over every GPU (issues 28, 45, 48): NCCL through torch.distributed, one process per rank (the
program started again as `--allreduce`), judged against the row of Config.allreduce (fleet/knowledge/allreduce.py:
per GPU model, GPU count, link and NVLink SHARP) as passed, degraded (under the row's warning line) or failed (under
its floor); where it is slow, the cause is read from what the host shows: an NCCL variable in the environment the
ranks ran in (with the startup file:line that set it, or the NCCL config file's line), a pair on PCIe, a GPU off the
fabric, a clock held down. Each kind of shell whose NCCL variables differ from this process's is judged too, by
running the ranks there (`bash -i -c`, `bash -l -c`), within the multi-GPU time budget (Config.multi_gpu_budget).

NVLink SHARP (NVLS) is never a fault here and never turned on or off: the run records whether it was off
(NCCL_NVLS_ENABLE in the ranks' environment or an NCCL config file) and takes the row that matches; the variables
that keep NVLink multicast off (NVLS_GUARD) travel into every kind's ranks as sshd's SetEnv gives them to every
session.
"""

import json
import os
import re
import subprocess
import sys
import time

from . import loader, perf

ALLREDUCE_TIMEOUT = 180   # seconds for one spawned all-reduce (NCCL init, warm-up, timing): a hang's deadline
TIMED_SECONDS = 2.0       # the timed iterations' share of the budget: fewer iterations (at least 2) where one is slow
MIB = 1 << 20

# NCCL's variables that keep an all-reduce off its fastest path (NCCL user guide, "Environment Variables":
# docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html; P2P_DISABLE, SHM_DISABLE, ALGO and PROTO are among those
# it says are for debugging and should not be kept set in production), each with what it does; a value in NEUTRAL
# leaves NCCL at its default.
SLOW_VARS = {
    "NCCL_P2P_DISABLE": "turns off peer-to-peer between GPUs: NVLink is not used, traffic goes through host memory",
    "NCCL_P2P_LEVEL": "limits peer-to-peer to GPUs this close to each other",
    "NCCL_SHM_DISABLE": "turns off the shared-memory transport between processes",
    "NCCL_ALGO": "restricts the algorithms NCCL may choose",
    "NCCL_PROTO": "restricts the protocols NCCL may use",
    "NCCL_MAX_NCHANNELS": "caps the channels (SMs and links) NCCL uses",
    "NCCL_MAX_CTAS": "caps the channels (SMs and links) NCCL uses",
    "NCCL_NTHREADS": "changes the threads per channel",
    "NCCL_BUFFSIZE": "changes the buffer each channel moves data through",
    "NCCL_CUMEM_ENABLE": "changes how NCCL maps its buffers",
}
NEUTRAL = {"NCCL_P2P_DISABLE": ("0",), "NCCL_SHM_DISABLE": ("0",)}
NVLS_GUARD = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
SHELLS = {None: "`ssh host cmd`", "interactive": "an interactive shell", "login": "a login shell"}
RELEVANT = ("NCCL_",)     # the variables a kind's ranks are compared by (NVLS_GUARD left out: sshd gives them all)


def nccl_env(environ=None):
    """The NCCL variables of a process's environment (and the NVLink multicast guards) -> {NAME: value}."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in sorted(environ.items()) if k.startswith(RELEVANT) or k in NVLS_GUARD}


def nccl_conf():
    """The NCCL config files NCCL reads (NCCL_CONF_FILE, else ~/.nccl.conf; then /etc/nccl.conf: the user guide)
    -> [{file, line, name, value}], the first file's entries first (they win)."""
    files = [os.environ.get("NCCL_CONF_FILE") or os.path.expanduser("~/.nccl.conf"), "/etc/nccl.conf"]
    out = []
    for path in files:
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            name, eq, value = line.strip().partition("=")
            if eq and not name.startswith("#") and re.fullmatch(r"[A-Za-z_]\w*", name.strip()):
                out.append({"file": path, "line": number, "name": name.strip(), "value": value.strip()})
    return out


def allreduce_worker():
    """One rank (`python PROGRAM --allreduce`; RANK, WORLD_SIZE, FLEET_AR_ELEMS in the environment): rank 0 prints
    `@@fleet-allreduce {bytes, seconds, iters, algbw, busbw, correct, time, env, conf}`."""
    started = time.perf_counter()
    import datetime

    import torch
    import torch.distributed as dist
    imported = time.perf_counter()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    x = torch.ones(int(os.environ["FLEET_AR_ELEMS"]), device="cuda", dtype=torch.float32)
    dist.all_reduce(x)                 # the first sets NCCL's communicator up
    torch.cuda.synchronize()
    first = time.perf_counter()
    for _ in range(2):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    one = (time.perf_counter() - first) / 2
    iters = torch.tensor([max(2, min(10, int(TIMED_SECONDS / max(one, 1e-6))))], device="cuda")
    dist.broadcast(iters, 0)           # every rank runs rank 0's count
    iters = int(iters.item())
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    done = time.perf_counter()
    t = (done - start) / iters
    ok = bool(torch.allclose(x[:8], torch.full((8,), float(world) ** (3 + iters), device="cuda")))
    if rank == 0:
        size = x.numel() * 4
        algbw = size / t / 1e9
        print("@@fleet-allreduce " + json.dumps({
            "bytes": size, "seconds": t, "iters": iters, "algbw": algbw, "busbw": algbw * 2 * (world - 1) / world,
            "correct": ok, "time": {"import": round(imported - started, 3), "init": round(first - imported, 3),
                                    "warmup": round(start - first, 3), "timed": round(done - start, 3)},
            "env": nccl_env(), "conf": nccl_conf()}))
    dist.destroy_process_group()


def nvls_state(env, conf):
    """Whether NVLink SHARP was off for the run, and what says so -> {"enabled": True|False|None, "by"}."""
    if "NCCL_NVLS_ENABLE" in env:
        return {"enabled": env["NCCL_NVLS_ENABLE"] not in ("0", ""), "by": f"NCCL_NVLS_ENABLE={env['NCCL_NVLS_ENABLE']} "
                "in the ranks' environment"}
    entry = next((e for e in conf if e["name"] == "NCCL_NVLS_ENABLE"), None)
    if entry:
        return {"enabled": entry["value"] != "0", "by": f"NCCL_NVLS_ENABLE={entry['value']} at {entry['file']}:"
                f"{entry['line']}"}
    return {"enabled": None, "by": "NCCL_NVLS_ENABLE not set: NCCL's default (on where NVSwitch multicast works)"}


def pick_row(table, name, link, n, nvls):
    """The first row for this GPU, link, count and NVLS (NVLS not known to be on: the row without it, never a false
    failure) -> (row, note)."""
    rows = [r for r in (table or {}).get("rows") or [] if r["match"] in name and r["link"] == link and r["gpus"] == n]
    row = next((r for r in rows if r["nvls"] == bool(nvls)), None)
    if row is None and nvls:
        row = next((r for r in rows if not r["nvls"]), None)
        return row, "NVLS on, no row for it: judged by the row without it" if row else None
    return row, None


def fallback_row(table, link):
    """No row: only a lost link fails, under half of what the link kind gives."""
    speeds = (table or {}).get("link_busbw") or {"nvlink4": 450.0, "nvlink3": 230.0, "nvlink": 100.0, "pcie": 25.0}
    expect = speeds.get(link, speeds.get("pcie", 25.0))
    floor = expect * float((table or {}).get("floor_share") or 0.5)
    return {"match": None, "link": link, "peak": expect, "warn": floor, "floor": floor, "size": 1 << 30,
            "source": "no row for this GPU, count and link: only a lost link fails"}


def message_bytes(row, free, share):
    """The message: the row's size (what its figure was measured at), within `share` of the GPUs' least free memory;
    a power of two, at least 1 MiB (free None: not known, the row's size)."""
    cap = int(row.get("size") or 1 << 30)
    cap = cap if free is None else min(cap, int(share * free))
    size = MIB
    while size * 2 <= cap:
        size *= 2
    return size


def free_port():
    """A port no one listens on now (the kernel's pick), so a user's job on NCCL's usual 29500 is never met."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(run, n, elems, kind=None):
    """Start the ranks (here, or under a kind's startup files) and wait -> (result | None, error | None, seconds)."""
    from .kinds import fresh_env
    started = time.perf_counter()
    extra = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": str(n), "FLEET_AR_ELEMS": str(elems)}
    if kind:   # the kind's own startup files, from a new session's environment (+ sshd's multicast guards)
        base = {**fresh_env(), **{k: os.environ[k] for k in NVLS_GUARD if k in os.environ}}
        flags = ["+m", "-i"] if kind == "interactive" else ["-l"]
        argv = ["bash", *flags, "-c", 'exec "$0" "$1" --allreduce', sys.executable, run.program]
    else:
        base, argv = dict(os.environ), [sys.executable, run.program, "--allreduce"]
    procs = [subprocess.Popen(argv, env={**base, **extra, "RANK": str(rank)}, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
             for rank in range(n)]
    deadline, outs = time.time() + ALLREDUCE_TIMEOUT, []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, deadline - time.time()))[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                try:
                    os.killpg(q.pid, 9)
                except OSError:
                    q.kill()
            return None, f"did not finish in {ALLREDUCE_TIMEOUT} s", time.perf_counter() - started
    found = re.search(r"^@@fleet-allreduce (.*)$", outs[0] or "", re.M)
    if not found or any(p.returncode for p in procs):
        tail = " ".join((outs[0] or "").strip().splitlines()[-2:])[:300]
        return None, f"failed: {tail}", time.perf_counter() - started
    return json.loads(found.group(1)), None, time.perf_counter() - started


def variable_where(run, kind, name, conf):
    """Where a slow variable came from: the startup file:line of this kind (the shells' trace, where it follows the
    name), else the NCCL config file's line, else the environment it was in."""
    trace = run.shell_trace() if os.environ.get("FLEET_VERIFY_TRACE") else {}
    shell = trace.get(loader.TRACED.get(kind or "ssh")) or {}
    if name in (shell.get("set_by") or {}) or name in (shell.get("families") or {}):
        return loader.variable_line(run, kind or "ssh", name)
    entry = next((e for e in conf if e["name"] == name), None)
    if entry:
        return f"{entry['file']}:{entry['line']}"
    return (f"the environment the ranks ran in ({SHELLS[kind]}; the "
            "startup files' trace does not follow this variable)")


def causes(run, result, topo, kind=None):
    """What the host shows that slows an all-reduce -> [sentence], the likeliest first: a variable, a pair on PCIe
    or a GPU off the fabric, a clock held down."""
    env, conf = result.get("env") or {}, result.get("conf") or []
    found = []
    values = {**{e["name"]: e["value"] for e in reversed(conf)}, **env}
    for name, what in SLOW_VARS.items():
        if name in values and values[name] not in NEUTRAL.get(name, ()):
            where = variable_where(run, kind, name, conf if name not in env else [])
            found.append(f"{name}={values[name]} ({what}) set at {where}; fix: remove it there (NCCL's guide: a "
                         "debugging variable, not for production)")
    pcie = sorted(p for p, cell in (topo or {}).items() if not cell.startswith("NV"))
    if pcie and any(cell.startswith("NV") for cell in topo.values()):
        found.append("pairs " + ", ".join(f"{i}-{j} ({topo[(i, j)]})" for i, j in pcie[:6]) + " are PCIe while the "
                     "others are NVLink: a GPU off the fabric (nvidia-smi -q, Fabric State/Status)")
    elif pcie:
        found.append("the GPUs are joined by PCIe (" + ", ".join(f"{i}-{j} {topo[(i, j)]}" for i, j in pcie[:6])
                     + "), not NVLink")
    slow = [f"GPU {g['index']}: {', '.join(e for e in g['events'] if e in perf.SLOWDOWNS)}"
            for g in perf.load_sample(perf.smi("--query-gpu=" + perf.LOAD_FIELDS)) or []
            if any(e in perf.SLOWDOWNS for e in g["events"])]
    if slow:
        found.append("clocks held down (" + "; ".join(slow) + ")")
    return found or ["nothing the host shows explains it (no NCCL variable that slows it, every pair NVLink, no "
                     "clock held down): the fabric itself (nvidia-smi nvlink -s, the fabric manager)"]


def judge(run, result, row, note, topo, n, kind=None):
    """One all-reduce's verdict -> "passed" | "degraded" | "failed", with its check (allreduce, allreduce_KIND)."""
    name = "allreduce" + (f"_{kind}" if kind else "")
    where = f" in {SHELLS[kind]}" if kind else ""
    busbw, size = result["busbw"], f"{result['bytes'] / 2**20:.0f} MiB"
    against = (f"{row['link']}, {n} GPUs, NVLS {'on' if row.get('nvls') else 'off'}: peak ~{row['peak']:.0f}, "
               f"degraded under {row['warn']:.0f}, failed under {row['floor']:.0f}")
    if row.get("size") and result["bytes"] < row["size"]:
        against += f"; the row's figure is at {row['size'] / 2**30:.0f} GiB"
    head = f"all-reduce of {size} over {n} GPUs{where}: bus bandwidth {busbw:.0f} GB/s ({against}"
    head += f"; {note})" if note else ")"
    if not result["correct"]:
        result["verdict"] = "failed"
        run.check(name, False, f"all-reduce of {size} over {n} GPUs{where} gave a wrong sum")
    elif busbw < row["warn"]:
        result["verdict"] = "failed" if busbw < row["floor"] else "degraded"
        result["causes"] = found = causes(run, result, topo, kind)
        run.check(name, result["verdict"] == "degraded", f"{result['verdict']}: {head}: " + "; ".join(found))
    else:
        result["verdict"] = "passed"
        run.check(name, True, head)
    return result["verdict"]
