"""Every source of facts, declared once: its name, the read-only shell that asks the host, the pure parser that
turns what it printed into data, and the value the record holds when the source printed nothing or its parser
failed. The probe runs `command` (fleet/engine/probe.py); the record reads with `parser` and `default`
(fleet/facts/record.py). A new fact is one row here plus its parser's tests.
"""

from __future__ import annotations

import copy
import posixpath
from dataclasses import dataclass
from typing import Any, Callable

from fleet import programs
from fleet.facts import cuda, fingerprint, gpu, health, loader, paths, shells, software, system
from fleet.knowledge.storage import ON_VOLUME
from fleet.variables import STACK
from fleet.facts import fabric   # the multi-GPU pods' section (issue 28)

DEFAULTS = {name: STACK[name].default for name in ("python_env", "cutlass_dir")}   # the probe's own settings


@dataclass(frozen=True)
class Source:
    name: str                                   # the record reads it as `facts.<name>` (its section's name)
    command: Callable[[dict], str]              # settings (DEFAULTS + the host's variables) -> read-only shell
    parser: Callable[..., Any]                  # the section's text -> data (pure; raises on what it cannot read)
    default: Any = None                         # the value when the source is missing or its parser failed
    kept_as: str | None = None                  # what it prints is kept in this shell variable too (later sections
                                                # read it); it reads the shells' trace, and starts once that is kept
    needs: tuple[str, ...] = ()                 # the shared shell functions its command calls (fleet.shell.FUNCTIONS)

    def empty(self) -> Any:
        return copy.deepcopy(self.default)


_TRUST = ("trust",)   # fleet_trust, fleet_judge...: fleet/remote/trust.sh


def _fixed(text: str) -> Callable[[dict], str]:
    return lambda settings: text


def settings_of(vars: dict | None) -> dict:
    merged = {**DEFAULTS, **{k: v for k, v in (vars or {}).items() if v is not None}}
    for name in ("python_env", "cutlass_dir"):
        if not str(merged[name]).startswith("/"):
            raise ValueError(f"{name} must be an absolute path, not {merged[name]!r}")
    return merged


def disk_dirs(settings: dict) -> list[str]:
    """Where roles write: the venv's parent (torch is GBs), the CUTLASS checkout, / and /workspace."""
    python_parent = posixpath.dirname(str(settings["python_env"]).rstrip("/")) or "/"
    # /workspace: a pod's volume disk, where fleet.decide.storage puts the venv when it is its own mount
    return list(dict.fromkeys([python_parent, str(settings["cutlass_dir"]), "/", "/workspace"]))


# run from or written into as root: the venv, pip's files, the CUTLASS checkout, the archives' homes
ROOT_PATHS = ("python_env", "pip_cache_dir", "pip_tmpdir", "cutlass_dir", "nvpl_home", "cudss_home")


def trusted_paths(settings: dict) -> list[str]:
    """The paths fleet runs from or writes into as root, and where a pod's volume would put them."""
    set_ = [str(settings[name]) for name in ROOT_PATHS if settings.get(name)]
    return [*set_, *ON_VOLUME.values()]


_ENV_EMPTY = {**{name: None for name in software.ENV_VARS}, "hook_installed": False, "hook_files": []}

