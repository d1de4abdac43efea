"""The session's final main on the lent H200 (tests/data/h200-device/final/, written by its run.sh there): a converged
host is one command carrying fewer bytes than main at the session's start (before/), verify passed with its load
really running on the GPU, and the timings as measured (issue 34's 1.25x is not met; the note says so)."""

import re
import statistics
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "h200-device"


def test_the_final_main_converges_in_one_command_with_fewer_bytes_than_before():
    text = (DATA / "final" / "transcript.txt").read_text()
    before = (DATA / "before" / "transcript.txt").read_text()
    sent = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", text)[1])
    was = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", before)[1])
    assert sent < was * 0.6, (sent, was)
    assert re.search(r"^h100\t13\t0\t0\t18\tpassed \(reused\)\thealthy\t[\d.]+\t1$", text, re.M), "second apply"


def test_verify_ran_its_load_on_the_real_gpu_and_passed():
    text = (DATA / "final" / "transcript.txt").read_text()
    assert re.search(r"^h100\t1\t0\t0\t0\tpassed\thealthy", text, re.M)
    batches = int(re.search(r"^batches \{'0': (\d+)\}", text, re.M)[1])
    assert batches > 0
    assert '"gen": 5.0, "gen_max": 5.0, "width": 16.0' in text


def test_the_timings_are_the_recorded_medians():
    rows: dict[str, list[float]] = {}
    for line in (DATA / "final" / "timings.txt").read_text().splitlines():
        what, value = line.split()
        rows.setdefault(what, []).append(float(value))
    assert {k: len(v) for k, v in rows.items()} == {"apply-noop": 9, "facts": 9, "run-true": 9}
    ratio = statistics.median(rows["apply-noop"]) / statistics.median(rows["run-true"])
    assert 1.0 < ratio < 2.0, ratio   # 1.61x measured; issue 34's 1.25x is not met
