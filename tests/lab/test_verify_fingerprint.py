"""Verify by fingerprint, on a real lab host: a no-op apply reuses the last verify (no torch import, no GPU
work); a change to anything verify proved runs it again and says which; a change elsewhere does not."""

from __future__ import annotations

import json

import pytest

from helpers import ok
from test_apply_lab import fleet_json

HOST = "pod-580"


def apply(lab, *extra: str) -> dict:
    code, doc = fleet_json("apply", str(lab.inventory_path), "--limit", HOST, *extra)
    assert code == 0, json.dumps(doc, indent=1)[-3000:]
    return doc


def recorded_verify(lab) -> dict:
    return json.loads((lab.inventory.facts_dir / f"{HOST}.json").read_text())["verify"]


@pytest.fixture(scope="module")
def converged(lab, converged_fresh):
    code, doc = converged_fresh(HOST)       # a fresh host converged (conftest.py: shared with other modules)
    assert code == 0, json.dumps(doc, indent=1)[-3000:]
    return lab


def test_a_no_op_apply_reuses_verify_in_one_command(converged):
    lab = converged
    doc = apply(lab)
    assert doc["stats"][HOST]["remote_commands"] == 1
    verify = recorded_verify(lab)
    assert verify["passed"] is True and verify["reused"] is True
    assert verify["reason"].startswith("reused: nothing it proved has changed since ")
    record = json.loads((lab.inventory.facts_dir / f"{HOST}.json").read_text())
    # what only an import can tell comes from that verify, keyed by the same torch version
    assert record["torch"]["cuda_available"] is True and record["torch"]["from_verify_at"] == verify["at"]
    # ... and the probe itself imported nothing: no torch __pycache__ was written by a probe as root
    assert set(verify["fingerprint_parts"]) >= {"driver", "torch", "python", "hook", "ld.noninteractive",
                                                "ld.interactive", "ld.login", "libcuda.noninteractive"}


def test_a_change_elsewhere_does_not_rerun_verify(converged):
    lab = converged
    # (a line appended to ~/.bashrc would move fleet's end guard back down: a change, and verify after it)
    ok(lab, HOST, "echo notes > ~/notes.txt; touch /etc/motd; sed -i '1i # a comment' ~/.bashrc")
    apply(lab)
    assert recorded_verify(lab)["reused"] is True


@pytest.mark.parametrize("change, undo, named", [
    # at the top (before the non-interactive return), where fleet's hooks leave it be (they run after it and
    # keep what is not cuda-compat)
    ("sed -i '1i export LD_LIBRARY_PATH=/opt/extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}' ~/.bashrc",
     "sed -i '/\\/opt\\/extra/d' ~/.bashrc", "LD_LIBRARY_PATH of `ssh host cmd`"),
    ("f=$(ls -d /opt/fleet/venv/lib/python3*/site-packages/torch-*.dist-info/RECORD); cp $f /tmp/RECORD.bak; "
     "echo 'torch/extra.py,,' >> $f",
     "cp /tmp/RECORD.bak $(ls -d /opt/fleet/venv/lib/python3*/site-packages/torch-*.dist-info/RECORD)",
     "torch distribution"),
])
def test_a_change_to_what_verify_proved_reruns_it_and_says_what(converged, change, undo, named):
    lab = converged
    before = recorded_verify(lab)["fingerprint"]
    ok(lab, HOST, change)
    try:
        apply(lab)
        verify = recorded_verify(lab)
        assert verify["reused"] is False and verify["fingerprint"] != before
        assert verify["reason"].startswith("ran: changed since the last verify: ") and named in verify["reason"]
        apply(lab)
        assert recorded_verify(lab)["reused"] is True      # and the new fingerprint holds from then on
    finally:
        ok(lab, HOST, undo)


def test_asked_for_verify_runs_whatever_the_fingerprint_says(converged):
    lab = converged
    apply(lab)
    code, doc = fleet_json("verify", str(lab.inventory_path), "--limit", HOST)
    assert code == 0, doc
    verify = recorded_verify(lab)
    assert verify["reused"] is False and verify["reason"] == "ran: asked for (fleet verify)"
    assert [t["role"] for t in doc["hosts"][HOST]["tasks"]] == ["verify"]
    apply(lab, "--verify")
    assert recorded_verify(lab)["reason"] == "ran: asked for (--verify)"
