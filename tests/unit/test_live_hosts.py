"""Each host's result is shown as soon as that host ends, not when the slowest one does (issue 25, live).

The slow host waits until the fast host's lines are on the console: with results printed only at the end it
would wait forever, so it gives up after a guard and says so (a deadlock guard, not a timing assert)."""

import io
import threading

from rich.console import Console

from fleet.connection.parallel import on_hosts
from fleet.engine.plan import TaskReport
from fleet.engine.report import HostReport
from fleet.env import Environment
from fleet.inventory import Host
from fleet.report import Reporter
from fleet.report.apply import ApplyPrinter, print_apply


def test_a_host_that_ends_first_is_printed_while_the_slow_one_still_runs():
    out = io.StringIO()
    reporter = Reporter(Environment(console=Console(file=out, width=100), err_console=Console(file=io.StringIO())))
    fast_shown = threading.Event()
    live = ApplyPrinter(reporter, show_diff=False, check=False)

    def on_done(outcome):
        live(outcome)
        if outcome.host == "fast":
            fast_shown.set()

    def work(conn, host):
        if host.name == "slow":
            saw = fast_shown.wait(timeout=30)
            text = "the fast host was on screen" if saw and "fast: in state" in out.getvalue() else "gave up"
            return HostReport("slow", False, (TaskReport("r", text, "changed", "because"),))
        return HostReport("fast", False, (TaskReport("r", "t", "ok", "in state"),))

    outcomes = on_hosts([Host("slow", connection="local"), Host("fast", connection="local")], work,
                        on_done=on_done)
    assert outcomes["slow"].value.tasks[0].task == "the fast host was on screen"
    print_apply(reporter, outcomes, json_out=False, show_diff=False, check=False, shown=live.shown)
    text = out.getvalue()
    assert text.count("fast: in state") == 1 and text.count("slow: 1 changed") == 1, text   # each host once
    assert text.index("fast: in state") < text.index("slow: 1 changed") < text.index("recap"), text
