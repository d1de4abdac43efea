"""Hosts as real ones come (inventories/lab-profiles.yaml): what fleet decides, changes and verifies on each.

Each profile fails through the real mechanism (fleet_lab/breakage.py). Where fleet's behaviour there is
still another issue's to fix, the test pins what fleet does today and says so (NOW:), so the fix shows up
as a deliberate change of this test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from fleet_lab import control, testing
from test_apply_lab import fleet, fleet_json
from test_shells_lab import CUINIT, INTERACTIVE, parse_cuinit

DEMO = Path(__file__).resolve().parents[2] / "inventories" / "lab-profiles.yaml"
SECOND = ("runpod", "fresh-vm", "seed", "busy", "minimal", "orin")   # applied a second time: nothing may change
# What a refused host must not have been touched in: nothing fleet writes, nothing dpkg installed.
NVML_STATE = ("ls -d /etc/fleet /opt/fleet /opt/cutlass /var/lib/fleet 2>&1; md5sum /var/lib/dpkg/status; "
              "ls -la --time-style=+%s /root /etc/apt/sources.list.d")


@pytest.fixture(scope="module")
def real(lab, tmp_path_factory):
    """The profiles inventory on the test subnet, started fresh, then --check, apply and apply again."""
    doc = yaml.safe_load(DEMO.read_text())
    for host in doc["hosts"].values():
        host["address"] = host["address"].replace("127.0.1.", testing.test_net() + ".", 1)
    inv = tmp_path_factory.mktemp("real-hosts") / "lab-profiles.yaml"
    doc["facts_dir"] = "facts"
    # the lab's keyring digests, as `fleet lab up` writes them into the inventory it serves (the lab answers
    # NVIDIA's keyring URL with its own .deb, which fleet's pin for the real one refuses)
    doc["keyring_pins"] = str(lab.root / "keyring.sha256")
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    control.reset(inv, list(doc["hosts"]), lab.root)    # fresh: the apt-daily stand-in holds its locks now
    real = _Real(lab, inv, {}, {})
    real.before = {"seed": cuinit(real, "seed"), "nvml": real.sh("nvml", NVML_STATE).stdout,
                   "minimal": real.sh("minimal", "python3 -m venv /tmp/v 2>&1; for t in git curl; do "
                                                 "command -v $t >/dev/null || echo $t: missing; done").stdout}
    real.runs, real.after = {}, {}
    for run, argv in (("check", ["--check"]), ("first", [])):
        real.runs[run] = fleet_json("apply", str(inv), *argv)
        real.after[run] = real.sh("nvml", NVML_STATE).stdout   # the refused host, asked after each mode
    real.facts = {name: json.loads((inv.parent / "facts" / f"{name}.json").read_text()) for name in doc["hosts"]}
    real.runs["second"] = fleet_json("apply", str(inv), *(f"--limit={h}" for h in SECOND))
    real.runs["again"] = fleet_json("apply", str(inv), "--limit=nvml")   # refused again, still untouched
    real.after["again"] = real.sh("nvml", NVML_STATE).stdout
    yield real
    control.down(inv, lab.root)
    shutil.rmtree(inv.parent, ignore_errors=True)


class _Real:
    def __init__(self, lab, inv, runs, facts):
        self.lab, self.inv, self.runs, self.facts = lab, inv, runs, facts
        self.before: dict = {}
        self.after: dict = {}

    def tasks(self, run: str, host: str) -> dict[tuple[str, str], dict]:
        return {(t["role"], t["task"]): t for t in self.runs[run][1]["hosts"][host]["tasks"]}

    def status(self, run: str, host: str, role: str) -> set[str]:
        return {t["status"] for (r, _), t in self.tasks(run, host).items() if r == role}

    def sh(self, host: str, script: str):
        from fleet.connection import ConnectOptions, connect
        from fleet.inventory import load_inventory
        options = ConnectOptions(known_hosts=self.lab.root / "fleet_known_hosts")
        with connect(load_inventory(self.inv).hosts[host], options) as conn:
            return conn.run(script)


def test_runpod_template_venv_and_pip_files_go_on_the_workspace_volume(real):
    torch = real.tasks("check", "runpod")
    plan = next(t for (role, _), t in torch.items() if role == "torch" and t["status"] != "skipped")
    assert plan["status"] == "changed" and "no virtual environment at /workspace/venv" in plan["reason"]
    assert real.facts["runpod"]["python"]["env"] == "/workspace/venv"
    assert real.facts["runpod"]["verify"]["passed"] is True
    out = real.sh("runpod", "ls -A /workspace; ls /workspace/.cache/pip; "
                            "/usr/bin/python3 -c 'import torch; print(torch.__file__)'; "
                            "findmnt -n -o TARGET /workspace").stdout.split()
    # the installer's cache (uv's, in pip_cache_dir), TMPDIR and the venv, not the container disk
    assert out[:4] == [".cache", "tmp", "venv", "uv"]
    assert out[4] == "/usr/local/lib/python3.11/dist-packages/torch/__init__.py"   # the template's torch stays
    assert out[5] == "/workspace"
    code, second = real.runs["second"]
    assert code == 0 and second["hosts"]["runpod"]["changed"] == 0
    assert second["stats"]["runpod"]["remote_commands"] == 1   # converged: one probe, no second look


def test_fresh_vm_waits_for_apt_daily_then_installs(real):
    # the stand-in held dpkg's lock through fcntl when the apply began: apt would refuse with
    # "Could not get lock ... held by process N (unattended-upgr)"; fleet's apt waits instead
    assert real.status("first", "fresh-vm", "cuda_toolkit") == {"changed"}
    assert real.facts["fresh-vm"]["verify"]["passed"] is True
    assert real.runs["second"][1]["hosts"]["fresh-vm"]["changed"] == 0


def test_fresh_vm_lock_is_the_real_one(real):
    control.reset(real.inv, ["fresh-vm"], real.lab.root)   # boots again: the stand-in holds the locks
    held = real.sh("fresh-vm", "apt-get install -y cuda-compat-13-0 2>&1")
    assert held.exit == 100 and "Could not get lock /var/lib/dpkg/lock-frontend" in held.stdout
    assert "(unattended-upgr)" in held.stdout


def test_geforce_on_570_is_refused_with_the_804_reason(real):
    code, first = real.runs["first"]
    refuse = first["hosts"]["geforce"]["refuse"]
    assert "forward compatibility is not supported on GeForce GPUs (error 804)" in refuse
    assert "install driver >= 580.65.06" in refuse
    assert first["hosts"]["geforce"]["changed"] == 0


def test_minimal_image_gets_git_and_python3_venv_through_apt_and_converges(real):
    before = real.before["minimal"]   # as the image comes: no git, no curl, no ensurepip
    assert "because ensurepip is not\navailable" in before and "git: missing" in before and "curl: missing" in before
    assert real.facts["minimal"]["system"]["git"] is True   # after the apply; before it, the check planned:
    check = {task: t for (role, task), t in real.tasks("check", "minimal").items()}
    assert check["git, which the clone needs"]["status"] == "changed"
    assert check["python3-venv, which the virtual environment needs"]["status"] == "changed"
    first = real.runs["first"][1]["hosts"]["minimal"]
    assert first["refuse"] is None and not [t for t in first["tasks"] if t["status"] == "failed"], first["tasks"]
    # curl is still missing: fleet's fetch falls back to python3's urllib (through the system trust store)
    assert real.status("first", "minimal", "cuda_toolkit") == {"changed"}
    assert real.status("first", "minimal", "cutlass") == {"changed"}
    assert real.facts["minimal"]["cutlass"]["describe"] == "v4.3.0" and real.facts["minimal"]["verify"]["passed"]
    out = real.sh("minimal", "dpkg-query -W -f='${Package} ${Status}\\n' git python3-venv; command -v curl || echo no-curl")
    assert out.stdout.split("\n")[:3] == ["git install ok installed", "python3-venv install ok installed", "no-curl"]
    code, second = real.runs["second"]
    assert code == 0 and second["hosts"]["minimal"]["changed"] == 0, second["hosts"]["minimal"]["tasks"]
    assert real.tasks("second", "minimal")[("cutlass", "git, which the clone needs")]["status"] == "skipped"


def test_container_without_nvidia_smi_still_shows_its_kernel_driver(real):
    facts = real.facts["no-smi"]
    assert facts["driver"]["version"] == "570.133.20" and facts["driver"]["source"] == "proc"
    assert sh_missing(real, "no-smi", "nvidia-smi")
    # without nvidia-smi fleet reads the GPU from the kernel (/proc/driver/nvidia/gpus, issue 11)
    assert facts["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and facts["gpus"][0]["source"] == "kernel"
    assert "changed" in real.status("first", "no-smi", "torch")
    # the kernel's driver 570 decides as nvidia-smi's would: CUDA 13 torch, cuda-compat under it
    host = real.runs["check"][1]["hosts"]["no-smi"]
    assert host["refuse"] is None and "/cu130" in host["reasons"]["torch"]
    compat = {task: t["status"] for (role, task), t in real.tasks("check", "no-smi").items() if role == "cuda_compat"}
    # a container: no systemd, so no unit; the package, the gate and the ld cache drop-in it writes
    assert {task for task, status in compat.items() if status == "skipped"} == {
        "systemd unit running the gate at every boot (fleet-cuda-compat.service)", "fleet-cuda-compat.service enabled"}
    assert set(compat.values()) == {"changed", "skipped"}


def test_orin_on_jetpack_6_reads_r36(real):
    facts = real.facts["orin"]
    assert facts["jetson"]["l4t"] == "36.4" and facts["system"]["arch"] == "aarch64"
    assert facts["system"]["os_version"] == "22.04"      # JetPack 6's Ubuntu (fleet_lab/profiles.py)
    assert facts["driver"]["version"] == "540.4.0"
    assert sh_missing(real, "orin", "nvidia-smi")
    assert facts["gpus"][0]["name"] == "Orin (nvgpu)"    # from the kernel: Orin on JetPack 6 has no nvidia-smi
    # the driver API answers with JetPack 6.1/6.2's CUDA 12.6 (R36.4; fleet_lab/native/libcuda.c cites the notes)
    cuda = real.sh("orin", "python3 -c 'import ctypes; l=ctypes.CDLL(\"libcuda.so.1\"); v=ctypes.c_int(); "
                           "l.cuDriverGetVersion(ctypes.byref(v)); print(v.value, l.cuInit(0))'").stdout.split()
    assert cuda == ["12060", "0"]
    # decides CUDA 12.6 (JetPack's) and the jp6/cu126 Jetson index
    torch = real.runs["check"][1]["hosts"]["orin"]["reasons"]["torch"]
    assert "https://pypi.jetson-ai-lab.io/jp6/cu126" in torch


def test_orin_on_jetpack_6_converges_with_jetpacks_cuda_and_the_jp6_torch(real):
    """Flashed with the L4T BSP only: no CUDA yet, JetPack's apt repository in its sources (fleet_lab/jetpack.py)."""
    check = {role: t for (role, _), t in real.tasks("check", "orin").items() if t["status"] == "changed"}
    assert "install cuda-toolkit-12-6 from JetPack 6.1's apt repository" in check["cuda_toolkit"]["reason"]
    assert real.status("check", "orin", "cuda_compat") == {"skipped"}    # JetPack's 12.6 runs on its driver
    # changes: the toolkit from JetPack's repository, NVPL and cuDSS (CUDA 12) wheels, the jp6/cu126 torch
    first = real.runs["first"][1]["hosts"]["orin"]
    assert first["refuse"] is None and not [t for t in first["tasks"] if t["status"] == "failed"], first["tasks"]
    for role in ("cuda_toolkit", "nvpl", "cudss", "env_hooks", "torch"):
        assert "changed" in real.status("first", "orin", role), role
    facts = real.facts["orin"]
    assert [(t["version"], t["path"]) for t in facts["cuda"]["toolkits"]] == [("12.6", "/usr/local/cuda-12.6")]
    assert facts["torch"]["version"] == "2.11.0+cu126" and facts["torch"]["cuda"] == "12.6"
    # verify: the stand-in torch imports (NVPL and cuDSS found) and CUDA works, in both kinds of shell
    verify = facts["verify"]
    assert verify["passed"] and verify["missing_libraries"] == [], verify["checks"]
    assert {k: v["driver_api"] for k, v in verify["cuda"].items()} == {"noninteractive": 12060, "interactive": 12060}
    site = f"/opt/fleet/venv/lib/python{'.'.join(facts['python']['version'].split('.')[:2])}/site-packages"
    assert facts["env"]["LD_LIBRARY_PATH"] == \
        f"/usr/local/cuda-12.6/targets/aarch64-linux/lib:{site}/nvpl/lib:{site}/nvidia/cu12/lib"   # Tegra CUDA 12
    # JetPack's packages, not the desktop repo's: no cuda-keyring, no cuda-ubuntu* source, the toolkit's origin
    out = real.sh("orin", "ls /etc/apt/sources.list.d; dpkg-query -W cuda-keyring 2>&1 | tail -1; "
                          "apt-cache policy cuda-toolkit-12-6 | grep -m1 -o 'https://[^ ]* r36.4/main'").stdout
    assert out.splitlines() == ["nvidia-l4t-apt-source.list", "dpkg-query: no packages found matching cuda-keyring",
                                "https://repo.download.nvidia.com/jetson/common r36.4/main"], out
    code, second = real.runs["second"]
    assert code == 0 and second["hosts"]["orin"]["changed"] == 0, second["hosts"]["orin"]["tasks"]
    assert second["stats"]["orin"]["remote_commands"] == 1   # converged: one probe


