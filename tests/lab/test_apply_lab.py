"""`fleet apply` on a fresh lab: check lists the plan, apply changes exactly that, a second apply changes nothing.

These run the real thing: sshd per host, apt/dpkg installing the stand-in packages, pip installing the
stand-in wheels into a venv, git cloning the stand-in CUTLASS, and the real dynamic loader deciding whether
torch imports and which libcuda answers.
"""

from __future__ import annotations

import json

import pytest

from fleet.facts.software import VERIFY_PATH
from helpers import fleet, fleet_json, sh

HOSTS = ("thor", "spark", "pod-570", "pod-580")


def changed(doc: dict, host: str) -> set[tuple[str, str]]:
    return {(t["role"], t["task"]) for t in doc["hosts"][host]["tasks"] if t["status"] == "changed"}


@pytest.fixture(scope="module")
def applied(lab, fresh_apply, converged_fresh):
    """Fresh hosts, then: --check, apply, apply again (conftest.py's fresh_apply, shared with
    test_check_plan_lab.py and test_output_budget_lab.py). Each step's JSON document (its run log's, for the first
    two) is kept for the tests; the tests below that ask the hosts need them converged: a host reset since those
    runs (another module ran in between) is put back as that apply left it (converged_fresh.restore)."""
    runs = {name: fresh_apply[name][:2] for name in ("check", "first", "second")}
    converged_fresh.restore([name for name in HOSTS if sh(lab, name, f"test -e {VERIFY_PATH}").exit != 0])
    return lab, runs


def test_check_plans_and_apply_changes_exactly_that(applied):
    _, runs = applied
    code, check = runs["check"]
    assert code == 0, check
    code, first = runs["first"]
    assert code == 0, json.dumps(first, indent=1)[-4000:]
    for host in HOSTS:
        assert check["hosts"][host]["check"] is True
        planned = changed(check, host) - {("verify", "torch works on this GPU")}
        assert planned, f"{host}: a fresh host must need something"
        assert changed(first, host) == planned, host
        assert first["hosts"][host]["failed"] == 0, first["hosts"][host]


def test_second_apply_changes_nothing_in_at_most_three_commands(applied):
    _, runs = applied
    code, second = runs["second"]
    assert code == 0
    for host in HOSTS:
        assert second["hosts"][host]["changed"] == 0, second["hosts"][host]["tasks"]
        assert second["hosts"][host]["failed"] == 0
        assert second["stats"][host]["remote_commands"] <= 3, second["stats"][host]


def test_thor_torch_imports_because_nvpl_and_cudss_are_found(applied):
    lab, _ = applied
    inv = str(lab.inventory_path)
    code, doc = fleet_json("run", inv, "--limit", "thor", "--", "/opt/fleet/venv/bin/python -c 'import torch; print(torch.__version__)'")
    assert code == 0, doc
    # Without the hook's LD_LIBRARY_PATH the same install fails the way the real one does: NVPL first.
    code, doc = fleet_json("run", inv, "--limit", "thor", "--",
                           "env -u LD_LIBRARY_PATH /opt/fleet/venv/bin/python -c 'import torch'")
    assert code == 1
    assert "libnvpl_lapack_lp64_gomp.so.0" in doc["hosts"]["thor"]["stderr"]


PROBE = ("/opt/fleet/venv/bin/python -c 'import os, torch; "
         "print(torch.cuda.is_available(), os.environ.get(\"LD_LIBRARY_PATH\", \"\"))'")


def test_pod_570_has_cuda_through_compat_first_on_the_path(applied):
    lab, _ = applied
    code, doc = fleet_json("run", str(lab.inventory_path), "--limit", "pod-570", "--", PROBE)
    assert code == 0, doc
    available, path = doc["hosts"]["pod-570"]["stdout"].split()
    assert available == "True"
    assert path.split(":")[0] == "/usr/local/cuda-13.0/compat"


@pytest.mark.parametrize("host", ["pod-580", "spark"])
def test_new_driver_hosts_have_cuda_without_compat(applied, host):
    lab, _ = applied
    code, doc = fleet_json("run", str(lab.inventory_path), "--limit", host, "--", PROBE)
    assert code == 0, doc
    available, *path = doc["hosts"][host]["stdout"].split()
    assert available == "True"
    assert "compat" not in "".join(path)


def test_recorded_facts_show_verify_passed(applied):
    lab, _ = applied
    for host in HOSTS:
        record = json.loads((lab.inventory.facts_dir / f"{host}.json").read_text())
        assert record["verify"]["passed"] is True, (host, record["verify"])
        assert record["torch"]["cuda_available"] is True, host
