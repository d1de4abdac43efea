"""Shared by every test: nothing of the developer's own home reaches a test (STYLE.md #8).

fleet reads ~/.ssh/known_hosts, ~/.config/fleet/known_hosts (via XDG_CONFIG_HOME) and, through paramiko,
the keys in ~/.ssh and the ssh-agent: each test gets an empty home of its own and no agent.
"""

import os
import socket
import tempfile

import pytest

# Module- and session-scoped fixtures apply before any test's home is made: their run logs (fleet.record.runlog)
# go to a scratch state directory, never the developer's ~/.local/state.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="fleet-test-state-")

# Every session's tmp_path directories under a root of its own. pytest numbers sessions' directories under one
# shared root (/tmp/pytest-of-<user>) and each session, as it starts and ends, deletes the older ones it judges
# unused; a long session beside other sessions (another checkout's suite, a developer's run) lost its lab inventory
# mid-run that way (FileNotFoundError: .../pytest-479/lab-inventory0/lab.yaml). A root per session is touched by
# nothing else; it is removed when the session passed and kept for reading when it failed.
_OWN_TEMPROOT = "PYTEST_DEBUG_TEMPROOT" not in os.environ
if _OWN_TEMPROOT:
    os.environ["PYTEST_DEBUG_TEMPROOT"] = tempfile.mkdtemp(prefix="fleet-pytest-")
_TEMPROOT = os.environ["PYTEST_DEBUG_TEMPROOT"]
_PASSED = []


def pytest_sessionfinish(session, exitstatus):
    _PASSED.append(exitstatus == 0)


def pytest_unconfigure(config):
    if _OWN_TEMPROOT and _PASSED == [True]:
        import shutil
        shutil.rmtree(_TEMPROOT, ignore_errors=True)


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
