"""The GPUs as the host says they are: nvidia-smi, whether others are using them (perf runs only on idle GPUs),
the libraries torch lacks (ldd, every one at once), and on every GPU the wheel's architecture and a matmul."""

import glob
import importlib.util
import os
import re
import subprocess

from .config import UNASKED


def smi(*args):
    try:
        proc = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [[part.strip() for part in line.split(",")] for line in proc.stdout.splitlines() if line.strip()]


def host_gpu_count(run):
    """The GPUs the kernel driver has (nvidia-smi: it ignores CUDA_VISIBLE_DEVICES), once; None when unknown."""
    if run.host_gpus is UNASKED:
        rows = smi("--query-gpu=index")
        run.host_gpus = len(rows) if rows is not None else None
    return run.host_gpus


def busy_look(run):
    """Before this process touches the GPU: other compute processes, memory in use, utilization."""
    gpus = smi("--query-gpu=index,memory.used,memory.total,utilization.gpu")
    apps = smi("--query-compute-apps=pid,process_name,used_memory")
    if gpus is None:
        return {"known": False}
    used = sum(float(g[1]) for g in gpus if re.fullmatch(r"[\d.]+", g[1]))
    total = sum(float(g[2]) for g in gpus if re.fullmatch(r"[\d.]+", g[2]))
    util = max((float(g[3]) for g in gpus if re.fullmatch(r"[\d.]+", g[3])), default=0.0)
    procs = [a for a in (apps or []) if a and a[0].isdigit() and int(a[0]) != os.getpid()]
    look = {"known": True, "processes": len(procs), "used_mb": used, "total_mb": total, "utilization": util,
            "names": [a[1] for a in procs][:5]}
    look["busy"] = None
    if procs or (total and used > run.config.busy_share * total) or util > 10:
        n = len(procs)
        look["busy"] = (f"{n} process{'es' if n != 1 else ''}, {used / 1024:.0f} GB in use"
                        + (f", {util:.0f} % busy" if util > 10 else ""))
    return look


def missing_libraries():
    """ldd over every shared object of the torch package: all undeclared dependencies at once."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return None
    root = os.path.dirname(spec.origin)
    missing = set()
    for so in glob.glob(os.path.join(root, "*.so*")) + glob.glob(os.path.join(root, "lib", "*.so*")):
        try:
            out = subprocess.run(["ldd", so], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        missing.update(m.group(1) for m in re.finditer(r"^\s*(\S+) => not found", out, re.M))
    return sorted(missing)


def arch_covers(arch_list, cap):
    major, minor = cap
    for arch in arch_list:
        m = re.match(r"(sm|compute)_(\d+)(\d)a?$", arch)
        if not m:
            continue
        a_major, a_minor = int(m.group(2)), int(m.group(3))
        if m.group(1) == "sm" and a_major == major and a_minor <= minor:
            return True, arch
        if m.group(1) == "compute" and (a_major, a_minor) <= (major, minor):
            return True, arch + " (PTX, JIT)"
    return False, None


def every_gpu(run, torch):
    """Every GPU, not GPU 0 alone: its architecture in the wheel and a matmul against the CPU."""
    arch_list = list(torch.cuda.get_arch_list())
    run.out["torch"]["arch_list"] = arch_list
    x, y = torch.randn(64, 32), torch.randn(32, 16)
    want = x @ y
    bad_arch, bad_math = [], []
    for i in range(torch.cuda.device_count()):
        cap = tuple(torch.cuda.get_device_capability(i))
        name = torch.cuda.get_device_name(i)
        ok, via = arch_covers(arch_list, cap)
        got = (x.to(f"cuda:{i}") @ y.to(f"cuda:{i}")).cpu()
        good = bool(torch.allclose(got, want, rtol=1e-3, atol=1e-3))
        run.out["gpus"].append({"index": i, "name": name, "capability": f"{cap[0]}.{cap[1]}", "runs": via,
                            "matmul_ok": good})
        if not ok:
            bad_arch.append(f"GPU {i} {name} is sm_{cap[0]}{cap[1]}")
        if not good:
            bad_math.append(f"GPU {i} {name}")
    gpus = run.out["gpus"]
    first = gpus[0]
    run.out["torch"].update(capability=first["capability"], device=first["name"])
    differ = [g for g in gpus if (g["name"], g["capability"]) != (first["name"], first["capability"])]
    label = f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}: {first['name']} ({first['capability']})"
    if differ:
        label += "; differ from GPU 0: " + ", ".join(f"GPU {g['index']} {g['name']} ({g['capability']})" for g in differ)
    run.check("wheel_supports_gpu", not bad_arch, f"{label}; runs {first['runs']}" if not bad_arch else
          "; ".join(bad_arch) + f": the wheel carries {' '.join(arch_list)}")
    run.check("matmul_matches_cpu", not bad_math, f"64x32 @ 32x16 on each of {len(gpus)} GPU(s) vs the CPU"
          if not bad_math else "wrong result on " + ", ".join(bad_math))