def test_seed_template_pod_803_only_in_interactive_shells_until_fleet_neutralizes_the_lines(real):
    # the trap as met (shared/DOMAIN.md): `ssh host cmd` has CUDA, every interactive shell gets 803
    before = real.before["seed"]
    assert before["ssh"][0] == 0 and before["interactive"][0] == 803, before
    assert before["interactive"][1].startswith("/usr/local/cuda-13.0/compat/"), before
    # decides: driver 580.159.04 is newer than compat 580.95.05, so compat stays unused (it would be 803): nothing
    # of cuda_compat is installed; the check that no fleet drop-in puts compat in the ld cache runs, in state
    assert real.status("check", "seed", "cuda_compat") == {"skipped", "ok"}
    hooks = [t for (role, _), t in real.tasks("check", "seed").items() if role == "env_hooks" and t["status"] == "changed"]
    assert hooks and "neutralizes ~/.bashrc:" in hooks[0]["reason"] and "(via /etc/rp_environment:" in hooks[0]["reason"]
    assert "(via ~/pod_setup.sh:2)" in hooks[0]["reason"]
    says = [line["says"] for line in real.facts["seed"]["env"]["compat_lines"]]
    assert len(says) == 2 and hooks[0]["reason"].count(": error 803 under driver 580.159.04") == 2, says
    # changes: the hook, torch in a venv; the user's lines stay where they are
    seed = real.runs["first"][1]["hosts"]["seed"]
    assert seed["refuse"] is None and seed["changed"] > 0 and not [t for t in seed["tasks"] if t["status"] == "failed"]
    bashrc = real.sh("seed", "cat /root/.bashrc").stdout
    assert bashrc.count("source /etc/rp_environment\n") == 1 and bashrc.count("source /root/pod_setup.sh\n") == 1
    after = cuinit(real, "seed")
    for kind in ("ssh", "interactive"):
        assert after[kind][0] == 0 and after[kind][1] == "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", after
    verify = real.facts["seed"]["verify"]
    assert verify["passed"] and {"cuda_available", "cuda_available_interactive"} <= {c["name"] for c in verify["checks"]}
    code, second = real.runs["second"]
    assert code == 0 and second["hosts"]["seed"]["changed"] == 0, second["hosts"]["seed"]["tasks"]


