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


def _connect_as(lab, name: str, user: str):
    import dataclasses

    from fleet.connection import ConnectOptions, connect

    host = dataclasses.replace(lab.inventory.hosts[name], user=user)
    return host, connect(host, ConnectOptions(known_hosts=lab.root / "fleet_known_hosts"))


@pytest.mark.parametrize("first, second", [("nvidia", "root"), ("root", "nvidia")])
def test_one_lock_per_host_whoever_connects(lab, tmp_path, first, second):
    """Issue 49: an apply as the Spark's sudo user and one as root ran the same root task at once, each under its
    own user's lock. Now both take root's /var/lib/fleet/apply.lock (the sudo user through sudo -n, the file opened
    read-only): while one holds it the other is refused, naming the holder, and changes nothing; the host is asked
    who owns the lock file and what its mode is, and which process holds it."""
    lab.reset(["spark"])
    held = {}

    def hold():
        _, conn = _connect_as(lab, "spark", first)
        with conn:
            held["result"] = conn.run(hostlock.wrap("echo held; sleep 120", conn))

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    with lab.connect("spark") as conn:   # the holder, as the host's own flock(1) tells it
        # held: the file exists (before the first apply made it, flock(1) fails on the missing directory too) and a
        # non-blocking flock of it is refused
        wait_for(lambda: conn.run("test -e /var/lib/fleet/apply.lock && ! flock -n /var/lib/fleet/apply.lock true"
                                  ).exit == 0, "spark: the first apply holding /var/lib/fleet/apply.lock", every=0.1)
        assert conn.run("stat -c '%U %a' /var/lib/fleet/apply.lock /var/lib/fleet").stdout == "root 644\nroot 755\n"
        holder_line = conn.run("cat /var/lib/fleet/apply.lock").stdout
        assert holder_line.startswith("fleet apply from "), holder_line
    path = tmp_path / "roles" / "marker" / "role.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("tasks:\n  - name: root's marker\n    file: {path: /etc/fleet-lock-marker, content: \"x\\n\"}\n")
    setup = Setup([load_role(path)], facts_dir=tmp_path / "facts")
    host, conn = _connect_as(lab, "spark", second)
    with conn:
        with pytest.raises(HostError, match=r"another apply is running on this host \(fleet apply from .*remote pid"):
            converge(conn, host, setup)
    with lab.connect("spark") as conn:
        assert conn.run("test -e /etc/fleet-lock-marker || echo untouched").stdout == "untouched\n"
        pid = re.search(r"remote pid (\d+)", holder_line)[1]
        assert conn.run(f"sudo -n kill -TERM -- -{pid}").ok      # the holder's session ends: its lock with it
    thread.join(timeout=600)
    host, conn = _connect_as(lab, "spark", second)
    with conn:
        report = converge(conn, host, setup)                      # free again: the second one runs
        assert not report.failed and report.count("changed") == 1, report
    with lab.connect("spark") as conn:
        assert conn.run("cat /etc/fleet-lock-marker").stdout == "x\n"
        # every holder's mark released by its EXIT trap (a hang bound: the killed holder's trap runs on the host)
        assert conn.run("for i in $(seq 6000); do [ -e /var/lib/fleet/apply.lock.held ] || break; sleep 0.1; done; "
                        "test -e /var/lib/fleet/apply.lock.held || echo released").stdout == "released\n", \
            conn.run("ls -la --time-style=full-iso /var/lib/fleet; cat /var/lib/fleet/apply.lock.held; date").stdout
