"""What PyTorch publishes per release: the CUDA variants of its wheels per CPU, the Python range, and the GPU
architectures each variant's wheels carry. One table per published fact, every row with its source.

A (torch, CUDA variant, CPU) triple that no row of RELEASES names has no wheel: pip would fail at apply or fall
back to a CPU build. Sources, as read (the words here are ours):

- RELEASE_MD: pytorch/pytorch RELEASE.md, "Release Compatibility Matrix" (per release: the Python range, the
  stable and the experimental CUDA) and "PyTorch CUDA Support Matrix" (the architectures per CUDA variant for
  x86_64 and for aarch64). Read from a copy of the file that carries rows 2.0 to 2.14 (a translated fork of
  the repository: the table rows are kept in English as upstream has them), so these rows rest on a SECONDARY
  copy of the primary source.
- PR_175253: pytorch/pytorch PR #175253, "Update release 2.11 to latest supported matrix" (its RELEASE.md diff:
  release 2.11's cu128 x86_64 wheels drop Volta, 7.0; cu130 becomes stable; releases 2.9 and 2.10 kept 7.0).
- BUILD_CUDA_28 / BUILD_CUDA_29: pytorch/pytorch .ci/manywheel/build_cuda.sh at 00c7a380 (the 2.8 branch: cases
  12.6, 12.8, 12.9) and at 799d09f2 (release 2.9): TORCH_CUDA_ARCH_LIST per CUDA for the x86_64 wheels.
- AARCH64_CI_29: pytorch/pytorch .ci/aarch64_linux/aarch64_ci_build.sh (release 2.9, PR #161257: the aarch64
  wheels build for 8.0 and 9.0, 10.0 and 12.0 from CUDA 12.8, and 11.0, Thor, with CUDA 13.0).
- EARLY_AARCH64: pytorch/pytorch#160162 and download.pytorch.org/whl/cu128/torch: before 2.9 only PyTorch's
  own cu128 (2.7, 2.8) and cu129 (2.8) indexes served aarch64 CUDA wheels; PyPI served CPU builds.
- REAL_211_X86: torch.cuda.get_arch_list() of the real torch 2.11.0+cu130 x86_64 wheel on an H100 (no
  compute_120: the PTX was dropped for PyPI, as the PR_175253 review asked).

A Python marked experimental in RELEASE.md ("3.12 experimental" for 2.2 and 2.3, "3.13 experimental" for 2.5)
still has wheels on the index, so it counts as published; the free-threaded builds (3.13t, 3.14t) do not.
"""
from __future__ import annotations

from dataclasses import dataclass

from fleet.knowledge.cuda_table import version_key

RELEASE_MD = "PyTorch RELEASE.md release compatibility matrix (secondary copy)"
PR_175253 = "pytorch/pytorch#175253 (release 2.11 matrix: cu128 drops Volta)"
BUILD_CUDA_28 = "pytorch/pytorch .ci/manywheel/build_cuda.sh at 00c7a380 (release 2.8)"
BUILD_CUDA_29 = ("pytorch/pytorch .ci/manywheel/build_cuda.sh at 799d09f2 (release 2.9: 12.6 adds 5.0 6.0, "
                 "12.8 keeps 7.0 per pytorch#157517)")
AARCH64_CI_29 = "pytorch/pytorch .ci/aarch64_linux/aarch64_ci_build.sh (release 2.9, PR #161257: cu130 adds 11.0)"
EARLY_AARCH64 = "pytorch/pytorch#160162 (aarch64 CUDA wheels before 2.9: PyTorch's cu128 and cu129 indexes only)"
REAL_211_X86 = ("torch.cuda.get_arch_list() of the real torch 2.11.0+cu130 x86_64 wheel on an H100: "
                "no compute_120")


@dataclass(frozen=True)
class TorchRelease:
    """One torch minor release as PyTorch published it."""
    minor: str                       # "2.11"
    python: tuple[str, str]          # the oldest and the newest CPython it has wheels for
    stable: tuple[str, ...]          # CUDA variants of its x86_64 wheels, stable ("12.6", ...)
    experimental: tuple[str, ...]    # ... and experimental
    aarch64: tuple[str, ...]         # CUDA variants with aarch64 (SBSA) wheels
    source: str
    aarch64_source: str = ""

    @property
    def version(self) -> str:
        """The release's first version: "2.11.0"."""
        return f"{self.minor}.0"

    def variants(self, arch: str) -> tuple[str, ...]:
        """The CUDA variants whose wheels exist for this CPU, oldest first."""
        found = self.stable + self.experimental if arch == "x86_64" else self.aarch64
        return tuple(sorted(found, key=version_key))


def _row(minor, python, stable, experimental, aarch64=(), aarch64_source=""):
    return TorchRelease(minor, python, stable, experimental, aarch64, RELEASE_MD, aarch64_source)


