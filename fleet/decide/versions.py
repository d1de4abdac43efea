"""Version helpers for decisions, over fleet/knowledge/cuda_table.py (the one copy of the driver table)."""
from __future__ import annotations

import re

from fleet.knowledge.cuda_table import MIN_DRIVER, cuda_max_for_driver, min_driver_for, version_key

__all__ = ["MIN_DRIVER", "cuda_max_for_driver", "min_driver_for", "version_key", "major_minor", "known_releases", "index_cuda"]


def major_minor(version: str) -> str:
    """'13.0.88' -> '13.0'; '13' -> '13.0'. Raises ValueError for text that is not a version."""
    parts = list(version_key(version)) + [0]
    return f"{parts[0]}.{parts[1]}"


def known_releases() -> str:
    """'12.0, 12.1, ... 13.2': for messages that list what is accepted."""
    return ", ".join(sorted(MIN_DRIVER, key=version_key))


_INDEX_CUDA = re.compile(r"[/-]cu(\d+)(\d)/?$")  # .../cu130, or a mirror's .../jetson-cu130


def index_cuda(url: str) -> str | None:
    """'.../whl/cu130' -> '13.0'; '.../sbsa/cu126/' -> '12.6'; None where the URL does not say."""
    match = _INDEX_CUDA.search(url)
    return f"{int(match.group(1))}.{match.group(2)}" if match else None
