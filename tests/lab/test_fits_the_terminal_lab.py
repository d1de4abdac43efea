"""Output that fits (issue 50): a converged pod's `fleet apply` read off a real terminal (tmux, 80 and 100 columns)
has its recap row whole (the verify and GPU cells were cut to `(reuse…` and `healt…` at 80 columns); the same apply
through a pipe is plain tab-separated cells, no escape code, nothing wrapped at any width. `fleet bootstrap`'s
summary on that terminal breaks no word: a token longer than its value column (an inventory's path) takes a line of
its own, whole (rich's fold had cut `cud`/`a_keyring_pins` and paths mid-word)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import pytest

POD = "pod-570"
TMUX = shutil.which("tmux")


def on_terminal(tmp_path, columns: int, command: str) -> str:
    """The screen of a tmux terminal COLUMNS wide that ran `command` to its end (a server of this test's own), with
    the lines scrolled off its top."""
    assert TMUX, "tmux is missing: scripts/setup.sh installs it"
    sock = str(tmp_path / f"tmux-{columns}.sock")
    script = tmp_path / f"run-{columns}.sh"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in os.environ.items()
                      if k in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "PATH", "PYTHONPATH", "FLEET_LAB_ROOT"))
    script.write_text(f"{exports}export TERM=xterm-256color\n{command}\necho EXIT=$?\nsleep 600\n")
    tmux = [TMUX, "-S", sock]
    subprocess.run([*tmux, "new-session", "-d", "-x", str(columns), "-y", "60", f"bash {shlex.quote(str(script))}"],
                   check=True)
    try:
        deadline = time.monotonic() + 600     # a bound, not a measure
        while time.monotonic() < deadline:
            screen = subprocess.run([*tmux, "capture-pane", "-p", "-S", "-1000"], check=True, capture_output=True, text=True).stdout
            if re.search(r"^EXIT=\d+$", screen, re.M):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"the apply did not end:\n{screen}")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


@pytest.fixture(scope="module")
def converged(converged_fresh):
    """The pod converged once for the module (conftest's converged_fresh): each test below runs a no-op apply on it,
    which leaves it converged for the next."""
    code, doc = converged_fresh(POD)
    assert code == 0, str(doc["hosts"][POD])[-3000:]


@pytest.mark.parametrize("columns", [80, 100])
def test_a_converged_apply_recap_is_whole_on_a_terminal(lab, converged, tmp_path, columns):
    screen = on_terminal(tmp_path, columns, f"{shlex.quote(sys.executable)} -m fleet apply "
                                            f"{shlex.quote(str(lab.inventory_path))} --limit {POD}")
    assert "EXIT=0" in screen, screen
    assert "…" not in screen and "..." not in screen, screen          # no cell cut short
    rows = [line for line in screen.splitlines() if re.match(rf"{POD} +\d+ ", line)]
    assert len(rows) == 1, screen                                     # one row: nothing wrapped onto a second line
    cells = rows[0].split()
    assert cells[1:5] == [cells[1], "0", "0", cells[4]] and "passed (reused)" in rows[0] and "healthy" in rows[0], rows
    assert all(len(line) <= columns for line in screen.splitlines())


def test_a_piped_apply_is_tab_separated_and_never_wrapped(lab, converged):
    env = {**os.environ, "COLUMNS": "40", "TERM": "xterm-256color"}   # a narrow terminal's width must not reach a pipe
    done = subprocess.run([sys.executable, "-m", "fleet", "apply", str(lab.inventory_path), "--limit", POD],
                          capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = lines.index("host\tok\tchanged\tfailed\tskipped\tverify\tGPU health\tseconds\tcommands")
    row = lines[header + 1].split("\t")
    assert row[0] == POD and row[2:4] == ["0", "0"] and row[5] == "passed (reused)" and row[6] == "healthy", row
    assert any(len(line) > 40 for line in lines)                      # long lines stay whole at any width


@pytest.mark.parametrize("columns", [80, 100])
def test_a_bootstrap_summary_breaks_no_word_on_a_terminal(lab, converged, tmp_path, isolated_home, columns):
    """The converged pod bootstrapped from its SSH line into an inventory whose path is longer than the summary's
    value column but fits the terminal (the length set here, whatever this checkout's temporary path), with a --set
    and the lab's keyring pins: every token of the summary stands whole on one line of the screen."""
    from fleet_lab import paths

    from helpers import pods_inventory_text

    pad = columns - 6 - len(str(tmp_path / "pods.yaml")) - 1       # the path: 6 columns short of the screen's width
    assert pad >= 1, f"the temporary path {tmp_path} is too long for a {columns}-column test"
    inventory = tmp_path / ("p" * pad) / "pods.yaml"
    inventory.parent.mkdir()
    inventory.write_text(pods_inventory_text(lab))
    address = lab.inventory.hosts[POD].address
    name = "pod-" + address.rsplit(".", 1)[1]
    line = f"ssh root@{address} -p 22 -i {paths.lab_key(lab.root)}"
    pins = paths.lab_keyring_pins(lab.root)
    urls = len([text for text in pins.read_text().splitlines() if text.strip()])
    screen = on_terminal(tmp_path, columns, f"{shlex.quote(sys.executable)} -m fleet bootstrap {shlex.quote(line)} "
                                            f"--inventory {shlex.quote(str(inventory))} --keyring-pins "
                                            f"{shlex.quote(str(pins))} "
                                            "--set verify_perf=off")
    assert "EXIT=0" in screen, screen
    lines = screen.splitlines()
    assert all(len(text) <= columns for text in lines), screen
    summary = lines[next(i for i, text in enumerate(lines) if f"bootstrap {name}" in text and "verify passed" in text):]
    assert sum(str(inventory) in text for text in summary) == 2, screen   # the inventory row and the next row, whole
    assert any("cuda_keyring_pins" in text for text in summary), screen
    words = " ".join(" ".join(summary).split())                        # each row's words in order, across its lines
    assert f"inventory added to {inventory} as {name}, with its vars: verify_perf=false, cuda_keyring_pins for " \
           f"{urls} URL(s)" in words, screen
    assert f"connect {line}" in words and f"next fleet apply {inventory} --limit {name}" in words, screen
