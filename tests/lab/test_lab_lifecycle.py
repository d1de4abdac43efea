"""Isolation between hosts, reset, idempotent up, cleanup after a killed run, and `down` leaving nothing."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

import fleet_lab as lab_api
from fleet_lab import paths
from fleet_lab.host import LabHost, answers_ssh
from fleet_lab.procs import listening_pids
from fleet_lab import testing as lab_testing
from helpers import ok, sh

SCRATCH_ADDRESS = f"{lab_testing.test_net()}.31"
OWN_ADDRESS = f"{lab_testing.test_net()}.32"
SCRATCH = {"scratch-pod": {"address": SCRATCH_ADDRESS, "lab": {"profile": "h100-pod", "driver": "575.57.08"}}}


def in_namespace(ns: str) -> list[int]:
    """Live (non-zombie) processes in mount namespace `ns`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.readlink(f"/proc/{entry}/ns/mnt") == ns:
                found.append(int(entry))
        except OSError:
            continue
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


def test_writes_stay_on_their_host(lab):
    marker = "/root/fleet-lab-isolation-marker"
    ok(lab, "pod-580", f"echo mine > {marker}; echo mine > /etc/fleet-lab-isolation-marker")
    try:
        assert ok(lab, "pod-580", f"cat {marker}").strip() == "mine"
        for host in ("thor", "spark", "pod-570"):
            assert sh(lab, host, f"test -e {marker} || test -e /etc/fleet-lab-isolation-marker", sudo=True).exit == 1
        assert not Path(marker).exists() and not Path("/etc/fleet-lab-isolation-marker").exists()
    finally:
        lab.reset(["pod-580"])
    assert sh(lab, "pod-580", f"test -e {marker}").exit == 1


def test_what_fleet_keeps_on_this_machine_never_shows_in_a_lab_host(lab):
    """A lab host's lower layer is this machine's live /: what fleet keeps here (a local `fleet script` as root takes
    its lock in /var/lib/fleet) would show in every lab host. A fresh host hides each such path with a whiteout (the
    directories above it keep this machine's owner and mode); what the host then makes there is its own alone (an
    opaque directory, which goes on hiding this machine's), across a restart."""
    import stat

    from fleet_lab.host import MACHINE_FLEET_STATE

    lab.reset(["pod-570"])
    upper = LabHost("pod-570", lab.root).dir / "upper"
    try:
        for path in MACHINE_FLEET_STATE:
            hidden = os.lstat(upper / path.lstrip("/"))
            assert stat.S_ISCHR(hidden.st_mode) and hidden.st_rdev == 0, path     # overlayfs' whiteout: 0/0
        asked = sh(lab, "pod-570", "for p in /var/lib/fleet /opt/fleet /opt/cutlass; do ls -d $p; done 2>&1; "
                                   "stat -c '%U %a' /var/lib /opt").stdout.splitlines()
        assert [line.split(": ")[-1] for line in asked[:3]] == ["No such file or directory"] * 3, asked
        assert asked[3:] == [f"{Path(d).owner()} {oct(os.stat(d).st_mode & 0o7777)[2:]}" for d in ("/var/lib", "/opt")]
        ok(lab, "pod-570", "mkdir -p /var/lib/fleet && touch /var/lib/fleet/mine")
        lab.restart(["pod-570"])
        assert ok(lab, "pod-570", "ls -A /var/lib/fleet").split() == ["mine"]
        assert os.getxattr(upper / "var/lib/fleet", "trusted.overlay.opaque") == b"y"
    finally:
        lab.reset(["pod-570"])