# In the order the probe prints them (cheap first, torch last).
SOURCES: tuple[Source, ...] = (
    Source("uname", _fixed(system.UNAME), system.parse_uname, {}),
    Source("os_release", _fixed(system.OS_RELEASE), system.parse_os_release, {}),
    Source("identity", _fixed(system.IDENTITY), system.parse_identity, {}),
    Source("cpu", _fixed(system.CPU), system.parse_cpu, {}),
    Source("meminfo", _fixed(system.MEMINFO), system.parse_meminfo, {}),
    Source("df", lambda s: system.df_command(disk_dirs(s)), system.parse_df, []),
    # what a job takes from the pod (issue 45): /dev/shm, memlock and open-files limits, the container's memory limit
    Source("resources", _fixed(system.RESOURCES), system.parse_resources,
           {"shm": None, "memlock_kb": None, "nofile": None, "memory_limit_mb": None, "memory_limit_file": None}),
    Source("driver", _fixed(gpu.DRIVER), gpu.parse_driver, {"version": None, "source": None}),
    Source("kernel_gpus", _fixed(gpu.KERNEL_GPUS), gpu.parse_kernel_gpus, {"gpus": [], "devices": []}),
    Source("tegra", _fixed(gpu.TEGRA), gpu.parse_tegra_release),
    Source("dt_model", _fixed(gpu.DT_MODEL), gpu.parse_dt_model),
    Source("nvidia_smi", _fixed(gpu.NVIDIA_SMI), gpu.parse_nvidia_smi, {"gpus": [], "rejected": None}),
    Source("fabric", _fixed(fabric.FABRIC), fabric.parse_fabric,
           {"gpu_count": 0, "pairs": {}, "topology_error": None, "fabric": [], "nvswitch": False,
            "nvswitch_devices": [], "container": False, "service": None, "process": False, "packages": {}, "held": []}),
    # the driver's and CUDA's versions nvidia-smi reports (`nvidia-smi --version`; record.py smi_versions)
    Source("smi_version", _fixed(gpu.SMI_VERSION), gpu.parse_smi_versions, {"driver_version": None,
                                                                             "cuda_version": None}),
    # GPU health (issue 36): the query fields with the recovery action and the remapped rows, the kernel log's Xid
    # events (fleet/facts/health.py); the PCIe replays are HEALTH_ONLY's
    Source("health", _fixed(health.HEALTH), health.parse_health,
           {"gpus": [], "remapped": [], "lost": [], "spelling": None, "rejected": None, "error": None,
            "installed": False}),
    Source("xid", _fixed(health.XID), health.parse_xid, {"log": "unreadable", "lines": 0, "events": []}),
    Source("cuda_toolkits", _fixed(cuda.TOOLKITS.strip()), cuda.parse_toolkits,
           {"toolkits": [], "links": {}, "nvcc_on_path": None}),
    Source("cuda_compat", _fixed(cuda.COMPAT.strip()), cuda.parse_compat),
    Source("libraries", lambda s: cuda.libraries_command(), cuda.parse_libraries, {"libraries": {}, "sources": {}}),
    Source("env", _fixed(software.ENV), software.parse_env, _ENV_EMPTY),
    Source("shells", lambda s: shells.command(), shells.parse),
    Source("loader", lambda s: loader.command(), loader.parse, {"bare": None, "cache": [], "conf": [], "preload": [],
                                                              "use_pam": None}),
    Source("paths", lambda s: paths.command(trusted_paths(s)), paths.parse, {}, needs=_TRUST),
    Source("python", lambda s: software.python_command(str(s["python_env"])), software.parse_python,
           {"version": None, "executable": None, "env": None, "env_exists": False, "untrusted": None}, needs=_TRUST),
    Source("cutlass", lambda s: software.cutlass_command(str(s["cutlass_dir"])), software.parse_cutlass,
           needs=_TRUST),
    Source("verify", _fixed(software.VERIFY), software.parse_verify),
    Source("programs", _fixed(programs.COMMAND), programs.parse, []),
    # what the last verify proved, as the host shows it now (once the shells' trace is kept: it reads it); the verify gate
    # reuses it, and the record says from it whether the last verify is stale
    Source("verify_fingerprint", lambda s: fingerprint.probe_part(str(s["python_env"])), fingerprint.parse, {},
           kept_as=fingerprint.HOST_PARTS, needs=_TRUST),
    Source("torch", lambda s: software.torch_command(str(s["python_env"])), software.parse_torch, needs=_TRUST),
)

# Sources `fleet health` runs (fleet/workflows/health.py) and the routine probe does not: `nvidia-smi -q -x` for the
# PCIe replay counters (a note, never the verdict) is the slowest nvidia-smi start there is (115 ms on the lent H200).
HEALTH_ONLY: tuple[Source, ...] = (
    Source("health_xml", _fixed(health.HEALTH_XML), health.parse_health_xml, {}),
)

BY_NAME = {source.name: source for source in SOURCES + HEALTH_ONLY}
