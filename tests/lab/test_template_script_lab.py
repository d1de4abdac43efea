"""A pod template's start script made from a PROVISIONED pod's facts (issue 50): those facts say the CUDA toolkit,
git and the venv are there, yet the template's next pod has none of them. `fleet script --from-facts` plans every
task that installs something whatever the facts say, and each task's check decides on the pod. Proven on a reset
lab pod: the script installs the toolkit there, and a plain OpenSSH login shell then finds nvcc."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess

from fleet_lab import paths
from test_script_lab import BARE, POD, apply, fleet


def login_shell(lab, command: str) -> subprocess.CompletedProcess:
    """A plain OpenSSH client running a login shell, as a person logging in gets it: fleet is not in the path."""
    host = lab.inventory.hosts[POD]
    return subprocess.run(["ssh", "-i", str(paths.lab_key(lab.root)), "-o", "BatchMode=yes",
                           "-o", f"UserKnownHostsFile={paths.lab_known_hosts(lab.root)}",
                           "-o", "StrictHostKeyChecking=yes", "-p", str(host.port), f"root@{host.address}",
                           f"bash -lc {shlex.quote(command)}"], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def test_a_template_from_a_provisioned_pods_facts_installs_the_toolkit_on_a_fresh_pod(lab, tmp_path, converged_fresh):
    inventory = tmp_path / "lab.yaml"
    shutil.copy(lab.inventory_path, inventory)
    code, doc = converged_fresh(POD)
    assert code == 0, json.dumps(doc["hosts"][POD])[-3000:]
    assert apply(inventory)["changed"] == 0                     # this test's own record of the provisioned pod
    record = tmp_path / "facts" / f"{POD}.json"
    assert [t["version"] for t in json.loads(record.read_text())["cuda"]["toolkits"]] == ["13.0"]
    code, _, err = fleet("script", str(inventory), "--limit", POD, "--from-facts", str(record),
                         "-o", str(tmp_path / "fleet.sh"))
    assert code == 0, err
    script = (tmp_path / "fleet.sh").read_text()
    assert "cuda_toolkit  skipped" not in script

    lab.reset([POD])                                           # the template's next pod: nothing of fleet's
    assert login_shell(lab, "command -v nvcc").returncode == 1
    with lab.connect(POD) as conn:
        conn.write_file("/root/fleet.sh", script, mode=0o755)
        first = conn.run(BARE)
        second = conn.run(BARE)
    assert first.exit == 0, first.stdout[-3000:] + first.stderr[-2000:]
    lines = first.stdout.splitlines()
    assert any(line.startswith("change  cuda_toolkit: NVIDIA apt keyring and the CUDA toolkit") for line in lines)
    assert any(line.startswith("ok      cutlass: git, which the clone needs") for line in lines), first.stdout
    assert "verify  verify passed" in first.stdout
    assert second.exit == 0 and second.stdout.splitlines()[-1] == "changed=0", second.stdout[-3000:]
    # the pod itself, through a plain login shell: the toolkit's nvcc, and dpkg's word for the package
    nvcc = login_shell(lab, "command -v nvcc && nvcc --version")
    assert nvcc.returncode == 0, nvcc.stderr
    assert nvcc.stdout.splitlines()[0] == "/usr/local/cuda-13.0/bin/nvcc" and "release 13.0" in nvcc.stdout
    held = login_shell(lab, "dpkg-query -W -f='${Status}' cuda-toolkit-13-0")
    assert held.stdout == "hold ok installed", held.stdout + held.stderr
