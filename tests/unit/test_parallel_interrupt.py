"""Ctrl-C in fleet.connection.parallel: queued hosts never start, running commands are killed, outcomes say which."""

import _thread
import signal
import threading
import time
from pathlib import Path

import pytest

from fleet.inventory import Host
from fleet.connection.parallel import interrupted, on_hosts


@pytest.fixture(autouse=True)
def ctrl_c_reaches_python():
    """Ctrl-C as a terminal delivers it. A shell that starts a job in the background hands it SIGINT ignored,
    and then Python raises no KeyboardInterrupt, for a real Ctrl-C or interrupt_main() alike: these tests
    failed that way when the suite ran as a background job (found while repeating it for issue 17)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_ctrl_c_skips_queued_hosts_and_kills_running_commands(tmp_path):
    hosts = [Host(f"h{i}", connection="local") for i in range(4)]
    started = {h.name: tmp_path / f"{h.name}.started" for h in hosts}

    def work(conn, host):
        # Long enough that only Ctrl-C ends it; the marker says it began.
        return conn.run(f"touch {started[host.name]}; sleep 60; touch {started[host.name]}.finished")

    def press_ctrl_c():
        deadline = time.monotonic() + 600
        while not all(started[h.name].exists() for h in hosts[:2]) and time.monotonic() < deadline:
            time.sleep(0.01)
        _thread.interrupt_main()

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    outcomes = on_hosts(hosts, work, forks=2)

    assert interrupted(outcomes)
    assert list(outcomes) == ["h0", "h1", "h2", "h3"]
    for name in ("h0", "h1"):
        assert outcomes[name].interrupted and outcomes[name].started, outcomes[name]
        assert outcomes[name].error == f"{name}: interrupted"
        assert outcomes[name].remote_commands == 1
    for name in ("h2", "h3"):
        assert outcomes[name].interrupted and not outcomes[name].started
        assert not started[name].exists()          # never contacted
    # The running commands were killed with their process group, not left to finish.
    assert not any(Path(f"{started[h.name]}.finished").exists() for h in hosts)


def test_without_ctrl_c_nothing_is_interrupted():
    hosts = [Host(f"h{i}", connection="local") for i in range(3)]
    outcomes = on_hosts(hosts, lambda conn, host: conn.run("echo ok").stdout, forks=2)
    assert not interrupted(outcomes)
    assert [o.value for o in outcomes.values()] == ["ok\n"] * 3


def test_fleet_run_interrupted_prints_what_each_host_did_and_exits_130(tmp_path):
    import io

    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment

    inv = tmp_path / "local.yaml"
    inv.write_text("hosts:\n  a: {connection: local}\n  b: {connection: local}\n  c: {connection: local}\n")
    marker = tmp_path / "started"

    def press_ctrl_c():
        deadline = time.monotonic() + 600
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        _thread.interrupt_main()

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=100), err_console=Console(file=err, width=100, soft_wrap=True))
    code = main(["run", str(inv), "--forks", "1", "--", f"touch {marker}; sleep 60"], env)

    assert code == 130
    text = err.getvalue()
    assert "a INTERRUPTED: interrupted during remote command 1" in text
    assert "b NOT STARTED: not started: the run was interrupted while it was queued" in text
    assert "c NOT STARTED" in text
