"""`fleet run` and `fleet facts` cut short end on the host too (issue 26): fleet, run as a user runs it, is sent
SIGTERM while a lab host is in the middle of its command; it exits 143. Then the host is asked: no process of that
command's session is left (the command, its shell, fleet's watchdog), as apply's test asks after its apply
(test_sigterm_lab.py). Before, the command ran on, reparented to PID 1, after fleet had gone.

- `fleet run` as root (pod-570), and `fleet run --sudo` as a user with sudo (spark: the command runs as root,
  under sudo, which relays the watchdog's TERM);
- `fleet facts` (pod-580) whose probe is blocked: the venv's python hangs, as a `df` on a dead mount does;
- `fleet run` as root whose login shell is /bin/sh (dash: Debian's useradd default), which does not exec the
  command fleet sends: the script's parent is that shell, alive for as long as the script, not sshd (issue 44).

Every question the test asks the host has a bound (ask): a host that opens no session, or a command that never
ends, fails the test with a sentence instead of hanging the suite.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers import ok
from fleet_lab.testing import wait_for


def one_host(lab, tmp_path: Path, name: str, **vars) -> Path:
    return lab.write_inventory(tmp_path / f"{name}.yaml", {name: vars})


ASK_SECONDS = 120      # a bound on a hang, never a speed expectation (busy two-core machines beside other labs)


def ask(lab, host: str, script: str) -> str:
    """`script` run as root on the host through a connection of its own: its stdout, once it exited 0. Bounded:
    connecting, opening the session and the command itself end within ASK_SECONDS (the command under timeout(1)),
    or the connection is aborted and the test fails naming what did not answer."""
    box: dict = {}

    def run() -> None:
        try:
            box["conn"] = lab.connect(host)
            box["result"] = box["conn"].run(f"timeout -k 5 {ASK_SECONDS} bash -c {shlex.quote(script)}", sudo=True)
        except BaseException as exc:       # handed to the test's thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(ASK_SECONDS + 60)
    if "conn" in box and worker.is_alive():
        box["conn"].abort()
    elif "conn" in box:
        box["conn"].close()
    assert not worker.is_alive(), (f"{host} did not answer within {ASK_SECONDS + 60} s (connecting, opening a session, "
                                   f"or running `{script}`): the host stopped opening sessions")
    if "error" in box:
        raise box["error"]
    res = box["result"]
    assert res.exit == 0, f"{host}: `{script}` exited {res.exit}: {res.stdout} {res.stderr}"
    return res.stdout


def sessions_of(lab, host: str, nap: str) -> tuple[set[str], set[str], set[str]]:
    """The sessions (sid), users and session leaders (the process sshd started: its name) of the processes running
    `sleep NAP` on the host, in one look."""
    out = ask(lab, host, f"for p in $(pgrep -f '^sleep {nap}$'); do set -- $(ps -o sid=,user= -p \"$p\"); "
                         "[ -n \"$2\" ] && echo \"$1 $2 $(ps -o comm= -p \"$1\")\"; done; true")
    rows = [line.split() for line in out.splitlines() if len(line.split()) == 3 and line.split()[0].isdigit()]
    return {sid for sid, _, _ in rows}, {user for _, user, _ in rows}, {leader for _, _, leader in rows}


def cut_short(lab, host: str, argv: list[str], nap: str) -> tuple[set[str], str, set[str], set[str]]:
    """Start fleet, wait until the host runs its `sleep NAP`, SIGTERM fleet; (the command's sessions, fleet's
    output, the users its sleeps ran as, the sessions' leaders)."""
    proc = subprocess.Popen([sys.executable, "-m", "fleet", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="300"))
    seen: list = []

    def started() -> bool:
        seen.append(sessions_of(lab, host, nap))
        return bool(seen[-1][0]) or proc.poll() is not None

    try:
        wait_for(started, "the command to be seen on the host, or fleet to end", every=0.2)
        assert proc.poll() is None, f"fleet ended before its command was seen on the host: {proc.communicate()[0]}"
        sids, users, leaders = next((look for look in reversed(seen) if look[0]), (set(), set(), set()))
        assert sids, "the command never started on the host"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, out
    return sids, out, users, leaders


def nothing_left(lab, host: str, sids: set[str], nap: str) -> None:
    """The host: no `sleep NAP`, and no process at all in the command's session (its shell, fleet's watchdog)."""
    left = f"pgrep -f '^sleep {nap}$'; for s in {' '.join(sorted(sids))}; do pgrep -s \"$s\"; done; true"
    wait_for(lambda: ask(lab, host, left).strip() == "",
             lambda: f"nothing left in sessions {sids}: {ask(lab, host, left)!r}", every=0.2)


@pytest.mark.parametrize("host,sudo", [("pod-570", False), ("spark", True)], ids=["root", "sudo"])
def test_a_run_cut_short_by_sigterm_ends_its_command_on_the_host(lab, tmp_path, host, sudo):
    lab.reset([host])
    nap = "3.3141" if sudo else "3.2718"          # a sleep nothing else on the host runs
    inv = one_host(lab, tmp_path, host)
    command = f"while :; do sleep {nap}; done"
    sids, out, users, leaders = cut_short(lab, host, ["run", str(inv), *(["--sudo"] if sudo else []), "--", command],
                                          nap)
    assert "INTERRUPTED" in out and host in out, out
    assert users == {"root"}, users              # spark's user is nvidia: under --sudo the command ran as root
    if not sudo:                                 # (under sudo the command's session is sudo's own)
        assert leaders == {"bash"}, leaders      # bash, the login shell, exec'd fleet's command: it leads
    nothing_left(lab, host, sids, nap)


def test_a_facts_probe_cut_short_by_sigterm_ends_on_the_host(lab, tmp_path):
    host, nap, venv = "pod-580", "3.1618", "/opt/fleet-hang"
    lab.reset([host])
    # the venv's python never answers: the probe's python section blocks, as a `df` on a dead mount does
    ok(lab, host, f"mkdir -p {venv}/bin && printf '#!/bin/sh\\nwhile :; do sleep {nap}; done\\n' > {venv}/bin/python"
                  f" && chmod 755 {venv}/bin/python")
    inv = one_host(lab, tmp_path, host, python_env=venv)
    sids, out, _, _ = cut_short(lab, host, ["facts", str(inv)], nap)
    nothing_left(lab, host, sids, nap)
    assert not (tmp_path / "facts" / f"{host}.json").exists()      # no record from a probe cut short


def test_a_run_cut_short_ends_on_the_host_whose_login_shell_does_not_exec_the_command(lab, tmp_path):
    host, nap = "pod-570", "3.1412"
    lab.reset([host])
    try:
        ok(lab, host, "usermod -s /bin/sh root")      # dash: it does not exec `FLEET_REMOTE=1 bash -c ...`
        inv = one_host(lab, tmp_path, host)
        sids, out, _, leaders = cut_short(lab, host, ["run", str(inv), "--", f"while :; do sleep {nap}; done"], nap)
        assert "INTERRUPTED" in out and host in out, out
        assert leaders == {"sh"}, leaders        # the case itself, as the host shows it: the login shell leads
        nothing_left(lab, host, sids, nap)
    finally:
        lab.reset([host])
