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
from test_apply_lab import fleet_json

DEMO = Path(__file__).resolve().parents[2] / "inventories" / "lab-profiles.yaml"


@pytest.fixture(scope="module")
def real(lab, tmp_path_factory):
    """The profiles inventory on the test subnet, started fresh, then --check, apply and apply again."""
    doc = yaml.safe_load(DEMO.read_text())
    for host in doc["hosts"].values():
        host["address"] = host["address"].replace("127.0.1.", testing.test_net() + ".", 1)
    inv = tmp_path_factory.mktemp("real-hosts") / "lab-profiles.yaml"
    doc["facts_dir"] = "facts"
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    control.reset(inv, list(doc["hosts"]), lab.root)    # fresh: the apt-daily stand-in holds its locks now
    runs = {"check": fleet_json("apply", str(inv), "--check"), "first": fleet_json("apply", str(inv)),
            "second": fleet_json("apply", str(inv), "--limit", "runpod", "--limit", "fresh-vm")}
    facts = {name: json.loads((inv.parent / "facts" / f"{name}.json").read_text()) for name in doc["hosts"]}
    yield _Real(lab, inv, runs, facts)
    control.down(inv, lab.root)
    shutil.rmtree(inv.parent, ignore_errors=True)


class _Real:
    def __init__(self, lab, inv, runs, facts):
        self.lab, self.inv, self.runs, self.facts = lab, inv, runs, facts

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
    out = real.sh("runpod", "ls -A /workspace; /usr/bin/python3 -c 'import torch; print(torch.__file__)'; "
                            "findmnt -n -o TARGET /workspace").stdout.split()
    assert out[:2] == ["tmp", "venv"]                      # pip's TMPDIR and the venv, not the container disk
    assert out[2] == "/usr/local/lib/python3.11/dist-packages/torch/__init__.py"   # the template's torch stays
    assert out[3] == "/workspace"
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


def test_minimal_image_fetches_without_curl_but_needs_git(real):
    # curl is missing: fleet's fetch falls back to python3's urllib (through the system trust store)
    assert real.status("first", "minimal", "cuda_toolkit") == {"changed"}
    # NOW: fleet does not install git or python3-venv; the CUTLASS clone fails with the shell's message
    cutlass = next(t for (role, _), t in real.tasks("first", "minimal").items() if role == "cutlass")
    assert cutlass["status"] == "failed" and "git: command not found" in cutlass["reason"]
    venv = real.sh("minimal", "python3 -m venv /tmp/v 2>&1")
    assert venv.exit != 0 and "because ensurepip is not\navailable" in venv.stdout


def test_container_without_nvidia_smi_still_shows_its_kernel_driver(real):
    facts = real.facts["no-smi"]
    assert facts["driver"]["version"] == "570.133.20" and facts["driver"]["source"] == "proc"
    assert sh_missing(real, "no-smi", "nvidia-smi")
    # without nvidia-smi fleet reads the GPU from the kernel (/proc/driver/nvidia/gpus, issue 11)
    assert facts["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and facts["gpus"][0]["source"] == "kernel"
    assert "changed" in real.status("first", "no-smi", "torch")


def test_orin_on_jetpack_6_reads_r36(real):
    facts = real.facts["orin"]
    assert facts["jetson"]["l4t"] == "36.4" and facts["system"]["arch"] == "aarch64"
    assert facts["driver"]["version"] == "540.4.0"
    assert sh_missing(real, "orin", "nvidia-smi")
    assert facts["gpus"][0]["name"] == "Orin (nvgpu)"    # from the kernel: Orin on JetPack 6 has no nvidia-smi
    # what fleet decides there is issue 12's (jp6/cu126 Jetson index, which the lab's mirror does not serve yet)


def sh_missing(real, host: str, tool: str) -> bool:
    return real.sh(host, f"command -v {tool}").exit == 1
