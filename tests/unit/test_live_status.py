"""The live display's status lines (fleet/report/live.py), rendered as a terminal of a given width gets them;
and when the Reporter uses it: a terminal on both streams, never a pipe. The real terminal is in
tests/lab/test_live_display_lab.py (tmux)."""

from __future__ import annotations

import io
import time

from rich.console import Console

from fleet.env import Environment
from fleet.report import Reporter, _Heartbeat
from fleet.report.live import LiveStatus


def reporter(terminal: bool = True, width: int = 100) -> tuple[Reporter, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=width, force_terminal=terminal, force_interactive=terminal,
                                      color_system=None),
                      err_console=Console(file=err, width=width, force_terminal=terminal, color_system=None))
    return Reporter(env), out, err


def lines(status: LiveStatus, width: int = 100) -> list[str]:
    screen = io.StringIO()
    Console(file=screen, width=width, color_system=None).print(status)
    return screen.getvalue().rstrip("\n").split("\n")


def test_a_line_per_running_host_with_its_step_time_and_latest_output():
    rep, _, _ = reporter(width=120)
    now = time.monotonic()
    rep.running = {"pod-a": ["torch: pip install torch==2.11.0 into /opt/fleet/venv", now - 12.4, now - 1],
                   "pod-b": ["probe: facts and checks", now - 95, now - 95]}
    rep.latest = {"pod-a": "Downloading torch-2.11.0-cp312.whl (9 MB)"}
    shown = lines(LiveStatus(rep, every=30), width=120)
    assert shown == ["pod-a torch: pip install torch==2.11.0 into /opt/fleet/venv 12s  Downloading "
                     "torch-2.11.0-cp312.whl (9 MB)",
                     "pod-b probe: facts and checks: still running, 1m35s"]   # quiet for 30 s or more


def test_chains_at_once_show_the_task_in_flight_longest_and_how_many_beside_it():
    rep, _, _ = reporter()
    now = time.monotonic()
    rep.on_task("pod-a", "begin", "torch: pip install torch")
    rep.tasks["pod-a"]["torch: pip install torch"] = now - 20
    rep.on_task("pod-a", "begin", "cutlass: check out cutlass")
    rep.on_task("pod-a", "begin", "env_hooks: write /etc/fleet/env.sh")
    rep.on_task("pod-a", "end", "env_hooks: write /etc/fleet/env.sh")
    rep.running = {"pod-a": ["cutlass: check out cutlass", now - 2, now]}   # the last one announced
    assert lines(LiveStatus(rep, every=30)) == ["pod-a torch: pip install torch 20s (+1 more)"]
    rep.progress("pod-a", "probe: facts and checks")    # a step of another kind: the apply's tasks are over
    assert lines(LiveStatus(rep, every=30)) == ["pod-a probe: facts and checks 0s"]


def test_a_long_step_is_cut_so_the_time_stays_on_one_line():
    rep, _, _ = reporter(width=60)
    now = time.monotonic()
    rep.running = {"pod-570": ["cuda_compat: " + "x" * 200, now - 7, now]}
    shown = lines(LiveStatus(rep, every=30), width=60)
    assert len(shown) == 1 and len(shown[0]) < 60 and shown[0].endswith("… 7s"), shown


def test_a_finished_host_has_no_line():
    rep, _, _ = reporter()
    rep.progress("pod-a", "probe: facts and checks")
    rep.on_task("pod-a", "begin", "torch: pip install torch")
    rep.finished("pod-a")
    assert lines(LiveStatus(rep, every=30)) == [""]


def test_live_only_where_both_streams_are_a_terminal_and_not_quiet():
    rep, _, _ = reporter(terminal=True)
    assert isinstance(rep.heartbeat(live=True), LiveStatus)
    assert isinstance(rep.heartbeat(), _Heartbeat)                 # a command that does not ask for it
    assert isinstance(reporter(terminal=False)[0].heartbeat(live=True), _Heartbeat)   # a pipe
    quiet, _, _ = reporter(terminal=True)
    quiet.quiet = True
    assert isinstance(quiet.heartbeat(live=True), _Heartbeat)


def test_while_live_step_output_feeds_the_status_line_and_other_lines_print_above():
    rep, out, err = reporter(terminal=True)
    with rep.heartbeat(live=True):
        rep.progress("pod-a", "torch: pip install torch")
        rep.progress("pod-a", "  Collecting torch==2.11.0")        # a step's own output: the status line only
        assert rep.latest["pod-a"] == "Collecting torch==2.11.0"
        rep.warn("something to read")
    screen = out.getvalue()
    assert "pod-a torch: pip install torch" in screen and "warning: something to read" in screen
    assert "pod-a   Collecting" not in screen     # the line a pipe gets for it (report.Reporter.progress)
    assert err.getvalue() == ""           # through the live console, never beside it on the same terminal
    assert rep._live is None              # after the block: stderr again
    rep.warn("after")
    assert "warning: after" in err.getvalue()


def _many(rep: Reporter, n: int) -> None:
    now = time.monotonic()
    rep.running = {f"pod-{i:03d}": ["probe: facts and checks", now - 100 + i, now] for i in range(n)}


def test_no_more_lines_than_the_terminal_shows_the_hosts_running_longest_first():
    """1,000 hosts at once drew 1,000 status lines, again for every result line printed above them: 66 ms of CPU a
    host and 6.8 MB to the terminal for a converged apply, against 24 ms in a pipe (issue 46)."""
    rep, _, _ = reporter()
    rep.env.console.height = 12
    _many(rep, 50)
    shown = lines(LiveStatus(rep, every=300))
    assert len(shown) == 12 - 4
    assert [line.split()[0] for line in shown[:-1]] == [f"pod-{i:03d}" for i in range(7)]   # oldest first
    assert shown[-1] == "… and 43 more hosts running"


def test_a_tall_terminal_still_shows_at_most_twenty_lines():
    rep, _, _ = reporter()
    rep.env.console.height = 200
    _many(rep, 50)
    shown = lines(LiveStatus(rep, every=300))
    assert len(shown) == 20 and shown[-1] == "… and 31 more hosts running"
    _many(rep, 20)     # as many as fit: each its own line, nothing said of more
    shown = lines(LiveStatus(rep, every=300))
    assert len(shown) == 20 and all(line.startswith("pod-") for line in shown)
