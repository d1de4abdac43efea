"""The decisions, as a tree of dataclasses; `Decisions.to_json()` is what `--json` prints.

Every decision carries `reason`: one line a person can act on.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

# What copy.deepcopy hands back as it is: dataclasses.asdict keeps these values themselves
_ATOMS = frozenset({str, int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...]] = {}


def as_dict(obj: Any) -> Any:
    """dataclasses.asdict, value for value: a dataclass (recursively) as a dict, lists, tuples and dicts copied,
    anything else deep-copied. asdict deep-copies every leaf through copy.deepcopy, which for the text, numbers
    and None a decision holds returns the value itself: a converged host's decisions are ~130 such leaves, asked
    once a host (issue 46). Exactly asdict's shapes otherwise (a namedtuple stays one, a subclass keeps its type)."""
    kind = type(obj)
    if kind in _ATOMS:
        return obj
    # (a leaf of text, a number or None is taken as it is without a call: most of a decision's values are)
    if kind is list:
        return [v if type(v) in _ATOMS else as_dict(v) for v in obj]
    if kind is dict:
        return {k if type(k) in _ATOMS else as_dict(k): v if type(v) in _ATOMS else as_dict(v) for k, v in obj.items()}
    names = _FIELDS.get(kind)
    if names is None and hasattr(kind, "__dataclass_fields__"):
        names = _FIELDS.setdefault(kind, tuple(f.name for f in fields(obj)))
    if names is not None:
        out = {}
        for name in names:
            v = getattr(obj, name)
            out[name] = v if type(v) in _ATOMS else as_dict(v)
        return out
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return kind(*[as_dict(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return kind(as_dict(v) for v in obj)
    if isinstance(obj, dict):
        return kind((as_dict(k), as_dict(v)) for k, v in obj.items())
    return copy.deepcopy(obj)


@dataclass
class CudaDecision:
    wanted: str | None                 # "13.0"; None on a CPU-only host
    present: bool
    action: str                        # "present" | "install" | "none"
    source: str | None                 # "nvidia-apt" | "jetpack" | "dgx-os" | None
    repo: str | None                   # the apt repository URL, where one is used
    package: str | None                # "cuda-toolkit-13-0"
    path: str | None                   # "/usr/local/cuda-13.0"
    lib_dir: str | None                # "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
    reason: str
    refuse: str | None = None
    keyring: str | None = None         # NVIDIA's cuda-keyring .deb in the repo for this OS and CPU, even
                                       # where CUDA is present (NVPL, cuDSS and compat use the same repo)
    keyring_sha256: str | None = None  # its pinned digest (fleet/decide/keyring.py); None where none is known


@dataclass
class CompatDecision:
    use: bool
    reason: str
    path: str | None                   # "/usr/local/cuda-13.0/compat"
    package: str | None                # "cuda-compat-13-0"
    installed: dict | None             # the installed package as the facts saw it
    refuse: str | None = None
    # The part of this rule that can change between two starts of the host, the kernel driver, as the gate
    # re-checks it at every start (roles/cuda_compat: fleet-cuda-compat-gate): compat only below `below` (the
    # driver CUDA needs natively; None on Jetson, whose drivers report a branch), only from the listed
    # branches (each branch's first supported driver; [] where any), and only when the compat libcuda is newer
    # than the kernel driver. None where no CUDA is wanted.
    gate: dict | None = None


@dataclass
class TorchDecision:
    index_url: str
    version: str
    source: str                        # "official" | "jetson"
    cuda: str | None                   # the index's CUDA ("13.0"); None for CPU wheels
    supported: bool
    reason: str
    arch_list: list[str] | None        # what the wheel carries; None where nobody publishes it
    refuse: str | None = None
    extra_index_url: str | None = None  # where the index serves torch alone, the index for its dependencies


@dataclass
class LibraryDecision:
    """NVPL or cuDSS: needed where the chosen torch links them without declaring them."""
    needed: bool
    source: str | None                 # "pypi" | "apt" | "tarball"
    packages: list[str]
    origin: str | None                 # the index, repo or redist URL they come from
    lib_dirs: list[str]                # where the libraries land
    loader: str | None                 # how they reach the loader: "ld_library_path" | "ld.so.conf.d" | "default"
    reason: str
    refuse: str | None = None
    archives: list[str] | None = None  # tarball source: the redist archive URLs, one per component


@dataclass
class Provider:
    """Who provides a soname that verify may find missing."""
    provider: str                      # a role name, or "driver" / "cudnn" (not fleet's)
    fleet_role: bool
    reason: str


@dataclass
class Decisions:
    host: str
    refuse: str | None
    cuda: CudaDecision
    compat: CompatDecision
    torch: TorchDecision
    nvpl: LibraryDecision
    cudss: LibraryDecision
    ld_library_path: list[str]
    missing_providers: dict[str, Provider]
    gpu: bool = False                  # the host has an NVIDIA GPU (roles gate CUDA-only work on it)
    env_reason: str = ""               # why LD_LIBRARY_PATH is what it is
    # the host's platform row as roles read it (fleet/knowledge/platforms.py): {name, gpu, perf}
    platform: dict = field(default_factory=dict)
    # what each kind of process loads and which loader step is harmful here (fleet/decide/loader.py)
    loader: dict = field(default_factory=dict)
    # the links between the GPUs: fabric manager to install, a provider's fabric not ready (fleet/decide/fabric.py)
    fabric: dict = field(default_factory=dict)
    # the GPUs' health: healthy, degraded or "return this pod", each finding with NVIDIA's action (decide/health.py)
    health: dict = field(default_factory=dict)
    # what each kind of process reaches when a user types python3/pip/nvcc, and the GPUs it sees (decide/shells.py)
    shells: dict = field(default_factory=dict)

    @property
    def reasons(self) -> dict[str, str]:
        """One line per decision, keyed by decision (roles quote them in their `why:`)."""
        return {"cuda": self.cuda.reason, "compat": self.compat.reason, "torch": self.torch.reason,
                "nvpl": self.nvpl.reason, "cudss": self.cudss.reason, "env": self.env_reason}

    def to_json(self) -> dict:
        """A JSON-ready dict: refuse, compat, torch, ld_library_path first, then the rest. No role names: which
        roles act is each role's own `when:` over these decisions."""
        def strip(decision) -> dict:
            return {k: v for k, v in as_dict(decision).items() if k != "refuse"}
        return {
            "host": self.host,
            "refuse": self.refuse,
            "compat": strip(self.compat),
            "torch": strip(self.torch),
            "gpu": self.gpu,
            "ld_library_path": list(self.ld_library_path),
            "cuda": strip(self.cuda),
            "nvpl": strip(self.nvpl),
            "cudss": strip(self.cudss),
            "missing_providers": {soname: as_dict(p) for soname, p in self.missing_providers.items()},
            "reasons": self.reasons,
            "platform": self.platform,
            "loader": self.loader,
            "fabric": self.fabric,
            "health": self.health,
            "shells": self.shells,
        }
