"""The variables a GPU job reads, by family (issue 45 item 2): which names the shells' trace records in each kind of
process, and which of their values break or slow a job, each row with its source. Read by the facts (fleet/remote/
trace.py, fleet/facts/shells.py), by decide (fleet/decide/families.py) and by the verify program on the host (bundled
with it: fleet/resources/verify.py), so the three judge by the same table. Standalone and stdlib only.

The families, by prefix (what each library reads, from its own documentation):

    CUDA_ NVIDIA_          the CUDA driver and runtime (CUDA programming guide, "CUDA Environment Variables"); the
                           container toolkit (NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES)
    NCCL_                  NCCL (NCCL user guide, "Environment Variables"; also read from /etc/nccl.conf)
    TORCH_ PYTORCH_        PyTorch ("CUDA Environment Variables", "PYTORCH ProcessGroupNCCL Environment Variables")
    TORCHINDUCTOR_ TRITON_ torch.compile's Inductor and the Triton compiler it runs (their config modules read them)
    PYTHON                 Python itself (PYTHONPATH, PYTHONHOME, PYTHONNOUSERSITE, ...: `python3 --help-env`)
    LD_                    the dynamic loader (ld.so(8): LD_LIBRARY_PATH, LD_PRELOAD, LD_BIND_NOW, LD_DEBUG, ...)
    OMP_ GOMP_ KMP_        OpenMP (the OpenMP specification's OMP_*; GNU libgomp's GOMP_*; Intel/LLVM libomp's KMP_*)
    MKL_ OPENBLAS_         the CPU math libraries torch links (oneMKL, OpenBLAS: MKL_NUM_THREADS, OPENBLAS_NUM_THREADS)
    CUBLAS_ CUBLASLT_      cuBLAS and cuBLASLt (cuBLAS docs: CUBLAS_WORKSPACE_CONFIG, CUBLAS_LOGINFO_DBG,
                           CUBLASLT_LOG_LEVEL)
    CUDNN_                 cuDNN (its API logging: CUDNN_LOGLEVEL_DBG, CUDNN_LOGDEST_DBG)
    NVSHMEM_               NVSHMEM (torch's symmetric memory, DeepEP)
    UCX_ FI_ GLOO_         the transports a multi-node job may take: UCX, libfabric (NCCL's aws-ofi plugin), Gloo

Not a family: HF_ (the Hugging Face libraries, not the GPU stack; HF_TOKEN is a secret) and the rendezvous names
torchrun sets per job (RANK, WORLD_SIZE, MASTER_ADDR). A name that looks like a secret (SECRET_NAME) is never
recorded, whatever its family, and a value is scrubbed by the facts (fleet/facts/scrub.py) before it is kept.
"""

import re

PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_", "TRITON_", "PYTHON", "LD_", "OMP_",
            "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "CUBLAS_", "CUBLASLT_", "CUDNN_", "NVSHMEM_", "UCX_", "FI_", "GLOO_")
# an ERE both bash ([[ =~ ]]) and awk read: a name of the families
FAMILY_ERE = "^(" + "|".join(PREFIXES) + ")[A-Za-z0-9_]*$"
# the names never recorded (upper-cased first): what fleet/facts/scrub.py calls a secret's name
SECRET_ERE = "TOKEN|PASSW|PASSPHRASE|SECRET|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTHORIZATION"
_FAMILY = re.compile(FAMILY_ERE)
_SECRET = re.compile(SECRET_ERE)

# Sources, cited by the rows
NCCL_ENV = ("NVIDIA NCCL user guide, \"Environment Variables\" (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html): "
            "the \"Debugging\" variables \"should not be used in production nor retained in scripts ... Keeping them set "
            "may result in sub-optimal behavior, crashes, or hangs\"")
CUDA_ENV = ("CUDA programming guide, \"CUDA Environment Variables\" (docs.nvidia.com/cuda/cuda-programming-guide/"
            "05-appendices/environment-variables.html)")
TORCH_CUDA_ENV = "PyTorch docs, \"CUDA Environment Variables\" (docs.pytorch.org/docs/stable/cuda_environment_variables.html)"
TORCH_NCCL_ENV = ("PyTorch docs, \"PYTORCH ProcessGroupNCCL Environment Variables\" (docs.pytorch.org/docs/stable/"
                  "torch_nccl_environment_variables.html); pytorch/pytorch#50820 (blocking wait: \"training extremely slow\")")
