"""Multi-GPU lab hosts (issue 28, inventories/lab-fabric.yaml): an HGX H100 8-GPU NVSwitch board whose fabric manager
is missing, stopped, an earlier release than the driver (its daemon refuses to start), healthy; one with a GPU off
the fabric; a container pod whose fabric is the provider's and not ready.

Facts before (fleet apply --check), apply, apply again; every claim is then asked of the host itself: dpkg-query and
apt-mark showhold for the packages and holds, `ps` inside the host for the fabric manager's process (each host has
its own PID namespace: fleet_lab/fabric.py), the stand-in libcuda's cuInit through a plain python3, the stand-in
torch's CUDA init and peer access, the daemon's own log. Verify's output must name the GPU and the cause where the
fabric is wrong.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from fleet_lab import control, testing
from test_apply_lab import fleet_json

DEMO = Path(__file__).resolve().parents[2] / "inventories" / "lab-fabric.yaml"
DRIVER, BEHIND = "580.159.04", "580.126.09"
FM, NSCQ = "nvidia-fabricmanager-580", "libnvidia-nscq-580"
MANAGED = ("hgx-missing", "hgx-stopped", "hgx-behind", "hgx-healthy", "hgx-gpu-off")
BROKEN = ("hgx-missing", "hgx-stopped", "hgx-behind")   # the fabric manager is what fleet fixes
SYSTEMD = ("hgx-missing", "hgx-behind", "hgx-healthy")   # the others start the daemon without systemd
START = {True: ("fabric_manager", "nvidia-fabricmanager enabled and running"),
         False: ("fabric_manager", "nv-fabricmanager running (no systemd)")}
# Asked of the host, each part after its @@name line.
ASK = r"""
echo @@dpkg; dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' 'nvidia-fabricmanager*' 'libnvidia-nscq*' 2>/dev/null
echo @@hold; apt-mark showhold
echo @@ps; ps -e -o pid=,comm=
echo @@cuinit; python3 -c 'import ctypes; print(ctypes.CDLL("libcuda.so.1").cuInit(0))'
echo @@torch; /opt/fleet/venv/bin/python - <<'EOF'
import json, warnings, torch
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ok = torch.cuda.is_available()
out = {"available": ok, "count": torch.cuda.device_count(), "warning": " ".join(str(w.message) for w in caught)}
if ok:
    out["peer"] = {f"{i}-{j}": torch.cuda.can_device_access_peer(i, j) for i in range(8) for j in range(i + 1, 8)}
