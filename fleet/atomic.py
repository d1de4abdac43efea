"""Replace a local file atomically: temp file in the same directory, fsync, rename, fsync the directory.

A crash at any instant leaves either the old file or the new one, never a truncated one (facts records,
inventories that bootstrap edits): the new file's own fsync before the rename gives that. The directory's fsync
makes the rename itself survive a power cut; a writer of many files into one directory (the facts records of a
run: fleet/record/store.py FactsRecords) may pass sync_dir=False and fsync the directory once after the last.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


def write_atomic(path: Path, data: bytes, *, mode: int = 0o644,
                 validate: Callable[[Path], T] | None = None, commit: bool = True, sync_dir: bool = True) -> T | None:
    """Write `data` to `path`. `validate(temp_path)` may inspect (and refuse, by raising) the new file before it
    replaces the old one; its answer is returned. With commit=False the temp file is only validated. With
    sync_dir=False the caller fsyncs the directory (fsync_dir) before it counts the rename as durable."""
    path = Path(path)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        answer = validate(Path(temp)) if validate else None
        if commit:
            os.replace(temp, path)
            if sync_dir:
                fsync_dir(path.parent)
        return answer
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
