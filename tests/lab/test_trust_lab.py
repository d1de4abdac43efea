"""Paths other users control are never run as root (issue 26): a venv that `nobody` planted under a 1777
/workspace volume is not executed by `fleet facts`, fleet does not move the venv there, and `fleet apply` with
python_env pointing there refuses the host naming the owner and mode. Each proven by asking the host."""

from __future__ import annotations

import json
from pathlib import Path


from helpers import ok, sh
from test_user_role_lab import fleet

POD = "pod-570"
MARK = "/var/tmp/fleet-test-planted-ran"
# nobody's venv: a python that leaves a mark with the uid it ran as, then behaves as python3 (no pyvenv.cfg, so the
# probe would start it to ask its version)
PLANT = f"""set -e
umount /workspace 2>/dev/null || true
mkdir -p /workspace && mount -t tmpfs -o size=16m,mode=1777 fleet-test /workspace
rm -f {MARK}
install -d -o 65534 -g 65534 /workspace/venv /workspace/venv/bin
printf '#!/bin/sh\\nid -u >> {MARK}\\nexec /usr/bin/python3 "$@"\\n' > /workspace/venv/bin/python
chown 65534:65534 /workspace/venv/bin/python; chmod 755 /workspace/venv/bin/python
ln -s python /workspace/venv/bin/python3
findmnt -n -o TARGET /workspace; stat -c '%a' /workspace
"""


def inventory(lab, tmp_path: Path, host: str = POD, **vars) -> Path:
    return lab.write_inventory(tmp_path / "pod.yaml", {host: vars})


def planted(lab) -> str:
    return sh(lab, POD, f"cat {MARK} 2>/dev/null; stat -c '%U %a' /workspace/venv/bin/python").stdout


def test_facts_never_runs_a_venv_nobody_planted_under_a_1777_workspace(lab, tmp_path):
    lab.reset([POD])
    try:
        assert ok(lab, POD, PLANT).split() == ["/workspace", "1777"]
        inv = inventory(lab, tmp_path)
        for _ in range(2):                               # the second run reads the first one's record
            code, out, err = fleet("facts", str(inv), "--json")
            assert code == 0, out[-2000:] + err[-2000:]
        assert planted(lab) == "nobody 755\n"            # never ran: no mark on the host
        record = json.loads((tmp_path / "facts" / f"{POD}.json").read_text())
        assert record["python"]["env"] == "/opt/fleet/venv"            # not moved onto the volume
        assert record["paths"]["/workspace/venv"] == "/workspace/venv is owned by nobody with mode 755"
        assert record["paths"]["/workspace/tmp"] == "/workspace is owned by root with mode 1777"
    finally:
        sh(lab, POD, f"umount /workspace; rm -f {MARK}")


def test_apply_refuses_a_python_env_another_user_owns(lab, tmp_path):
    lab.reset([POD])
    try:
        ok(lab, POD, PLANT)
        inv = inventory(lab, tmp_path, python_env="/workspace/venv")
        code, out, err = fleet("facts", str(inv), "--json")
        assert code == 0, out[-2000:] + err[-2000:]
        # the python section did not execute it: the record says why it was passed over
        record = json.loads((tmp_path / "facts" / f"{POD}.json").read_text())
        assert record["python"]["untrusted"] == "/workspace/venv/bin/python is owned by nobody with mode 755"
        code, out, err = fleet("apply", str(inv))
        assert code == 1, out[-2000:] + err[-2000:]
        said = " ".join((out + err).split())
        assert ("python_env /workspace/venv is not safe to run as root: /workspace/venv is owned by nobody with "
                "mode 755") in said
        assert planted(lab) == "nobody 755\n"            # neither the probe nor pip ran it
        assert sh(lab, POD, "ls /opt/fleet 2>&1").exit != 0           # nothing of fleet's written on the host
    finally:
        sh(lab, POD, f"umount /workspace; rm -f {MARK}")


def test_apply_refuses_an_archive_home_under_a_directory_others_can_write(lab, tmp_path):
    """nvpl_home under a 0777 directory on the Thor (NVPL's archive goes there): refused before
    anything is written there (asked of the host)."""
    lab.reset(["thor"])
    try:
        ok(lab, "thor", "mkdir -p /srv/open && chmod 0777 /srv/open", sudo=True)
        inv = inventory(lab, tmp_path, "thor", nvpl_source="tarball", nvpl_home="/srv/open/nvpl")
        code, out, err = fleet("apply", str(inv), "--roles", "nvpl")
        said = " ".join((out + err).split())
        assert code == 1, said[-3000:]
        assert "nvpl_home /srv/open/nvpl is not safe to run as root: /srv/open is owned by root with mode 777" in said
        assert ok(lab, "thor", "ls -A /srv/open; echo end").split() == ["end"]       # nothing written there
    finally:
        sh(lab, "thor", "rm -rf /srv/open", sudo=True)


def test_a_network_volume_at_workspace_never_gets_roots_venv(lab, tmp_path):
    """Issue 49: on a RunPod-like pod fleet put root's venv on /workspace by default, and a network volume mounted
    there is written by other pods of the account. A /workspace whose df source names another machine (here a tmpfs
    mounted under the source name RunPod's MooseFS network volumes show, mfs#HOST:9421) keeps the venv on the
    container disk; the same volume under a local name is the pod's own and gets it, as before. The host's own df
    is what fleet reads; the record says where the venv went."""
    lab.reset([POD])
    inv = inventory(lab, tmp_path)
    try:
        for source, env in (("mfs#eu-ro-1.runpod.net:9421", "/opt/fleet/venv"), ("fleet-own-volume", "/workspace/venv")):
            said = ok(lab, POD, f"umount /workspace 2>/dev/null; mkdir -p /workspace; mount -t tmpfs -o size=16m,mode=755 "
                                f"'{source}' /workspace; df -P /workspace | tail -n 1 | cut -d' ' -f1")
            assert said.strip() == source
            code, out, err = fleet("facts", str(inv), "--json")
            assert code == 0, out[-2000:] + err[-2000:]
            record = json.loads((tmp_path / "facts" / f"{POD}.json").read_text())
            assert record["python"]["env"] == env, (source, record["python"])
    finally:
        sh(lab, POD, "umount /workspace")
