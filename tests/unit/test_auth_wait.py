"""A key the server refuses is retried only within ConnectOptions.auth_wait (issue 50: bootstrap's -i), whatever the
later tries meet: OpenSSH's PerSourcePenalties drops the connections of a source that failed to log in, and those
resets once kept a wrong key retrying for the whole --wait (97 s of 300 on the lab). A fake clock: no waiting."""

from __future__ import annotations

import pytest

from fleet.connection import ConnectOptions
from fleet.connection import ssh as ssh_module
from fleet.errors import AuthRefused, HostError
from fleet.inventory import Host


class Clock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def connection(monkeypatch, answers, **options):
    clock = Clock()
    monkeypatch.setattr(ssh_module.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(ssh_module.time, "sleep", clock.sleep)
    conn = ssh_module.SSHConnection(Host("pod-a", address="203.0.113.7"), ConnectOptions(**options))
    tries = []

    def once():
        tries.append(clock.now)
        raise answers(len(tries))

    monkeypatch.setattr(conn, "_open_once", once)
    return conn, clock, tries


def test_a_refused_key_then_penalty_resets_gives_up_after_auth_wait_naming_the_key(monkeypatch):
    conn, clock, tries = connection(
        monkeypatch, lambda n: AuthRefused("pod-a: refused our credentials") if n == 1 else ConnectionResetError(),
        wait=300, auth_wait=20)
    with pytest.raises(AuthRefused, match="refused our credentials"):
        conn.open()
    assert clock.now - tries[0] <= 20 + 0.001 and len(tries) > 1


def test_a_pod_still_booting_is_given_the_whole_wait(monkeypatch):
    conn, clock, tries = connection(monkeypatch, lambda n: ConnectionRefusedError(), wait=300, auth_wait=20)
    with pytest.raises(HostError, match="cannot reach"):
        conn.open()
    assert clock.now - tries[0] >= 300


def test_without_auth_wait_a_refused_key_is_retried_within_wait_as_before(monkeypatch):
    conn, clock, tries = connection(monkeypatch, lambda n: AuthRefused("pod-a: refused"), wait=60)
    with pytest.raises(AuthRefused):
        conn.open()
    assert clock.now - tries[0] >= 60
