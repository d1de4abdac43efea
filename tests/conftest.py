"""Shared by every test: nothing of the developer's own home reaches a test (STYLE.md #8).

fleet reads ~/.ssh/known_hosts, ~/.config/fleet/known_hosts (via XDG_CONFIG_HOME) and, through paramiko,
the keys in ~/.ssh and the ssh-agent: each test gets an empty home of its own and no agent.
"""

import os
import socket
import tempfile

import pytest

# pytest-xdist (the README's `-n`): each worker runs its own test lab on its own /24, so two workers never share
# hosts, a lab root or a session lock. Worker gwN moves FLEET_TEST_LAB_NET's second part up by N (127.0.2 -> gw1's
# 127.1.2): set before fleet_lab.testing reads it at import.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and _WORKER[2:].isdigit() and int(_WORKER[2:]):
    _a, _b, _c = os.environ.get("FLEET_TEST_LAB_NET", "127.0.2").split(".")
    os.environ["FLEET_TEST_LAB_NET"] = f"{_a}.{int(_b) + int(_WORKER[2:])}.{_c}"

# Module- and session-scoped fixtures apply before any test's home is made: their run logs (fleet.record.runlog)
# go to a scratch state directory, never the developer's ~/.local/state.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="fleet-test-state-")

# Every session's tmp_path directories under a base of its own (as --basetemp gives one), unless the command line
# names one. Without it pytest numbers sessions' directories under one shared root (/tmp/pytest-of-<user>) that
# other sessions on the machine clean up; a suite run beside eight other sessions lost its lab inventory mid-run
# (FileNotFoundError .../pytest-479/lab-inventory0/lab.yaml). What deleted it was not proven; a base of its own
# leaves nothing shared. Its paths are also shorter than pytest's numbered ones. Removed when the session passed,
# kept for reading when it failed.
_OWN_BASETEMP = []


@pytest.hookimpl(tryfirst=True)     # before pytest's tmpdir plugin reads the option
def pytest_configure(config):
    if not config.option.basetemp:
        config.option.basetemp = tempfile.mkdtemp(prefix="fleet-")
        _OWN_BASETEMP.append(config.option.basetemp)


def pytest_sessionfinish(session, exitstatus):
    if _OWN_BASETEMP and exitstatus == 0:
        _OWN_BASETEMP.append("passed")


def pytest_unconfigure(config):
    if _OWN_BASETEMP[-1:] == ["passed"]:
        import shutil
        shutil.rmtree(_OWN_BASETEMP[0], ignore_errors=True)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


class CountingPort:
    """A listening TCP port on 127.0.0.1 that tells whether anything connected: an inventory points a host at it
    to prove that bad input stopped fleet before any host was contacted."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def contacted(self) -> bool:
        try:
            self.sock.accept()[0].close()
            return True
        except BlockingIOError:
            return False


@pytest.fixture
def counting_port():
    port = CountingPort()
    yield port
    port.sock.close()
