"""The verify program's steps, in the order they run, and its `main` (the package's docstring: adding a check)."""

import json
import os
import sys

from . import allreduce, copies, explain, gpus, jobenv, kinds, links, perf
from .config import STOP, Run
from .cuda import cuda_report, need_of


def libraries(run):
    """ldd over torch's shared objects: every missing library at once (before the import, which names one)."""
    run.look = gpus.busy_look(run) if (run.config.perf and run.config.gpu_expected) else None
    missing = gpus.missing_libraries()
    if missing is None:
        run.check("torch_installed", False, f"no torch in {sys.executable}")
        return STOP
    run.out["missing_libraries"] = missing
    run.check("libraries_resolve", not missing, "all resolve" if not missing else "not found: " + ", ".join(missing))
    return None


def torch_imports(run):
    try:
        import torch
    except Exception as exc:  # the loader's error names the first missing library
        why = explain.import_cause(run)   # a .pth line that put another torch first, named with its line
        run.check("torch_imports", False, f"{type(exc).__name__}: {exc}" + (f": {why}" if why else ""))
        return STOP
    run.check("torch_imports", True, f"torch {torch.__version__} from {os.path.dirname(torch.__file__)}")
    run.out["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda}
    run.torch = torch
    return None


def cpu_only(run):
    """A platform without an NVIDIA GPU: a small matmul on the CPU against plain Python, and nothing after it."""
    if run.config.gpu_expected:
        return None
    torch = run.torch
    x, y = torch.randn(64, 32), torch.randn(32, 16)
    a, b, got = x.tolist(), y.tolist(), (x @ y).tolist()
    want = [[sum(a[i][k] * b[k][j] for k in range(32)) for j in range(16)] for i in range(64)]
    ok = all(abs(got[i][j] - want[i][j]) <= 1e-3 + 1e-3 * abs(want[i][j]) for i in range(64) for j in range(16))
    run.check("cpu_matmul", ok, "no NVIDIA GPU on this host: CUDA checks skipped; 64x32 @ 32x16 on the CPU "
              "matches plain Python")
    return STOP


def cuda_kinds(run):
    """CUDA in every kind of process: here (with torch) and in a bare, an interactive and a login process."""
    here = cuda_report()
    others = kinds.other_kinds(run, need_of(run.torch.version.cuda))
    run.out["cuda"] = {"noninteractive": here, "interactive": others["interactive"]}   # as before; every kind: "kinds"
    run.kind_reports = {"ssh": here, **others}   # each kind's NCCL variables: the all-reduce judges the kinds they differ in
    run.out["kinds"] = {kind: kinds.judge_kind(run, kind, here if kind == "ssh" else others[kind])
                        for kind in kinds.KINDS}
    return None if here.get("torch_available") else STOP


def every_gpu(run):
    gpus.every_gpu(run, run.torch)


def gpu_links(run):
    links.links(run, run.torch, run.look, allreduce=run.config.allreduce_run)   # like perf, never in --check


def perf_smoke(run):
    if not run.config.perf:
        return STOP
    if run.look and run.look.get("busy"):
        run.out["perf"] = {"skipped": f"perf skipped: {run.look['busy']}", "look": run.look}
        run.check("perf", True, run.out["perf"]["skipped"])
        return STOP
    torch = run.torch
    topo = {tuple(map(int, k.split("-"))): c for k, c in ((run.out.get("links") or {}).get("topology") or {}).items()}
    for name, step in (("perf", perf.perf), ("bandwidth", perf.bandwidth), ("copies", copies.copies),
                       ("under_load", perf.under_load)):
        try:
            if step is perf.under_load:
                step(run, torch)
            elif step is copies.copies:   # every GPU and every pair, the topology naming why one is short
                step(run, torch, torch.cuda.get_device_name(0), topo)
            else:
                step(run, torch, torch.cuda.get_device_name(0))
        except Exception as exc:
            run.check(name, False, f"{type(exc).__name__}: {exc}")
    return None


# The checks, in the order they run. Add yours where it belongs (the package's docstring).
STEPS = [libraries, torch_imports, cpu_only, cuda_kinds, kinds.user_commands, jobenv.job_variables, every_gpu, gpu_links,
         perf_smoke]


def run_steps(run):
    """Every step with this run -> what it prints (Run.result). Never raises."""
    try:
        for step in STEPS:
            if step(run) is STOP:
                break
    except Exception as exc:
        run.check("verify_ran", False, f"{type(exc).__name__}: {exc}")
    return run.result(sys.executable)


def main(argv, program=None):
    """The program's command line (the package's docstring); `program`: the file it runs from."""
    if argv[:1] == ["--cuda-probe"]:
        print("@@fleet-cuda " + json.dumps(cuda_report(False, int(argv[1]) if len(argv) > 1 else 0)))
        return 0
    if argv[:1] == ["--allreduce"]:
        allreduce.allreduce_worker()
        return 0
    try:
        config = json.loads(argv[0]) if argv else {}
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        print(json.dumps({"passed": False, "checks": [{"name": "verify_ran", "passed": False,
                                                       "detail": f"bad config {argv[0][:200]!r}: {exc}"}]}))
        return 1
    out = run_steps(Run(config, program))
    print(json.dumps(out))
    return 0 if out["passed"] else 1