def test_exec_runs_in_the_host_listening_sshd_and_never_silently_in_none(lab, monkeypatch):
    """`lab.exec` (what a test writes into a host as `docker exec` would) enters the host through its listening sshd,
    the host's PID 1, even while sessions' sshds live (after the pids wrap around, one of those may have the lowest
    pid and end just then); and when nsenter cannot enter the process, nothing ran: a LabError, never a quiet exit 1
    that a test took for a write made (the compat-gate lab test's /pre_start.sh, lost in CI run 54)."""
    import fleet.errors
    import fleet_lab.host as lab_host

    host = LabHost("pod-580", lab.root)
    session = subprocess.Popen(["ssh", "-i", str(paths.lab_key(lab.root)), "-o", "BatchMode=yes",
                                "-o", f"UserKnownHostsFile={paths.lab_known_hosts(lab.root)}",
                                "-o", "StrictHostKeyChecking=yes", "-p", str(host.record()["port"]),
                                f"root@{host.record()['address']}", "echo up; exec sleep 60"],
                               stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert session.stdout.readline() == b"up\n"
        sshds = [pid for pid in host.pids() if lab_host._comm(pid) == "sshd"]
        assert len(sshds) >= 2, sshds                                   # the listener and the session's
        chosen = host._listener(host.record())
        nspid = Path(f"/proc/{chosen}/status").read_text().split("NSpid:")[1].split("\n")[0].split()
        assert nspid[-1] == "1", (chosen, nspid)                         # the host's own PID 1
        assert lab.exec("pod-580", ["cat", "/proc/1/comm"]).stdout == "sshd\n"
    finally:
        session.kill()
        session.wait()
    gone = subprocess.Popen(["true"])
    gone.wait()
    monkeypatch.setattr(LabHost, "_listener", lambda self, rec: gone.pid)
    with pytest.raises(fleet.errors.LabError, match="could not run sh in it: nsenter: "):
        lab.exec("pod-580", ["sh", "-c", "echo lost > /root/never"])


def test_reset_gives_a_fresh_host_with_the_same_host_key(lab):
    key = (lab.root / "hosts" / "pod-570" / "hostkey" / "ssh_host_ed25519_key.pub").read_text()
    ok(lab, "pod-570", "touch /var/tmp/written-before-reset")
    lab.reset(["pod-570"])
    assert sh(lab, "pod-570", "test -e /var/tmp/written-before-reset").exit == 1
    assert (lab.root / "hosts" / "pod-570" / "hostkey" / "ssh_host_ed25519_key.pub").read_text() == key
    assert ok(lab, "pod-570", "hostname").strip() == "pod-570"


def test_up_again_keeps_running_hosts(lab):
    lab_api.down(yaml_inventory(lab), root=lab.root)   # a scratch host of an earlier, failed run
    states = lab.up()
    assert {s.name: s.state for s in states} == dict.fromkeys(("thor", "spark", "pod-570", "pod-580"), "already up")
    assert {s.name: s.state for s in lab_api.status(lab.root)} == \
        dict.fromkeys(("thor", "spark", "pod-570", "pod-580"), "running")


def yaml_inventory(lab) -> Path:
    path = lab.inventory_path.with_name("scratch-cleanup.yaml")
    path.write_text(yaml.safe_dump({"hosts": SCRATCH}))
    return path


def test_killed_run_is_cleaned_up_and_down_leaves_nothing(lab, tmp_path):
    inv = tmp_path / "scratch.yaml"
    inv.write_text(yaml.safe_dump({"hosts": SCRATCH}))
    root = lab.root
    lab_api.down(inv, root=root)
    [state] = lab_api.up(inv, root=root)
    assert state.state == "started" and answers_ssh(SCRATCH_ADDRESS, 22)
    host = LabHost("scratch-pod", root)
    [old_sshd] = listening_pids(SCRATCH_ADDRESS, 22)
    # A killed run: the lab's own process is gone and its record lost, sshd still serves the old overlay.
    os.kill(host.record()["pid"], signal.SIGKILL)
    (host.dir / "host.json").unlink()
    assert answers_ssh(SCRATCH_ADDRESS, 22) and alive(old_sshd)
    [state] = lab_api.up(inv, root=root)
    assert state.state == "started" and not alive(old_sshd)
    [new_sshd] = listening_pids(SCRATCH_ADDRESS, 22)
    new_ns = host.record()["mount_ns"]   # (the kernel may hand out old_ns's number again)
    assert new_sshd != old_sshd and new_sshd in in_namespace(new_ns)
    members = in_namespace(new_ns)
    lab_api.down(inv, root=root)
    assert not any(alive(pid) for pid in members)
    assert listening_pids(SCRATCH_ADDRESS, 22) == [] and not host.dir.exists()
    mounts = subprocess.run(["sh", "-c", "cat /proc/*/mountinfo 2>/dev/null"], capture_output=True, text=True).stdout
    assert str(host.dir) not in mounts
    # the session's hosts are untouched by another inventory's down
    assert ok(lab, "thor", "uname -m").strip() == "aarch64"
    assert SCRATCH_ADDRESS not in paths.lab_known_hosts(root).read_text()


def test_down_of_the_last_hosts_removes_the_state(tmp_path):
    """A lab of its own (own root): after down only the build cache is left, after --purge nothing."""
    root = tmp_path / "own-lab"
    inv = tmp_path / "own.yaml"
    inv.write_text(yaml.safe_dump({"hosts": {"own-pod": {"address": OWN_ADDRESS, "lab": {"profile": "h100-pod"}}}}))
    lab_api.up(inv, root=root)
    assert ok_host(root, "own-pod")
    members = in_namespace(LabHost("own-pod", root).record()["mount_ns"])
    lab_api.down(inv, root=root)
    assert sorted(p.name for p in root.iterdir()) == ["layers", "mirror"]
    assert not any(alive(pid) for pid in members) and not answers_ssh(OWN_ADDRESS, 22)
    lab_api.down(inv, root=root, purge=True)
    assert not root.exists()


def ok_host(root: Path, name: str) -> bool:
    return LabHost(name, root).running() and answers_ssh(LabHost(name, root).record()["address"], 22)


def test_down_waits_for_a_busy_host_and_up_follows_at_once(lab, tmp_path):
    """A login still running a command that ignores SIGTERM: down escalates to SIGKILL and returns only when
    every process of the host has ended and its address is free; up right after finds no half-dead host."""
    from fleet.connection import ConnectOptions, connect
    from fleet.inventory import load_inventory
    from fleet_lab import procs
    inv = tmp_path / "scratch.yaml"
    inv.write_text(yaml.safe_dump({"hosts": SCRATCH}))
    lab_api.down(inv, root=lab.root)
    lab_api.up(inv, root=lab.root)
    ns = LabHost("scratch-pod", lab.root).record()["mount_ns"]
    with connect(load_inventory(inv).hosts["scratch-pod"], ConnectOptions(known_hosts=lab.root / "fleet_known_hosts")) as conn:
        res = conn.run("setsid sh -c \"trap '' TERM; echo ready > /tmp/busy; exec sleep 600\" "
                       "</dev/null >/dev/null 2>&1 & until test -s /tmp/busy; do sleep 0.01; done; echo ok")
        assert res.exit == 0 and res.stdout.strip() == "ok"
        members = in_namespace(ns)
        assert any(Path(f"/proc/{pid}/comm").read_text().strip() == "sleep" for pid in members)
        lab_api.down(inv, root=lab.root)
    assert not any(alive(pid) for pid in members)
    assert procs.bindable(SCRATCH_ADDRESS, 22) and listening_pids(SCRATCH_ADDRESS, 22) == []
    [state] = lab_api.up(inv, root=lab.root)
    assert state.state == "started" and answers_ssh(SCRATCH_ADDRESS, 22)
    lab_api.down(inv, root=lab.root)
    assert not LabHost("scratch-pod", lab.root).dir.exists()
