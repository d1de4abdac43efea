"""on_hosts makes room for the connections it opens."""



def test_the_open_files_limit_is_raised_for_a_thousand_hosts():
    """A soft limit of 1024 open files fails hosts past the thousandth: run in a child whose soft limit is 1024,
    on_hosts raises it (within the hard limit) before opening anything."""
    import subprocess
    import sys
    code = ("import resource\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))\n"
            "from fleet.connection.parallel import _room_for_files\n"
            "_room_for_files(1000)\n"
            "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)\n")
    soft, hard = (int(x) for x in subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                  check=True).stdout.split())
    assert soft == min(256 + 4 * 1000, hard) and soft > 1024


# -- threads: a run never needs more threads than the system gives (ulimit -u, a cgroup's pids.max) ------------------

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fleet.connection import parallel
from fleet.connection.parallel import hosts_at_once, on_hosts, thread_room
from fleet.errors import FleetError
from fleet.inventory import Host


def _fake_proc(root: Path, *, cgroup: str, mountinfo: str, processes=()) -> str:
    """A /proc of our own: self/cgroup, self/mountinfo, and PID/status files (uid, threads)."""
    (root / "self").mkdir(parents=True)
    (root / "self" / "cgroup").write_text(cgroup)
    (root / "self" / "mountinfo").write_text(mountinfo)
    for pid, uid, threads in processes:
        (root / str(pid)).mkdir()
        (root / str(pid) / "status").write_text(f"Name:\tx\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nThreads:\t{threads}\n")
    return str(root)