def test_nvml_mismatch_is_refused_with_the_reboot_and_nothing_is_touched(real):
    smi = real.sh("nvml", "nvidia-smi; echo rc=$?; cat /proc/driver/nvidia/version").stdout
    assert smi.startswith("Failed to initialize NVML: Driver/library version mismatch\n") and "rc=18" in smi
    assert "  570.133.20  " in smi   # the kernel module still answers
    facts = real.facts["nvml"]
    assert facts["driver"]["version"] == "570.133.20" and facts["driver"]["nvml_error"]["mismatch"] is True
    assert "ls: cannot access '/var/lib/fleet': No such file or directory" in real.before["nvml"]
    for run in ("check", "first", "again"):
        code, doc = real.runs[run]
        host = doc["hosts"]["nvml"]
        assert code == 1 and "Driver/library version mismatch" in host["refuse"] and "reboot" in host["refuse"], host
        assert host["changed"] == 0 and not [t for t in host["tasks"] if t["status"] in ("changed", "failed")]
        # never written to, in any mode: no lock, no helper program (a probe's check once installed them), no venv
        assert real.after[run] == real.before["nvml"], run
    assert real.sh("nvml", NVML_STATE).stdout == real.before["nvml"]


def test_busy_gpu_converges_and_verify_skips_the_perf_smoke_with_its_reason(real):
    apps = real.sh("busy", "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits; "
                           "nvidia-smi --query-gpu=memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits")
    job, gpu = apps.stdout.splitlines()
    assert job.endswith(", python3, 59392") and gpu == "59392, 81559, 100"   # from boot, no fixture
    # decides as on an idle H100 on 580: CUDA torch into a venv, no compat; a busy GPU is no reason to refuse
    assert real.runs["first"][1]["hosts"]["busy"]["refuse"] is None
    assert real.status("first", "busy", "torch") >= {"changed"} and real.status("check", "busy", "cuda_compat") == {"skipped"}
    verify = real.facts["busy"]["verify"]
    # verify_perf is on (the shipped default): the smoke skipped itself, saying why
    assert verify["passed"] and verify["perf"]["skipped"] == "perf skipped: 1 process, 58 GB in use, 100 % busy"
    perf = [c for c in verify["checks"] if c["name"].startswith("perf")]
    assert perf == [{"name": "perf", "passed": True, "detail": "perf skipped: 1 process, 58 GB in use, 100 % busy"}]
    code, second = real.runs["second"]
    assert code == 0 and second["hosts"]["busy"]["changed"] == 0
    assert record(real, "busy")["verify"]["reused"] is True   # a no-op does no GPU work at all (issue 14)
    code, out, _ = fleet("verify", str(real.inv), "--limit", "busy")   # verify now, on the busy GPU
    assert code == 0 and "perf skipped: 1 process, 58 GB in use" in out, out   # said, not only recorded
    assert record(real, "busy")["verify"]["perf"]["skipped"] == "perf skipped: 1 process, 58 GB in use, 100 % busy"


