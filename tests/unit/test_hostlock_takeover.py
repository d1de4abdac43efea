"""The apply lock (flock(1), as on every host with util-linux) says whose lock it took over when the last holder
died holding it (issue 26): real bash, real flock, the lock files read back from the disk."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

from fleet.connection import LocalConnection
from fleet.engine import hostlock
from fleet.inventory import Host

BASH = shutil.which("bash")


def lock_dir(home: Path) -> Path:
    return home / ".cache" / "fleet"


def wrapped(body: str) -> list[str]:
    return [BASH, "-c", hostlock.wrap(body, LocalConnection(Host("here", connection="local")))]


def env(home: Path) -> dict:
    assert shutil.which("flock"), "these tests run the flock lock: util-linux's flock(1) is on this machine"
    return dict(os.environ, HOME=str(home))


def run(home: Path, body: str = "echo ran") -> subprocess.CompletedProcess:
    return subprocess.run(wrapped(body), capture_output=True, text=True, env=env(home), timeout=600)


def holder(home: Path) -> subprocess.Popen:
    # "held" only once the sleep runs as sleep: a TERM sent on "held" used to find bash's child between fork and
    # exec, where bash's own handler caught it and exec dropped it; the sleep, holding the lock's fd, lived on and
    # the next apply was refused (1 run in 3 on a busy machine)
    body = 'sleep 60 & until read -r c </proc/$!/comm && [ "$c" = sleep ]; do :; done; echo held; wait'
    proc = subprocess.Popen(wrapped(body), stdout=subprocess.PIPE, text=True,
                            start_new_session=True, env=env(home))
    assert proc.stdout.readline() == "held\n"
    return proc


def test_a_holder_that_ends_releases_quietly(isolated_home):
    first = run(isolated_home)
    assert (first.returncode, first.stdout) == (0, "ran\n")
    assert not (lock_dir(isolated_home) / "apply.lock.held").exists()      # its EXIT trap took the mark away
    again = run(isolated_home)
    assert (again.returncode, again.stdout) == (0, "ran\n")                # no note after a clean release


def test_a_holder_stopped_by_term_releases_quietly(isolated_home):
    """TERM is what fleet's watchdog and Ctrl-C send: the EXIT trap runs, so nothing was left behind."""
    first = holder(isolated_home)
    os.killpg(first.pid, signal.SIGTERM)
    first.wait(timeout=30)
    assert not (lock_dir(isolated_home) / "apply.lock.held").exists()
    assert run(isolated_home).stdout == "ran\n"


def test_a_holder_killed_outright_is_named_by_the_next_apply_once(isolated_home):
    first = holder(isolated_home)
    left_by = (lock_dir(isolated_home) / "apply.lock.held").read_text().strip()
    assert f"remote pid {first.pid}, since " in left_by and left_by.startswith("fleet apply from ")
    os.killpg(first.pid, signal.SIGKILL)                                   # no trap runs: the mark stays
    first.wait(timeout=30)
    taken = run(isolated_home)
    assert (taken.returncode, taken.stdout) == (0, f"{hostlock.TAKEOVER} {left_by}\nran\n"), taken.stderr
    assert hostlock.taken_over(taken.stdout.splitlines()[0]) == (
        f"note: took over the apply lock left by {left_by}, which ended without releasing it")
    assert not (lock_dir(isolated_home) / "apply.lock.held").exists()
    assert run(isolated_home).stdout == "ran\n"                             # said once, not at every apply


def test_a_live_holder_is_still_refused_and_its_mark_is_left_alone(isolated_home):
    first = holder(isolated_home)
    try:
        refused = run(isolated_home)
        assert refused.returncode == hostlock.BUSY and hostlock.TAKEOVER not in refused.stdout
        assert f"remote pid {first.pid}" in hostlock.holder(refused.stdout)
        assert f"remote pid {first.pid}" in (lock_dir(isolated_home) / "apply.lock.held").read_text()
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        first.wait(timeout=30)


def test_only_takeover_lines_are_notes():
    assert hostlock.taken_over("@@fleet:begin@@ x") is None and hostlock.taken_over("ran") is None
    assert hostlock.taken_over(f"{hostlock.TAKEOVER} a\x1b[31mb") == (
        "note: took over the apply lock left by a[31mb, which ended without releasing it")
