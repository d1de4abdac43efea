"""Which GPU architectures PyTorch's official CUDA wheels carry, per (torch version range, CUDA
variant, CPU architecture), each row with the source it was read from.

A row is TORCH_CUDA_ARCH_LIST as PyTorch's release build sets it ("+PTX" adds the PTX of that
architecture), or the list a real wheel's `torch.cuda.get_arch_list()` reported, which wins where
both exist. No row, no claim: decisions then say so and leave it to verify.
"""
from __future__ import annotations

from dataclasses import dataclass

from fleet.decide.gpu import arch_entries
from fleet.decide.versions import version_key

BUILD_CUDA_29 = ("pytorch/pytorch .ci/manywheel/build_cuda.sh at 799d09f2 (release 2.9: 12.6 adds 5.0 6.0, "
                 "12.8/12.9 keep 7.0 per pytorch#157517, aarch64 drops < 8.0 and 8.6)")
AARCH64_CI_29 = "pytorch/pytorch .ci/aarch64_linux/aarch64_ci_build.sh (release 2.9, PR #161257: cu130 adds 11.0)"
# read on an H100 (the capture is tests/data/captured/h100/torch.txt; the text users read names no repository path)
REAL_211_X86 = ("torch.cuda.get_arch_list() of the real torch 2.11.0+cu130 x86_64 wheel on an H100: "
                "no compute_120")


@dataclass(frozen=True)
class ArchRow:
    first: str          # first torch version of the range ("2.9")
    last: str           # last torch version of the range ("2.11")
    cuda: str           # the index's CUDA ("13.0" for cu130)
    arch: str           # x86_64 | aarch64
    spec: str           # "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
    source: str

    def covers(self, torch: str, cuda: str, arch: str) -> bool:
        minor = version_key(torch)[:2]
        return (self.cuda, self.arch) == (cuda, arch) and \
            version_key(self.first)[:2] <= minor <= version_key(self.last)[:2]


ROWS: tuple[ArchRow, ...] = (
    ArchRow("2.9", "2.11", "12.6", "x86_64", "5.0 6.0 7.0 7.5 8.0 8.6 9.0", BUILD_CUDA_29),
    ArchRow("2.8", "2.11", "12.8", "x86_64", "7.0 7.5 8.0 8.6 9.0 10.0 12.0", BUILD_CUDA_29),
    ArchRow("2.8", "2.9", "12.9", "x86_64", "7.0 7.5 8.0 8.6 9.0 10.0 12.0+PTX", BUILD_CUDA_29),
    ArchRow("2.9", "2.9", "13.0", "x86_64", "7.5 8.0 8.6 9.0 10.0 12.0+PTX", BUILD_CUDA_29),
    ArchRow("2.11", "2.11", "13.0", "x86_64", "7.5 8.0 8.6 9.0 10.0 12.0", REAL_211_X86),
    ArchRow("2.9", "2.11", "12.6", "aarch64", "8.0 9.0", AARCH64_CI_29),
    ArchRow("2.9", "2.11", "12.8", "aarch64", "8.0 9.0 10.0 12.0", AARCH64_CI_29),
    ArchRow("2.9", "2.11", "13.0", "aarch64", "8.0 9.0 10.0 11.0 12.0+PTX", AARCH64_CI_29),
)


# Keyed on the CUDA variant, for every torch version (the rows above refine it): nvcc before 12.8 cannot target
# Blackwell (sm_100, sm_120), and PyTorch's builds with an older CUDA ship no PTX that runs there, so no official
# wheel built with CUDA below 12.8 runs on capability 10.x or 12.x (pytorch/pytorch#150733; CUDA 12.8 release
# notes: "added support for ... SM_100, SM_120"). PyTorch published cu128 wheels first for torch 2.7.0 (its
# release notes: Blackwell support with CUDA 12.8 wheels).
FIRST_CUDA_FOR_MAJOR = {10: "12.8", 12: "12.8"}
FIRST_CU128_TORCH = "2.7.0"


def variant_misses(cuda: str, capability: str) -> str | None:
    """The first CUDA whose wheels can carry this capability, where `cuda` is older; None where it may."""
    first = FIRST_CUDA_FOR_MAJOR.get(int(capability.split(".")[0]))
    return first if first and version_key(cuda) < version_key(first) else None


def official_row(torch: str, cuda: str, arch: str) -> ArchRow | None:
    return next((row for row in ROWS if row.covers(torch, cuda, arch)), None)


def official_archs(torch: str, cuda: str, arch: str) -> list[str] | None:
    """['sm_75', ..., 'sm_120'] for the official wheel, or None where no row covers it."""
    row = official_row(torch, cuda, arch)
    return arch_entries(row.spec) if row else None


def variants(torch: str, arch: str) -> list[str]:
    """The CUDA variants with a row for this torch version and CPU, newest first: ['13.0', '12.8', '12.6']."""
    found = {row.cuda for row in ROWS if row.covers(torch, row.cuda, arch)}
    return sorted(found, key=version_key, reverse=True)
