"""The fingerprint rules that decide whether verify runs again (fleet/verify_gate.py), without SSH; the lab
test tests/lab/test_verify_fingerprint.py runs them on a real host."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from fleet import verify_gate

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
LAST = {"passed": True, "fingerprint": "abcd", "at": (NOW - timedelta(hours=2)).isoformat()}


@pytest.mark.parametrize("last, max_age, forced, expect, why", [
    (LAST, 86400, None, "abcd", ""),
    (LAST, 3600, None, None, "the last verify is 2h old (verify_max_age 1h)"),
    (LAST, 86400, "asked for (--verify)", None, "asked for (--verify)"),
    ({**LAST, "fingerprint": None}, 86400, None, None, "no earlier verify with a fingerprint"),
    (None, 86400, None, None, "no earlier verify with a fingerprint"),
    ({**LAST, "at": "yesterday"}, 86400, None, None, "the last verify has no readable time"),
])
def test_when_verify_must_run(last, max_age, forced, expect, why):
    assert verify_gate.expectation(last, max_age, NOW, forced) == (expect, why)


@pytest.mark.parametrize("text, seconds", [("24h", 86400), ("30m", 1800), ("2d", 172800), ("90", 90), (0, 0)])
def test_max_age_durations(text, seconds):
    assert verify_gate.parse_age(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "-1h", "1w", True])
def test_bad_max_age_is_one_sentence(bad):
    with pytest.raises(ValueError, match="write e.g. 24h"):
        verify_gate.parse_age(bad)


def test_changed_parts_are_named_for_a_person():
    old = {"driver": "580.95.05", "torch": "a", "ld.interactive": "/x"}
    new = {"driver": "580.159.04", "torch": "a", "ld.interactive": "/usr/local/cuda-13.0/compat:/x"}
    assert verify_gate.changed_parts(old, new) == ["kernel driver", "LD_LIBRARY_PATH of interactive shells"]
    gate = verify_gate.Gate("ffff", new)
    assert verify_gate.run_reason("", {"fingerprint_parts": old}, gate) == (
        "changed since the last verify: kernel driver, LD_LIBRARY_PATH of interactive shells")


def run_gate(tmp_path, expect):
    check = "echo '{\"passed\": true}'; exit 0"
    res = subprocess.run(["bash", "-c", verify_gate.gated(check, str(tmp_path / "venv"), expect)],
                         capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
                                                                          "HOME": str(tmp_path)})
    return verify_gate.read(res.stdout)


def test_the_gate_runs_the_check_unless_the_host_matches_the_fingerprint(tmp_path):
    first = run_gate(tmp_path, None)
    assert not first.reused and first.output.strip() == '{"passed": true}' and len(first.fingerprint) == 16
    assert first.parts["ld.noninteractive"] == "" and first.parts["torch"].startswith("none")
    again = run_gate(tmp_path, first.fingerprint)
    assert again.reused and again.output.strip() == "" and again.fingerprint == first.fingerprint
    (tmp_path / ".bashrc").write_text("export LD_LIBRARY_PATH=/opt/extra\n")   # interactive shells change
    changed = run_gate(tmp_path, first.fingerprint)
    assert not changed.reused and changed.parts["ld.interactive"] == "/opt/extra"
    assert verify_gate.changed_parts(first.parts, changed.parts) == ["LD_LIBRARY_PATH of interactive shells"]