CUBLAS_ENV = "cuBLAS docs, \"Results reproducibility\" and \"cuBLAS Logging\" (docs.nvidia.com/cuda/cublas)"
CUDNN_ENV = "cuDNN docs, \"API Logging\" (docs.nvidia.com/deeplearning/cudnn)"
OMP_ENV = ("the OpenMP specification, OMP_NUM_THREADS; torch.distributed.run sets OMP_NUM_THREADS=1 for each worker "
           "unless given (docs.pytorch.org/docs/stable/elastic/run.html)")
LENT = ("the lent multi-GPU machines keep NVLink multicast off in every process (shared/DOMAIN.md, \"Several GPUs, "
        "seen for real\"; shared/tools/real-gpu-env.sh)")
CAPTURED_P2P = "all-reduce 296 -> 27 GB/s over 2 H200s, 335 -> 25 over 4, as measured on the lent H200s"

FAIL, WARN, DELIBERATE = "fail", "warn", "deliberate"   # verify fails / verify warns / a deliberate setting, said


def _truthy(value):
    return value.strip().lower() not in ("", "0", "false", "no", "off")


class Rule:
    """One row: a variable (or a prefix of names), the values it judges (when(value) is true), what it does to a job,
    how bad (FAIL: verify fails; WARN: a note; DELIBERATE: said, never judged as harm), the fix and the source."""

    def __init__(self, name, when, does, severity, source, fix=None):
        self.name, self.when, self.does, self.severity, self.source = name, when, does, severity, source
        self.fix = fix or f"delete the line that sets {name} (or set it only for the one run that needs it: " \
                          f"`{name}=... python3 train.py`)"

    def matches(self, name, value):
        hit = name == self.name or (self.name.endswith("*") and name.startswith(self.name[:-1]))
        return hit and self.when(value)


