"""The example pods inventory as shipped (examples/pods.yaml: addresses only, default variables) converges
on lab pods: its hosts' addresses are swapped for lab hosts (a RunPod-template pod with a /workspace volume on
driver 580, an H100 pod on driver 570) and nothing else is added but what the lab writes into any inventory it
serves (its key and known hosts) and, as in inventories/lab.yaml, verify_perf: false."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from fleet_lab import control, testing
from test_apply_lab import fleet_json

PODS = Path(__file__).resolve().parents[2] / "examples" / "pods.yaml"
AS_LAB = {"pod-a": {"profile": "runpod-pytorch", "driver": "580.159.04"},
          "pod-b": {"profile": "h100-pod", "driver": "570.133.20"}}


@pytest.fixture(scope="module")
def pods(lab, tmp_path_factory):
    doc = yaml.safe_load(PODS.read_text())
    assert set(doc["hosts"]) == set(AS_LAB) and "vars" not in doc    # addresses only, as shipped
    doc["vars"] = {"verify_perf": False}   # the one setting lab.yaml keeps: the stand-in torch computes in pure
    #                                        Python, so no perf smoke can run on it (every source stays default)
    for n, (name, host) in enumerate(doc["hosts"].items()):
        host.update(address=f"{testing.test_net()}.{41 + n}", port=22, lab=AS_LAB[name])
    inv = tmp_path_factory.mktemp("shipped") / "pods.yaml"
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    control.reset(inv, list(doc["hosts"]), lab.root)
    yield inv
    control.down(inv, lab.root)
    shutil.rmtree(inv.parent, ignore_errors=True)


def test_the_shipped_pods_inventory_converges_with_default_variables(pods):
    code, first = fleet_json("apply", str(pods))
    assert code == 0, json.dumps(first, indent=1)[-4000:]
    for name in AS_LAB:
        host = first["hosts"][name]
        assert host["failed"] == 0 and host["changed"] > 0, host
    record = json.loads((pods.parent / "facts" / "pod-a.json").read_text())
    assert record["python"]["env"] == "/workspace/venv" and record["verify"]["passed"] is True
    assert json.loads((pods.parent / "facts" / "pod-b.json").read_text())["verify"]["passed"] is True
    code, second = fleet_json("apply", str(pods))
    assert code == 0
    for name in AS_LAB:
        assert second["hosts"][name]["changed"] == 0, second["hosts"][name]["tasks"]
        assert second["stats"][name]["remote_commands"] == 1
