"""Reliability (issue 16) against the lab's real sshd, apt, dpkg and filesystems: a host that dies mid-apply,
a disk that fills during a write, a busy apt lists lock, an interrupted dpkg, two applies at once, a flood of
output. Part of the reliability suite (tests/reliability/README.md)."""

from __future__ import annotations

import io
import json
import os
import signal
import threading

import pytest

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet_lab.host import LabHost
from helpers import ok, sh
from test_apply_lab import fleet_json
from fleet_lab.testing import wait_for

KEYRING = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/cuda-keyring_1.1-1_all.deb"  # the lab mirror answers
ROLE = """\
description: reliability drills (writes under /root and /srv only)
defaults: {slow: 0, big: "", pkg: ""}
tasks:
  - name: hook block
    block: {path: ~/.bashrc, marker: drill, position: top, block: "export DRILL=1"}
  - name: slow step
    command: {cmd: "echo started > /root/started; [ -e /root/slept ] || { touch /root/slept; sleep {{ slow }} || true; }; touch /root/slow-done", creates: /root/slow-done}
  - name: config file
    file: {path: /root/drill.conf, content: "after the slow step\\n"}
"""
# The slow step outlasts anything a busy CI machine can make the test do meanwhile; the tests end it themselves
# (end_sleep, kill_host) once they have seen what they wait for: never a race against its length.
SLOW = 900
DISK_ROLE = """\
description: writes into a small full disk
tasks:
  - name: big config
    file: {path: /srv/full/app.conf, content: "{{ 'y' * 200000 }}"}
  - name: block in a file on the full disk
    block: {path: /srv/full/rc, block: "{{ 'z' * 200000 }}"}
"""
APT_ROLE = """\
description: one stand-in package from the lab's signed repository
tasks:
  - name: cuda toolkit
    apt: {keyring_deb: "%s", packages: [cuda-toolkit-13-0], lock_timeout: 120}
""" % KEYRING


def drill_inventory(lab, tmp_path, role: str, hosts: dict) -> str:
    """The test lab's inventory, limited to `hosts` (name -> extra vars), with the drill role on roles_path."""
    (tmp_path / "roles" / "drill").mkdir(parents=True)
    (tmp_path / "roles" / "drill" / "role.yaml").write_text(role)
    # the hosts' own role list is the drill (--roles drill narrows it, issue 15)
    return str(lab.write_inventory(tmp_path / "inv.yaml", hosts, roles_path=[str(tmp_path / "roles")],
                                   roles=["drill"]))


class _Watched(io.StringIO):
    """A console stream that says when a phrase has been written (fleet's progress, read while it runs)."""

    def __init__(self, phrase: str):
        super().__init__()
        self.phrase, self.seen = phrase, threading.Event()

    def write(self, text: str) -> int:
        n = super().write(text)
        if self.phrase in self.getvalue():
            self.seen.set()
        return n


def upper(lab, name: str):
    """The host's own writes, seen from outside (its overlay's upper dir): no SSH needed to watch it."""
    return LabHost(name, lab.root).dir / "upper"


def kill_host(lab, name: str) -> None:
    """SIGKILL every process of the host (sshd, the apply's shell, its sleep) at once, keeping its disk: a pod
    whose sshd or network died. The lab's own stop does the killing and reaping; its record is put back so
    that `lab.up([name])` restarts the host with what it had written instead of provisioning a fresh one."""
    host = LabHost(name, lab.root)
    record = (host.dir / "host.json").read_bytes()
    host.stop()
    (host.dir / "host.json").write_bytes(record)


def end_sleep(lab, name: str) -> None:
    """End the drill's `sleep SLOW` on that host (only there: other processes of this machine are not ours)."""
    for pid in LabHost(name, lab.root).pids():
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read() == f"sleep\0{SLOW}\0".encode():
                os.kill(pid, signal.SIGTERM)
        except (OSError, ProcessLookupError):
            pass


def test_a_host_that_dies_mid_apply_is_unreachable_in_its_task_and_a_rerun_converges(lab, tmp_path):
    lab.reset(["pod-570", "pod-580"])
    inv = drill_inventory(lab, tmp_path, ROLE, {"pod-570": {"slow": SLOW}, "pod-580": {}})
    result = {}
    run = threading.Thread(target=lambda: result.update(doc=fleet_json("apply", inv, "--roles", "drill")))
    run.start()
    wait_for(lambda: (upper(lab, "pod-570") / "root" / "slept").exists() or not run.is_alive(),
             "pod-570 to enter its slow step")
    assert run.is_alive(), result
    kill_host(lab, "pod-570")                     # the pod dies: sshd and everything under it, at once
    run.join(timeout=600)
    code, doc = result["doc"]
    assert code == 1
    dead, alive = doc["hosts"]["pod-570"], doc["hosts"]["pod-580"]
    assert dead["unreachable"] is True, json.dumps(dead)
    assert dead["error"].startswith("unreachable: the connection was lost during drill: slow step")
    assert [(t["task"], t["status"]) for t in dead["tasks"]] == [
        ("hook block", "changed"), ("slow step", "failed"), ("config file", "failed")]
    assert alive["failed"] == 0 and alive["changed"] == 3

    lab.up(["pod-570"])                           # it comes back with what it had written
    code, doc = fleet_json("apply", inv, "--roles", "drill")
    assert code == 0, doc
    assert {t["task"] for t in doc["hosts"]["pod-570"]["tasks"] if t["status"] == "changed"} == {
        "slow step", "config file"}
    bashrc = ok(lab, "pod-570", "cat ~/.bashrc")
    assert bashrc.count("# BEGIN drill") == 1 and bashrc.startswith("# BEGIN drill\nexport DRILL=1\n# END drill\n")
    assert ok(lab, "pod-570", "cat /root/drill.conf") == "after the slow step\n"
    code, doc = fleet_json("apply", inv, "--roles", "drill")
    assert code == 0 and all(h["changed"] == 0 for h in doc["hosts"].values())


