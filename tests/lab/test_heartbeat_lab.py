"""A long quiet step says it is alive: under a pseudo-terminal, `fleet apply` prints '<host> <role>: <step>: still
running, Ns' while a task prints nothing, and the run then ends normally. The task waits for a file that the test
makes only once it has seen that line on the terminal: no line, no file, and the task gives up and fails."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import textwrap
import time


from helpers import ok

POD = "pod-580"


def test_a_quiet_step_gets_heartbeat_lines_on_a_terminal(lab, tmp_path):
    roles = tmp_path / "roles" / "slow"
    roles.mkdir(parents=True)
    (roles / "role.yaml").write_text(textwrap.dedent("""\
        tasks:
          - name: a long quiet step
            command:
              cmd: "i=0; while [ ! -e /tmp/hb/go ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; [ -e /tmp/hb/go ] && touch /tmp/hb/done"
              creates: /tmp/hb/done
        """))
    inv = lab.write_inventory(tmp_path / "inv.yaml", POD, roles=["slow"], roles_path=[str(tmp_path / "roles")])
    lab.reset([POD])
    ok(lab, POD, "mkdir -p /tmp/hb")
    master, slave = pty.openpty()
    env = {**os.environ, "FLEET_HEARTBEAT": "1", "COLUMNS": "200"}   # the mechanism, at a test's pace
    proc = subprocess.Popen([sys.executable, "-m", "fleet", "apply", str(inv)], stdin=slave, stdout=slave,
                            stderr=slave, env=env, close_fds=True)
    os.close(slave)
    seen, released = b"", False
    deadline = time.monotonic() + 300          # a bound, not a measure
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:                # the terminal closed: fleet ended
                    break
                if not chunk:
                    break
                seen += chunk
            # the step's own beat: under load the probe before it may beat too ("probe: facts and checks: still
            # running, 1s"), which must not release the step before it has started
            if not released and any(b"slow: run" in line and b"still running, " in line for line in seen.split(b"\n")):
                ok(lab, POD, "touch /tmp/hb/go")
                released = True
            if proc.poll() is not None and not ready:
                break
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = seen.decode(errors="replace")
    assert released, text[-3000:]
    assert code == 0, text[-3000:]
    assert ok(lab, POD, "ls /tmp/hb").split() == ["done", "go"]          # the host: the step ran to its end
    beat = next(line for line in text.splitlines() if "slow: run" in line and "still running, " in line)
    assert POD in beat, beat
