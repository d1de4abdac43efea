"""Fixtures of the SSH tests; the server itself is in mockserver.py."""

import paramiko
import pytest

from mockserver import record_known, serving


@pytest.fixture
def server():
    with serving() as running:
        yield running


@pytest.fixture
def known(server):
    """The server's key recorded in fleet's known-hosts file."""
    return record_known(server.port)


@pytest.fixture(scope="session")
def other_key(tmp_path_factory) -> str:
    """A second RSA key: a stranger's user key, or the host key of a pod that was rebuilt."""
    path = tmp_path_factory.mktemp("keys") / "other_rsa"
    paramiko.RSAKey.generate(2048).write_private_key_file(str(path))
    return str(path)
