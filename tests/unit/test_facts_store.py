"""Records on disk: atomic, previous kept, crash-safe, no secrets, damaged files reported as input errors."""

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fleet.errors import HostError, InputError
from fleet.record import store

ROOT = Path(__file__).parents[2]


def record(version: str) -> dict:
    return {"host": "pod", "gathered_at": "2026-11-21T10:00:00Z", "driver": {"version": version}}


def test_write_read_and_previous_kept(tmp_path):
    store.write(tmp_path, "pod", record("570.133.20"))
    assert store.read(tmp_path, "pod") == record("570.133.20")
    assert store.read(tmp_path, "pod", previous=True) is None
    store.write(tmp_path, "pod", record("580.159.04"))
    assert store.read(tmp_path, "pod")["driver"]["version"] == "580.159.04"
    assert store.read(tmp_path, "pod", previous=True)["driver"]["version"] == "570.133.20"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pod.json", "pod.prev.json"]  # no temp left over
    assert (tmp_path / "pod.json").stat().st_mode & 0o777 == 0o644


def test_facts_dir_is_created(tmp_path):
    path = store.write(tmp_path / "a" / "facts", "pod", record("1"))
    assert path == tmp_path / "a" / "facts" / "pod.json"


def test_failure_mid_write_leaves_old_record_whole_and_no_temp(tmp_path, monkeypatch):
    store.write(tmp_path, "pod", record("570.133.20"))
    before = (tmp_path / "pod.json").read_bytes()
    real_fsync = os.fsync
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".pod.json."):  # the new record's
            raise OSError(28, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(HostError, match=r"could not write its facts record .*No space left on device.*previous "
                                        "record is left as it was"):
        store.write(tmp_path, "pod", record("580.159.04"))
    assert (tmp_path / "pod.json").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".link"))]


CRASHER = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from fleet.record import store
real = os.fsync
def fsync(fd):
    if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp") and "/.pod.json." in os.readlink(f"/proc/self/fd/{fd}"):
        os.kill(os.getpid(), signal.SIGKILL)   # die with the new record written but not yet renamed
    return real(fd)
os.fsync = fsync
store.write(sys.argv[1], "pod", {"host": "pod", "driver": {"version": "580.159.04"}, "pad": "x" * 5_000_000})
"""


def test_killed_process_mid_write_leaves_old_record_whole(tmp_path):
    store.write(tmp_path, "pod", record("570.133.20"))
    before = (tmp_path / "pod.json").read_bytes()
    result = subprocess.run([sys.executable, "-c", CRASHER, str(tmp_path), str(ROOT)])
    assert result.returncode == -signal.SIGKILL
    assert (tmp_path / "pod.json").read_bytes() == before
    assert json.loads(before)["driver"]["version"] == "570.133.20"
    # the orphaned temp file is ignored, and the next write works
    store.write(tmp_path, "pod", record("580.159.04"))
    assert store.read(tmp_path, "pod")["driver"]["version"] == "580.159.04"


def test_no_secrets_written(tmp_path):
    leaky = {**record("1"), "probe": {"errors": [], "raw": {"env": "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz"}}}
    store.write(tmp_path, "pod", leaky)
    assert "hf_abcdefghij" not in (tmp_path / "pod.json").read_text()


def test_damaged_record_is_an_input_error(tmp_path):
    (tmp_path / "pod.json").write_text('{"host": "pod", "driv')
    with pytest.raises(InputError, match=r"pod.json is not a readable facts record .*delete it"):
        store.read(tmp_path, "pod")
    (tmp_path / "pod.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="holds list"):
        store.read(tmp_path, "pod")


def test_host_names_cannot_escape_the_dir(tmp_path):
    with pytest.raises(InputError):
        store.write(tmp_path, "../etc/passwd", record("1"))


def test_age():
    now = datetime(2026, 11, 21, 11, 2, 5, tzinfo=timezone.utc)
    assert store.age_seconds(record("1"), now) == 3725
    assert store.describe_age(3725) == "1h 2m ago"
    assert store.describe_age(2 * 86400 + 7200) == "2d 2h ago"
    assert store.describe_age(None) == "age unknown"
    assert store.age_seconds({"gathered_at": "yesterday"}, now) is None


def test_the_previous_record_is_the_old_file_and_the_new_one_a_file_of_its_own(tmp_path):
    store.write(tmp_path, "pod", record("570.133.20"))
    old = (tmp_path / "pod.json").read_bytes()
    store.write(tmp_path, "pod", record("580.159.04"))
    assert (tmp_path / "pod.prev.json").read_bytes() == old
    assert (tmp_path / "pod.json").stat().st_ino != (tmp_path / "pod.prev.json").stat().st_ino
    assert (tmp_path / "pod.json").stat().st_nlink == 1 == (tmp_path / "pod.prev.json").stat().st_nlink
    store.write(tmp_path, "pod", record("590.1"))   # again: the 580 record moves to prev, 570's is gone
    assert store.read(tmp_path, "pod", previous=True) == json.loads(
        (tmp_path / "pod.prev.json").read_text()) and "580.159.04" in (tmp_path / "pod.prev.json").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pod.json", "pod.prev.json"]


@pytest.mark.parametrize("read_first", [False, True], ids=["not read", "read whole first"])
def test_without_hard_links_the_previous_record_is_copied(tmp_path, monkeypatch, read_first):
    """Copied from the old file's bytes, read only then where the run had read the record whole (issue 46)."""
    store.write(tmp_path, "pod", record("570.133.20"))
    old = (tmp_path / "pod.json").read_bytes()
    if read_first:
        assert store.read(tmp_path, "pod")["driver"]["version"] == "570.133.20"

    def no_links(*args, **kwargs):
        raise OSError(1, "Operation not permitted")   # e.g. a FUSE or SMB mount

    monkeypatch.setattr(os, "link", no_links)
    store.write(tmp_path, "pod", record("580.159.04"))
    assert (tmp_path / "pod.prev.json").read_bytes() == old
    assert "580.159.04" in (tmp_path / "pod.json").read_text()


