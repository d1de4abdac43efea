"""Which CUDA release each Linux driver runs natively: the one copy of that table in fleet.

Source: CUDA release notes, table 3 (minimum driver per toolkit), as transcribed in shared/DOMAIN.md.
There is no 12.7. Minor-version compatibility (any 12.x build on >= 525, any 13.x on >= 580, with
feature limits) is deliberately NOT what `cuda_max_for_driver` answers: it answers the newest release
the driver supports with every feature, which is what compat decisions compare against.
"""

from __future__ import annotations

import functools
import re

MIN_DRIVER: dict[str, str] = {
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
    "13.1": "590.44.01",
    "13.2": "595.45.04",
    # CUDA 13.3 GA and Update 1 both name >= 610.43.02 (CUDA 13.3 release notes, "CUDA Toolkit and Corresponding
    # Driver Versions", read in copies of that table: projects pinning 13.3 quote it, and its local installer is
    # named cuda_13.3.1_610.43.02_linux). 13.4 and 13.5 are out too, but from 13.4 on the Linux driver is no longer
    # bundled with the toolkit and the table names none for them ("N/A", unbundled; the 13.4 developer preview's row
    # points at the separately released R616 driver): they take the rule for a 13.x newer than this table
    # (later_release below), not a guessed row.
    "13.3": "610.43.02",
}

_VERSION_RE = re.compile(r"^\d+(\.\d+)*\Z")


def version_key(version: str) -> tuple[int, ...]:
    """"570.133.20" -> (570, 133, 20); compares numerically, so 570.26 < 570.133.20.

    Raises ValueError for anything that is not dot-separated digits ("[N/A]", "", "13.0.x").
    """
    key = _key_of(str(version).strip())
    if key is None:
        raise ValueError(f"not a version number: {version!r}")
    return key


