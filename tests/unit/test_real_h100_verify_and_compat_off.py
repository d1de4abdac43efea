"""The records a real H100 wrote (fleet run there with the local connection; see inventories/h100-device.yaml).

`fleet facts`, `fleet apply --check` (all roles) and `fleet apply --roles verify` ran on a machine with a real
NVIDIA H100 80GB HBM3, driver 580.159.04, CUDA 13.0, torch 2.11.0+cu130 in /opt/torch/.venv and cuda-compat
580.95.05 installed in /usr/local/cuda-13.0/compat: the trap DOMAIN.md describes (compat older than the kernel
driver must stay off the path, or CUDA fails with error 803).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.decide import decide

DATA = Path(__file__).resolve().parents[1] / "data" / "h100-device"
CAUSAL_FLOPS = 4 * 16 * 96 * 4096 ** 2 * 128 / 2   # B=16 H=96 S=4096 D=128, halved for causal


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads((DATA / "h100-device.json").read_text())


def test_record_is_the_real_h100(record):
    assert record["platform"] == "x86_64-dgpu"
    assert record["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert record["gpus"][0]["compute_cap"] == "9.0"
    assert record["driver"]["version"] == "580.159.04"
    assert record["cuda"]["compat"]["version"] == "580.95.05"
    assert record["cuda"]["compat"]["in_use"] is False


def test_verify_passed_with_the_library_closure_complete(record):
    verify = record["verify"]
    assert verify["passed"] is True
    assert verify["missing_libraries"] == []
    assert {c["name"] for c in verify["checks"]} >= {"libraries_resolve", "torch_imports", "cuda_available",
                                                      "wheel_supports_gpu", "matmul_matches_cpu",
                                                      "perf_matmul", "perf_attention"}
    assert all(c["passed"] for c in verify["checks"])
    assert verify["torch"]["version"] == "2.11.0+cu130"


def test_perf_figures_are_plausible_and_counted_right(record):
    perf = record["verify"]["perf"]
    assert perf["attention_flops"] == CAUSAL_FLOPS == pytest.approx(6.597e12, rel=1e-3)
    # The figure is derived from the time with the causal count, and sits under the H100's dense peak.
    assert perf["attention_tflops"] == pytest.approx(CAUSAL_FLOPS / (perf["attention_ms"] / 1e3) / 1e12, rel=0.01)
    assert perf["matmul_floor"] < perf["matmul_tflops"] < perf["peak_tflops"] == 989
    assert perf["attention_floor"] < perf["attention_tflops"] < perf["peak_tflops"]
    assert perf["matmul_tflops"] == pytest.approx(2 * 8192 ** 3 / (perf["matmul_ms"] / 1e3) / 1e12, rel=0.01)


def test_check_plan_on_the_real_h100_planned_no_compat_and_nothing_that_breaks_it():
    doc = json.loads((DATA / "apply-check.json").read_text())
    host = doc["hosts"]["h100-device"]
    assert host["check"] is True and host["failed"] == 0
    compat_tasks = [t for t in host["tasks"] if t["role"] == "cuda_compat"]
    assert compat_tasks and all(t["status"] == "skipped" for t in compat_tasks)
    assert not [t for t in host["tasks"] if t["role"] == "cuda_toolkit" and t["status"] == "changed"]
    torch = [t for t in host["tasks"] if t["role"] == "torch"]
    assert [t["status"] for t in torch] == ["ok"]        # the existing torch stays as it is
    env_sh = next(t for t in host["tasks"] if t["task"] == "/etc/fleet/env.sh")
    ld_line = next(line for line in env_sh["diff"].splitlines() if line.startswith("+fleet_ld="))
    assert ld_line == "+fleet_ld=/usr/local/cuda-13.0/targets/x86_64-linux/lib"   # no compat dir planned
    assert doc["stats"]["h100-device"]["remote_commands"] == 1


def test_decisions_on_the_real_record_keep_compat_off(record):
    d = decide(record, {"python_env": "/opt/torch/.venv"}).to_json()
    assert d["refuse"] is None
    assert d["compat"]["use"] is False
    assert "803" in d["compat"]["reason"]
    assert all("compat" not in p for p in d["ld_library_path"])
    assert d["torch"]["supported"] is True
