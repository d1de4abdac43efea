"""The lent H100's records of 2026-11-25's second session (tests/data/h100-device/session3): read back, they say
what the note says, and what the probe parses from the real fabric query is what its parser gives."""

import gzip
import json
from pathlib import Path

from fleet.facts import fabric

D = Path(__file__).resolve().parents[1] / "data" / "h100-device" / "session3"


def test_the_no_op_was_one_command_with_nothing_changed_and_verify_reused():
    noop = json.loads((D / "noop.json").read_text())
    (host,) = noop["hosts"]
    assert noop["hosts"][host]["changed"] == 0 and noop["hosts"][host]["failed"] == 0
    assert noop["stats"][host]["remote_commands"] == 1
    first = json.loads((D / "first.json").read_text())
    assert first["hosts"][host]["verify"] == "passed" and first["hosts"][host]["failed"] == 0


def test_the_converged_probe_travelled_gzipped_and_the_recording_is_whole():
    rows = [json.loads(line) for line in gzip.open(D / "replay-h100.jsonl.gz", "rt")]
    assert [r["exit"] for r in rows] == [0, 0, 0]
    probe, facts, run = rows
    assert "gzip -dc" in probe["command"] and len(probe["stdin"]) < 60_000
    assert "gzip -dc" not in run["command"]
    assert "@@fleet:end facts.fabric 0@@" in probe["stdout"]


def test_the_real_fabric_query_line_parses_as_no_fabric():
    transcript = (D / "transcript.txt").read_text()
    line = next(x for x in transcript.splitlines() if x.startswith("00000000:00:06.0, "))
    four = ", ".join(line.split(", ")[:4])           # the probe asks four of the five fields the transcript shows
    (one,) = fabric.parse_fabric_query(f"csv {four}\n")
    assert one == {"bus": "00000000:00:06.0", "state": None, "status": None, "clique": None}
    assert fabric.fabric_ready(one) is None
    assert "query 0.02" in transcript and "-q 0.1" in transcript