def _limits(folder: Path, most: str, current: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pids.max").write_text(most + "\n")
    (folder / "pids.current").write_text(f"{current}\n")


def test_the_room_is_the_least_of_the_cgroup_and_every_cgroup_above_it_v2(tmp_path):
    fs = tmp_path / "fs"
    _limits(fs / "kubepods" / "pod1", "4096", 100)        # the pod: 3,996 left
    _limits(fs / "kubepods" / "pod1" / "ctr", "max", 90)   # the container: no limit of its own
    _limits(fs / "kubepods", "300", 250)                  # the node's pods together: 50 left
    proc = _fake_proc(tmp_path / "proc", cgroup="0::/kubepods/pod1/ctr\n",
                      mountinfo=f"30 25 0:26 / {fs} rw,nosuid - cgroup2 cgroup2 rw\n")
    assert thread_room(proc, uid=0) == 50


def test_the_room_of_a_cgroup_v1_pids_hierarchy_mounted_at_its_own_root(tmp_path):
    fs = tmp_path / "pids"
    _limits(fs / "docker" / "abc", "1024", 1000)
    proc = _fake_proc(tmp_path / "proc", cgroup="12:memory:/docker/abc\n8:pids:/docker/abc\n0::/\n",
                      mountinfo=f"40 30 0:33 /docker /x/memory rw - cgroup cgroup rw,memory\n"
                                f"41 30 0:34 /docker {fs}/docker rw - cgroup cgroup rw,pids\n")
    assert thread_room(proc, uid=0) == 24       # the mount's root (/docker) is the path's start


def test_no_limit_anywhere_is_no_room_to_respect(tmp_path):
    fs = tmp_path / "fs"
    _limits(fs, "max", 10)
    proc = _fake_proc(tmp_path / "proc", cgroup="0::/\n", mountinfo=f"30 25 0:26 / {fs} rw - cgroup2 cgroup2 rw\n")
    assert thread_room(proc, uid=0) is None
    assert hosts_at_once(1000, None) == 1000


def test_the_users_process_limit_counts_every_thread_of_the_user(tmp_path):
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    proc = _fake_proc(tmp_path / "proc", cgroup="", mountinfo="",
                      processes=[(10, 1000, 40), (11, 1000, 2), (12, 0, 500), (13, 1001, 7)])
    code = ("import resource, sys\n"
            f"resource.setrlimit(resource.RLIMIT_NPROC, (600, {hard if hard != resource.RLIM_INFINITY else -1}))\n"
            "from fleet.connection.parallel import thread_room\n"
            f"print(thread_room({proc!r}, uid=1000), thread_room({proc!r}, uid=0))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["558", "None"]      # 600 - 42 of uid 1000's threads; root is not held to it
    assert (soft, hard) == resource.getrlimit(resource.RLIMIT_NPROC)


def test_hosts_at_once_leave_each_host_its_threads_and_never_fall_to_none():
    assert hosts_at_once(1000, 600) == (600 - parallel.THREADS_SPARE) // parallel.THREADS_PER_HOST
    assert hosts_at_once(3, 600) == 3
    assert hosts_at_once(1000, 2) == 1


def test_a_worker_the_system_refuses_leaves_its_hosts_to_the_others(monkeypatch):
    """The limit thread_room cannot see (another process of the user taking threads meanwhile): the workers started
    take every host."""
    plain, starts = threading.Thread.start, []

    def start(self):
        if self.name.startswith("fleet-host-") and len(starts) >= 2:
            raise RuntimeError("can't start new thread")
        starts.append(self.name)
        return plain(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    hosts = [Host(f"h{i}", connection="local") for i in range(6)]
    outcomes = on_hosts(hosts, lambda conn, host: conn.run("echo ok").stdout, forks=6)
    assert [(o.value, o.error) for o in outcomes.values()] == [("ok\n", None)] * 6


def test_no_thread_for_any_host_is_one_clear_error(monkeypatch):
    def start(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", start)
    with pytest.raises(FleetError, match=r"could not start a thread for any host .*ulimit -u.*pids\.max"):
        on_hosts([Host("h0", connection="local")], lambda conn, host: None)


def test_a_host_refused_a_thread_before_anything_ran_is_handed_to_another_worker():
    """A host whose connection could not start its thread is run later by another worker (one host fewer at once),
    not failed; where no other worker is left, it fails naming the limit and the fix."""
    refused = {"h0", "h3"}
    seen = []

    def work(conn, host):
        seen.append(host.name)
        if host.name in refused:
            refused.discard(host.name)
            raise RuntimeError("can't start new thread")
        return conn.run("echo ok").stdout

    outcomes = on_hosts([Host(f"h{i}", connection="local") for i in range(6)], work, forks=3)
    assert [(o.value, o.error) for o in outcomes.values()] == [("ok\n", None)] * 6
    assert sorted(seen) == sorted(["h0", "h0", "h3", "h3", "h1", "h2", "h4", "h5"])

    def never(conn, host):
        raise RuntimeError("can't start new thread")

    (alone,) = on_hosts([Host("h0", connection="local")], never).values()
    assert "could not start a thread for it" in alone.error and "--forks" in alone.error


def test_a_thread_refused_after_a_command_ran_fails_that_host_alone():
    def work(conn, host):
        conn.run("true")
        if host.name == "h1":
            raise RuntimeError("can't start new thread")
        return "ok"

    outcomes = on_hosts([Host(f"h{i}", connection="local") for i in range(3)], work, forks=3)
    assert [o.value for o in outcomes.values()] == ["ok", None, "ok"]
    assert "h1: the controller could not start a thread" in outcomes["h1"].error


def _pids_cgroup(name: str, most: int) -> Path:
    """A new cgroup of the pids controller (v1's pids hierarchy, else v2's, the controller enabled below the root),
    allowed `most` tasks. Root only, as the suite runs."""
    v2 = None
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        after = fields[fields.index("-") + 1:]
        if after[0] == "cgroup" and "pids" in after[-1].split(","):
            folder = Path(fields[4]) / name
            break
        if after[0] == "cgroup2":
            v2 = Path(fields[4])
    else:
        assert v2 is not None, "no pids cgroup here (neither v1's pids hierarchy nor cgroup2 is mounted)"
        (v2 / "cgroup.subtree_control").write_text("+pids")
        folder = v2 / name
    folder.mkdir()
    (folder / "pids.max").write_text(f"{most}\n")
    return folder


def _remove(group: Path) -> None:
    """The cgroup, once what the run left in it has ended (killed: a host's command the crashed run left behind)."""
    import signal
    import time

    deadline = time.monotonic() + 60
    while pids := (group / "cgroup.procs").read_text().split():
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert time.monotonic() < deadline, f"{group} still holds {pids}"
        time.sleep(0.05)
    group.rmdir()


def test_a_run_of_more_hosts_than_its_cgroup_allows_threads_runs_every_host(tmp_path):
    """The kernel's own limit: `fleet run` of 30 hosts in a cgroup allowed 40 tasks (threads and processes: a
    container's or a Kubernetes pod's pids limit). Every host at once needs ~150; the run crashed ("can't start new
    thread") or failed hosts. Now it runs as many at once as the limit leaves room for, and every host's command ran
    once: the file they append to says so."""
    out = tmp_path / "ran"
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("hosts:\n" + "".join(f"  h{i:02d}: {{connection: local}}\n" for i in range(30)))
    group = _pids_cgroup(f"fleet-test-{os.getpid()}-{threading.get_ident()}", 40)
    procs = group / "cgroup.procs"
    try:
        env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), NO_COLOR="1")
        proc = subprocess.run([sys.executable, "-m", "fleet", "run", str(inventory), "--", f"echo x >> {out}"],
                              capture_output=True, text=True, env=env, timeout=600,
                              preexec_fn=lambda: procs.write_text(f"{os.getpid()}\n"))
    finally:
        _remove(group)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert out.read_text().splitlines() == ["x"] * 30


def test_a_run_of_more_hosts_than_its_open_files_limit_allows_runs_every_host(tmp_path):
    """A hard limit of open files the run cannot raise (a container's, a systemd unit's LimitNOFILE): 40 local hosts
    at once need ~160 files against 120 (1,000 replayed hosts under 300 failed 700 of them, down to "getpwuid():
    uid not found" where /etc/passwd could not be opened). Now as many run at once as the limit leaves files for,
    and every host's command ran once."""
    out = tmp_path / "ran"
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("hosts:\n" + "".join(f"  h{i:02d}: {{connection: local}}\n" for i in range(40)))
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), NO_COLOR="1")

    def limited():
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (120, 120))

    proc = subprocess.run([sys.executable, "-m", "fleet", "run", str(inventory), "--", f"echo x >> {out}"],
                          capture_output=True, text=True, env=env, timeout=600, preexec_fn=limited)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert out.read_text().splitlines() == ["x"] * 40
