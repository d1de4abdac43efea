"""Facts records on disk: `<facts_dir>/<host>.json`, written atomically, the previous one kept for drift; as a sink
of every run that gathers facts, `FactsRecords`.

A crash at any moment leaves `<host>.json` either the old record or the new one, whole: the new text goes
to a temp file in the same directory, is fsynced, then renamed over the old one, and the directory is
fsynced so the rename itself survives a power cut (by `write` at once; by FactsRecords once per run, at its end,
after the last host's rename: a power cut before it may leave a host the record before, whole, never a truncated
one; a fsync of the directory per host cost ~0.1 ms of CPU and a journal commit each, issue 46). Every string is
scrubbed of secrets on the way out.
"""

from __future__ import annotations

import json
import os
import re
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from fleet.atomic import fsync_dir, write_atomic
from fleet.errors import HostError, InputError
from fleet.facts.scrub import Scrubbed, scrubbed
from fleet.jsontext import document, readable

_HOST_RE = re.compile(r"^[A-Za-z0-9_.@:+-]+\Z")


def record_path(facts_dir: Path | str, host: str, *, previous: bool = False) -> Path:
    """facts/pod-570.json, or facts/pod-570.prev.json for the record before it."""
    if not _HOST_RE.match(host) or host.startswith("."):
        raise InputError(f"host name {host!r} cannot name a facts file; use letters, digits and . _ - in it")
    if host.lower().endswith(".prev"):  # facts/pod.prev.json is pod's previous record
        raise InputError(f"host name {host!r} ends in '.prev', which names another host's previous record; "
                         "rename it")
    return Path(facts_dir) / (f"{host}.prev.json" if previous else f"{host}.json")


def write(facts_dir: Path | str, host: str, record: dict, *, sync_dir: bool = True) -> Path:
    """Write the record atomically; the record it replaces becomes `<host>.prev.json`. sync_dir=False: the caller
    fsyncs `facts_dir` (fleet.atomic.fsync_dir) before it counts the two renames as durable."""
    path = record_path(facts_dir, host)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = readable(scrubbed(record)) + "\n"   # every reader reads it: no secret, no NaN, no Infinity
    old = _readable(path)
    try:
        if old is not None:
            # Linked (or copied), never renamed: <host>.json must exist at every instant, even if we die right
            # here. A damaged record is not kept as the previous one: drift would fail on it forever.
            _keep_previous(path, record_path(facts_dir, host, previous=True), old, sync_dir)
        _atomic_write(path, text.encode(), sync_dir)   # its directory fsync makes both renames durable
    except OSError as exc:   # a full disk, a read-only mount: the old record is intact, no temp file is left
        raise HostError(f"{host}: could not write its facts record {path} ({exc.strerror or exc}); the previous "
                        "record is left as it was") from None
    return path


def _readable(path: Path) -> Callable[[], bytes | None] | None:
    """None when the record is absent or damaged; else a function giving its bytes when they are needed (only where
    the previous record is copied, not linked). A file this process read whole (load: the run's last record), still
    the same file, is neither read nor parsed again: one stat (the parse ~0.2 ms, the read ~0.1; issue 46)."""
    try:
        if _WHOLE.get(str(path)) == _identity(os.stat(path)):
            return lambda: _whole_bytes(path)
        with open(path, "rb") as handle:
            data = handle.read()
        return (lambda: data) if isinstance(document(data), dict) else None
    except (OSError, ValueError):
        return None


def _whole_bytes(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return data if isinstance(document(data), dict) else None
    except (OSError, ValueError):
        return None


# path -> the identity of the file at it that this process read as a whole JSON object. A record is replaced by
# rename (a new inode) and edited in place with a new mtime: a file of the same identity holds the same bytes.
_WHOLE: dict[str, tuple] = {}


def _identity(stat: os.stat_result) -> tuple:
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _keep_previous(path: Path, previous: Path, old: Callable[[], bytes | None], sync_dir: bool = True) -> None:
    """The record about to be replaced becomes `previous`: a second hard link to its file, renamed into place
    (the new record gets a file of its own), so nothing is copied or fsynced twice. Where the file system has
    no hard links, a copy written atomically."""
    temp = previous.with_name(f".{previous.name}.{os.getpid()}.{threading.get_ident()}.link")
    try:
        os.link(path, temp)
    except OSError:
        data = old()
        if data is not None:      # damaged since: not kept (as `write` keeps no damaged record)
            _atomic_write(previous, data, sync_dir)
        return
    try:
        os.replace(temp, previous)
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)


