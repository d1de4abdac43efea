"""Role texts compiled once per machine, not once per run: Jinja's own bytecode cache under the user's cache dir.

Every command loads the eight roles and compiles ~160 distinct texts (Jinja parses each, generates Python and
compiles it: ~1 ms a text), then reads the variables they use with a second parse (validate). That is a third
of a no-op apply's controller time, spent again on every run although the role files did not change. Jinja
keeps compiled templates in a FileSystemBytecodeCache (atomic writes, a header naming Jinja's and Python's
versions, a checksum of the source: a stale or damaged entry is compiled again, never used). The names a role
reads are kept beside them as JSON, keyed by a digest of every text they come from.

Only the result of a successful compile is kept, so a text with an error raises on every run, at load, as
before. Where the directory cannot be made private to this user (a read-only home, someone else's directory),
nothing is cached and everything compiles as it always did.

    $FLEET_CACHE_DIR, else $XDG_CACHE_HOME/fleet, else ~/.cache/fleet     (jinja/ inside it)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterable

from jinja2.bccache import Bucket, FileSystemBytecodeCache

from fleet import __version__


def directory() -> Path | None:
    """The cache directory, made 0700 for this user; None where that is not possible."""
    root = os.environ.get("FLEET_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "fleet")
    path = Path(root) / "jinja"
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = path.lstat()
        # Compiled code is executed: a directory another user can write to is never used (as Jinja's own default
        # directory under /tmp insists).
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            return None
        return path if os.access(path, os.W_OK) else None
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def _bytecode() -> FileSystemBytecodeCache | None:
    path = directory()
    return FileSystemBytecodeCache(str(path)) if path else None


def code(env, kind: str, text: str, build: Callable[[], object]):
    """The compiled code of `text` (kind: what build makes of it), from the cache or from build() (then kept)."""
    cache = _bytecode()
    if cache is None:
        return build()
    # The name keys the entry; fleet's version and the filters are in it because code compiled against them
    # refers to filters by name (a filter fleet dropped must fail at load, not at the first render), and the
    # environment's class: code compiled for another environment (not sandboxed) is not this one's.
    name = f"{__version__}|{type(env).__name__}|{','.join(sorted(env.filters))}|{kind}|{text}"
    bucket = Bucket(env, cache.get_cache_key(name), cache.get_source_checksum(text))
    try:
        cache.load_bytecode(bucket)
    except Exception:   # noqa: BLE001 - a torn or foreign entry (Jinja's own load lets pickle errors out) is a miss
        bucket.reset()
    if bucket.code is not None:
        return bucket.code
    bucket.code = compiled = build()
    try:
        cache.set_bucket(bucket)
    except OSError:
        pass
    return compiled


def names(texts: Iterable[str], find: Callable[[], set[str]]) -> set[str]:
    """find()'s answer for these texts (the variables they read), kept per digest of the texts."""
    cache = _bytecode()        # the one directory, checked once per process
    if cache is None:
        return find()
    path = Path(cache.directory)
    digest = hashlib.sha256(__version__.encode())
    for text in texts:
        digest.update(b"\0" + text.encode("utf-8", "surrogatepass"))
    entry = path / f"names-{digest.hexdigest()[:32]}.json"
    try:
        kept = json.loads(entry.read_text(encoding="utf-8"))
        if isinstance(kept, list) and all(isinstance(n, str) for n in kept):
            return set(kept)
    except (OSError, ValueError):
        pass
    found = find()
    temp = None
    try:   # a temp file renamed into place: a reader sees the whole list or none
        fd, temp = tempfile.mkstemp(dir=path, prefix=".names-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(sorted(found), handle)
        os.replace(temp, entry)
    except OSError:
        if temp and os.path.exists(temp):
            os.unlink(temp)
    return found
