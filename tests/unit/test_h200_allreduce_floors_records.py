"""Issue 48's floors on the lent multi-GPU H200s: what bench/h200/multi_verify.sh records there (copied by the lead to
tests/data/h200-multi/floors-x2/ and floors-x4/, by the GPU count its first note shows), checked here for every such
directory the repository holds: RUNS forced verifies with no false failure and no false degraded verdict, each judged
by the row of its GPU count with NVLink SHARP off (as the lent machines must keep it), the message size and each
part's seconds recorded within the 60 s budget; NCCL_P2P_DISABLE=1 in ~/.bashrc failing with the variable named
(not the fabric), and in ~/.profile failing the login kind alone; a user's own all-reduce in each kind, asked by a
plain SSH client (bench/h200/ask_allreduce.py), slow exactly where fleet says."""

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "data" / "h200-multi"
SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "h200" / "multi_verify.sh"


def recorded():
    return sorted(d for d in HERE.glob("floors-x*") if (d / "runs.jsonl").exists())


def _runs(d):
    return {r["run"]: r for r in map(json.loads, (d / "runs.jsonl").read_text().splitlines())}


def _asked(text, after):
    """The user's all-reduce per kind, from the ask_allreduce lines that follow the note `after`."""
    part = text[text.index(after):]
    return {a["kind"]: a for a in (json.loads(line) for line in part.splitlines()[1:5] if line.startswith("{"))}


def test_the_script_writes_what_this_test_reads():
    text = SCRIPT.read_text()
    assert "tests/data/h200-multi/floors-x2/" in text and "runs.jsonl" in text and "summary.json" in text
    for label in ("p2p-disabled-bashrc", "p2p-disabled-profile", "after"):
        assert f'forced "{label}"' in text


def test_every_recorded_machine_passed_every_run_within_its_row_and_budget():
    for d in recorded():
        gpus = int(re.search(r"floors-x(\d+)", d.name)[1])
        runs = [r for name, r in _runs(d).items() if name.isdigit()]
        assert len(runs) >= 20 and all(r["exit"] == 0 and r["passed"] for r in runs), d
        for r in runs:
            ar = r["links"]["allreduce"]
            assert ar["verdict"] == "passed" and ar["row"]["gpus"] == gpus and not ar["row"]["nvls"], (d, r["run"])
            assert ar["nvls"]["enabled"] is False and ar["busbw"] >= ar["row"]["warn"], (d, r["run"])
            assert r["links"]["time"]["within_budget"] and r["links"]["time"]["total_s"] <= 60, (d, r["run"])
        summary = json.loads((d / "summary.json").read_text())
        assert summary["passed"] == len(runs) and summary["busbw"]["min"] >= runs[0]["links"]["allreduce"]["row"]["warn"]


def test_nccl_kept_off_nvlink_by_hand_fails_naming_the_variable_in_the_kind_that_has_it():
    for d in recorded():
        runs, text = _runs(d), (d / "transcript.txt").read_text()
        bashrc, profile, after = runs["p2p-disabled-bashrc"], runs["p2p-disabled-profile"], runs["after"]
        check = next(c for c in bashrc["failed"] if c["name"] == "allreduce")
        assert bashrc["exit"] == 1 and bashrc["links"]["allreduce"]["verdict"] == "failed", d
        assert "NCCL_P2P_DISABLE=1" in check["detail"] and "fabric manager" not in check["detail"], d
        login = next(c for c in profile["failed"] if c["name"] == "allreduce_login")
        assert profile["exit"] == 1 and "NCCL_P2P_DISABLE=1" in login["detail"], d
        assert [c["name"] for c in profile["failed"]] == ["allreduce_login"], d
        assert after["exit"] == 0 and after["passed"], d
        # the premise, asked of the machine by a plain SSH client: the user's own all-reduce is slow where fleet says
        clean = _asked(text, "# a user's all-reduce in each kind, asked by a plain SSH client (bench/h200/ask_allreduce"
                             ".py): converged")
        in_bashrc = _asked(text, "NCCL_P2P_DISABLE=1 in ~/.bashrc\n")
        in_profile = _asked(text, "NCCL_P2P_DISABLE=1 in ~/.profile\n")
        fast = min(a["busbw"] for a in clean.values())
        assert all(in_bashrc[k]["busbw"] < fast / 4 for k in ("ssh host cmd", "bash -i")), d
        assert in_profile["bash -l"]["busbw"] < fast / 4 and in_profile["ssh host cmd"]["busbw"] > fast * 0.8, d
