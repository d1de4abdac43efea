"""Which GPU architectures PyTorch's official CUDA wheels carry, per (torch version range, CUDA
variant, CPU architecture): the rows are fleet/knowledge/torch.py ARCH_ROWS, each with the source it was read
from. No row, no claim: decisions then say so and leave it to verify, after the variant rule below.
"""
from __future__ import annotations

from fleet.decide.gpu import arch_entries
from fleet.decide.versions import version_key
from fleet.knowledge.torch import ArchRow, arch_row, release

# Keyed on the CUDA variant, for every torch version (the rows refine it): nvcc before 12.8 cannot target
# Blackwell (sm_100, sm_120), and PyTorch's builds with an older CUDA ship no PTX that runs there, so no official
# wheel built with CUDA below 12.8 runs on capability 10.x or 12.x (pytorch/pytorch#150733; CUDA 12.8 release
# notes: "added support for ... SM_100, SM_120"). PyTorch published cu128 wheels first for torch 2.7.0 (its
# release notes: Blackwell support with CUDA 12.8 wheels).
# Thor is sm_110 only from CUDA 13.0, which renumbered it from sm_101 (CUDA 13.0 release notes; NVIDIA/cutlass
# CHANGELOG 4.2.0, "SM101 renamed SM110"): no CUDA 12 nvcc and no CUDA 12 wheel targets capability 11.x.
FIRST_CUDA_FOR_MAJOR = {10: "12.8", 11: "13.0", 12: "12.8"}
FIRST_CU128_TORCH = "2.7.0"


def variant_misses(cuda: str, capability: str) -> str | None:
    """The first CUDA whose wheels can carry this capability, where `cuda` is older; None where it may."""
    first = FIRST_CUDA_FOR_MAJOR.get(int(capability.split(".")[0]))
    return first if first and version_key(cuda) < version_key(first) else None


def official_row(torch: str, cuda: str, arch: str) -> ArchRow | None:
    return arch_row(torch, cuda, arch)


def official_archs(torch: str, cuda: str, arch: str) -> list[str] | None:
    """['sm_75', ..., 'sm_120'] for the official wheel, or None where no row covers it."""
    row = official_row(torch, cuda, arch)
    return arch_entries(row.spec) if row else None


def variants(torch: str, arch: str) -> list[str]:
    """The published CUDA variants with an architecture row for this torch version and CPU, newest first:
    ['13.0', '12.8', '12.6']."""
    row = release(torch)
    found = [cuda for cuda in (row.variants(arch) if row else ()) if arch_row(torch, cuda, arch)]
    return sorted(found, key=version_key, reverse=True)
