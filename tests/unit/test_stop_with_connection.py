"""fleet.shell.STOP_WITH_CONNECTION with real bash and real processes, no SSH. A small host stands for sshd's part:
its "init" reaps what is orphaned (as PID 1 does, promptly), its "sshd" starts the login shell in a session of its
own (setsid) with the command line fleet sends, relays the command's output, and is killed when the connection
goes. When that sshd goes, every process of the session ends, whether the login shell exec'd the command or not;
while it lives, the script runs as it would without the watchdog (a bare `wait` does not wait for it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from fleet import shell

# init: a child subreaper reaping every orphan below it; sshd: the login shell (argv) in a new session, its stdout
# relayed line by line (so the script's writes fail with EPIPE once sshd is gone), then it stays until killed, as
# sshd does while the connection is open; the first line: "SSHD_PID SID"
HOST = r"""
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
if os.fork() == 0:
    login = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
    print(os.getpid(), login.pid, flush=True)
    for line in login.stdout:
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
    login.wait()
    time.sleep(3600)            # the connection stays open after the command: only its end ends sshd
    os._exit(0)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


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
    """`bash SCRIPT` (the watchdog, then body) as the child of a bash in a session of its own."""
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


def test_what_the_script_starts_still_dies_of_a_broken_pipe(tmp_path):
    """SIGPIPE is caught in the script's own shell only: a command it starts gets the default (`yes | head` ends)."""
    parent = subprocess.run(["bash", "-c", shell.ends_with_connection("yes | head -n 2; trap -p PIPE", local=False)],
                            capture_output=True, text=True, timeout=60)
    assert (parent.returncode, parent.stdout.splitlines()[:2], parent.stderr) == (0, ["y", "y"], "")


# How sshd's login shell runs the command fleet sends (shell.wrap_bash: `FLEET_REMOTE=1 bash -c ...`): bash execs a
# lone simple command, so the script is the session's leader; dash (Debian's /bin/sh, useradd's default login shell)
# does not exec a command with an assignment, nor does bash once a startup file set a trap: the login shell stays,
# the script's parent, for as long as the script runs.
LOGINS = {
    "exec'd": lambda script: ["bash", "-c", f"FLEET_REMOTE=1 bash {script}"],
    "dash": lambda script: ["dash", "-c", f"FLEET_REMOTE=1 bash {script}"],
    "bash with a trap": lambda script: ["bash", "-c", f"trap 'echo' USR1; FLEET_REMOTE=1 bash {script}"],
}
BODIES = {
    # quiet: the script waits, writing nothing, as a probe does for a section blocked on a dead mount
    "quiet": "sleep 1000 & echo ready; while :; do sleep 0.05; done",
    # writing: the script writes after sshd has gone (a probe printing its sections): EPIPE, not its death
    "writing": "sleep 1000 & echo ready; while :; do echo tick; sleep 0.05; done",
}


@contextmanager
def stand_in_host(script: Path, login: str):
    """The stand-in host (HOST) running `script` under LOGINS[login]: (its sshd's pid, the command's session id),
    once the script has said "ready"; whatever is left of the session, its sshd and the host killed afterwards."""
    host = subprocess.Popen([sys.executable, "-c", HOST, *LOGINS[login](script)], stdout=subprocess.PIPE, text=True)
    sid = sshd = None
    try:
        sshd, sid = map(int, host.stdout.readline().split())
        assert host.stdout.readline() == "ready\n"
        yield sshd, sid
    finally:
        for pid in session_left(sid) if sid else []:
            os.kill(pid, signal.SIGKILL)
        if sshd:
            try:
                os.kill(sshd, signal.SIGKILL)
            except ProcessLookupError:
                pass
        host.kill()
        host.wait()


@pytest.mark.parametrize("body", BODIES, ids=list(BODIES))
@pytest.mark.parametrize("login", LOGINS, ids=list(LOGINS))
def test_when_its_sshd_goes_every_process_of_the_session_ends(tmp_path, login, body):
    script = tmp_path / "script.sh"
    script.write_text(shell.ends_with_connection(BODIES[body], local=False))
    with stand_in_host(script, login) as (sshd, sid):
        assert len(session_left(sid)) >= 3                 # the script, its watchdog, its `sleep 1000` (and more)
        os.kill(sshd, signal.SIGKILL)                      # the connection goes: its sshd with it
        bound = time.monotonic() + 60                      # the watchdog looks once a second: a bound, not a timing
        while session_left(sid) and time.monotonic() < bound:
            time.sleep(0.1)
        left = {pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ") for pid in session_left(sid)}
        assert left == {}, f"still running in the command's session 60 s after its sshd went: {left}"


def test_while_its_sshd_lives_a_finished_script_leaves_what_it_started_running(tmp_path):
    """A user's `nohup server &` outlives the command, as over plain ssh: the watchdog ends with the script."""
    script = tmp_path / "script.sh"
    script.write_text(shell.ends_with_connection("sleep 1000 >/dev/null 2>&1 & echo ready", local=False))
    with stand_in_host(script, "exec'd") as (sshd, sid):
        bound = time.monotonic() + 60                      # the script has ended; its watchdog follows within ~1 s
        while len(session_left(sid)) > 1 and time.monotonic() < bound:
            time.sleep(0.1)
        os.kill(sshd, signal.SIGKILL)
        time.sleep(2.5)                                    # past the watchdog's look, had it lived on
        left = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in session_left(sid)]
        assert left == [b"sleep\x001000\x00"], left
