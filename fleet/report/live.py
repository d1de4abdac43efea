"""Rich's live display of the hosts still running (issue 25), where a person watches a terminal.

    with reporter.heartbeat(live=True):    # Reporter picks this where stdout and stderr are both a terminal
        on_hosts(...)

Below the lines already printed, one status line per host still running (at most MOST_ROWS and the terminal's
height less SPARE_ROWS: the hosts running longest, then how many more run): its current step and how long that
step has run ("pod-570 torch: pip install torch==2.11.0 into /opt/fleet/venv 12s", with the step's latest output
line dimmed after it). While apply's chains run at once, the step is the task in flight longest and how many run
beside it ("... 12s (+1 more)"), from the tasks' begin and end markers (Reporter.on_task). A step quiet for the heartbeat's period reads "...: still running, 1m30s", the words a
pipe gets as a heartbeat line. When a host ends its status line goes and its result lines are printed above
(report/apply.ApplyPrinter); when the block ends the region is erased, so the screen keeps only printed lines.

While it runs, everything the Reporter prints goes through the live console (printed above the region, never
through it): the step lines as before, not each line of a step's own output (the status line shows the latest).
In a pipe or a file none of this exists: plain lines and heartbeat lines, as before (report.__init__._Heartbeat).
"""

from __future__ import annotations

import time

from rich.console import Group
from rich.live import Live
from rich.text import Text


SPARE_ROWS = 4     # the terminal's rows left to the lines printed above the region
# the region's rows at most, whatever the terminal's height: it is drawn again for every line printed above it (a
# host's result), so its height is bytes and CPU a host; 20 hosts still show what is slow
MOST_ROWS = 20


class LiveStatus:
    def __init__(self, reporter, every: float):
        self.reporter = reporter
        self.every = every
        self.live = Live(self, console=reporter.env.console, refresh_per_second=4, transient=True,
                         redirect_stdout=False, redirect_stderr=False)

    def __enter__(self) -> "LiveStatus":
        self.live.start()
        self.reporter._live = self.live.console   # the Reporter's stderr lines now print above the region
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.live.stop()    # transient: the status lines are erased; the printed lines stay
        finally:
            self.reporter._live = None

    def __rich__(self):
        """The status lines, rendered by the live thread. It never takes the Reporter's lock (a host thread may
        hold it while printing, which waits for the live thread): a copy of each entry is read instead."""
        now = time.monotonic()
        width = self.reporter.env.console.width
        running = list(self.reporter.running.items())
        # no more lines than the terminal shows, the hosts running longest first: a region of 1,000 lines was
        # rendered again for every line printed above it, a converged apply of 1,000 hosts on a terminal cost 66 ms
        # of CPU a host and 6.8 MB written to it, against 24 ms in a pipe (issue 46)
        room = max(1, min(self.reporter.env.console.height - SPARE_ROWS, MOST_ROWS))
        shown, hidden = (running, 0) if len(running) <= room else (running[:room - 1], len(running) - room + 1)
        lines = []
        for host, state in shown:
            step, began, heard = tuple(state[:3])
            tasks = sorted(dict(self.reporter.tasks.get(host) or {}).items(), key=lambda item: item[1])
            if tasks:   # chains at once: the task in flight longest, and how many run beside it
                step, began = tasks[0]
            elapsed = _elapsed(now - began)
            quiet = now - heard >= self.every
            time_text = (f": still running, {elapsed}" if quiet else f" {elapsed}") + (
                f" (+{len(tasks) - 1} more)" if len(tasks) > 1 else "")
            # one terminal line each, never wrapped: the step is cut to leave room for the time, then the latest
            # output line gets what is left
            room = max(8, width - 1 - len(host) - 1 - len(time_text))
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(host, style="bold")
            line.append(" " + (step if len(step) <= room else step[:room - 1] + "…"))
            line.append(time_text, style="yellow" if quiet else "cyan")
            said = None if quiet else self.reporter.latest.get(host)
            left = width - 1 - len(line) - 2
            if said and left > 8:
                line.append("  " + (said if len(said) <= left else said[:left - 1] + "…"), style="dim")
            lines.append(line)
        if hidden:
            lines.append(Text(f"… and {hidden} more host{'s' if hidden > 1 else ''} running", style="dim",
                              no_wrap=True, overflow="ellipsis"))
        return Group(*lines)


def _elapsed(seconds: float) -> str:
    from fleet.report import _elapsed as elapsed

    return elapsed(seconds)
