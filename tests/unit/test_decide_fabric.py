"""The `fabric` decision (issue 28) over fabric facts parsed by fleet's own parsers from outputs in the real layouts
(tests/data/fabric), on the H100 record (driver 570.133.20)."""

import copy
import json
from pathlib import Path

from fleet.decide import decide
from fleet.decide.fabric import packages_for
from fleet.facts import fabric
from fleet.facts.record import fabric_facts

DATA = Path(__file__).parents[1] / "data"
ONE = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-25\t0\t\tN/A\n"


def facts(topo=None, query=None, nvswitch=False, container=False, service="", packages="") -> dict:
    record = json.loads((DATA / "records" / "h100-pod-570.json").read_text())
    topo_text = (DATA / "fabric" / topo).read_text() if topo else ONE
    query_text = (DATA / "fabric" / query).read_text() if query else ""
    section = (f"@@topo\n{topo_text}@@query\n{query_text}@@nvswitch\n{'/dev/nvidia-nvswitch0' if nvswitch else ''}\n"
               f"@@container\n{'dockerenv' if container else ''}\n@@service\n{service}\n@@packages\n{packages}")
    record["fabric"] = fabric_facts(fabric.parse_fabric(section), record["driver"]["version"])
    return copy.deepcopy(record)


def fm(version, state="hi"):
    return f"nvidia-fabricmanager-570 {version}-1 {state} \nlibnvidia-nscq-570 {version}-1 {state} \n"


def test_one_gpu_no_links():
    f = decide(facts()).fabric
    assert (f["action"], f["reason"], f["gpus"]) == ("none", "one GPU: no links to check", 1)


def test_nvswitch_without_fabric_manager_installs_the_drivers_exact_version():
    f = decide(facts("topo-8-nv18.txt", "q-8-in-progress.txt", nvswitch=True, service="systemctl inactive")).fabric
    assert f["action"] == "install" and f["service"] == "nvidia-fabricmanager"
    assert f["packages"] == ["nvidia-fabricmanager-570=570.133.20-1", "libnvidia-nscq-570=570.133.20-1"]
    assert "802" in f["reason"]


def test_one_version_behind_and_stopped_and_unheld():
    behind = decide(facts("topo-8-nv18.txt", "q-8-in-progress.txt", True, service="systemctl failed",
                          packages=fm("570.124.06"))).fabric
    assert behind["action"] == "install" and "570.124.06 is not the driver's 570.133.20" in behind["reason"]
    stopped = decide(facts("topo-8-nv18.txt", "q-8-in-progress.txt", True, service="systemctl inactive",
                           packages=fm("570.133.20"))).fabric
    assert stopped["action"] == "install" and "not running" in stopped["reason"]
    unheld = decide(facts("topo-8-nv18.txt", "q-8-completed.txt", True, service="systemctl active",
                          packages=fm("570.133.20", "ii"))).fabric
    assert unheld["action"] == "install" and "not held" in unheld["reason"]


def test_healthy_and_one_gpu_off_the_fabric():
    healthy = decide(facts("topo-8-nv18.txt", "q-8-completed.txt", True, service="systemctl active",
                           packages=fm("570.133.20"))).fabric
    assert (healthy["action"], healthy["warn"]) == ("present", None)
    off = decide(facts("topo-8-gpu3-off.txt", "q-8-gpu3-failed.txt", True, service="systemctl active",
                       packages=fm("570.133.20"))).fabric
    assert off["action"] == "present" and "GPU 3 fabric state Completed (NVML_ERROR_NOT_READY)" in off["warn"]
    assert "PCIe" in off["warn"]


def test_container_fabric_not_ready_is_the_providers_fix():
    f = decide(facts("topo-8-nv18.txt", "q-8-in-progress.txt", container=True)).fabric
    assert f["action"] == "provider" and f["packages"] == []
    assert "GPUs 0,1,2,3,4,5,6,7 fabric state In Progress" in f["warn"] and "provider" in f["warn"]
    ready = decide(facts("topo-8-nv18.txt", "q-8-completed.txt", container=True)).fabric
    assert (ready["action"], ready["warn"]) == ("none", None)


def test_record_without_fabric_facts_decides_none():
    record = json.loads((DATA / "records" / "h100-pod-570.json").read_text())
    record.pop("fabric", None)
    assert decide(record).fabric["action"] == "none"


def test_packages_per_branch():
    assert packages_for("580.159.04") == ["nvidia-fabricmanager-580=580.159.04-1", "libnvidia-nscq-580=580.159.04-1"]


def rendered(record):
    from fleet.roles import load_roles, render_role, roles_dirs

    (role,) = load_roles(["fabric_manager"], roles_dirs())
    return render_role(role, {}, record, decide(record).to_json(), {"name": "hgx", "user": "root", "root": True})


