"""bench/h200/bootstrap_time.sh's records (issue 50, item 1): a pod from its SSH line to "verify passed" with nothing
to download, this tree against the one before, interleaved on one machine. Read from rounds.jsonl as the script wrote
it: the lab's (tests/data/lab-bootstrap-time) and, once the lead has run it on the lent H200, the H200's
(tests/data/h200-device/bootstrap-time*: copy the run's $OUT there and add its figures to MEASURED)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
FOLDERS = [DATA / "lab-bootstrap-time"] + sorted(p.parent for p in DATA.glob("h200-device/bootstrap-time*/rounds.jsonl"))

# per folder: (tree, perf) -> (median wall s, median facts+apply s, remote commands), as measured
MEASURED = {
    "lab-bootstrap-time": {("before", "off"): (25.01, 13.04, 7), ("after", "off"): (19.01, 6.56, 6)},
    # the lent one-GPU H200 (bench/h200/bootstrap_time.sh 2 7a5130c): 7a5130c against this tree, 2 rounds each
    "bootstrap-time": {("before", "on"): (14.46, 8.22, 7), ("before", "off"): (9.29, 5.71, 7),
                       ("after", "on"): (6.96, 0.39, 6), ("after", "off"): (4.22, 0.43, 6)},
}


def runs(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "rounds.jsonl").read_text().splitlines() if line.strip()]


# the phases each change cut: renters2's (the preview's probe is the apply's) facts + apply; renters3's (the GPUs'
# health read off that first probe: no command of its own, tests/data/h200-device/bootstrap-time-health, made by
# `bash bench/h200/bootstrap_time.sh 3 bbde41a`) health + facts
CUT = {"bootstrap-time-health": ("health", "facts")}


def cut(folder: Path, row: dict) -> float:
    return sum(row["phases"].get(name, 0.0) for name in CUT.get(folder.name, ("facts", "apply")))


def medians(folder: Path, rows: list[dict]) -> tuple[float, float, float]:
    return (round(statistics.median(r["wall"] for r in rows), 2),
            round(statistics.median(cut(folder, r) for r in rows), 2),
            statistics.median(r["remote_commands"] for r in rows))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(DATA)))
def test_every_bootstrap_verified_and_this_tree_asks_the_pod_once_less(folder):
    rows = runs(folder)
    assert rows and all(r["exit"] == 0 and r["verify_passed"] is True and r["error"] is None for r in rows), rows
    # the same pod each time: fleet's own files put back (env hooks, CUTLASS), nothing downloaded
    assert len({r["changed"] for r in rows}) == 1, rows
    for perf in {r["perf"] for r in rows}:
        before = [r for r in rows if r["tree"] == "before" and r["perf"] == perf]
        after = [r for r in rows if r["tree"] == "after" and r["perf"] == perf]
        assert before and after and len(before) == len(after)
        # one command fewer: the preview's probe is the apply's (renters2); the health read off it (renters3)
        assert {r["remote_commands"] for r in after} == {min(r["remote_commands"] for r in before) - 1}, rows
        assert {r["remote_commands"] for r in before} == {min(r["remote_commands"] for r in before)}, rows
        # the phases the change cut (CUT), lower in every round (the machines' noise moves the rest)
        assert max(cut(folder, r) for r in after) < min(cut(folder, r) for r in before), rows
        assert folder.name in MEASURED, (f"add {folder.name}'s medians to MEASURED: {perf}: before "
                                         f"{medians(folder, before)}, after {medians(folder, after)}")
        assert medians(folder, after) == MEASURED[folder.name][("after", perf)]
        assert medians(folder, before) == MEASURED[folder.name][("before", perf)]