def record(real, host: str) -> dict:
    """The facts record the last run wrote for `host`."""
    return json.loads((real.inv.parent / "facts" / f"{host}.json").read_text())


def cuinit(real, host: str) -> dict:
    import shlex
    return parse_cuinit(real.sh(host, f"{CUINIT}; {INTERACTIVE.format(cmd=shlex.quote(CUINIT))}").stdout)


def sh_missing(real, host: str, tool: str) -> bool:
    return real.sh(host, f"command -v {tool}").exit == 1


def test_runpod_container_disk_is_small_and_a_venv_there_is_refused_by_the_free_space_check(real):
    """Last for `runpod` (it points python_env at the container disk): the disk is a real 5 GB filesystem
    (fleet_lab/breakage.py disk_lines), what the probe's df and pip's free-space check read."""
    size_kb, free_kb = map(int, real.sh("runpod", "df -Pk / | awk 'NR==2{print $2, $4}'").stdout.split())
    assert size_kb == 5 * 1024 * 1024 and free_kb < 5 * 1024 * 1024
    root = next(d for d in real.facts["runpod"]["system"]["disks"] if d["path"] == "/")
    assert root["free_gb"] <= 5   # what the probe recorded: under torch_min_free_gb (10)
    doc = yaml.safe_load(real.inv.read_text())
    doc["hosts"]["runpod"]["vars"] = {"python_env": "/opt/fleet/venv"}   # a user who asks for it on the small disk
    on_disk = real.inv.with_name("on-container-disk.yaml")
    on_disk.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, run = fleet_json("apply", str(on_disk), "--limit", "runpod")
    torch = next(t for t in run["hosts"]["runpod"]["tasks"] if t["role"] == "torch" and t["status"] != "skipped")
    assert code != 0 and torch["status"] == "failed", torch
    assert "GB free at /opt; 10 GB needed: free space or point python_env at a bigger volume" in torch["reason"]
    assert real.sh("runpod", "test -e /opt/fleet/venv").exit == 1   # refused before the venv was made


