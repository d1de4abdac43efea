"""`fleet run` and `fleet facts` cut short end on the host too (issue 26): fleet, run as a user runs it, is sent
SIGTERM while a lab host is in the middle of its command; it exits 143. Then the host is asked: no process of that
command's session is left (the command, its shell, fleet's watchdog), as apply's test asks after its apply
(test_sigterm_lab.py). Before, the command ran on, reparented to PID 1, after fleet had gone.

- `fleet run` as root (pod-570), and `fleet run --sudo` as a user with sudo (spark: the command runs as root,
  under sudo, which relays the watchdog's TERM);
- `fleet facts` (pod-580) whose probe is blocked: the venv's python hangs, as a `df` on a dead mount does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ok, sh
from fleet_lab.testing import wait_for


def one_host(lab, tmp_path: Path, name: str, **vars) -> Path:
    return lab.write_inventory(tmp_path / f"{name}.yaml", {name: vars})


def sessions_of(lab, host: str, nap: str) -> tuple[set[str], set[str]]:
    """The sessions (sid) and users of the processes running `sleep NAP` on the host, in one look."""
    out = sh(lab, host, f"for p in $(pgrep -f '^sleep {nap}$'); do ps -o sid=,user= -p \"$p\"; done", sudo=True).stdout
    pairs = [line.split() for line in out.splitlines() if len(line.split()) == 2 and line.split()[0].isdigit()]
    return {sid for sid, _ in pairs}, {user for _, user in pairs}


def cut_short(lab, host: str, argv: list[str], nap: str) -> tuple[set[str], str, set[str]]:
    """Start fleet, wait until the host runs its `sleep NAP`, SIGTERM fleet; (the command's sessions, fleet's
    output, the users its sleeps ran as)."""
    proc = subprocess.Popen([sys.executable, "-m", "fleet", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="300"))
    seen: list = []

    def started() -> bool:
        seen.append(sessions_of(lab, host, nap))
        return bool(seen[-1][0]) or proc.poll() is not None

    try:
        wait_for(started, "the command to be seen on the host, or fleet to end", every=0.2)
        assert proc.poll() is None, f"fleet ended before its command was seen on the host: {proc.communicate()[0]}"
        sids, users = next((look for look in reversed(seen) if look[0]), (set(), set()))
        assert sids, "the command never started on the host"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, out
    return sids, out, users


def nothing_left(lab, host: str, sids: set[str], nap: str) -> None:
    """The host: no `sleep NAP`, and no process at all in the command's session (its shell, fleet's watchdog)."""
    left = f"pgrep -f '^sleep {nap}$'; for s in {' '.join(sorted(sids))}; do pgrep -s \"$s\"; done; true"
    wait_for(lambda: sh(lab, host, left, sudo=True).stdout.strip() == "",
             lambda: f"nothing left in sessions {sids}: {sh(lab, host, left, sudo=True)}", every=0.2)


@pytest.mark.parametrize("host,sudo", [("pod-570", False), ("spark", True)], ids=["root", "sudo"])
def test_a_run_cut_short_by_sigterm_ends_its_command_on_the_host(lab, tmp_path, host, sudo):
    lab.reset([host])
    nap = "3.3141" if sudo else "3.2718"          # a sleep nothing else on the host runs
    inv = one_host(lab, tmp_path, host)
    command = f"while :; do sleep {nap}; done"
    sids, out, users = cut_short(lab, host, ["run", str(inv), *(["--sudo"] if sudo else []), "--", command], nap)
    assert "INTERRUPTED" in out and host in out, out
    assert users == {"root"}, users              # spark's user is nvidia: under --sudo the command ran as root
    nothing_left(lab, host, sids, nap)


def test_a_facts_probe_cut_short_by_sigterm_ends_on_the_host(lab, tmp_path):
    host, nap, venv = "pod-580", "3.1618", "/opt/fleet-hang"
    lab.reset([host])
    # the venv's python never answers: the probe's python section blocks, as a `df` on a dead mount does
    ok(lab, host, f"mkdir -p {venv}/bin && printf '#!/bin/sh\\nwhile :; do sleep {nap}; done\\n' > {venv}/bin/python"
                  f" && chmod 755 {venv}/bin/python")
    inv = one_host(lab, tmp_path, host, python_env=venv)
    sids, out, _ = cut_short(lab, host, ["facts", str(inv)], nap)
    nothing_left(lab, host, sids, nap)
    assert not (tmp_path / "facts" / f"{host}.json").exists()      # no record from a probe cut short