_SBSA_29 = ("12.6", "12.8", "13.0")   # AARCH64_CI_29: the aarch64 build matrix of 2.9 to 2.11
RELEASES: tuple[TorchRelease, ...] = (
    _row("2.0", ("3.8", "3.11"), ("11.7",), ("11.8",)),
    _row("2.1", ("3.8", "3.11"), ("11.8",), ("12.1",)),
    _row("2.2", ("3.8", "3.12"), ("11.8",), ("12.1",)),
    _row("2.3", ("3.8", "3.12"), ("11.8",), ("12.1",)),
    _row("2.4", ("3.8", "3.12"), ("11.8", "12.1"), ("12.4",)),
    _row("2.5", ("3.9", "3.13"), ("11.8", "12.1", "12.4"), ()),
    _row("2.6", ("3.9", "3.13"), ("11.8", "12.4"), ("12.6",)),
    _row("2.7", ("3.9", "3.13"), ("11.8", "12.6"), ("12.8",), ("12.8",), EARLY_AARCH64),
    _row("2.8", ("3.9", "3.13"), ("12.6", "12.8"), ("12.9",), ("12.8", "12.9"), EARLY_AARCH64),
    _row("2.9", ("3.10", "3.14"), ("12.6", "12.8"), ("13.0",), _SBSA_29, AARCH64_CI_29),
    _row("2.10", ("3.10", "3.14"), ("12.6", "12.8"), ("13.0",), _SBSA_29, AARCH64_CI_29),
    _row("2.11", ("3.10", "3.14"), ("12.6", "12.8", "13.0"), (), _SBSA_29, AARCH64_CI_29),
    _row("2.12", ("3.10", "3.14"), ("12.6", "13.0"), ("13.2",), ("12.6", "13.0", "13.2"), RELEASE_MD),
    _row("2.13", ("3.10", "3.15"), ("12.6", "13.0"), ("13.2",), ("12.6", "13.0", "13.2"), RELEASE_MD),
    _row("2.14", ("3.10", "3.15"), ("12.6", "13.0", "13.2"), (), ("12.6", "13.0", "13.2"), RELEASE_MD),
)


def release(torch: str) -> TorchRelease | None:
    """The row of torch "2.11.0" (any patch of 2.11); None for a release the table does not name."""
    minor = ".".join(str(torch).split("+")[0].split(".")[:2])
    return next((r for r in RELEASES if r.minor == minor), None)


def published(torch: str, cuda: str, arch: str) -> bool:
    """True when PyTorch published torch `torch` wheels for CUDA `cuda` on this CPU."""
    row = release(torch)
    return row is not None and cuda in row.variants(arch)


@dataclass(frozen=True)
class ArchRow:
    """The architectures one variant's official wheels carry over a range of torch releases: TORCH_CUDA_ARCH_LIST as
    the release build sets it ("+PTX" adds that architecture's PTX), or a real wheel's own list, which wins."""
    first: str          # first torch release of the range ("2.9")
    last: str           # last torch release of the range ("2.11")
    cuda: str           # the index's CUDA ("13.0" for cu130)
    arch: str           # x86_64 | aarch64
    spec: str           # "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
    source: str

    def covers(self, torch: str, cuda: str, arch: str) -> bool:
        minor = version_key(torch)[:2]
        return (self.cuda, self.arch) == (cuda, arch) and \
            version_key(self.first)[:2] <= minor <= version_key(self.last)[:2]


_VOLTA_ON = "7.0 7.5 8.0 8.6 9.0 10.0 12.0"
_BLACKWELL_PTX = "7.5 8.0 8.6 9.0 10.0 12.0+PTX"
_SBSA_13 = "8.0 9.0 10.0 11.0 12.0+PTX"
ARCH_ROWS: tuple[ArchRow, ...] = (
    # a real wheel's list first: it wins over the build script where both name the same wheel
    ArchRow("2.11", "2.11", "13.0", "x86_64", "7.5 8.0 8.6 9.0 10.0 12.0", REAL_211_X86),
    ArchRow("2.8", "2.8", "12.6", "x86_64", "5.0 6.0 7.0 7.5 8.0 8.6 9.0", BUILD_CUDA_28),
    ArchRow("2.9", "2.11", "12.6", "x86_64", "5.0 6.0 7.0 7.5 8.0 8.6 9.0", BUILD_CUDA_29),
    ArchRow("2.12", "2.14", "12.6", "x86_64", "5.0 6.0 7.0 7.5 8.0 8.6 9.0", RELEASE_MD),
    ArchRow("2.8", "2.8", "12.8", "x86_64", _VOLTA_ON, BUILD_CUDA_28),
    ArchRow("2.9", "2.10", "12.8", "x86_64", _VOLTA_ON, BUILD_CUDA_29),
    ArchRow("2.11", "2.11", "12.8", "x86_64", "7.5 8.0 8.6 9.0 10.0 12.0", PR_175253),
    ArchRow("2.8", "2.8", "12.9", "x86_64", "7.0 7.5 8.0 8.6 9.0 10.0 12.0+PTX", BUILD_CUDA_28),
    ArchRow("2.9", "2.10", "13.0", "x86_64", _BLACKWELL_PTX, BUILD_CUDA_29),
    ArchRow("2.12", "2.14", "13.0", "x86_64", _BLACKWELL_PTX, RELEASE_MD),
    ArchRow("2.12", "2.14", "13.2", "x86_64", _BLACKWELL_PTX, RELEASE_MD),
    ArchRow("2.9", "2.11", "12.6", "aarch64", "8.0 9.0", AARCH64_CI_29),
    ArchRow("2.12", "2.14", "12.6", "aarch64", "8.0 9.0", RELEASE_MD),
    ArchRow("2.9", "2.11", "12.8", "aarch64", "8.0 9.0 10.0 12.0", AARCH64_CI_29),
    ArchRow("2.9", "2.11", "13.0", "aarch64", _SBSA_13, AARCH64_CI_29),
    ArchRow("2.12", "2.14", "13.0", "aarch64", _SBSA_13, RELEASE_MD),
    ArchRow("2.12", "2.14", "13.2", "aarch64", _SBSA_13, RELEASE_MD),
)


def arch_row(torch: str, cuda: str, arch: str) -> ArchRow | None:
    return next((row for row in ARCH_ROWS if row.covers(torch, cuda, arch)), None)
