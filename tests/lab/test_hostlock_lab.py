"""The apply lock on a real sshd host whose image has no flock(1), as busybox images have none: the mkdir
lock refuses a second apply naming the holder, and a holder killed outright (no trap ran) leaves a stale lock
that the next apply takes over. flock is hidden by moving it off the host's PATH (its overlay only). With flock
(every other host): a holder killed outright is named, once, by the apply that takes the lock over (issue 26)."""

from __future__ import annotations

import re
import threading

import pytest

from fleet.engine import hostlock
from fleet.engine import Setup, converge
from fleet.errors import HostError
from fleet.roles import load_role
from fleet_lab.testing import wait_for

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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("tasks:\n  - name: a marker file\n    file: {path: /root/fleet-lock-marker, content: \"x\\n\"}\n")
    return load_role(path)


def poll(lab, script: str) -> str:
    """Run `script` on the host until it prints something."""
    with lab.connect(HOST) as conn:
        return wait_for(lambda: conn.run(script).stdout.strip(), f"{HOST}: output from {script!r}", every=0.1)


def holder(lab) -> tuple[threading.Thread, dict]:
    """An apply's lock held on HOST by a command of its own, in the background; `held["result"]` once it ends."""
    held = {}

    def hold():
        with lab.connect(HOST) as conn:
            held["result"] = conn.run(hostlock.wrap("echo held; sleep 120", conn))

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    return thread, held


def test_without_flock_a_second_apply_is_refused_and_a_killed_holders_lock_is_taken(lab, no_flock_host, tmp_path):
    host = lab.inventory.hosts[HOST]
    setup = Setup([role(tmp_path)], facts_dir=tmp_path / "facts")
    thread, held = holder(lab)
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

    left_by = poll(lab, f"cat {LOCK}/holder 2>/dev/null")
    notes = []
    setup = Setup([role(tmp_path)], facts_dir=tmp_path / "facts", progress=lambda h, m: notes.append(m))
    with lab.connect(HOST) as conn:
        report = converge(conn, host, setup)
        assert not report.failed and report.count("changed") == 1, report
        assert conn.run(f"test -e {LOCK} || echo released").stdout == "released\n"
        assert [n for n in notes if n.startswith("note: took over")] == [
            f"note: took over the apply lock left by {left_by}, which ended without releasing it"]
        again = converge(conn, host, setup)                                    # converged: zero changes
        assert not again.failed and again.count("changed") == 0


HELD = "/var/lib/fleet/apply.lock.held"


def test_a_holder_killed_outright_is_named_once_by_the_apply_that_takes_its_lock(lab, tmp_path):
    """flock's lock is free the moment its holder dies; the note comes from the holder's mark, which only its
    EXIT trap removes: the host is asked that the holder is dead and the mark there, then that it is gone."""
    lab.reset([HOST])
    host = lab.inventory.hosts[HOST]
    thread, held = holder(lab)
    left_by = poll(lab, f"cat {HELD} 2>/dev/null")
    remote = re.search(r"remote pid (\d+), since ", left_by)
    assert left_by.startswith("fleet apply from ") and remote, left_by
    with lab.connect(HOST) as conn:
        assert conn.run(f"kill -KILL -- -{remote[1]}").ok          # the whole session, as a crash would: no trap
    thread.join(timeout=60)
    assert not thread.is_alive()
    with lab.connect(HOST) as conn:                                 # the host: holder dead, lock free, mark left
        assert conn.run(f"kill -0 {remote[1]} 2>/dev/null || echo dead").stdout == "dead\n"
        assert conn.run("flock -n /var/lib/fleet/apply.lock echo free").stdout == "free\n"
        assert conn.run(f"cat {HELD}").stdout.strip() == left_by

    notes = []
    setup = Setup([role(tmp_path)], facts_dir=tmp_path / "facts", progress=lambda h, m: notes.append(m))
    with lab.connect(HOST) as conn:
        report = converge(conn, host, setup)
        assert not report.failed and report.count("changed") == 1, report
        assert conn.run("cat /root/fleet-lock-marker").stdout == "x\n"
        assert conn.run(f"test -e {HELD} || echo released").stdout == "released\n"
        again = converge(conn, host, setup)                          # converged, and the note is not repeated
        assert not again.failed and again.count("changed") == 0
    assert [n for n in notes if n.startswith("note: took over")] == [
        f"note: took over the apply lock left by {left_by}, which ended without releasing it"]
