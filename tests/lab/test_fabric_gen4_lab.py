"""NVSwitch generation 4 (issue 48 item 4): an HGX B200 board (fleet_lab/profiles.py hgx-b200) whose fabric manager
starts only with the NVLink Subnet Manager and ib_umad (Fabric Manager User Guide, "What is NVLink Subnet Manager?").

One host, the fabric_manager role alone: --check plans what apply then does (the fabric manager and NSCQ at the
driver's version, nvlsm, ib_umad now and at boot, the service), a second apply changes nothing, and each claim is asked
of the host as its admin would: dpkg-query, lsmod, the modules-load.d file, systemctl, ps, cuInit through a plain
python3. The host is then restarted: ib_umad loads again from /etc/modules-load.d and the fabric manager comes back.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from fleet_lab import control, testing
from test_apply_lab import fleet_json

DRIVER = "580.159.04"
HOST = "hgx-b200"
ASK = r"""
echo @@dpkg; dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' 'nvidia-fabricmanager*' 'libnvidia-nscq*' nvlsm 2>/dev/null
echo @@lsmod; lsmod
echo @@conf; cat /etc/modules-load.d/fleet-ib_umad.conf 2>&1
echo @@systemd; echo "$(systemctl is-enabled nvidia-fabricmanager 2>&1) $(systemctl is-active nvidia-fabricmanager)"
echo @@ps; ps -e -o comm=
echo @@cuinit; python3 -c 'import ctypes; print(ctypes.CDLL("libcuda.so.1").cuInit(0))'
echo @@log; cat /var/log/fabricmanager.log 2>/dev/null
"""
NVLSM = ("fabric_manager", "NVLink Subnet Manager (nvlsm) for NVSwitch generation 4")
UMAD = ("fabric_manager", "ib_umad loaded, and at every boot (/etc/modules-load.d/fleet-ib_umad.conf)")
START = ("fabric_manager", "nvidia-fabricmanager enabled and running")


def _parts(text: str) -> dict[str, str]:
    parts, name = {}, None
    for line in text.splitlines():
        if line.startswith("@@"):
            name = line[2:]
            parts[name] = ""
        elif name:
            parts[name] += line + "\n"
    return parts


@pytest.fixture(scope="module")
def board(lab, tmp_path_factory):
    net = testing.test_net()
    doc = {"facts_dir": "facts", "roles": ["fabric_manager"], "keyring_pins": str(lab.root / "keyring.sha256"),
           "hosts": {HOST: {"address": f"{net}.67", "lab": {"profile": "hgx-b200"}}}}
    inv = tmp_path_factory.mktemp("gen4") / "lab-gen4.yaml"
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    control.reset(inv, [HOST], lab.root)

    def ask():
        from fleet.connection import ConnectOptions, connect
        from fleet.inventory import load_inventory
        with connect(load_inventory(inv).hosts[HOST], ConnectOptions(known_hosts=lab.root / "fleet_known_hosts")) as c:
            return _parts(c.run(ASK).stdout)

    out = {"before": ask(), "check": fleet_json("apply", str(inv), "--check")}
    out["decision"] = json.loads((inv.parent / "facts" / f"{HOST}.json").read_text())
    out["first"] = fleet_json("apply", str(inv))
    out["after"] = ask()
    out["second"] = fleet_json("apply", str(inv))
    control.restart(inv, [HOST], root=lab.root)   # the host's own /run starts empty, as after a reboot
    out["rebooted"] = ask()
    yield out
    control.down(inv, lab.root)
    shutil.rmtree(inv.parent, ignore_errors=True)


def _tasks(doc) -> dict:
    return {(t["role"], t["task"]): t for t in doc[1]["hosts"][HOST]["tasks"]}


def test_before_nothing_and_cuda_not_ready(board):
    before = board["before"]
    assert before["dpkg"].strip() == "" and "ib_umad" not in before["lsmod"]
    assert int(before["cuinit"]) == 802                       # CUDA_ERROR_SYSTEM_NOT_READY until the fabric is up


def test_check_plans_nvlsm_and_ib_umad_and_apply_does_it(board):
    planned = {k for k, t in _tasks(board["check"]).items() if t["status"] == "changed"}
    done = {k for k, t in _tasks(board["first"]).items() if t["status"] == "changed"}
    assert {NVLSM, UMAD, START} <= planned and planned == done
    after = board["after"]
    packages = {f[0]: f[1] for f in (line.split() for line in after["dpkg"].splitlines()) if len(f) == 3}
    assert packages["nvidia-fabricmanager-580"] == f"{DRIVER}-1" and "nvlsm" in packages
    assert any(line.split()[0] == "ib_umad" for line in after["lsmod"].splitlines()[1:])
    assert after["conf"].strip() == "ib_umad" and after["systemd"].split() == ["enabled", "active"]
    assert "nv-fabricmanage" in after["ps"].split() and int(after["cuinit"]) == 0
    assert "Successfully configured all the available NVSwitches" in after["log"]


def test_a_second_apply_changes_nothing(board):
    assert not [k for k, t in _tasks(board["second"]).items() if t["status"] == "changed"]


def test_after_a_restart_ib_umad_loads_again_and_the_fabric_comes_up(board):
    again = board["rebooted"]
    assert any(line.split()[0] == "ib_umad" for line in again["lsmod"].splitlines()[1:])
    assert again["systemd"].split() == ["enabled", "active"] and int(again["cuinit"]) == 0
