"""What the real H100 showed for issue 14 (tests/data/h100-device/issue14/, written by run.sh there over real
SSH): a no-op apply is one remote command that reuses verify by its fingerprint and does no GPU work while a
job holds the GPU; an asked-for verify on the busy GPU runs its functional checks and skips perf. Timings are
kept in timings.json as figures, never asserted here."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fleet.facts.record import with_last_verify

DATA = Path(__file__).resolve().parents[1] / "data" / "h100-device" / "issue14"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_a_no_op_apply_on_the_h100_is_one_command_with_no_change():
    doc = load("apply-noop.json")
    assert doc["stats"]["h100"]["remote_commands"] == 1
    assert doc["hosts"]["h100"]["changed"] == 0 and doc["hosts"]["h100"]["failed"] == 0


def test_while_a_job_holds_the_gpu_the_no_op_reuses_verify_and_starts_no_gpu_process():
    verify = load("facts-busy-noop.json")["verify"]
    assert verify["reused"] is True and verify["passed"] is True
    assert verify["reason"] == f"reused: nothing it proved has changed since {verify['at']}"
    seen = re.search(r"compute processes seen during that apply: (.*)", (DATA / "transcript.txt").read_text())[1]
    assert [p for p in seen.split(";") if p.strip()] == [seen.split(";")[0]]   # the job's process, nothing else
    parts = verify["fingerprint_parts"]
    for shell in ("noninteractive", "interactive", "login"):   # after the apply: no compat in any shell kind
        assert "compat" not in parts[f"ld.{shell}"]
        assert parts[f"libcuda.{shell}"].startswith("/usr/local/nvidia/lib64/libcuda.so.580.159.04 ")


def test_an_asked_for_verify_on_the_busy_gpu_skips_perf_and_passes():
    verify = load("facts-busy-verify.json")["verify"]
    assert verify["reused"] is False and verify["reason"] == "ran: asked for (fleet verify)"
    assert verify["passed"] is True and verify["perf"]["skipped"].startswith("perf skipped: 1 process, 59 GB")


def test_what_only_an_import_tells_is_matched_to_the_verify_by_the_imported_version():
    """The H100's dist-info says 2.11.0 while torch.__version__ is 2.11.0+cu130; this run's probe read the
    dist-info, so its facts missed the verify's answers. The probe now reads torch/version.py first."""
    facts = load("facts-after-apply.json")
    assert facts["torch"]["version"] == "2.11.0" and facts["verify"]["torch"]["version"] == "2.11.0+cu130"
    filled = with_last_verify({**facts["torch"], "version": "2.11.0+cu130"}, facts["verify"])
    assert filled["cuda_available"] is True and "sm_90" in filled["arch_list"]


def test_the_timings_are_kept_as_figures():
    timings = load("timings.json")
    assert set(timings) >= {"run_true", "facts", "noop_apply", "noop_over_floor"}
    assert all(len(timings[k]["runs_s"]) == 5 for k in ("run_true", "facts", "noop_apply"))


FINAL = DATA.parent / "issue14-final"     # the same host, after the engine's stages and the faster probe


def test_on_the_merged_code_a_no_op_is_still_one_command_reusing_verify_and_an_asked_for_verify_runs_it():
    doc = json.loads((FINAL / "apply-noop.json").read_text())
    assert doc["stats"]["h100"]["remote_commands"] == 1
    assert doc["hosts"]["h100"]["changed"] == 0 and doc["hosts"]["h100"]["failed"] == 0
    reused = json.loads((FINAL / "facts-after-apply.json").read_text())["verify"]
    assert reused["reused"] is True and reused["passed"] is True
    ran = json.loads((FINAL / "facts-after-verify.json").read_text())["verify"]
    assert ran["reused"] is False and ran["passed"] is True and ran["reason"].startswith("ran: ")
    assert ran["at"] > reused["at"]


S4 = DATA.parent / "issue14-s4" / "final"


def test_session_4_the_no_op_with_the_concurrent_probe_is_one_command_and_reuses_verify():
    noop = json.loads((S4 / "apply-noop.json").read_text())
    assert noop["stats"]["h100"]["remote_commands"] == 1 and noop["hosts"]["h100"]["changed"] == 0
    reused = json.loads((S4 / "facts-after-apply.json").read_text())["verify"]
    asked = json.loads((S4 / "facts-after-verify.json").read_text())["verify"]
    assert reused["reused"] is True and reused["passed"] is True
    assert asked["reused"] is False and asked["reason"] == "ran: asked for (fleet verify)"
    # the fingerprint's shells, read from the probe's own trace, as the earlier probe's own bash -i/-l found them
    assert reused["fingerprint_parts"] == asked["fingerprint_parts"]
    for shell in ("noninteractive", "interactive", "login"):
        assert reused["fingerprint_parts"][f"ld.{shell}"] == "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
        assert reused["fingerprint_parts"][f"libcuda.{shell}"].startswith("/usr/local/nvidia/lib64/libcuda.so.580.159.04 ")