def _atomic_write(path: Path, data: bytes, sync_dir: bool = True) -> None:
    write_atomic(path, data, mode=0o644, sync_dir=sync_dir)  # records hold no secrets; let other users read them


def read(facts_dir: Path | str, host: str, *, previous: bool = False) -> dict | None:
    """The host's record (or the one before it); None when there is none yet."""
    path = record_path(facts_dir, host, previous=previous)
    return load(path, missing_ok=True)


def read_both(facts_dir: Path | str, host: str) -> tuple[dict | None, dict | None]:
    """The host's record and the one before it (drift), each None where there is none."""
    paths = [record_path(facts_dir, host, previous=previous) for previous in (False, True)]
    record, before = (load(path, missing_ok=True) for path in paths)
    return record, before


def load(path: Path | str, *, missing_ok: bool = False) -> dict | None:
    """Read one facts JSON file; a damaged one is an InputError naming the file and the fix."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:   # the identity of the file read, not of one that replaced it since
            identity = _identity(os.fstat(handle.fileno()))
            data = document(handle.read().decode())   # nested too deep: a JSONDecodeError naming where
    except FileNotFoundError:
        if missing_ok:
            return None
        raise InputError(f"no facts file at {path}; run `fleet facts INVENTORY` to gather one") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path} is not a readable facts record ({error}); delete it and run `fleet facts` "
                         "again") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} holds {type(data).__name__}, not a facts record; delete it and run `fleet facts` "
                         "again")
    if len(_WHOLE) < 100_000:   # a bound: one entry a host
        _WHOLE[str(path)] = identity
    return data


def age_seconds(record: dict, now: datetime | None = None) -> float | None:
    """Seconds since the record was gathered; None when it carries no readable time."""
    try:
        gathered = datetime.fromisoformat(str(record.get("gathered_at", "")).replace("Z", "+00:00"))
    except ValueError:
        return None
    if gathered.tzinfo is None:
        gathered = gathered.replace(tzinfo=timezone.utc)
    return ((now or datetime.now(timezone.utc)) - gathered).total_seconds()


def describe_age(seconds: float | None) -> str:
    """3725 -> "1h 2m ago"; None -> "age unknown"."""
    if seconds is None:
        return "age unknown"
    seconds = max(0, int(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h ago"
    if hours:
        return f"{hours}h {minutes}m ago"
    if minutes:
        return f"{minutes}m ago"
    return f"{secs}s ago"


class FactsRecords:
    """The facts records as a sink (fleet/record/sinks.py): a host's report that carries a `record` is written as
    `<facts_dir>/<host>.json` (write: atomic, scrubbed, the previous one kept); one that carries none (unreachable,
    a --check of nothing gathered) leaves its last record as it was. A record that cannot be written is a HostError:
    the host's run failed (the next run reads it). The directory is fsynced once, at the run's end, after every
    host's rename (each record's own file is fsynced before its rename, as `write` does it)."""

    def __init__(self, facts_dir: Path):
        self.facts_dir = Path(facts_dir)
        self._renamed = False

    def begin(self, run) -> None:
        pass

    def host(self, run, name: str, report: dict) -> None:
        report = scrubbed(report)
        if report.get("record") is not None:
            self._renamed = True      # before the write: a rename the write made before it failed is synced too
            write(self.facts_dir, name, Scrubbed(report["record"]), sync_dir=False)   # scrubbed with its report

    def end(self, run, status: int) -> None:
        if not self._renamed:
            return
        self._renamed = False
        try:
            fsync_dir(self.facts_dir)
        except OSError as exc:
            raise OSError(f"could not sync the facts records' folder {self.facts_dir} ({exc.strerror or exc}): "
                          "the records are written, a power cut now may lose this run's") from None
