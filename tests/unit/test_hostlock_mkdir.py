"""The apply lock where the host has no flock(1) (busybox images): a mkdir lock with flock's semantics. Real bash
and coreutils on this machine, with a PATH that hides flock as such an image does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from fleet.engine import hostlock
from fleet.connection import LocalConnection
from fleet.inventory import Host
from fleet_lab.testing import wait_for

TOOLS = ["mkdir", "head", "date", "cat", "sed", "cut", "mv", "rm", "sleep"]
BASH = shutil.which("bash")


@pytest.fixture
def no_flock(tmp_path, isolated_home):
    """An environment whose PATH has the tools the lock script uses, but no flock."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_dir / tool)
    env = dict(os.environ, HOME=str(isolated_home), PATH=str(bin_dir))
    assert subprocess.run([BASH, "-c", "command -v flock"], env=env).returncode != 0
    return env


def lock_dir(isolated_home) -> Path:
    return isolated_home / ".cache" / "fleet" / "apply.lock.d"


def wrapped(body: str) -> list[str]:
    return [BASH, "-c", hostlock.wrap(body, LocalConnection(Host("here", connection="local")))]


def holder(env, body="echo held; read -t 60 _"):
    proc = subprocess.Popen(wrapped(body), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    assert proc.stdout.readline() == "held\n"          # it holds the lock now
    return proc


def second(env) -> subprocess.CompletedProcess:
    return subprocess.run(wrapped("echo second ran"), capture_output=True, text=True, env=env, timeout=600)


def wait_gone(path: Path) -> None:
    wait_for(lambda: not path.exists(), f"{path} to be gone")


def test_a_second_apply_is_refused_naming_the_holder_then_runs_once_it_is_gone(no_flock, isolated_home):
    first = holder(no_flock)
    try:
        refused = second(no_flock)
        assert refused.returncode == hostlock.BUSY and "second ran" not in refused.stdout
        held_by = hostlock.holder(refused.stdout)
        assert held_by and held_by.startswith(f"fleet apply from ") and f"remote pid {first.pid}, since " in held_by
        assert (lock_dir(isolated_home) / "holder").read_text().strip() == held_by
    finally:
        first.stdin.close()                              # `read` ends: the holder exits, its trap removes the lock
        first.wait(timeout=30)
    assert not lock_dir(isolated_home).exists()
    again = second(no_flock)
    assert (again.returncode, again.stdout) == (0, "second ran\n")
    assert not lock_dir(isolated_home).exists()


def test_a_killed_holder_leaves_a_stale_lock_that_is_taken_over(no_flock, isolated_home):
    first = holder(no_flock, "echo held; sleep 60")
    os.killpg(first.pid, signal.SIGKILL)                 # no trap runs: the directory stays
    first.wait(timeout=30)
    assert (lock_dir(isolated_home) / "pid").read_text().split()[0] == str(first.pid)
    left_by = (lock_dir(isolated_home) / "holder").read_text().strip()
    taken = second(no_flock)
    # one line names whose lock it took over (issue 26), then the script runs
    assert (taken.returncode, taken.stdout) == (0, f"{hostlock.TAKEOVER} {left_by}\nsecond ran\n"), taken.stderr
    assert f"remote pid {first.pid}, since " in hostlock.taken_over(taken.stdout.splitlines()[0])
    assert not lock_dir(isolated_home).exists()
    assert not list(lock_dir(isolated_home).parent.glob("apply.lock.d.stale.*"))


def start_time(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(") ", 1)[1].split()[19]


@pytest.mark.parametrize("same_process", [True, False], ids=["live-holder", "pid-reused"])
def test_a_lock_is_stale_only_when_its_process_is_gone(no_flock, isolated_home, same_process):
    """The pid alone is not enough: a reused pid (another process, another start time) holds nothing."""
    lock = lock_dir(isolated_home)
    lock.mkdir(parents=True)
    started = start_time(os.getpid()) if same_process else str(int(start_time(os.getpid())) + 1)
    (lock / "pid").write_text(f"{os.getpid()} {started}\n")
    (lock / "holder").write_text("fleet apply from elsewhere (pid 1), remote pid 2, since then\n")
    result = second(no_flock)
    if same_process:
        assert result.returncode == hostlock.BUSY
        assert hostlock.holder(result.stdout) == "fleet apply from elsewhere (pid 1), remote pid 2, since then"
        assert lock.exists()
    else:
        assert (result.returncode, result.stdout) == (
            0, f"{hostlock.TAKEOVER} fleet apply from elsewhere (pid 1), remote pid 2, since then\nsecond ran\n")
        assert not lock.exists()


def test_a_lock_being_taken_right_now_is_held(no_flock, isolated_home):
    """Between mkdir and writing its pid a holder is alive: an empty lock directory is never stale."""
    lock_dir(isolated_home).mkdir(parents=True)
    result = second(no_flock)
    assert result.returncode == hostlock.BUSY and hostlock.holder(result.stdout) == "another fleet apply"
