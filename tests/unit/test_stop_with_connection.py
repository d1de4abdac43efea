"""fleet.shell.STOP_WITH_CONNECTION with real bash and real processes, no SSH: a parent bash stands for the
command's sshd (its session leader, as sshd's setsid makes it). When that parent goes, every process of the session
ends; while it lives, the script runs as it would without the watchdog (a bare `wait` does not wait for it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from fleet import shell


def session_left(sid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def under_a_parent(tmp_path: Path, body: str) -> subprocess.Popen:
    """`bash SCRIPT` (the watchdog, then body) as the child of a bash in a session of its own (the "sshd")."""
    script = tmp_path / "script.sh"
    script.write_text(shell.ends_with_connection(body, local=False))
    return subprocess.Popen(["bash", "-c", f"bash {script}; true"], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)


def test_a_bare_wait_in_the_script_does_not_wait_for_the_watchdog(tmp_path):
    parent = under_a_parent(tmp_path, "sleep 0.1 & wait; echo done")
    out, _ = parent.communicate(timeout=60)           # it hung here: the watchdog was a job of the script's shell
    assert out == "done\n"


def test_the_script_keeps_its_exit_status_and_its_output(tmp_path):
    parent = subprocess.run(["bash", "-c", shell.ends_with_connection("echo out; exit 7", local=False)],
                            capture_output=True, text=True, timeout=60)
    assert (parent.returncode, parent.stdout, parent.stderr) == (7, "out\n", "")


def test_when_the_parent_goes_every_process_of_the_session_ends(tmp_path):
    parent = under_a_parent(tmp_path, "echo ready; while :; do sleep 0.05; done")
    try:
        assert parent.stdout.readline() == "ready\n"
        assert len(session_left(parent.pid)) >= 3         # the parent, the script, its watchdog (and a sleep)
        parent.kill()                                      # the connection goes: its sshd with it
        parent.wait()
        bound = time.monotonic() + 30                      # the watchdog looks once a second: a wait, not a timing
        while session_left(parent.pid) and time.monotonic() < bound:
            time.sleep(0.1)
        assert session_left(parent.pid) == []
    finally:
        for pid in session_left(parent.pid):
            os.kill(pid, signal.SIGKILL)
