"""Which CUDA release each Linux driver runs natively: the one copy of that table in fleet.

Source: CUDA release notes, table 3 (minimum driver per toolkit), as transcribed in shared/DOMAIN.md.
There is no 12.7. Minor-version compatibility (any 12.x build on >= 525, any 13.x on >= 580, with
feature limits) is deliberately NOT what `cuda_max_for_driver` answers: it answers the newest release
the driver supports with every feature, which is what compat decisions compare against.
"""

from __future__ import annotations

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
}

_VERSION_RE = re.compile(r"^\d+(\.\d+)*$")


def version_key(version: str) -> tuple[int, ...]:
    """"570.133.20" -> (570, 133, 20); compares numerically, so 570.26 < 570.133.20.

    Raises ValueError for anything that is not dot-separated digits ("[N/A]", "", "13.0.x").
    """
    text = str(version).strip()
    if not _VERSION_RE.match(text):
        raise ValueError(f"not a version number: {version!r}")
    return tuple(int(part) for part in text.split("."))


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as a < b, a == b, a > b (missing trailing parts count as 0: 13.0 == 13.0.0)."""
    ka, kb = version_key(a), version_key(b)
    width = max(len(ka), len(kb))
    ka, kb = ka + (0,) * (width - len(ka)), kb + (0,) * (width - len(kb))
    return (ka > kb) - (ka < kb)


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


def driver_supports(driver: str | None, cuda: str) -> bool:
    """True when `driver` runs CUDA `cuda` natively (no compat package needed)."""
    needed = min_driver_for(cuda)
    if not driver or needed is None:
        return False
    try:
        return compare_versions(driver, needed) >= 0
    except ValueError:
        return False
