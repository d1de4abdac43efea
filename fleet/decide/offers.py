"""What fleet offers instead of a refusal: the newest CUDA 12.x stack that works where CUDA 13 cannot.

A pod user cannot change the host's driver, and CUDA 13 cannot drive a Volta: both still run a 12.x
toolkit and a torch variant whose wheels carry their architecture.

Sources: CUDA 13.0 release notes ("Deprecated or Dropped Features": offline compilation and library
support for Maxwell, Pascal and Volta removed) and NVIDIA's technical blog "Navigating GPU Architecture
Support" (compute capability below 7.5: stay on CUDA 12.9 with the r580 driver); minor-version and forward
compatibility as in fleet/knowledge/cuda_table.py; the torch variants in fleet/decide/archs.py.
"""
from __future__ import annotations

from fleet.knowledge.cuda_table import MIN_DRIVER, forward_compat_supported, minor_compat_runs
from fleet.decide.archs import FIRST_CU128_TORCH, official_archs, variant_misses, variants
from fleet.decide.gpu import forward_compat_refusal, runs_on
from fleet.decide.host import Host
from fleet.decide.variables import Vars
from fleet.decide.versions import version_key

CUDA13_FIRST_CAPABILITY = (7, 5)   # CUDA 13.0 builds for sm_75 and newer only


def cuda13_dropped(host: Host, v: Vars) -> str | None:
    """Why CUDA 13 cannot drive one of this host's GPUs, with the 12.x offer; None where it can."""
    if version_key(v.cuda_version)[0] < 13:
        return None
    for gpu in host.gpus:
        if gpu.capability and tuple(int(p) for p in gpu.capability.split(".")) < CUDA13_FIRST_CAPABILITY:
            offer = twelve_offer(host, v, need_12=True)
            return (f"CUDA {v.cuda_version} dropped Maxwell, Pascal and Volta (sm_50 to sm_72; CUDA 13.0 release "
                    f"notes) and {gpu.label} has capability {gpu.capability}: "
                    + (offer or "no CUDA 12.x that fleet knows runs on this driver; install driver >= 525.60.13"))
    return None


def twelve_offer(host: Host, v: Vars, need_12: bool = False, covered: bool = False) -> str | None:
    """'set cuda_version=12.9 and torch_index_url=.../cu128 (...)' where a 12.x stack runs here; `covered`: only
    where an official 12.x index of this torch covers every GPU (else None, and the caller offers another pair)."""
    if host.jetson or host.driver is None or (version_key(v.cuda_version)[0] < 13 and not need_12):
        return None
    if any(g.capability and g.capability.split(".")[0] == "11" for g in host.gpus):
        return None   # sm_110 has no CUDA 12 (fleet/decide/archs.py FIRST_CUDA_FOR_MAJOR)
    compat_ok = not any(forward_compat_refusal(g) for g in host.gpus)
    for cuda in sorted((c for c in MIN_DRIVER if c.startswith("12.")), key=version_key, reverse=True):
        if minor_compat_runs(host.driver, cuda):
            how = f"driver {host.driver} runs any CUDA 12.x by minor-version compatibility"
        elif compat_ok and forward_compat_supported(host.driver, cuda):
            how = f"cuda-compat-{cuda.replace('.', '-')} supports R{version_key(host.driver)[0]}"
        else:
            continue
        index = _covering_variant(host, v, cuda) or _first_variant(host, v, cuda)
        if covered and not index:
            return None
        torch = (f" and torch_index_url=https://download.pytorch.org/whl/cu{index.replace('.', '')}"
                 if index else " (no official torch variant covers the GPU: check torch_version)")
        if index and not variants(v.torch_version, host.arch) and \
                version_key(v.torch_version) < version_key(FIRST_CU128_TORCH) and index == "12.8":
            torch += f" and torch_version={FIRST_CU128_TORCH}"
        return f"set cuda_version={cuda}{torch} ({how})"
    return None


def _first_variant(host: Host, v: Vars, cuda: str) -> str | None:
    """Where no table row covers this torch version: the first variant the variant rule lets run on every GPU
    here (fleet/decide/archs.py FIRST_CUDA_FOR_MAJOR), if `cuda` runs it."""
    if variants(v.torch_version, host.arch):
        return None
    needed = [variant_first for g in host.gpus if g.capability
              and (variant_first := variant_misses("0.0", g.capability))]
    first = max(needed, key=version_key) if needed else None
    return first if first and version_key(first) <= version_key(cuda) else None


def _covering_variant(host: Host, v: Vars, cuda: str) -> str | None:
    """The newest official 12.x variant, not newer than `cuda`, whose wheels run on every GPU here."""
    for variant in variants(v.torch_version, host.arch):
        if variant.split(".")[0] != "12" or version_key(variant) > version_key(cuda):
            continue
        archs = official_archs(v.torch_version, variant, host.arch) or []
        if all(g.capability and runs_on(archs, g.capability) for g in host.gpus):
            return variant
    return None
