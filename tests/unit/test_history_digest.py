"""The history store's "nothing changed" digest (fleet.store.digest_of) after issue 46's cuts: the rows of
fleet.facts.rows.flatten less the readings (fleet/facts/readings.py) and the bookkeeping, judged per path once a
process; a reading that moves leaves it as it was, a fact that changes moves it."""

import copy
import hashlib
import json
from pathlib import Path

import pytest

from fleet.facts.readings import moves_on_its_own
from fleet.facts.rows import flatten
from fleet.store import BOOKKEEPING, digest_of

RECORDS = sorted((Path(__file__).resolve().parents[2] / "bench" / "data" / "replay-lab-facts").glob("*.json"))


def _spelled_out(facts, status, exit_code):
    """The digest as its docstring defines it, every path judged afresh."""
    rows = sorted((path, value) for path, value in flatten(facts).items()
                  if not moves_on_its_own(path) and path not in BOOKKEEPING)
    return hashlib.sha256(json.dumps([rows, status, exit_code], separators=(",", ":")).encode()).hexdigest()


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_the_digest_is_the_rows_less_readings_and_bookkeeping(path):
    facts = json.loads(path.read_text())
    for _ in range(2):   # the second time every path's judgement is the kept one
        assert digest_of(facts, "ok", 0) == _spelled_out(facts, "ok", 0)
    assert digest_of(facts, "failed", 1) == _spelled_out(facts, "failed", 1) != digest_of(facts, "ok", 0)


def test_a_reading_that_moves_keeps_the_digest_and_a_changed_fact_moves_it():
    facts = json.loads(RECORDS[0].read_text())
    before = digest_of(facts, "ok", 0)
    moved = copy.deepcopy(facts)
    moved["system"]["mem_available_mb"] = 1
    for disk in moved["system"]["disks"]:
        disk["free_gb"] = 0.5
    moved["gathered_at"] = "2030-01-01T00:00:00Z"
    assert digest_of(moved, "ok", 0) == before
    changed = copy.deepcopy(facts)
    changed["system"]["kernel"] = "7.0.0-another"
    assert digest_of(changed, "ok", 0) != before
