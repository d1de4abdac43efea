"""A directory of pods' reports into the store (`fleet collect`): each file checked as `fleet serve` checks a
request, never followed through a link, never read past schema.MAX_BYTES."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from fleet.errors import InputError
from fleet.store import schema


def collect(store, directory: Path, *, keep: bool = False, retain: float | None = None) -> dict:
    """{"stored": n, "unchanged": n, "duplicate": n, "refused": {file name: why}}."""
    if not directory.is_dir():
        raise InputError(f"{directory} is not a directory of reports; give the directory the pods write into")
    result = {"stored": 0, "unchanged": 0, "duplicate": 0, "refused": {}}
    for path in sorted(directory.glob("*.json")):
        try:
            checked = schema.check(json.loads(_read(path)))
            if retain is not None and checked["at_s"] < time.time() - retain:
                raise schema.Refused("older than the store keeps history")
        except (schema.Refused, ValueError, RecursionError, OSError) as exc:
            why = str(exc) if isinstance(exc, (schema.Refused, OSError)) else "not a JSON report"
            result["refused"][path.name] = why
            _set_aside(path)
            continue
        result[store.add(checked)] += 1
        if not keep:
            path.unlink(missing_ok=True)
    return result


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if info.st_size > schema.MAX_BYTES:
            raise OSError(f"{path.name} is larger than {schema.MAX_BYTES} bytes")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(schema.MAX_BYTES + 1)
    finally:
        os.close(fd)


def _set_aside(path: Path) -> None:
    try:
        if path.is_file() and not path.is_symlink():
            path.rename(path.with_name(path.name + ".refused"))
    except OSError:
        pass
