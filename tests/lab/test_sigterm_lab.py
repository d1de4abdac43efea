"""SIGTERM and SIGHUP end `fleet apply` as Ctrl-C does, and the remote work ends with it (issue 26): fleet, run
as a user runs it, is signalled while a lab pod is in a step that waits on a file; it prints the recap with the
host interrupted and exits 128 + the signal. Then the host is asked: no process of the apply's script is left,
the apply lock is free, and the next apply runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ok, sh
from fleet_lab.testing import wait_for

POD = "pod-570"
ROLE = """description: a step that waits for a file
tasks:
  - name: wait for the go file
    command: {cmd: "while [ ! -e /var/tmp/fleet-go ]; do sleep {{ nap }}; done; touch /var/tmp/fleet-went", creates: /var/tmp/fleet-went}
"""


def inventory(lab, tmp_path: Path, nap: str) -> Path:
    (tmp_path / "roles" / "waiter").mkdir(parents=True)
    (tmp_path / "roles" / "waiter" / "role.yaml").write_text(ROLE)
    return lab.write_inventory(tmp_path / "pod.yaml", {POD: {"nap": nap}}, roles_path=["roles"], roles=["waiter"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signalled_apply_stops_its_remote_work_and_frees_the_lock(lab, tmp_path, sig):
    lab.reset([POD])
    nap = f"0.{2000 + sig:04d}"                       # a sleep nothing else on the host runs
    inv = inventory(lab, tmp_path, nap)
    proc = subprocess.Popen([sys.executable, "-m", "fleet", "apply", str(inv)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="300"))
    try:
        wait_for(lambda: sh(lab, POD, f"pgrep -f 'sleep {nap}'").exit == 0, "the step to start")
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, out
    assert "interrupted" in out and POD in out, out
    # the host: nothing of the script runs on, the lock is free, and the next apply goes through
    wait_for(lambda: sh(lab, POD, f"pgrep -f 'sleep {nap}|fleet-go'").stdout == "",
             lambda: "nothing of the script left: " + sh(lab, POD, "ps -eo pid,ppid,sid,args").stdout)
    # the lock's holder is the script's own shell, which ends after its step (its EXIT trap runs last): free once it
    # has (asked until then; a holder that never ends fails here, naming what runs)
    wait_for(lambda: sh(lab, POD, "flock -n /var/lib/fleet/apply.lock echo free").stdout.split() == ["free"],
             lambda: "the apply lock freed: " + sh(lab, POD, "ps -eo pid,ppid,sid,args").stdout)
    assert ok(lab, POD, "[ -e /var/tmp/fleet-went ] && echo went || echo not").split() == ["not"]
    ok(lab, POD, "touch /var/tmp/fleet-go")
    done = subprocess.run([sys.executable, "-m", "fleet", "apply", str(inv)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ok(lab, POD, "[ -e /var/tmp/fleet-went ] && echo went || echo not").split() == ["went"]
