"""Rich's live display on a real terminal (issue 25): `fleet apply` runs inside tmux, a terminal emulator, and the
test reads the screen as a person sees it. While one host's step runs (it waits for a file the test makes), the
screen holds a status line for it with its step and elapsed time, and the result line of the host that already
ended; once it ends, the final screen holds each host's result line and no status line. The same apply through
pipes prints plain lines without one escape code. The hosts are asked what ran (the files the task made)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import ok

SLOW, FAST = "pod-580", "pod-570"
TMUX = shutil.which("tmux")
# the waiting host's live status line: its step, then how long it has run ("12s", "1m05s") or "still running, Ns"
STATUS = re.compile(rf"^{SLOW} live: run .*(?: \d+(?:m\d\d)?s|still running, \d+(?:m\d\d)?s)(?:  .*)?$", re.M)


@pytest.fixture
def setup(lab, tmp_path):
    assert TMUX, "tmux is missing: scripts/setup.sh installs it"
    roles = tmp_path / "roles" / "live"
    roles.mkdir(parents=True)
    (roles / "role.yaml").write_text(textwrap.dedent("""\
        tasks:
          - name: a step that waits where told to
            command:
              cmd: "i=0; while [ -e /tmp/live/wait ] && [ ! -e /tmp/live/go ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; touch /tmp/live/done"
              creates: /tmp/live/done
        """))
    inv = lab.write_inventory(tmp_path / "inv.yaml", (SLOW, FAST), roles=["live"],
                              roles_path=[str(tmp_path / "roles")])
    lab.reset([SLOW, FAST])
    for name in (SLOW, FAST):
        ok(lab, name, "mkdir -p /tmp/live")
    return inv


class Screen:
    """A tmux server of the test's own (its socket under tmp_path): a 160x50 terminal running one command."""

    def __init__(self, tmp_path, command: str):
        self.socket = str(tmp_path / "tmux.sock")
        script = tmp_path / "run.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in os.environ.items()
                          if k in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "PATH", "PYTHONPATH", "FLEET_LAB_ROOT"))
        script.write_text(f"{exports}export FLEET_HEARTBEAT=30 TERM=xterm-256color\ncd {shlex.quote(str(tmp_path))}\n"
                          f"{command}\necho EXIT=$?\nsleep 600\n")
        self.tmux("new-session", "-d", "-x", "160", "-y", "50", f"bash {shlex.quote(str(script))}")

    def tmux(self, *args: str) -> str:
        return subprocess.run([TMUX, "-S", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def text(self) -> str:
        return self.tmux("capture-pane", "-p")

    def wait_for(self, pattern: re.Pattern, seconds: float = 240) -> str:
        deadline = time.monotonic() + seconds     # a bound, not a measure
        while time.monotonic() < deadline:
            screen = self.text()
            if pattern.search(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"not on the screen: {pattern.pattern}\n{self.text()}")

    def close(self) -> None:
        subprocess.run([TMUX, "-S", self.socket, "kill-server"], capture_output=True)


def test_a_terminal_shows_a_live_line_per_running_host_and_ends_with_each_result_line(lab, setup, tmp_path):
    ok(lab, SLOW, "touch /tmp/live/wait")
    screen = Screen(tmp_path, f"{shlex.quote(sys.executable)} -m fleet apply {shlex.quote(str(setup))}")
    try:
        during = screen.wait_for(re.compile(rf"^{FAST}: 1 changed", re.M))   # the fast host ended, result shown
        during = screen.wait_for(STATUS) if not STATUS.search(during) else during
        assert re.search(rf"^{FAST}: 1 changed", during, re.M), during
        assert STATUS.search(during), during               # the slow one: a live status line, with its time
        ok(lab, SLOW, "touch /tmp/live/go")
        final = screen.wait_for(re.compile(r"^EXIT=\d+$", re.M))
    finally:
        screen.close()
    assert "EXIT=0" in final, final
    for host in (SLOW, FAST):
        assert re.search(rf"^{host}: 1 changed\b.* \d+\.\d s$", final, re.M), final   # each host's result line
    assert not STATUS.search(final), final                  # no status line left on the final screen
    assert re.search(r"^recap", final, re.M), final
    # the hosts: the step ran to its end on each
    assert ok(lab, SLOW, "ls /tmp/live").split() == ["done", "go", "wait"]
    assert ok(lab, FAST, "ls /tmp/live").split() == ["done"]


def test_a_pipe_gets_plain_lines_without_escape_codes(lab, setup, tmp_path):
    env = {**os.environ, "FLEET_HEARTBEAT": "1", "TERM": "xterm-256color"}
    result = subprocess.run([sys.executable, "-m", "fleet", "apply", str(setup)], capture_output=True, text=True,
                            env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\x1b" not in result.stdout and "\x1b" not in result.stderr, repr(result.stdout + result.stderr)
    for host in (SLOW, FAST):
        assert re.search(rf"^{host}: 1 changed", result.stdout, re.M), result.stdout
        assert f"{host} probe: facts and checks" in result.stderr, result.stderr   # progress: plain lines
        assert ok(lab, host, "ls /tmp/live").split() == ["done"]
