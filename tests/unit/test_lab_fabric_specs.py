"""The lab's multi-GPU hosts as data (fleet_lab/profiles.py, fleet_lab/fabric.py; no root, no host started): which
hosts share a profile layer, what the mirror serves for their fabric manager, and a driver it serves none for."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet_lab import fabric
from fleet_lab.profiles import PROFILES, spec_for

SHIPPED = Path(__file__).resolve().parents[2] / "inventories" / "lab-fabric.yaml"


def specs(path=SHIPPED):
    return {name: spec_for(host) for name, host in load_inventory(path).hosts.items()}


def test_the_shipped_fabric_hosts_and_the_layers_they_share():
    s = specs()
    assert {n: (v.profile, v.driver) for n, v in s.items()} == {
        "hgx-missing": ("hgx-fm-missing", "580.159.04"), "hgx-stopped": ("hgx-fm-stopped", "580.159.04"),
        "hgx-behind": ("hgx-fm-behind", "580.159.04"), "hgx-healthy": ("hgx-healthy", "580.159.04"),
        "hgx-gpu-off": ("hgx-gpu-off", "580.159.04"), "hgx-container": ("hgx-container", "580.159.04")}
    # the fabric manager preinstalled is what a layer holds; when it starts, and which GPU left, is the host's
    assert {n: v.layer_key() for n, v in s.items()} == {
        "hgx-missing": "8gpu-managed-systemd-fm-none", "hgx-stopped": "8gpu-managed-fm-580.159.04",
        "hgx-behind": "8gpu-managed-systemd-fm-580.126.09-enabled",
        "hgx-healthy": "8gpu-managed-systemd-fm-580.159.04-enabled",
        "hgx-gpu-off": "8gpu-managed-fm-580.159.04", "hgx-container": "8gpu-provider-fm-none"}
    assert all(v.prof.own_dev for v in s.values())
    # and the GPU-health pods (issue 36: a /dev of their own without kmsg, as Docker's), none other
    assert {name for name, p in PROFILES.items() if p.own_dev and not name.startswith("hgx-")} == \
        {name for name, p in PROFILES.items() if p.kernel_log}


def test_the_mirror_serves_each_preinstalled_release_and_the_one_fleet_installs():
    served = {(d.name, d.version) for d in fabric.debs("x86_64-linux-gnu", Path("/dev/null"))}
    for driver, behind in fabric.FM_BEHIND.items():
        branch = driver.split(".")[0]
        for version in (driver, behind):
            assert {(f"nvidia-fabricmanager-{branch}", f"{version}-1"), (f"libnvidia-nscq-{branch}", f"{version}-1")} <= served


def test_a_driver_without_served_fabric_manager_packages_is_refused_at_its_line(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n  a: {address: 127.0.9.1, lab: {profile: hgx-fm-missing, driver: 575.57.08}}\n"
                   "  b:\n    address: 127.0.9.2\n    lab: {profile: hgx-healthy, driver: 575.57.08}\n")
    with pytest.raises(InputError, match=r"lab profile hgx-healthy of host 'b' preinstalls a fabric manager, served "
                                         r"for drivers 570.133.20, 580.159.04 only") as err:
        specs(inv)
    assert err.value.line == 3   # host b's line: `fleet lab up` prints it as inv.yaml:3: ..., exit 2
    hosts = load_inventory(inv).hosts
    assert spec_for(hosts["a"]).driver == "575.57.08"   # none preinstalled: fleet installs the driver's own


def test_the_gpu_file_lines_name_the_gpu_off_the_fabric():
    lines = dict(line.split("=", 1) for line in fabric.gpu_lines(PROFILES["hgx-gpu-off"]).splitlines())
    assert lines["gpus"] == "8" and lines["fabric"] == "managed" and lines["off_fabric"] == "3"
    assert lines["bus_ids"].split() == list(fabric.BUS_IDS)
    assert fabric.gpu_lines(PROFILES["h100-pod"]) == ""   # one GPU: the file as before