def test_a_disk_that_fills_during_a_write_keeps_the_old_file_and_leaves_no_temp(lab, tmp_path):
    lab.reset(["pod-580"])
    ok(lab, "pod-580", "mkdir -p /srv/full && mount -t tmpfs -o size=640k tmpfs /srv/full && "
                       "echo old > /srv/full/app.conf && printf 'old rc\\n' > /srv/full/rc && "
                       "{ head -c 2M /dev/zero > /srv/full/filler || true; }")
    inv = drill_inventory(lab, tmp_path, DISK_ROLE, {"pod-580": {}})
    code, doc = fleet_json("apply", inv, "--roles", "drill")
    assert code == 1, json.dumps(doc)[:3000]
    tasks = {t["task"]: t for t in doc["hosts"]["pod-580"]["tasks"]}
    assert tasks["big config"]["status"] == "failed" and "No space left on device" in tasks["big config"]["reason"]
    assert ok(lab, "pod-580", "cat /srv/full/app.conf; cat /srv/full/rc") == "old\nold rc\n"
    assert ok(lab, "pod-580", "ls -A /srv/full").split() == ["app.conf", "filler", "rc"]   # no temp file left
    ok(lab, "pod-580", "rm /srv/full/filler")    # room again: the same apply now converges
    code, doc = fleet_json("apply", inv, "--roles", "drill")
    assert code == 0, [(t["task"], t["status"], t["reason"][-300:]) for t in doc["hosts"]["pod-580"]["tasks"]]
    assert ok(lab, "pod-580", "wc -c < /srv/full/app.conf").strip() == "200000"


def test_apt_waits_for_the_lists_lock_and_repairs_an_interrupted_dpkg(lab, tmp_path):
    lab.reset(["pod-580"])
    # What a dpkg killed mid-run leaves (a journal entry in /var/lib/dpkg/updates: apt then refuses to install),
    # and apt-daily holding the lists lock (fcntl, as apt takes it) until the test lets it go: only once fleet has
    # said it is waiting, so the lock is held when fleet meets it however slow the machine is (it was a 5 s hold:
    # on a loaded CI machine the apply reached apt after the lock was gone, issue 17).
    ok(lab, "pod-580", "printf '' > /var/lib/dpkg/updates/0000")
    ok(lab, "pod-580", "nohup python3 -c 'import fcntl,os,time; f=open(\"/var/lib/apt/lists/lock\",\"w\"); "
                       "fcntl.lockf(f, fcntl.LOCK_EX); open(\"/root/locked\",\"w\").close(); "
                       "t=time.monotonic()\nwhile not os.path.exists(\"/root/release\") and time.monotonic()-t<900: "
                       "time.sleep(0.05)' >/dev/null 2>&1 &")
    wait_for(lambda: (upper(lab, "pod-580") / "root" / "locked").exists(), "the lists lock to be taken")
    inv = drill_inventory(lab, tmp_path, APT_ROLE, {"pod-580": {}})
    err = _Watched("apt/dpkg is busy")
    result = {}
    env = Environment(console=Console(file=io.StringIO(), width=240), err_console=Console(file=err, width=240, soft_wrap=True))
    run = threading.Thread(target=lambda: result.update(code=main(["apply", inv, "--roles", "drill"], env)))
    run.start()
    wait_for(lambda: err.seen.is_set() or not run.is_alive(), "fleet to report the held apt lock")
    ok(lab, "pod-580", "touch /root/release")
    run.join(timeout=600)
    assert result.get("code") == 0, err.getvalue()
    assert "apt/dpkg is busy" in err.getvalue() and "running dpkg --configure -a" in err.getvalue()
    assert ok(lab, "pod-580", "dpkg-query -W -f='${Status}' cuda-toolkit-13-0") == "install ok installed"
    assert ok(lab, "pod-580", "ls /var/lib/dpkg/updates") == ""


def test_a_second_apply_to_a_host_is_refused_while_the_first_runs(lab, tmp_path):
    lab.reset(["pod-580"])
    inv = drill_inventory(lab, tmp_path, ROLE, {"pod-580": {"slow": SLOW}})
    result = {}
    first = threading.Thread(target=lambda: result.update(doc=fleet_json("apply", inv, "--roles", "drill")))
    first.start()
    wait_for(lambda: (upper(lab, "pod-580") / "root" / "slept").exists() or not first.is_alive(),
             "the first apply's slow step")
    assert first.is_alive(), result
    code, doc = fleet_json("apply", inv, "--roles", "drill")
    assert code == 1
    assert "another apply is running on this host (fleet apply from" in doc["hosts"]["pod-580"]["error"]
    end_sleep(lab, "pod-580")   # let the first one finish now
    first.join(timeout=600)
    assert result["doc"][0] == 0, result["doc"]


def test_a_flood_of_output_is_bounded_over_real_ssh(lab):
    res = sh(lab, "pod-580", "head -c 40000000 /dev/zero | tr '\\0' x; echo; echo END")
    assert res.exit == 0 and res.stdout.endswith("\nEND\n") and "[fleet: output truncated: " in res.stdout
    assert len(res.stdout) < 17 << 20