def test_fleet_decide_on_a_record_agrees_with_apply_check_on_that_host(real):
    """One decide-and-render for every command: the Orin given a /workspace volume (a mount of its own, as a pod's
    is), `fleet decide` on the record `fleet apply --check` just wrote gives the same reasons, word for word, as
    that --check, with the NVPL/cuDSS wheels in the volume's venv (fleet decide once put them in /opt/fleet/venv)."""
    # mode=755: a tmpfs is 1777 by default, and fleet moves the venv only onto a volume other users cannot write
    mounted = real.sh("orin", "mkdir -p /workspace && mount -t tmpfs -o size=64m,mode=755 fleet-test /workspace && "
                              "findmnt -n -o TARGET /workspace")
    assert mounted.stdout.strip() == "/workspace", mounted.stderr
    try:
        code, check = fleet_json("apply", str(real.inv), "--check", "--limit=orin")
    finally:
        real.sh("orin", "umount /workspace && rmdir /workspace")
    assert code == 0, check
    code, offline = fleet_json("decide", str(real.inv.parent / "facts" / "orin.json"))
    assert code == 0, offline
    reasons = check["hosts"]["orin"]["reasons"]
    assert "/workspace/venv/" in reasons["env"]                # the volume's venv, on LD_LIBRARY_PATH
    assert offline["hosts"]["orin"]["reasons"] == reasons