def test_a_record_read_whole_is_kept_as_previous_without_parsing_it_again(tmp_path, monkeypatch):
    """The run's last record, read whole at its start, becomes the previous one at its end unparsed (issue 46): the
    same file (device, inode, size, times) holds the same bytes."""
    store.write(tmp_path, "pod", record("580.1"))
    assert store.read(tmp_path, "pod")["driver"]["version"] == "580.1"
    parsed = []
    monkeypatch.setattr(store, "document", lambda data: parsed.append(data) or json.loads(data))
    opened = []
    real_open = open
    monkeypatch.setattr(store, "open", lambda file, *a, **k: opened.append(str(file)) or real_open(file, *a, **k),
                        raising=False)     # the module's name `open` is found before the builtin
    store.write(tmp_path, "pod", record("580.2"))
    assert parsed == [] and str(tmp_path / "pod.json") not in opened     # neither parsed nor read: one stat
    assert store.read(tmp_path, "pod", previous=True)["driver"]["version"] == "580.1"


@pytest.mark.parametrize("damage", ["in place", "replaced"])
def test_a_record_damaged_after_it_was_read_whole_is_not_kept_as_previous(tmp_path, damage):
    """Read whole, then damaged before the run writes its own (by an editor in place, or a file renamed over it):
    the damaged file is not kept as the previous record, as when it was never read."""
    store.write(tmp_path, "pod", record("580.1"))
    store.write(tmp_path, "pod", record("580.2"))     # a previous record that must not be replaced by a damaged one
    path = tmp_path / "pod.json"
    store.read(tmp_path, "pod")
    text = path.read_text()
    if damage == "in place":
        with open(path, "r+") as handle:   # same inode; one byte less
            handle.write(text[:-2])
            handle.truncate()
    else:
        (tmp_path / "other").write_text(text[:-2])
        os.replace(tmp_path / "other", path)
    store.write(tmp_path, "pod", record("580.3"))
    assert store.read(tmp_path, "pod")["driver"]["version"] == "580.3"
    assert store.read(tmp_path, "pod", previous=True)["driver"]["version"] == "580.1"


def test_a_run_s_records_fsync_each_file_before_its_rename_and_their_folder_once_after_the_last(tmp_path,
                                                                                                monkeypatch):
    """FactsRecords (the sink of a run): each record's own file is fsynced before it is renamed into place (a crash
    never leaves a truncated record), the folder once at the run's end, after every host's renames (issue 46: a
    folder fsync per host cost a journal commit each); `write` alone still fsyncs the folder each time."""
    from fleet.record.sinks import Run

    facts = tmp_path / "facts"
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        target = os.readlink(f"/proc/self/fd/{fd}")
        events.append(("fsync dir" if os.path.isdir(target) else "fsync file", os.path.basename(target)))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("rename", os.path.basename(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    run = Run("apply", None)
    sink = store.FactsRecords(facts)
    for round_ in range(2):
        events.clear()
        sink.begin(run)
        for host in ("pod-a", "pod-b", "pod-c"):
            sink.host(run, host, {"status": "ok", "record": {**record(f"58{round_}"), "host": host}})
        assert [kind for kind, _ in events].count("fsync dir") == 0
        sink.end(run, 0)
        assert events[-1] == ("fsync dir", "facts")
        assert [kind for kind, _ in events].count("fsync dir") == 1
        for host in ("pod-a", "pod-b", "pod-c"):
            written = events.index(("rename", f"{host}.json"))
            assert events[written - 1][0] == "fsync file" and events[written - 1][1].startswith(f".{host}.json.")
            assert store.read(facts, host)["driver"]["version"] == f"58{round_}"
        assert [name for kind, name in events if kind == "rename"] == (
            ["pod-a.json", "pod-b.json", "pod-c.json"] if round_ == 0 else
            ["pod-a.prev.json", "pod-a.json", "pod-b.prev.json", "pod-b.json", "pod-c.prev.json", "pod-c.json"])
    events.clear()
    sink.end(run, 0)                        # nothing written since: nothing to sync
    sink.host(run, "pod-d", {"status": "unreachable", "record": None})
    sink.end(run, 0)
    assert events == []
    store.write(facts, "pod-a", record("590"))
    assert events[-2:] == [("rename", "pod-a.json"), ("fsync dir", "facts")]