_ANY = lambda v: True    # noqa: E731 (a row's `when`: any value)
RULES = (
    # NCCL's debugging variables (NCCL_ENV): a transport turned off, an algorithm or protocol forced
    Rule("NCCL_P2P_DISABLE", _truthy, "turns off NCCL's peer-to-peer transport (NVLink and PCIe between GPUs): "
         f"collectives go through host memory ({CAPTURED_P2P})", FAIL, NCCL_ENV),
    Rule("NCCL_P2P_LEVEL", lambda v: v.strip().upper() in ("LOC", "0"), "NCCL never uses peer-to-peer (LOC): "
         f"collectives go through host memory ({CAPTURED_P2P})", FAIL, NCCL_ENV),
    Rule("NCCL_P2P_LEVEL", _ANY, "caps the GPU distance NCCL uses peer-to-peer over (a debugging variable)", WARN,
         NCCL_ENV),
    Rule("NCCL_SHM_DISABLE", _truthy, "turns off NCCL's shared-memory transport (used where peer-to-peer is not)",
         WARN, NCCL_ENV),
    Rule("NCCL_IB_DISABLE", _truthy, "turns off InfiniBand/RoCE: a job across hosts falls back to TCP sockets",
         WARN, NCCL_ENV),
    Rule("NCCL_NET_GDR_LEVEL", _ANY, "caps GPUDirect RDMA between NIC and GPU (a debugging variable)", WARN, NCCL_ENV),
    Rule("NCCL_ALGO", _ANY, "forces NCCL's algorithm instead of its tuned choice (a debugging variable)", WARN,
         NCCL_ENV),
    Rule("NCCL_PROTO", _ANY, "forces NCCL's protocol instead of its tuned choice (a debugging variable)", WARN,
         NCCL_ENV),
    Rule("NCCL_LAUNCH_MODE", _ANY, "changes how NCCL launches its kernels (a debugging variable)", WARN, NCCL_ENV),
    Rule("NCCL_DEBUG", lambda v: v.strip().upper() == "TRACE", "NCCL logs every call (TRACE: replayable traces)",
         WARN, NCCL_ENV),
    Rule("NCCL_MAX_NCHANNELS", _ANY, "caps NCCL's channels (bandwidth; a debugging variable)", WARN, NCCL_ENV),
    Rule("NCCL_MIN_NCHANNELS", _ANY, "forces NCCL's channel count (a debugging variable)", WARN, NCCL_ENV),
    Rule("NCCL_NVLS_ENABLE", lambda v: v.strip() == "0", "NVLink SHARP (multicast) off: " + LENT, DELIBERATE, LENT,
         fix="none: fleet never changes it"),
    # CUDA (CUDA_ENV)
    Rule("CUDA_LAUNCH_BLOCKING", _truthy, "every kernel launch waits for the kernel to finish (CPU and GPU "
         "serialised): \"provided for debugging purposes only\"", FAIL, CUDA_ENV),
    Rule("CUDA_MODULE_LOADING", lambda v: v.strip().upper() == "EAGER", "loads every kernel of every library at start "
         "(lazy loading is the default since CUDA 12.2): more GPU memory and a slower start", WARN, CUDA_ENV),
    Rule("CUDA_CACHE_DISABLE", _truthy, "turns off the JIT cache: PTX is compiled again at every start", WARN,
         CUDA_ENV),
    # PyTorch (TORCH_CUDA_ENV, TORCH_NCCL_ENV)
    Rule("PYTORCH_NO_CUDA_MEMORY_CACHING", _truthy, "turns off torch's caching allocator: every tensor is a "
         "cudaMalloc and a cudaFree (\"useful for debugging\")", FAIL, TORCH_CUDA_ENV),
    Rule("TORCH_NCCL_BLOCKING_WAIT", _truthy, "every collective's wait() blocks the CPU until it ends", FAIL,
         TORCH_NCCL_ENV),
    Rule("NCCL_BLOCKING_WAIT", _truthy, "every collective's wait() blocks the CPU until it ends (the older name of "
         "TORCH_NCCL_BLOCKING_WAIT)", FAIL, TORCH_NCCL_ENV),
    Rule("TORCH_NCCL_DESYNC_DEBUG", _truthy, "torch's collective desync debugging", WARN, TORCH_NCCL_ENV),
    Rule("TORCH_CUDNN_V8_API_DISABLED", _truthy, "turns off cuDNN's v8 API (falls back to v7)", WARN, TORCH_CUDA_ENV),
    Rule("TORCH_SYMM_MEM_DISABLE_MULTICAST", _truthy, "symmetric memory without multicast: " + LENT, DELIBERATE, LENT,
         fix="none: fleet never changes it"),
    Rule("NVSHMEM_DISABLE_NVLS", _truthy, "NVSHMEM without NVLink SHARP: " + LENT, DELIBERATE, LENT,
         fix="none: fleet never changes it"),
    # the math libraries and OpenMP
    Rule("CUBLAS_WORKSPACE_CONFIG", _ANY, "cuBLAS's workspace fixed for reproducible results (deterministic "
         "algorithms, at some speed)", WARN, CUBLAS_ENV),
    Rule("CUBLAS_LOGINFO_DBG", _truthy, "cuBLAS logs every call", WARN, CUBLAS_ENV),
    Rule("CUBLASLT_LOG_LEVEL", lambda v: v.strip() not in ("", "0"), "cuBLASLt logs its calls", WARN, CUBLAS_ENV),
    Rule("CUDNN_LOGLEVEL_DBG", lambda v: v.strip() not in ("", "0"), "cuDNN logs its calls", WARN, CUDNN_ENV),
    Rule("CUDNN_LOGINFO_DBG", _truthy, "cuDNN logs every call", WARN, CUDNN_ENV),
    Rule("OMP_NUM_THREADS", lambda v: v.strip() == "1", "one OpenMP thread per process: torch's CPU operators and "
         "data loading run on one core", WARN, OMP_ENV),
    Rule("MKL_NUM_THREADS", lambda v: v.strip() == "1", "oneMKL on one thread per process", WARN, OMP_ENV),
    Rule("OPENBLAS_NUM_THREADS", lambda v: v.strip() == "1", "OpenBLAS on one thread per process", WARN, OMP_ENV),
    Rule("LD_DEBUG", lambda v: v.strip() != "", "the loader prints its work for every process started", WARN,
         "ld.so(8), LD_DEBUG"),
)
# judged elsewhere, by their own rules: the visibility of GPUs and the loader and python resolution
# (fleet/decide/shells.py, fleet/decide/loader.py)
ELSEWHERE = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "LD_PRELOAD",
             "PYTHONPATH", "PYTHONHOME", "CUDA_HOME", "CUDA_PATH")


