"""The cuda-compat gate as roles/cuda_compat renders it: the rule's values, its version order, the resource's
check and apply, the systemd unit. What it does to a host is proven in tests/lab/test_compat_gate_lab.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fleet.decide import decide
from fleet.resources.compat_gate import DROP_IN, GATE
from fleet.roles import load_role, render_role

DATA = Path(__file__).resolve().parents[1] / "data" / "records"
ROLE = Path(__file__).resolve().parents[2] / "roles" / "cuda_compat" / "role.yaml"
HOST = {"name": "pod", "user": "root", "root": True}


def tasks_for(record: str, systemd: bool = False) -> dict:
    facts = json.loads((DATA / f"{record}.json").read_text())
    facts["system"]["systemd"] = systemd
    return {t.spec.name.split(" (")[0]: t for t in render_role(load_role(ROLE), {}, facts,
                                                              decide(facts, {}).to_json(), HOST)}


@pytest.fixture(scope="module")
def gate_text() -> str:
    return tasks_for("h100-pod-570")["the gate that re-checks the kernel driver at every start"].resource.p["content"]


def test_the_gate_carries_the_rule_fleet_decided_by(gate_text):
    assert "dir=/usr/local/cuda-13.0/compat\nbelow=580.65.06\nbranches='535.54.03 570.26'\n" in gate_text
    assert f"conf={DROP_IN}\n" in gate_text
    assert subprocess.run(["dash", "-n"], input=gate_text, text=True).returncode == 0


@pytest.mark.parametrize("a, b, older", [
    ("570.133.20", "580.65.06", True), ("580.159.04", "580.65.06", False), ("570.26", "570.133.20", True),
    ("580.95.05", "580.95.05", False), ("580.95.05", "580.159.04", True), ("570", "570.26", True),
    ("580.65.06", "580.95.05", True), ("535.54.03", "535.54.3", False)])
def test_versions_compare_number_by_number_in_posix_sh(gate_text, a, b, older):
    func = gate_text[gate_text.index("older() {"):gate_text.index("\n}\n", gate_text.index("older() {")) + 3]
    done = subprocess.run(["dash", "-c", f"{func}\nolder \"$1\" \"$2\"", "sh", a, b])
    assert (done.returncode == 0) == older


def test_the_check_says_the_package_is_pending_only_where_compat_is_decided():
    decided = tasks_for("h100-pod-570")["compat in the ld cache for every process, only under an older kernel driver"]
    assert decided.resource.p["decided"] is True
    assert "cuda-compat is not installed yet" in decided.resource.check()
    # the rendered gate itself, installed by its digest and run from there (fleet/programs.py)
    (gate_program,) = decided.resource.programs()
    assert gate_program.text == decided.resource.p["script"]
    assert decided.resource.check().rstrip().endswith(f"sh \"{gate_program.at}\" check 'fleet check'")
    assert decided.resource.apply().endswith(f"sh \"{gate_program.at}\" run 'fleet apply'")
    assert gate_program.text in decided.resource.apply() and gate_program.text not in decided.resource.check()
    kept_off = tasks_for("h100-pod-580-compat")
    gate = kept_off["compat in the ld cache for every process, only under an older kernel driver"]
    assert gate.enabled and gate.resource.p["decided"] is False
    assert "not installed yet" not in gate.resource.check()
    assert not kept_off["the gate that re-checks the kernel driver at every start"].enabled   # nothing installed


def test_systemd_hosts_get_the_unit_before_user_services_and_enabled():
    tasks = tasks_for("h100-pod-570", systemd=True)
    unit = tasks["systemd unit running the gate at every boot"]
    assert unit.enabled and unit.resource.p["path"] == "/etc/systemd/system/fleet-cuda-compat.service"
    text = unit.resource.p["content"]
    for line in ("Type=oneshot", f"ExecStart={GATE} run systemd", "Before=basic.target shutdown.target",
                 "WantedBy=multi-user.target", "DefaultDependencies=no"):
        assert line in text.splitlines(), line
    enable = tasks["fleet-cuda-compat.service enabled"].resource.p
    assert enable["unless"] == "systemctl is-enabled --quiet fleet-cuda-compat.service"
    assert not tasks_for("h100-pod-570")["systemd unit running the gate at every boot"].enabled   # a pod


def test_a_script_runs_the_installed_gate_at_its_start():
    from fleet.engine import decide_tasks
    from fleet.inventory import Host
    from fleet.roles import load_roles, roles_dirs
    from fleet.workflows.script import render_script

    facts = json.loads((DATA / "h100-pod-570.json").read_text())
    plan = decide_tasks(load_roles(None, roles_dirs()), Host("pod-570", address="192.0.2.1", user="root"), facts)
    text = render_script(plan, Host("pod-570", address="192.0.2.1", user="root"))
    start = text.index(f"if [ -x {GATE} ] && fleet_judged {GATE}; then {GATE} run fleet-script </dev/null; fi")
    assert text.index("# -- run-time guard") < start < text.index("# -- converge")   # after the guard, first
