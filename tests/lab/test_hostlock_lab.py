"""The apply lock on a real sshd host whose image has no flock(1), as busybox images have none: the mkdir
lock refuses a second apply naming the holder, and a holder killed outright (no trap ran) leaves a stale lock
that the next apply takes over. flock is hidden by moving it off the host's PATH (its overlay only)."""

from __future__ import annotations

import threading
import time

import pytest

from fleet.engine import hostlock
from fleet.engine import Setup, converge
from fleet.errors import HostError
from fleet.roles import load_role

HOST = "pod-580"
LOCK = "/var/lib/fleet/apply.lock.d"


@pytest.fixture
def no_flock_host(lab):
    lab.reset([HOST])
    with lab.connect(HOST) as conn:
        hidden = conn.run("for f in $(type -ap flock); do mv -- \"$f\" \"$f.hidden\"; done; command -v flock")
        assert hidden.exit != 0 and hidden.stdout == "", hidden
    yield
    lab.reset([HOST])


def role(tmp_path):
    path = tmp_path / "roles" / "marker" / "role.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("tasks:\n  - name: a marker file\n    file: {path: /root/fleet-lock-marker, content: \"x\\n\"}\n")
    return load_role(path)


def poll(lab, script: str) -> str:
    """Run `script` on the host until it prints something (a hang bound of 600 s, not a speed expectation)."""
    deadline = time.monotonic() + 600
    with lab.connect(HOST) as conn:
        while time.monotonic() < deadline:
            out = conn.run(script).stdout.strip()
            if out:
                return out
            time.sleep(0.1)
    raise AssertionError(f"{HOST}: nothing from {script!r} within 60 s")


def test_without_flock_a_second_apply_is_refused_and_a_killed_holders_lock_is_taken(lab, no_flock_host, tmp_path):
    host = lab.inventory.hosts[HOST]
    setup = Setup([role(tmp_path)], facts_dir=tmp_path / "facts")
    held = {}

    def hold():
        with lab.connect(HOST) as conn:
            held["result"] = conn.run(hostlock.wrap("echo held; sleep 120", conn))

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    holder_pid = poll(lab, f"cut -d' ' -f1 {LOCK}/pid 2>/dev/null").split()[0]

    with lab.connect(HOST) as conn:
        with pytest.raises(HostError, match=rf"another apply is running on this host \(fleet apply from .*, remote "
                                            rf"pid {holder_pid}, since .*\); nothing was changed"):
            converge(conn, host, setup)
        assert conn.run("test -e /root/fleet-lock-marker").exit != 0           # nothing was changed
        # the holder dies outright (its session's process group, SIGKILL): no trap runs, the lock stays
        assert conn.run(f"kill -KILL -- -{holder_pid}").ok
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert poll(lab, f"test -d {LOCK} && echo stale") == "stale"

    with lab.connect(HOST) as conn:
        report = converge(conn, host, setup)
        assert not report.failed and report.count("changed") == 1, report
        assert conn.run(f"test -e {LOCK} || echo released").stdout == "released\n"
        again = converge(conn, host, setup)                                    # converged: zero changes
        assert not again.failed and again.count("changed") == 0
