"""NVIDIA's cuda-keyring pinned by sha256 on a lab pod (issue 26). The lab answers NVIDIA's real URL with its own
keyring .deb: with the digest fleet ships for that URL the host refuses it before dpkg sees it, naming both
digests; with the lab's own digest file (the inventory's top-level `keyring_pins:`, which `fleet lab up` writes,
as it writes known_hosts) the same shipped defaults install it. Each proven by asking the host's dpkg."""

from __future__ import annotations

from pathlib import Path

import yaml

from fleet.decide.keyring import SHIPPED, url
from helpers import ok
from test_user_role_lab import fleet

POD = "pod-570"
KEYRING = url("ubuntu2404/x86_64")
ASK = ("dpkg-query -W -f='${Status}' cuda-keyring 2>/dev/null | grep -q 'ok installed' && echo installed || echo absent; "
       "[ -e /usr/share/keyrings/cuda-archive-keyring.gpg ] && echo key || echo no-key")


def inventory(lab, tmp_path: Path, pins: bool) -> Path:
    doc = yaml.safe_load(lab.inventory_path.read_text())
    assert Path(doc["keyring_pins"]).is_file()        # `fleet lab up` names the lab's digests
    if not pins:
        doc.pop("keyring_pins")                       # the shipped table alone: NVIDIA's real digest
    doc["hosts"] = {POD: doc["hosts"][POD]}
    doc.pop("groups", None)
    doc["facts_dir"] = str(tmp_path / "facts")
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def lab_digest(lab) -> str:
    pins = dict(reversed(line.split()) for line in Path(lab.root, "keyring.sha256").read_text().splitlines())
    return pins[KEYRING]


def test_the_shipped_pin_refuses_a_keyring_that_is_not_nvidias_before_dpkg(lab, tmp_path):
    lab.reset([POD])
    served = ok(lab, POD, f"curl -fsS {KEYRING} | sha256sum").split()[0]   # what the host is given at that URL
    assert served == lab_digest(lab) != SHIPPED[KEYRING]
    code, out, err = fleet("apply", str(inventory(lab, tmp_path, pins=False)), "--roles", "cuda_toolkit")
    assert code == 1, out + err
    assert f"is {served}, expected {SHIPPED[KEYRING]}; refusing it" in out + err, out + err
    assert ok(lab, POD, ASK).split() == ["absent", "no-key"]
    # its own fix (issue 50), once, with the command for this host and inventory: not "read the output above"
    fixes = [line.strip() for line in out.splitlines() if line.strip().startswith("fix:")]
    assert len(fixes) == 1, out
    assert "not the one fleet pins" in fixes[0] and "cuda_keyring_pins" in fixes[0], fixes
    assert f"`fleet apply {tmp_path / 'pod.yaml'} --limit {POD}`" in fixes[0], fixes


def test_the_labs_digest_file_lets_the_same_defaults_install_its_keyring(lab, tmp_path):
    lab.reset([POD])
    code, out, err = fleet("apply", str(inventory(lab, tmp_path, pins=True)), "--roles", "cuda_toolkit")
    # (the exit status is not this test's: on main too, `apply --roles cuda_toolkit` on a fresh pod installs and
    # then fails its re-probe with "the checks produced no output"; reported to the lead)
    assert "refusing it" not in out + err and "install cuda-toolkit-13-0" in out + err, out + err
    assert ok(lab, POD, ASK).split() == ["installed", "key"]
    assert ok(lab, POD, f"curl -fsS {KEYRING} | sha256sum").split()[0] == lab_digest(lab)
