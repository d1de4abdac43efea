"""fleet script's run-time decisions (fleet/workflows/script_runtime.py), without SSH: which variants a facts record
gets, the bash version comparison, and the guard's refusals on this machine's real CPU and (absent) GPU.
The lab proves the rest on real hosts (tests/lab/test_script_runtime_lab.py)."""

from __future__ import annotations

import io
import json
import platform
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from fleet.workflows import script_runtime
from fleet.cli import main
from fleet.engine import decide_tasks
from fleet.env import Environment
from fleet.inventory import Host
from fleet.roles import load_roles, roles_dirs

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"


def plans_for(record: str):
    facts = json.loads((RECORDS / record).read_text())
    roles = load_roles(None, roles_dirs())
    host = Host(facts["host"], address="192.0.2.1")
    plan = decide_tasks(roles, host, facts)
    return plan, script_runtime.variants(lambda other: decide_tasks(roles, host, other), plan)


def enabled(plan, role: str) -> bool:
    return any(t.enabled for t in plan.tasks if t.spec.role == role)


def test_a_570_pod_gets_both_variants_and_only_compat_has_compat():
    # cuda-compat only where the kernel driver is older than CUDA 13.0's minimum 580.65.06
    # (CUDA release notes, table 3; docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html)
    plan, plans = plans_for("h100-pod-570.json")
    assert list(plans) == ["direct", "compat"] and plans["compat"] is plan
    assert enabled(plans["compat"], "cuda_compat") and not enabled(plans["direct"], "cuda_compat")
    assert plans["compat"].decisions_json["ld_library_path"][0] == "/usr/local/cuda-13.0/compat"
    assert "/usr/local/cuda-13.0/compat" not in plans["direct"].decisions_json["ld_library_path"]
    assert [t.spec.name for t in plans["direct"].tasks if t.spec.role == "torch"] == \
        [t.spec.name for t in plan.tasks if t.spec.role == "torch"]      # the rest is the same decision


@pytest.mark.parametrize("record", ["h100-pod-580-compat.json", "thor.json", "spark.json", "cpu-only.json"])
def test_hosts_whose_driver_runs_cuda_natively_get_one_variant(record):
    plan, plans = plans_for(record)
    assert plans == {"direct": plan}


@pytest.mark.parametrize("a, b, ge", [("580.159.04", "580.65.06", True), ("580.65.06", "580.65.06", True),
                                      ("570.133.20", "580.65.06", False), ("570.26", "570.133.20", False),
                                      ("590", "580.65.06", True), ("580", "580.65.06", False)])
def test_bash_version_comparison_is_numeric(a, b, ge):
    script = script_runtime._VERSION_GE + f'\nfleet_ge {a} {b}'
    assert (subprocess.run(["bash", "-c", script]).returncode == 0) is ge


def guard_result(record: str) -> subprocess.CompletedProcess:
    plan, plans = plans_for(record)
    text = script_runtime.guard(plan, plans, "a record; $(touch PWNED)") + '\necho "variant=$fleet_variant"'
    return subprocess.run(["bash", "-c", text], capture_output=True, text=True, cwd=Path.cwd())


def test_the_guard_refuses_another_cpu_architecture(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record = "thor.json" if platform.machine() == "x86_64" else "h100-pod-570.json"
    result = guard_result(record)
    assert result.returncode == 3 and result.stdout == "changed=0\n"
    assert f"REFUSED this host's CPU is {platform.machine()}, the script's decisions are for " in result.stderr
    assert "this one was made from a record; $(touch PWNED)" in result.stderr   # quoted, never run
    assert not (tmp_path / "PWNED").exists()


# The guard reads this very machine's CPU and GPUs: these two cases hold only where there is no NVIDIA
# driver on x86_64, as on CI and the development machine (both run them); a GPU machine cannot be one.
ON_A_CPU_ONLY_X86 = pytest.mark.skipif(
    platform.machine() != "x86_64" or Path("/proc/driver/nvidia/version").exists(),
    reason="needs an x86_64 machine without an NVIDIA driver, as CI and this one are")


@ON_A_CPU_ONLY_X86
def test_the_guard_refuses_a_host_without_the_facts_gpus():
    result = guard_result("h100-pod-570.json")
    assert result.returncode == 3
    assert "REFUSED this host's GPUs (compute_cap: none found by nvidia-smi) are not those of the facts (9.0)" \
        in result.stderr


@ON_A_CPU_ONLY_X86
def test_the_guard_lets_a_cpu_only_record_run_on_a_cpu_only_host():
    result = guard_result("cpu-only.json")
    assert result.returncode == 0 and result.stdout.strip().endswith("variant=direct"), result.stderr


def fleet(*argv, cwd):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True), cwd=cwd)
    return main(list(argv), env), out.getvalue(), err.getvalue()


def test_from_facts_works_offline_with_no_inventory(tmp_path):
    code, out, err = fleet("script", "--from-facts", str(RECORDS / "h100-pod-570.json"), "-o", "t.sh", cwd=tmp_path)
    assert code == 0, err
    text = (tmp_path / "t.sh").read_text()
    assert text.startswith("#!/usr/bin/env bash\n# fleet script for h100-pod-570 (root@")
    assert "case $fleet_variant in\n  direct)" in text and "\n  compat)" in text
    assert subprocess.run(["bash", "-n", str(tmp_path / "t.sh")]).returncode == 0


@pytest.mark.parametrize("argv, message", [
    (["script"], "needs an INVENTORY with --limit NAME, or --from-facts FILE"),
    (["script", "--from-facts", "missing.json"], "missing.json: cannot read the facts record"),
    (["script", "--from-facts", "bad.json"], "bad.json:1: not a JSON facts record"),
    (["script", "--from-facts", "list.json"], "not a facts record (no 'system')"),
    (["script", "--from-facts", str(RECORDS / "thor.json"), "--limit", "x"], "--limit picks a host of an inventory"),
])
def test_bad_from_facts_input_exits_2(tmp_path, argv, message):
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "list.json").write_text("[1, 2]")
    code, _, err = fleet(*argv, cwd=tmp_path)
    assert code == 2
    assert message in " ".join(err.split())
