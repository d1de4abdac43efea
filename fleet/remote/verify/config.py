"""The one value the verify program's steps are handed: its config (CONFIG_JSON) and the run it is in."""

import os
import subprocess

from .. import trace

STOP = object()           # a step's answer that ends the run
UNASKED = object()        # an answer of the host's not asked yet


class Config:
    """CONFIG_JSON, one JSON object (every key optional; the verify role's templates/verify.json.j2 writes it):

        perf          bool    the perf smoke and the all-reduce run (never in --check)          default false
        gpu_expected  bool    the platform has an NVIDIA GPU (false: verified on the CPU)      default true
        platform      str     the host's platform (decisions.platform.name): its perf rows are the tables'
        perf_table    list    [{match, peak, matmul_floor, attention_floor} (TFLOP/s), memory_tbs,
                              memory_floor_tbs, host_gbs, host_floor_gbs (the bandwidth floors; 0: none)],
                              first match wins; [] or absent: the platform's rows in the tables
        copy_table    list    [{match, host_floor_gbs, pair_read_floor_gbs, pair_write_floor_gbs, source}]: the
                              copy engines' floors (fleet/knowledge/copy_floors.py), first match wins; true: the
                              tables' rows
        memory_share  float   of the FREE GPU memory the perf tensors may take                 default 0.1
        busy_share    float   memory used by others above this share of the total: busy        default 0.1
        toolkit       str     the decided toolkit's directory (decisions.cuda.path): its nvcc and CUDA_HOME in
                              every kind of shell (issue 35); "" or absent: not checked
        allreduce     dict    {rows: [{match, link, gpus, nvls, peak, warn, floor, size, source}], link_busbw,
                              floor_share}: the all-reduce's rows (fleet/knowledge/allreduce.py), first match
                              wins; true: the tables' rows
        allreduce_run bool    the all-reduce runs (with perf, or verify_allreduce; never in --check)  default perf
        multi_gpu_budget  float   seconds the multi-GPU proof may take (links: topology, peer access, the
                              all-reduce here and in each kind that differs)                        default 60
        venv_first    bool    fleet's venv first on PATH (env_hooks_venv_on_path: first): python3, python and
                              pip in every kind of shell are the venv's, with the torch verified here  default false

    The tables (true, a platform) are fleet's, the same for every host: they travel in the installed program, as
    its module `tables` (fleet/resources/verify.py tables_module), not in every host's CONFIG_JSON.
    """

    def __init__(self, values=None):
        values = with_tables(values or {}, _bundled)
        self.perf = bool(values.get("perf", False))
        self.gpu_expected = bool(values.get("gpu_expected", True))
        self.perf_table = list(values.get("perf_table") or [])
        self.copy_table = list(values.get("copy_table") or [])
        self.memory_share = float(values.get("memory_share", 0.1))
        self.busy_share = float(values.get("busy_share", 0.1))
        self.toolkit = str(values.get("toolkit") or "").rstrip("/")
        self.venv_first = bool(values.get("venv_first", False))
        self.allreduce = dict(values.get("allreduce") or {})
        self.allreduce_run = bool(values.get("allreduce_run", self.perf))
        self.multi_gpu_budget = float(values.get("multi_gpu_budget", 60))

    def perf_row(self, name):
        """The perf table's first row whose `match` is in the GPU's name (a copy), else None."""
        return next((dict(r) for r in self.perf_table if r["match"] in name), None)

    def copy_row(self, name):
        """The copy table's first row whose `match` is in the GPU's name (a copy), else None."""
        return next((dict(r) for r in self.copy_table if r["match"] in name), None)


def with_tables(values, tables):
    """CONFIG_JSON with the rows it takes from fleet's tables written in: `tables()` -> {"ALLREDUCE", "COPY_FLOORS",
    "PERF": {platform: rows}}, asked only where a value names them (the installed program's own, _bundled; fleet's
    unit tests hand fleet/resources/verify.py tables)."""
    values = dict(values)
    if values.get("allreduce") is True:
        values["allreduce"] = tables()["ALLREDUCE"]
    if values.get("copy_table") is True:
        values["copy_table"] = tables()["COPY_FLOORS"]
    platform = values.pop("platform", "")   # taken: the values this returns are read again as they are
    if not values.get("perf_table") and platform:
        values["perf_table"] = tables()["PERF"].get(platform, [])
    return values


def _bundled():
    from .. import tables   # written into the program by fleet (fleet/remote/__init__.py bundle)

    return {"ALLREDUCE": tables.ALLREDUCE, "COPY_FLOORS": tables.COPY_FLOORS, "PERF": tables.PERF}


class Run:
    """One run of the program: its config, the file it runs from (started again in the other kinds of process and
    for each all-reduce rank; None: not run from a file), the checks judged so far, what it found (`out`, the JSON
    it prints), and what the steps learned on the way (torch, the busy look, the host's answers asked once)."""

    def __init__(self, config=None, program=None):
        self.config = config if isinstance(config, Config) else Config(config)
        self.program = program
        self.checks = []
        self.out = {"missing_libraries": [], "torch": None, "cuda": {}, "perf": None, "gpus": []}
        self.torch = None             # the torch module, once it imported
        self.look = None              # gpus.busy_look: the GPUs before this run touched them (perf runs only)
        self.shells = None            # the startup files' trace, parsed (shell_trace), once asked
        self.host_gpus = UNASKED      # kinds.host_gpu_count, once asked: the count, or None where unknown
        self.kind_reports = {}        # runner.cuda_kinds: each kind's CUDA report (its NCCL variables among them)

    def check(self, name, passed, detail=""):
        self.checks.append({"name": name, "passed": bool(passed), "detail": str(detail)[:900]})
        return passed

    def result(self, python):
        """The JSON the program prints: what it found, "passed" (every check, and at least one), "checks"."""
        return {**self.out, "passed": bool(self.checks) and all(c["passed"] for c in self.checks),
                "checks": self.checks, "python": python}

    def shell_trace(self):
        """fleet.facts.shells' trace of the startup files (its command, handed over by the verify resource in
        FLEET_VERIFY_TRACE), run once, only when a failure needs it, read as the facts read it (fleet/remote/trace.py)
        -> {"etc_environment": [...], KIND: {"ld_changes", "set_by", "commands", "pythons", VAR: value}}."""
        if self.shells is None:
            command, text = os.environ.get("FLEET_VERIFY_TRACE"), ""
            if command:
                try:
                    text = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120,
                                          stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"}).stdout
                except (OSError, subprocess.TimeoutExpired):
                    text = ""
            self.shells = trace.parse(text)
        return self.shells