def test_role_pins_holds_and_starts_on_an_nvswitch_host_and_skips_elsewhere():
    hgx = facts("topo-8-nv18.txt", "q-8-in-progress.txt", True, service="systemctl failed", packages=fm("570.124.06"))
    hgx["system"]["systemd"] = True
    apt, nvlsm, umad, service, manual = rendered(hgx)
    assert not nvlsm.enabled and not umad.enabled   # an H100 board: NVSwitch generation 3
    assert apt.enabled and apt.resource.p["packages"] == ["nvidia-fabricmanager-570=570.133.20-1",
                                                         "libnvidia-nscq-570=570.133.20-1"]
    assert apt.resource.p["hold"] is True and apt.resource.p["keyring_deb"].endswith("cuda-keyring_1.1-1_all.deb")
    assert service.enabled and "nvidia-fabricmanager" in service.resource.p["cmd"] and not manual.enabled
    for one in (facts(), facts("topo-8-nv18.txt", "q-8-in-progress.txt", container=True)):
        assert not any(task.enabled for task in rendered(one))


def test_fleet_decide_prints_the_fabric_row(tmp_path):
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from test_decide import folded, run_cli

    one = tmp_path / "one.json"
    one.write_text(json.dumps(facts()))
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(facts("topo-8-nv18.txt", "q-8-in-progress.txt", container=True)))
    status, out, _ = run_cli(str(one), str(pod))
    text = folded(out)
    assert status == 0
    assert "fabric 1 GPU(s) none one GPU: no links to check" in text
    assert ("fabric 8 GPU(s) provider the GPU fabric is not ready (GPUs 0,1,2,3,4,5,6,7 fabric state In Progress): "
            "in a container the fabric manager runs on the provider's host, so the fix is the provider's") in text


def test_a_host_without_gpus_has_no_links():
    record = json.loads((DATA / "records" / "cpu-only.json").read_text())
    assert decide(record).fabric["reason"] == "no GPU: no links to check"


# NVSwitch generation 4 (issue 48): the GPUs' name decides it; the fabric manager then needs nvlsm and ib_umad
def b200(**kw) -> dict:
    record = facts("topo-8-nv18.txt", "q-8-in-progress.txt", True, **kw)
    record["gpus"] = [{**g, "name": "NVIDIA B200"} for g in record["gpus"]] or [{"index": 0, "name": "NVIDIA B200"}]
    return record


def test_b200_board_adds_the_subnet_manager_and_ib_umad():
    f = decide(b200(service="systemctl inactive")).fabric
    assert (f["action"], f["generation"], f["nvlsm"], f["modules"]) == ("install", 4, True, ["ib_umad"])
    assert "NVSwitch generation 4: the NVLink Subnet Manager (nvlsm) and ib_umad" in f["reason"]


def test_b200_running_without_nvlsm_is_named_and_with_it_present():
    without = decide(b200(service="systemctl active", packages=fm("570.133.20"))).fabric
    assert without["action"] == "install" and "no NVLink Subnet Manager (nvlsm)" in without["reason"]
    with_it = decide(b200(service="systemctl active", packages=fm("570.133.20") + "nvlsm 2025.06.3-1 ii \n")).fabric
    assert with_it["action"] == "present" and with_it["nvlsm"]


def test_hopper_boards_are_generation_3_and_need_neither():
    f = decide(facts("topo-8-nv18.txt", "q-8-in-progress.txt", True, service="systemctl inactive")).fabric
    assert (f["generation"], f["nvlsm"], f["modules"]) == (3, False, [])


def test_the_role_installs_nvlsm_and_loads_ib_umad_on_a_b200_board():
    board = b200(service="systemctl inactive")
    board["system"]["systemd"] = True
    apt, nvlsm, umad, service, _ = rendered(board)
    assert apt.enabled and nvlsm.enabled and nvlsm.resource.p["packages"] == ["nvlsm"]
    assert umad.enabled and umad.resource.p["cmd"].startswith("modprobe ib_umad && ")
    assert "/etc/modules-load.d/fleet-ib_umad.conf" in umad.resource.p["unless"] and service.enabled


def test_the_probe_asks_dpkg_for_nvlsm():
    section = ("@@topo\n" + ONE + "@@query\n@@nvswitch\n@@container\n@@service\n@@packages\n"
               "nvlsm 2025.06.3-1 ii \n")
    assert fabric.parse_fabric(section)["packages"] == {"nvlsm": "2025.06.3-1"}
    from fleet import remote
    assert "nvlsm" in remote.program("gpu_fabric").split("dpkg-query", 1)[1].split("\n", 1)[0]
