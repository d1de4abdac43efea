"""fleet_lab/procs.py on real processes: a process is followed until it has ended (zombie or gone), not
only while the finder still names it; SIGTERM is escalated to SIGKILL; a host that never ends is named.

No process a test here starts outlives it: each test's processes carry a marker of its own in their environment,
and after the test none may be left (a `sleep 600` reparented to PID 1 was: unshare --fork's child)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from fleet.errors import LabError
from fleet_lab import procs

MARKER = "FLEET_TEST_PROCS_MARKER"


def marked(marker: str) -> list[str]:
    """Live processes (not zombies: their environment is gone) whose environment holds this marker."""
    want = f"{MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if want in (entry / "environ").read_bytes().split(b"\0"):
                argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append(f"{entry.name} {argv}")
        except OSError:       # ended meanwhile, or a kernel thread
            continue
    return found


@pytest.fixture(autouse=True)
def no_process_outlives_the_test(monkeypatch):
    marker = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, marker)      # every process the test starts inherits it
    yield
    # a SIGKILL is delivered at once but the process ends a moment later: wait for that, bounded
    bound = time.monotonic() + 10
    while (left := marked(marker)) and time.monotonic() < bound:
        time.sleep(0.05)
    for line in left:                       # never leave them behind, even when failing
        os.kill(int(line.split()[0]), signal.SIGKILL)
    assert not left, f"processes this test started outlived it: {left}"


def ignoring_term() -> subprocess.Popen:
    # An ignored signal stays ignored across exec: sleep ignores SIGTERM, as a busy login shell may.
    # `ready` is printed once the trap is set, so no SIGTERM can come before it.
    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; echo ready; exec sleep 600"], stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"ready\n"
    return proc


def test_a_process_the_finder_forgets_is_still_waited_for():
    """The cause of issue 17's flake: a SIGKILLed process loses /proc/PID/ns/mnt while it is still exiting,
    so the namespace scan stops naming it; end_all must wait for it to be a zombie all the same."""
    proc = ignoring_term()
    calls = []

    def find_once():
        calls.append(1)
        return [proc.pid] if len(calls) == 1 else []

    [ended] = procs.end_all(find_once, "test host", term_grace=0.2)
    assert ended.pid == proc.pid and procs.ended(ended)
    assert proc.wait(timeout=0) == -signal.SIGKILL   # escalated: SIGTERM was ignored
    assert len(calls) > 1


def test_sigterm_is_enough_for_a_process_that_honours_it():
    proc = subprocess.Popen(["sleep", "600"])
    procs.end_all(lambda: [proc.pid] if proc.poll() is None else [], "test host", term_grace=30.0)
    assert proc.wait(timeout=0) == -signal.SIGTERM


def test_a_host_that_keeps_forking_is_named_not_waited_on_forever():
    spawned: list[subprocess.Popen] = []

    def find_new():
        spawned.append(subprocess.Popen(["sleep", "600"]))
        return [p.pid for p in spawned if p.poll() is None]

    try:
        with pytest.raises(LabError) as err:
            procs.end_all(find_new, "lab host busy", term_grace=0.1, kill_bound=0.2)
        assert "lab host busy: processes " in str(err.value) and "still alive" in str(err.value)
        assert str(spawned[-1].pid) in str(err.value)
    finally:
        for p in spawned:
            p.kill()
            p.wait()


def test_a_reused_pid_is_not_signalled():
    proc = subprocess.Popen(["sleep", "600"])
    try:
        other = procs.Proc(proc.pid, procs.identify(proc.pid).start - 1)   # same pid, another process
        procs.send(other, signal.SIGKILL)
        assert proc.poll() is None and procs.ended(other) and not procs.ended(procs.identify(proc.pid))
    finally:
        proc.kill()
        proc.wait()


def test_bindable_sees_a_listener_and_its_end():
    import socket
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert not procs.bindable("127.0.0.1", port)
        with pytest.raises(LabError, match=f"127.0.0.1:{port} is still taken"):
            procs.wait_bindable("127.0.0.1", port, "lab host x", lambda: [], bound=0.05)
    procs.wait_bindable("127.0.0.1", port, "lab host x", lambda: [])


def test_a_reused_namespace_number_of_a_fresh_host_is_not_taken_for_ours(tmp_path):
    """Namespace inode numbers are reused. A host's record may name the number that another host's `unshare`
    has just been given, before it mounts its overlay; a stop of the first host (leftovers of a killed run)
    then killed the second one as it started: 'did not start sshd: no output', returncode -15."""
    import json
    import os

    from fleet_lab.host import LabHost

    # --kill-child: unshare's forked child (the sleep) gets SIGKILL when unshare ends; without it other.kill()
    # ended unshare alone and left the sleep running, reparented to PID 1
    other = subprocess.Popen(["unshare", "-m", "--propagation", "private", "--kill-child", "sh", "-c",
                              "echo ready; exec sleep 600"], stdout=subprocess.PIPE)
    try:
        assert other.stdout.readline() == b"ready\n"
        host = LabHost("stale", tmp_path)
        host.dir.mkdir(parents=True)
        dead = subprocess.Popen(["true"])
        dead.wait()
        (host.dir / "host.json").write_text(json.dumps({
            "name": "stale", "address": "127.0.250.1", "port": 22, "pid": dead.pid,
            "mount_ns": os.readlink(f"/proc/{other.pid}/ns/mnt")}))
        assert other.pid not in host.pids()
        host.stop()
        assert other.poll() is None          # the other host's processes live on
    finally:
        other.kill()
        other.wait()