@functools.lru_cache(maxsize=1024)
def _key_of(text: str) -> tuple[int, ...] | None:
    # keyed on the whole text: a converged plan compares the same few versions ~170 times a host
    return tuple(int(part) for part in text.split(".")) if _VERSION_RE.match(text) else None


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as a < b, a == b, a > b (missing trailing parts count as 0: 13.0 == 13.0.0)."""
    try:
        return _compared(a, b)
    except TypeError:   # an unhashable value: not a version either, refused by version_key below
        return _compare(a, b)


@functools.lru_cache(maxsize=4096, typed=True)   # typed: True is no version, though 1 == True
def _compared(a, b) -> int:
    # keyed on both whole values: a converged decide compares the same few versions (the driver's, the table's
    # rows) ~70 times a host; an error is not cached (it raises again)
    return _compare(a, b)


def _compare(a, b) -> int:
    ka, kb = version_key(a), version_key(b)
    width = max(len(ka), len(kb))
    ka, kb = ka + (0,) * (width - len(ka)), kb + (0,) * (width - len(kb))
    return (ka > kb) - (ka < kb)


def later_release(cuda: str) -> bool:
    """A release of a family the table knows, newer than its newest row ("13.4", "13.5" while the table ends at
    13.3). What fleet assumes for it, and says in the plan: it runs on the family's minor-version compatibility
    driver (any 13.x on >= 580, CUDA release notes table 2) without cuda-compat, its own full-support minimum
    unknown; below that driver it is refused (no cuda-compat: forward compatibility lists branches per release)."""
    try:
        key = (version_key(cuda) + (0,))[:2]
    except ValueError:
        return False
    newest = max(version_key(c) for c in MIN_DRIVER)   # only the newest family grows (12.x ended with 12.9)
    return key[0] == newest[0] and str(key[0]) in FAMILY_MIN_DRIVER and key > newest


def newer_family(cuda: str) -> bool:
    """A CUDA major newer than any the table knows ("14.0"): answered with a refusal, not a bad-input exit."""
    try:
        return version_key(cuda)[0] > max(version_key(c) for c in MIN_DRIVER)[0]
    except ValueError:
        return False


def planned_release(cuda: str) -> bool:
    """A CUDA release fleet installs: a row of the table, or a later release of a family it knows."""
    return ".".join(str(cuda).split(".")[:2]) in MIN_DRIVER or later_release(cuda)


def cuda_releases() -> list[str]:
    """Every CUDA release in the table, oldest first."""
    return sorted(MIN_DRIVER, key=version_key)


def min_driver_for(cuda: str) -> str | None:
    """Minimum Linux driver for CUDA "13.0" (or "13.0.2": the patch level does not matter) -> "580.65.06".

    None for a release the table does not know (older than 12.0, or newer than this copy of it).
    """
    parts = str(cuda).strip().split(".")
    return MIN_DRIVER.get(".".join(parts[:2]))


def cuda_max_for_driver(driver: str | None) -> str | None:
    """Newest CUDA the driver runs natively: "570.133.20" -> "12.8", "580.159.04" -> "13.0".

    None when the driver is unknown, unparseable, or older than 525.60.13 (CUDA 11.x, outside the table).
    """
    if not driver:
        return None
    try:
        version_key(driver)
    except ValueError:
        return None
    best = None
    for cuda in cuda_releases():
        if compare_versions(driver, MIN_DRIVER[cuda]) >= 0:
            best = cuda
    return best


# ---------------------------------------------------------------- minor-version compatibility

# Minor-version compatibility: a build of any 12.x runs on a driver >= 525.60.13, of any 13.x on a
# driver >= 580 (SASS only: PTX JIT and some features need the release's own minimum above).
# Sources: CUDA Toolkit release notes, table 2 ("CUDA Toolkit and Minimum Required Driver Version for
# CUDA Minor Version Compatibility"); astral-sh/uv crates/uv-torch/src/backend.rs LINUX_CUDA_DRIVERS,
# which picks PyTorch's cu12x/cu13x index by exactly these family minimums.
FAMILY_MIN_DRIVER: dict[str, str] = {"12": "525.60.13", "13": "580"}


def family_min_driver(cuda: str) -> str | None:
    """"12.8" -> "525.60.13", "13.2" -> "580"; None for a family the table does not know."""
    return FAMILY_MIN_DRIVER.get(str(cuda).split(".")[0])


def minor_compat_runs(driver: str | None, cuda: str) -> bool:
    """True when `driver` runs a CUDA `cuda` build by minor-version compatibility (same family)."""
    need = family_min_driver(cuda)
    if not driver or need is None:
        return False
    try:
        return compare_versions(driver, need) >= 0
    except ValueError:
        return False


# ---------------------------------------------------------------- forward compatibility (cuda-compat)

# cuda-compat supports an upgrade only from the kernel driver branches NVIDIA lists for each CUDA
# release: production (PB) and long-term (LTSB) branches until their end of life, never a new-feature
# branch. Branch -> (first release of the branch that qualifies, newest CUDA it can be upgraded to).
# Sources: docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html ("Use the Right CUDA
# Forward Compatibility Package", its table of supported branches per CUDA release) and
# docs.nvidia.com/datacenter/tesla/drivers ("Supported Drivers and CUDA Toolkit Versions", end-of-life
# dates), as transcribed in ComputeCanada/software-stack-config lmod/SitePackage.lua
# (driver_max_compat_cuda) and its PR #112 (r580/r595 take CUDA 13.3 through compat; r535 ended before it).
FORWARD_COMPAT_BRANCHES: dict[int, tuple[str, str]] = {
    470: ("470.57.02", "12.6"),    # LTSB, end of life July 2024: nothing of CUDA 13
    525: ("525.60.04", "12.3"),    # PB, end of life December 2023
    535: ("535.54.03", "13.2"),    # LTSB, end of life June 2026
    550: ("550.54.14", "12.9"),    # PB, end of life June 2025: nothing of CUDA 13
    570: ("570.26", "13.1"),       # PB, end of life February 2026
    580: ("580.65.06", "13.9"),    # LTSB until 2028: every 13.x
    595: ("595.45.04", "13.9"),    # PB
}


def forward_compat_branch(driver: str) -> int:
    return version_key(driver)[0]


def forward_compat_supported(driver: str, cuda: str) -> bool:
    """True when cuda-compat for `cuda` is supported on top of kernel driver `driver`'s branch."""
    entry = FORWARD_COMPAT_BRANCHES.get(forward_compat_branch(driver))
    if entry is None:
        return False
    first, newest = entry
    return compare_versions(driver, first) >= 0 and compare_versions(cuda, newest) <= 0


def forward_compat_branches(cuda: str) -> list[str]:
    """The branches cuda-compat for `cuda` supports, older than what `cuda` needs natively: ['R535', 'R570']."""
    need = MIN_DRIVER.get(cuda)
    return [f"R{branch}" for branch, (first, newest) in sorted(FORWARD_COMPAT_BRANCHES.items())
            if compare_versions(cuda, newest) <= 0 and (need is None or compare_versions(first, need) < 0)]