print(json.dumps(out))
EOF
echo @@log; cat /var/log/fabricmanager.log 2>/dev/null
echo @@dev; ls /dev
echo @@dockerenv; ls /.dockerenv 2>/dev/null
echo @@cgroup; cat /proc/1/cgroup
echo @@systemd; [ -d /run/systemd/system ] && echo "$(systemctl is-enabled nvidia-fabricmanager 2>&1) $(systemctl is-active nvidia-fabricmanager)"
"""


def _parts(text: str) -> dict[str, str]:
    parts, name = {}, None
    for line in text.splitlines():
        if line.startswith("@@"):
            name = line[2:]
            parts[name] = ""
        elif name:
            parts[name] += line + "\n"
    return parts


class _Fabric:
    def __init__(self, lab, inv):
        self.lab, self.inv = lab, inv
        self.runs: dict = {}
        self.facts: dict = {}
        self.before: dict = {}
        self.after: dict = {}

    def sh(self, host: str, script: str):
        from fleet.connection import ConnectOptions, connect
        from fleet.inventory import load_inventory
        with connect(load_inventory(self.inv).hosts[host], ConnectOptions(known_hosts=self.lab.root / "fleet_known_hosts")) as c:
            return c.run(script)

    def ask(self, host: str) -> dict:
        parts = _parts(self.sh(host, ASK).stdout)
        parts["packages"] = {f[0]: (f[1], f[2]) for f in (line.split() for line in parts["dpkg"].splitlines()) if len(f) == 3}
        parts["held"] = set(parts["hold"].split())
        parts["procs"] = {int(p): c for p, c in (line.split(None, 1) for line in parts["ps"].splitlines())}
        parts["torch"] = json.loads(parts["torch"])
        parts["cuinit"] = int(parts["cuinit"])
        return parts

    def host(self, run: str, name: str) -> dict:
        return self.runs[run][1]["hosts"][name]

    def tasks(self, run: str, name: str) -> dict[tuple[str, str], dict]:
        return {(t["role"], t["task"]): t for t in self.host(run, name)["tasks"]}


@pytest.fixture(scope="module")
def fab(lab, tmp_path_factory):
    doc = yaml.safe_load(DEMO.read_text())
    for host in doc["hosts"].values():
        host["address"] = host["address"].replace("127.0.1.", testing.test_net() + ".", 1)
    doc["facts_dir"] = "facts"
    doc["keyring_pins"] = str(lab.root / "keyring.sha256")   # as `fleet lab up` writes it (the lab's cuda-keyring)
    inv = tmp_path_factory.mktemp("fabric") / "lab-fabric.yaml"
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    names = list(doc["hosts"])
    control.reset(inv, names, lab.root)
    fab = _Fabric(lab, inv)
    fab.before = {name: fab.ask(name) for name in names}
    fab.runs["check"] = fleet_json("apply", str(inv), "--check")
    fab.facts["before"] = {n: json.loads((inv.parent / "facts" / f"{n}.json").read_text()) for n in names}
    fab.runs["first"] = fleet_json("apply", str(inv))
    fab.facts["after"] = {n: json.loads((inv.parent / "facts" / f"{n}.json").read_text()) for n in names}
    fab.after = {name: fab.ask(name) for name in names}
    fab.runs["second"] = fleet_json("apply", str(inv))
    yield fab
    control.down(inv, lab.root)
    shutil.rmtree(inv.parent, ignore_errors=True)


def _fm_processes(state: dict) -> list[int]:
    return [pid for pid, comm in state["procs"].items() if comm == "nv-fabricmanage"]


def test_each_host_sees_its_own_processes_and_devices(fab):
    for name, state in fab.before.items():
        assert state["procs"][1] == "sshd", name            # its own PID namespace: the host's sshd is PID 1
        assert ("nvidia-nvswitch0" in state["dev"].split()) == (name in MANAGED), name
        assert (state["dockerenv"].strip() == "/.dockerenv") == (name == "hgx-container"), name
        # its own cgroup namespace: the root, whatever this machine's cgroup path (fleet's container markers read it)
        assert all(line.endswith(":/") for line in state["cgroup"].splitlines()), (name, state["cgroup"])
    # two hosts run a fabric manager; no other host sees either process
    assert {n for n, s in fab.before.items() if _fm_processes(s)} == {"hgx-healthy", "hgx-gpu-off"}
    # every lab host has its own PID namespace: the session's single-GPU pod, running beside them, sees neither
    with fab.lab.connect("pod-580") as conn:
        pod = conn.run("ps -e -o pid=,comm=").stdout.split()
    assert pod[:2] == ["1", "sshd"] and "nv-fabricmanage" not in pod
    # `docker exec`'s stand-in enters the host's PID namespace too: its /proc/self is itself
    seen = fab.lab.exec("hgx-healthy", ["sh", "-c", "readlink /proc/self; ps -e -o comm="])
    assert seen.returncode == 0 and seen.stdout.split()[0].isdigit(), seen.stderr
    assert {"sshd", "nv-fabricmanage"} <= set(seen.stdout.split()[1:])


def test_broken_fabric_managers_answer_802_before_and_the_facts_say_why(fab):
    for name in BROKEN + ("hgx-container",):
        state = fab.before[name]
        assert state["cuinit"] == 802, name                # CUDA_ERROR_SYSTEM_NOT_READY, from the stand-in libcuda
        assert not state["torch"]["available"] and "Error 802: system not yet initialized" in state["torch"]["warning"]
    missing, stopped, behind = (fab.before[n] for n in BROKEN)
    assert missing["packages"] == {} and not _fm_processes(missing)
    assert stopped["packages"][FM] == (f"{DRIVER}-1", "hi") and {FM, NSCQ} <= stopped["held"] and not _fm_processes(stopped)
    assert behind["packages"][FM] == (f"{BEHIND}-1", "hi") and not _fm_processes(behind)
    # its daemon ran at boot and refused, with NVIDIA's message
    assert (f"fabric manager NVIDIA GPU driver interface version {BEHIND} don't match with driver version {DRIVER}. "
            "Please update with matching NVIDIA driver package.") in behind["log"]
    # systemd's view where the host has it: the unit left behind failed at boot, the healthy one runs
    assert fab.before["hgx-behind"]["systemd"].split() == ["enabled", "failed"]
    assert fab.before["hgx-healthy"]["systemd"].split() == ["enabled", "active"]
    assert fab.before["hgx-missing"]["systemd"].endswith(" inactive\n") and "No such file" in fab.before["hgx-missing"]["systemd"]
    assert all(not fab.before[n]["systemd"].strip() for n in fab.before if n not in SYSTEMD)
    facts = {n: fab.facts["before"][n]["fabric"] for n in BROKEN}
    assert [facts[n]["service"] for n in BROKEN] == ["inactive", None, "failed"]
    assert all(f["gpu_count"] == 8 and f["manages_fabric"] and not f["container"] for f in facts.values())
    assert all(set(f["not_ready"]) == set(range(8)) for f in facts.values())   # "In Progress" until the fabric is up
    assert facts["hgx-missing"]["fm_version"] is None and not facts["hgx-missing"]["fm_running"]
    assert facts["hgx-stopped"]["fm_version"] == DRIVER and not facts["hgx-stopped"]["fm_running"]
    assert facts["hgx-behind"]["fm_matches_driver"] is False and facts["hgx-behind"]["fm_version"] == BEHIND


def test_apply_installs_holds_and_starts_the_fabric_manager_at_the_drivers_version(fab):
    for name in BROKEN + ("hgx-healthy",):
        state = fab.after[name]
        assert state["packages"] == {FM: (f"{DRIVER}-1", "hi"), NSCQ: (f"{DRIVER}-1", "hi")}, name
        assert {FM, NSCQ} <= state["held"], name
        assert len(_fm_processes(state)) == 1, name
        assert state["systemd"].split() == (["enabled", "active"] if name in SYSTEMD else []), name
        assert fab.facts["after"][name]["fabric"]["service"] == ("active" if name in SYSTEMD else None), name
        assert state["cuinit"] == 0, name
        torch = state["torch"]
        assert torch["available"] and torch["count"] == 8 and all(torch["peer"].values()), name
        assert fab.host("first", name)["verify"] == "passed", name
    assert "Successfully configured all the available NVSwitches" in fab.after["hgx-behind"]["log"]
    for name in BROKEN:   # what --check said is what apply did
        planned = {k for k, t in fab.tasks("check", name).items() if t["status"] == "changed"}
        done = {k for k, t in fab.tasks("first", name).items() if t["status"] == "changed"}
        assert planned == done and START[name in SYSTEMD] in done and START[name not in SYSTEMD] not in done, name
    assert not any(t["status"] == "changed" for t in fab.host("first", "hgx-healthy")["tasks"])
    install = ("fabric_manager", f"fabric manager and NSCQ at the driver's version {DRIVER} (held with the driver)")
    assert fab.tasks("check", "hgx-missing")[install]["reason"].startswith(
        f"not installed: {FM}={DRIVER}-1 {NSCQ}={DRIVER}-1 cuda-keyring (")   # each named once
    assert fab.tasks("check", "hgx-behind")[install]["reason"].startswith(
        f"not installed: {FM}={DRIVER}-1 {NSCQ}={DRIVER}-1 (fabric manager {BEHIND} is not the driver's {DRIVER}")


def test_gpu_off_the_fabric_is_named_by_verify_and_the_host_agrees(fab):
    state = fab.after["hgx-gpu-off"]
    assert state["cuinit"] == 0 and state["torch"]["count"] == 8
    peer = state["torch"]["peer"]
    assert not any(ok for pair, ok in peer.items() if "3" in pair.split("-")) and all(
        ok for pair, ok in peer.items() if "3" not in pair.split("-"))
    topo = fab.sh("hgx-gpu-off", "nvidia-smi topo -m").stdout
    assert "GPU3\tNODE\tNODE\tNODE\t X \tSYS\tSYS\tSYS\tSYS" in topo
    statuses = [line.split(" : ")[1] for line in fab.sh("hgx-gpu-off", "nvidia-smi -q").stdout.splitlines()
                if line.strip().startswith("Status ")]
    assert statuses == ["Success"] * 3 + ["NVML_ERROR_NOT_READY"] + ["Success"] * 4
    assert fab.facts["after"]["hgx-gpu-off"]["fabric"]["not_ready"] == [3]
    verify = fab.tasks("first", "hgx-gpu-off")[("verify", "torch works on this GPU")]
    assert verify["status"] == "failed"
    assert "nvlink_topology: GPU 3: its pairs are PCIe (0-3 NODE" in verify["reason"]
    assert "off the fabric" in verify["reason"]
    checks = {c["name"]: c for c in fab.facts["after"]["hgx-gpu-off"]["verify"]["checks"]}
    assert checks["peer_access"]["passed"] and "the 7 PCIe pair(s) 0-3, 1-3, 2-3, 3-4, 3-5, 3-6, 3-7 do not" in \
        checks["peer_access"]["detail"]                # true of the host: torch's peers above say the same


def test_container_pod_is_left_alone_and_verify_says_the_fabric_is_the_providers(fab):
    state = fab.after["hgx-container"]
    assert state["packages"] == {} and not _fm_processes(state) and state["cuinit"] == 802
    facts = fab.facts["after"]["hgx-container"]["fabric"]
    assert facts["container"] and not facts["nvswitch"] and not facts["manages_fabric"] and facts["not_ready"] == list(range(8))
    tasks = fab.tasks("first", "hgx-container")
    assert {t["status"] for (role, _), t in tasks.items() if role == "fabric_manager"} == {"skipped"}
    verify = tasks[("verify", "torch works on this GPU")]
    assert verify["status"] == "failed" and "CUDA error 802 CUDA_ERROR_SYSTEM_NOT_READY" in verify["reason"]
    assert "this is a container: the fabric manager runs on the provider's host, not in this pod" in verify["reason"]
    assert "fix: the provider's: ask them, or restart the pod on a healthy host" in verify["reason"]
    assert "apply role fabric_manager" not in verify["reason"]    # the role cannot help in a pod (it is skipped)


def test_second_apply_changes_nothing(fab):
    code, second = fab.runs["second"]
    for name in second["hosts"]:
        assert second["hosts"][name]["changed"] == 0, name
    for name in BROKEN + ("hgx-healthy",):   # converged: one probe, nothing else
        assert second["stats"][name]["remote_commands"] == 1, name


CAPTURED = Path(__file__).resolve().parents[1] / "data" / "captured" / "h100-device" / "nvidia-smi"


def test_stand_in_nvidia_smi_speaks_the_real_formats(fab, lab):
    """The stand-in's output in the real layouts (the real H100's captures): the one-GPU pod's `topo -m` header and
    legend byte for byte, `-q`'s field column; the 8-GPU board's matrix, fabric blocks, XML and NVLink lines read by
    fleet's own parsers and the standard library's."""
    import xml.etree.ElementTree as ET
    from fleet.facts.fabric import parse_fabric_query, parse_topology
    real_topo = (CAPTURED / "topo-m.txt").read_text()
    with lab.connect("pod-580") as conn:
        one = conn.run("nvidia-smi topo -m").stdout
        one_q = conn.run("nvidia-smi -q").stdout
    assert one.splitlines()[0] == real_topo.splitlines()[0]                  # ANSI-underlined header
    assert one.split("Legend:")[1] == real_topo.split("Legend:")[1].rsplit("rc=", 1)[0]
    real_q = (CAPTURED / "q.txt").read_text()
    for key in ("Driver Version", "Attached GPUs", "    Product Name", "        State", "        ClusterUUID"):
        ours = next(line for line in one_q.splitlines() if line.startswith(key + " "))
        theirs = next(line for line in real_q.splitlines() if line.startswith(key + " "))
        assert ours.index(" : ") == theirs.index(" : "), key
    topo = parse_topology(fab.sh("hgx-healthy", "nvidia-smi topo -m").stdout)
    assert topo["gpus"] == 8 and len(topo["pairs"]) == 28
    assert {p["kind"] for p in topo["pairs"].values()} == {"nvlink"} and topo["pairs"]["0-7"]["links"] == 18
    fabric = parse_fabric_query(fab.sh("hgx-healthy", "nvidia-smi -q").stdout)
    assert [(g["state"], g["status"], g["clique"]) for g in fabric] == [("Completed", "Success", "32766")] * 8
    # the probe's fast path asks the same four fields by query, as driver 580 answers them: the same facts
    from fleet.facts.fabric import FABRIC_QUERY
    for board in ("hgx-healthy", "hgx-gpu-off"):
        asked = fab.sh(board, f"nvidia-smi --query-gpu={FABRIC_QUERY} --format=csv,noheader").stdout
        by_query = parse_fabric_query("".join(f"csv {line}\n" for line in asked.splitlines()))
        assert by_query == parse_fabric_query(fab.sh(board, "nvidia-smi -q").stdout) and len(by_query) == 8
    xml = ET.fromstring(fab.sh("hgx-gpu-off", "nvidia-smi -q -x").stdout)
    states = [(g.get("id"), g.findtext("fabric/state"), g.findtext("fabric/status")) for g in xml.iter("gpu")]
    assert len(states) == 8 and states[3][1:] == ("Completed", "NVML_ERROR_NOT_READY")
    assert [s[0] for s in states] == [g["bus"] for g in fabric]
    nvlink = fab.sh("hgx-gpu-off", "nvidia-smi nvlink -s").stdout.splitlines()
    assert nvlink[0].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-") and nvlink[1:19] == [
        f"\t Link {i}: 26.562 GB/s" for i in range(18)]
    assert nvlink[3 * 19 + 1] == "\t Link 0: <inactive>"
    with lab.connect("pod-580") as conn:   # a GPU without NVLink: nothing, as the real one on the lent H100
        assert conn.run("nvidia-smi nvlink -s").stdout == (CAPTURED / "nvlink-s.txt").read_text().rsplit("rc=", 1)[0]


# Issues 45 (item 3) and 48: the all-reduce over the board's 8 GPUs (the stand-in torch.distributed: its bus bandwidth
# follows NCCL's variables as the lent H200s measured it, fleet_lab/standin_torch/distributed.py), first as a user runs
# their own in a plain shell of each kind, then verify's, judged by the knowledge table's 8-GPU row.
USER_ALLREDUCE = r"""
cat > /tmp/user_allreduce.py <<'PY'
import os, time, torch, torch.distributed as dist
rank = int(os.environ["RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
x = torch.ones(1 << 30, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(10):
    dist.all_reduce(x)
torch.cuda.synchronize()
t = (time.perf_counter() - start) / 10
if rank == 0:
    print("busbw", round(x.numel() * 4 / t / 1e9 * 2 * 7 / 8))
dist.destroy_process_group()
PY
export MASTER_ADDR=127.0.0.1 WORLD_SIZE=8
MASTER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export MASTER_PORT
for r in 1 2 3 4 5 6 7; do RANK=$r /opt/fleet/venv/bin/python /tmp/user_allreduce.py & done
RANK=0 /opt/fleet/venv/bin/python /tmp/user_allreduce.py
wait
"""


def _user_busbw(fab, kind: str) -> int:
    """The user's own all-reduce in a plain shell of `kind` (`ssh host cmd`, or bash -l from it): its bus bandwidth."""
    script = USER_ALLREDUCE if kind == "ssh" else f"bash -l -c {shlex.quote(USER_ALLREDUCE)}"
    res = fab.sh("hgx-healthy", script)
    assert res.exit == 0, res.stdout + res.stderr
    return int(res.stdout.split("busbw")[-1].split()[0])


def _verify(fab) -> dict:
    # half the free memory may hold the message, so the row's 16 GiB fits: the stand-in's collectives cost this
    # machine milliseconds each, which a 16 GiB message's modeled time (~80 ms on NVLink) leaves unseen
    code, _ = fleet_json("verify", str(fab.inv), "--limit", "hgx-healthy", "--set", "verify_allreduce=true",
                         "--set", "verify_perf_memory_share=0.5")
    record = json.loads(fab.sh("hgx-healthy", "cat /var/lib/fleet/verify.json").stdout)
    return {"code": code, "checks": {c["name"]: c for c in record["checks"]}, "links": record["links"]}


def test_the_allreduce_follows_nccl_variables_and_verify_names_the_line(fab):
    fast = 100   # the stand-in's 370 on NVLink (less what this machine's load adds to its sleep); 25 without P2P
    assert _user_busbw(fab, "ssh") > fast and _user_busbw(fab, "login") > fast
    clean = _verify(fab)
    ar = clean["links"]["allreduce"]
    # passed (or degraded, should this machine's load stretch the stand-in's sleep past the warning line): never failed
    assert clean["code"] == 0 and clean["checks"]["allreduce"]["passed"] and ar["verdict"] in ("passed", "degraded")
    assert ar["busbw"] > ar["row"]["floor"] and ar["correct"] and ar["nvls"]["enabled"] is None
    # the 8-GPU row without NVLS (no NCCL_NVLS_ENABLE here: not known on), its 16 GiB within half the free memory
    assert (ar["row"]["gpus"], ar["row"]["nvls"], ar["row"]["floor"]) == (8, False, 333.0) and ar["bytes"] == 16 << 30
    assert "allreduce_login" not in clean["checks"] and clean["links"]["time"]["within_budget"]
    assert set(clean["links"]["time"]) >= {"topology_s", "peer_access_s", "allreduce_s", "total_s", "budget_s"}
    backup = "cp -p /root/.bashrc /root/.bashrc.fleet-test; cp -p /root/.profile /root/.profile.fleet-test"
    restore = "mv -f /root/.bashrc.fleet-test /root/.bashrc; mv -f /root/.profile.fleet-test /root/.profile"
    assert fab.sh("hgx-healthy", backup).exit == 0
    try:
        # in ~/.bashrc: `ssh host cmd` (where verify runs) and every kind reading it
        fab.sh("hgx-healthy", "sed -i '1i export NCCL_P2P_DISABLE=1' /root/.bashrc")
        assert _user_busbw(fab, "ssh") < 30
        slow = _verify(fab)
        check = slow["checks"]["allreduce"]
        assert slow["code"] == 1 and not check["passed"] and slow["links"]["allreduce"]["verdict"] == "failed"
        assert check["detail"].startswith("failed: all-reduce of 16384 MiB over 8 GPUs: bus bandwidth 25 GB/s")
        assert "NCCL_P2P_DISABLE=1 (turns off peer-to-peer between GPUs" in check["detail"]
        assert "fabric manager" not in check["detail"]
        fab.sh("hgx-healthy", "sed -i '1d' /root/.bashrc")
        # in ~/.profile: login shells alone; verify's own all-reduce is fast, the login kind's is not
        fab.sh("hgx-healthy", "sed -i '1i export NCCL_P2P_DISABLE=1' /root/.profile")
        assert _user_busbw(fab, "ssh") > fast and _user_busbw(fab, "login") < 30
        login = _verify(fab)
        assert login["code"] == 1 and login["checks"]["allreduce"]["passed"]
        check = login["checks"]["allreduce_login"]
        assert not check["passed"] and "in a login shell: bus bandwidth 25 GB/s" in check["detail"]
        assert "NCCL_P2P_DISABLE=1" in check["detail"] and login["links"]["allreduce_login"]["differs"] == {
            "NCCL_P2P_DISABLE": "1"}
    finally:
        assert fab.sh("hgx-healthy", restore).exit == 0
    again = _verify(fab)
    assert again["code"] == 0 and "allreduce_login" not in again["checks"]