# The limits a job in a kind of shell gets (ulimit -n, ulimit -l), judged by the thresholds fleet's health reads
# (fleet/decide/health.py takes them from here). NCCL's user guide, Troubleshooting: Docker's limited shared and pinned
# memory, `--ulimit memlock=-1`; PyTorch's multiprocessing notes: the file_descriptor sharing strategy keeps a
# descriptor open per shared tensor ("Too many open files").
NOFILE_FLOOR = 1024        # the usual soft default
LIMITS_SOURCE = ("NCCL user guide, Troubleshooting (\"Docker\": --ulimit memlock=-1); PyTorch docs, \"Multiprocessing "
                 "best practices\" (file_descriptor sharing: one open file per shared tensor)")
LIMIT_WORDS = {"nofile": "ulimit -n", "memlock": "ulimit -l"}


def judge_limits(limits, set_by=None, session=None):
    """One kind's limits ({nofile: 256, memlock: 8192 | "unlimited"}) -> [{limit, value, does, fix, source, setter}]
    for each below its threshold that a startup line set (set_by) or that differs from the session's (`session`: the
    limits of a process that read no startup file); the session's own are health's to say."""
    out = []
    for key, value in sorted((limits or {}).items()):
        setter = (set_by or {}).get(key)
        if not setter and (session or {}).get(key, value) == value:
            continue
        if key == "nofile" and isinstance(value, int) and value <= NOFILE_FLOOR:
            does = "few open files: DataLoader workers sharing many tensors can hit 'Too many open files'"
        elif key == "memlock" and isinstance(value, int):
            does = ("locked (pinned) memory is capped: NCCL over RDMA/InfiniBand wants it unlimited; one host's NVLink "
                    "and PCIe traffic do not need it")
        else:
            continue
        out.append({"limit": LIMIT_WORDS.get(key, key), "value": value, "does": does, "source": LIMITS_SOURCE,
                    "setter": setter, "fix": f"delete the line that lowers it, or raise it for the job: "
                                              f"`{LIMIT_WORDS.get(key, key)} ...` before python3 train.py"})
    return out


def accepted(patterns):
    """The patterns of an sshd AcceptEnv line that let a client send a variable of the families (`*`, `NCCL_*`, `CUDA_VISIBLE_DEVICES`,
    ...: sshd's match_pattern, * and ?, as fnmatch reads them): a job then gets what the machine it is started from
    exports (ssh_config(5) SendEnv)."""
    import fnmatch

    return [pat for pat in patterns or () if is_family(pat.rstrip("*?"))
            or any(fnmatch.fnmatchcase(p + "X", pat) for p in PREFIXES)]


def limits_line(rows, item, value):
    """The last limits.conf line (trace's limits_conf) that gives the session's soft `item` this value -> "FILE:LINE"
    | None (pam_limits: `-` sets both, `soft` the one ulimit shows; -1, unlimited and infinity are unlimited)."""
    found = None
    for row in rows or []:
        given = row.get("value", "").lower()
        given = "unlimited" if given in ("-1", "unlimited", "infinity") else given
        if row.get("item") == item and row.get("type") in ("-", "soft") and given == str(value):
            found = f"{row['file']}:{row['line']}"
    return found


def conf_setters(conf):
    """A kind's nccl_conf ({NAME: {value, file, line}}) -> ({NAME: value}, {NAME: setter}) for judge()."""
    values = {name: row.get("value") for name, row in (conf or {}).items()}
    setters = {name: {"file": row.get("file"), "line": row.get("line"), "depth": 0, "via": [],
                      "text": f"{name}={row.get('value')}"} for name, row in (conf or {}).items()}
    return values, setters


def is_family(name):
    """A name of the families, and not one that looks like a secret's."""
    return bool(_FAMILY.match(name or "")) and not is_secret(name)


def is_secret(name):
    return bool(_SECRET.search((name or "").upper()))


def rule_for(name, value):
    """The first row judging this value of this variable, else None."""
    if value is None or name in ELSEWHERE:
        return None
    return next((r for r in RULES if r.matches(name, value)), None)


def judge(values, set_by=None):
    """One kind's family variables -> [{variable, value, severity, does, fix, source, setter}] for each row that
    judges its value, FAIL first (set_by: the kind's set_by, each setter handed back as it is)."""
    out = []
    for name in sorted(values or {}):
        rule = rule_for(name, values[name])
        if rule is not None:
            out.append({"variable": name, "value": values[name], "severity": rule.severity, "does": rule.does,
                        "fix": rule.fix, "source": rule.source, "setter": (set_by or {}).get(name)})
    order = {FAIL: 0, WARN: 1, DELIBERATE: 2}
    return sorted(out, key=lambda f: order[f["severity"]])
