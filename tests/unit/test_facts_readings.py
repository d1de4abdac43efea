"""The facts that move on their own (fleet/facts/readings.py) are left out of drift, and nothing else is; each
declaration names a path a real record has (the H100 device's record after an apply, the lent H200's health)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from fleet.facts.readings import READINGS, moves_on_its_own
from fleet.facts import rows

DATA = Path(__file__).resolve().parents[1] / "data"


def real_record() -> dict:
    record = json.loads((DATA / "h100-device" / "issue14-s4" / "final" / "facts-after-apply.json").read_text())
    health = json.loads((DATA / "h200-device" / "health" / "health.json").read_text())
    record["health"] = health["hosts"]["h100"]["facts"]["health"]   # `fleet health --json` on the lent H200
    return record


def leaves(value, prefix: str = "") -> set[str]:
    if isinstance(value, dict):
        return {p for k, v in value.items() for p in leaves(v, f"{prefix}.{k}" if prefix else k)}
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return {p for i, item in enumerate(value) for p in leaves(item, f"{prefix}.{i}")}
    return {prefix}


def test_every_declared_reading_is_a_path_of_a_real_record():
    paths = leaves(real_record())
    for declared in READINGS:
        pattern = re.compile("^" + re.escape(declared).replace(r"\*", r"\d+") + "$")
        assert any(pattern.match(p) for p in paths), declared


def test_readings_that_moved_are_no_drift_and_a_real_change_still_is():
    before = real_record()
    after = copy.deepcopy(before)
    after["health"]["kernel_log_lines"] += 3                 # another container's kernel messages
    gpu = after["health"]["gpus"][0]
    gpu["temperature"]["gpu"] += 9
    gpu["power"]["draw"] = 412.5
    gpu["clocks"]["sm"] = 1980
    gpu["clock_events"] = ["sw_power_cap"]
    gpu["pcie"]["gen"] = 1                                   # idle: the link drops its generation
    after["system"]["mem_available_mb"] -= 1000
    after["verify"]["checked_at"] = "2026-11-29T00:00:00Z"
    assert all(moves_on_its_own(p) for p, _, _ in rows.drift(before, after) + [("gathered_at", "", "")])
    assert rows.drift(before, after) == []
    after["health"]["gpus"][0]["ecc"]["uncorrected_volatile"] = 2   # a counter that says something: drift
    after["driver"]["version"] = "580.95.05"
    assert [p for p, _, _ in rows.drift(before, after)] == ["driver.version", "health.gpus.0.ecc.uncorrected_volatile"]


def test_a_reading_is_matched_whole_and_by_its_list_index_only():
    assert moves_on_its_own("health.gpus.7.temperature.gpu") and moves_on_its_own("system.disks.2.free_gb")
    assert not moves_on_its_own("health.gpus.x.temperature.gpu") and not moves_on_its_own("health.kernel_log")
    assert not moves_on_its_own("health.kernel_log_lines.extra") and not moves_on_its_own("driver.version")
