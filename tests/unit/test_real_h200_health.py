"""GPU health on the lent H200 (issue 36): what bench/h200/health.sh wrote there, kept under
tests/data/h200-device/health/ (health.json, load.json, cost.json). A real healthy GPU must come out healthy with
every field read, its measured bandwidths above the platform table's floors, and the check within its budget: the
health sources add under 0.2 s to a converged no-op probe, the whole check with the bandwidths under 10 s."""

import json
from pathlib import Path

import pytest

from fleet.decide.health import decide_health
from fleet.knowledge.platforms import platform

DATA = Path(__file__).parents[1] / "data" / "h200-device" / "health"
FILES = ("health.json", "load.json", "cost.json")


def load(name: str) -> dict:
    path = DATA / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run bench/h200/health.sh on the lent H200 and copy its $OUT files "
                    f"({', '.join(FILES)}) into {DATA}")
    return json.loads(path.read_text())


def host_of(doc: dict) -> dict:
    (name, host), = doc["hosts"].items()
    assert host is not None, doc.get("errors")
    return host


def test_the_real_h200_is_healthy_with_every_field_read():
    host = host_of(load("health.json"))
    assert host["verdict"] == "healthy", host["reason"]
    assert host["gpus"] == 1 and host["expected"] == {"count": 1, "model": "H200"}
    facts = host["facts"]
    assert facts["probe"]["errors"] == []
    gpu, = facts["health"]["gpus"]
    assert "H200" in gpu["name"] and gpu["uuid"].startswith("GPU-")
    assert gpu["pcie"]["gen_max"] == 5 and gpu["pcie"]["width"] == gpu["pcie"]["width_max"] == 16
    assert gpu["ecc"]["mode"] is True and gpu["ecc"]["uncorrected_volatile"] == 0
    assert gpu["remapped"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu["recovery_action"] == "None" and gpu["pcie_replay"] == 0
    assert gpu["power"]["limit"] == gpu["power"]["default"] == 700.0
    assert facts["health"]["kernel_log"] in ("dmesg", "kmsg", "journal")   # readable there (the capture: dmesg)
    assert facts["health"]["spelling"] == "event" and facts["health"]["lost"] == []
    # the verdict as fleet decides it now, from the facts that came back
    assert decide_health(facts, {"count": 1, "model": "H200"}).verdict == "healthy"


def test_the_real_bandwidths_stand_above_the_h200_floors():
    doc = load("load.json")
    row = next(p.as_dict() for p in platform("x86_64-dgpu").perf if p.match in doc["gpu"])
    bw = doc["bandwidth"]
    assert bw["h2d_gbs"] >= row["host_floor_gbs"] and bw["d2h_gbs"] >= row["host_floor_gbs"], bw
    assert bw["d2d_traffic_gbs"] / 1000 >= row["memory_floor_tbs"], bw
    assert bw["h2d_gbs"] <= row["host_gbs"] and bw["d2d_traffic_gbs"] / 1000 <= row["memory_tbs"], bw   # no miscount
    failed = [c for c in doc["checks"] if not c["passed"]]
    assert failed == [], failed
    gpu, = doc["load"]["gpus"]
    assert gpu["gen"] == gpu["gen_max"] and not set(gpu["events"]) & {"hw_slowdown", "hw_thermal_slowdown",
                                                                      "hw_power_brake_slowdown", "sw_thermal_slowdown"}
    assert gpu["sm_mhz"] > 1000                      # sampled while it worked: not the 345 MHz idle clock
    assert doc["seconds"]["bandwidth"] + doc["seconds"]["under_load"] < 10


def test_the_health_check_costs_what_the_issue_allows():
    doc = load("cost.json")
    assert doc["added_to_probe_s"] < 0.2, doc["figures"]
    assert doc["figures"]["fleet health's command"]["median_s"] < 1.0
    runs = doc["fleet_health_runs"]
    assert [r["exit"] for r in runs] == [0, 0, 0] and max(r["wall_s"] for r in runs) < 10, runs
