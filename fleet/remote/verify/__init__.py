"""fleet's verify program: the host side of the verify role, stdlib Python run on the host (torch imported only
inside the steps that need it).

It proves the GPU stack works in every kind of process (they read different startup files, or none, and may load
a different libcuda.so.1: issues 11, 23) and prints ONE JSON line as its last line:

    {"passed", "checks": [{"name", "passed", "detail"}], "missing_libraries", "torch", "cuda", "kinds", "perf",
     "bandwidth", "copies", "load", "gpus", "links", "commands", "python"}

exiting 0 only when every check passed. It runs in the shell `ssh host cmd` gives (torch, every GPU, perf), and
asks CUDA again in each other kind of process (bare, interactive, login) by starting itself there
(`--cuda-probe NEED`); a failed kind names the libcuda and the loader's step that put it first.

The modules, each one idea:

    config.py   Config (CONFIG_JSON) and Run: the one value every step is handed (config, checks, results)
    cuda.py     what one process sees of CUDA, asked of the driver API (cuda_report)
    kinds.py    each kind of process started and judged; the user's commands in each kind of shell
    jobenv.py   the variables of the families a GPU job reads, in each kind of shell, by the table with sources
    loader.py   which step of the loader put a libcuda first, and the startup file:line behind it
    explain.py  a failed CUDA start in words: cause and fix
    gpus.py     nvidia-smi, the busy look, the libraries torch lacks, every GPU's architecture and matmul
    perf.py     matmul and attention against the platform row, bandwidth, GPU health under load
    links.py    peer access, the NVLink topology, the all-reduce here and in each kind, the multi-GPU time budget
    allreduce.py  the all-reduce's ranks, its row (GPU, count, link, NVLS), size, verdict and the cause of a slow one
    copies.py   every GPU's pinned host copies and every pair's device copies (read, write) against the floors
    runner.py   the steps in order, `main`

It ships as ONE file (fleet/resources/verify.py verify_program: fleet/remote/__init__.py bundle carries these
modules, fleet/remote/loader_rules.py, fleet/remote/trace.py and fleet/remote/families.py, the facts' own rules, trace reader
and families table, and
fleet/remote/boot.py starts runner.main), installed on the host by the digest of that text. Run as
(fleet/resources/verify.py renders the command; nothing here is templated):

    python3 PROGRAM CONFIG_JSON          # the checks, in order (runner.STEPS)
    python3 PROGRAM --cuda-probe NEED    # one kind of process: `@@fleet-cuda {...}` (cuda.cuda_report)
    python3 PROGRAM --allreduce          # one rank of the all-reduce (RANK, WORLD_SIZE, FLEET_AR_ELEMS)

CONFIG_JSON: config.Config. The environment may carry FLEET_VERIFY_TRACE: fleet.facts.shells' trace of the startup
files (a bash command), run only where a failure needs it, to name the startup file:line that set a variable.

Adding a check: write `def my_check(run)` (in the module of its idea) that calls `run.check(name, passed, detail)`
once per verdict (and may put data in run.out["..."]), and put it in runner.STEPS where it belongs. Steps run in
order with the one Run (what an earlier step found: run.torch, run.look); a step that returns STOP ends the run
(the later steps depend on what it could not prove). An exception in a step is the check `verify_ran` failing with
the exception's text. Keep every module stdlib-only at import and templating-free.
"""
