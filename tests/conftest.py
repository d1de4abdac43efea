"""Shared by every test: nothing of the developer's own home reaches a test (STYLE.md #8).

fleet reads ~/.ssh/known_hosts, ~/.config/fleet/known_hosts (via XDG_CONFIG_HOME) and, through paramiko,
the keys in ~/.ssh and the ssh-agent: each test gets an empty home of its own and no agent.
"""

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home
