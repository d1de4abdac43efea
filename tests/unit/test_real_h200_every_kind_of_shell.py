"""Issue 35 on the lent H200 (bench/h200/shells.sh; the lead copies its $OUT to tests/data/h200-device/shells/):
after a converged apply, the issue's traps and two of the family set by hand, `fleet apply`, and every kind asked by a
plain SSH client. Read back: python3 imports the venv's torch with CUDA and nvcc is the toolkit's in every kind once
applied; a hidden GPU fails apply naming the variable, its value and the file:line, in the kinds the host shows
without it; a distribution taken out of the venv refused reuse; cleaned, the host passes again."""

import json
from pathlib import Path

import pytest

D = Path(__file__).resolve().parents[1] / "data" / "h200-device" / "shells"
FILES = ("shells-transcript.txt", "shells-answers.json")
TOOLKIT = "/usr/local/cuda-13.0"


@pytest.fixture(scope="module")
def rows():
    missing = [name for name in FILES if not (D / name).is_file()]
    assert not missing, (f"no H200 record {', '.join(missing)} in {D}: run bench/h200/shells.sh on the lent H200 and "
                         f"copy its $OUT files there")
    out = [json.loads(line) for line in (D / "shells-answers.json").read_text().splitlines() if line.strip()]
    return {(r["phase"], r.get("kind", "apply")): r for r in out}


def kinds(rows, phase):
    return {kind: rows[(phase, kind)] for kind in ("ssh", "interactive", "login", "bare")}


def test_converged_and_clean_every_kind_reaches_the_proved_torch_and_toolkit(rows):
    for phase in ("converged", "clean"):
        assert rows[(phase, "apply")]["apply_exit"] == 0, rows[(phase, "apply")]
        for kind, seen in kinds(rows, phase).items():
            assert seen["torch"]["cuda"] is True and seen["torch"]["count"] >= 1, (phase, kind, seen)
            if kind != "bare":
                assert seen["python3"].endswith("/bin/python3") and seen["python3"] != "/usr/bin/python3", seen
                assert seen["torch"]["file"].startswith(seen["python3"][:-len("bin/python3")]), seen
                assert seen["nvcc"] == f"{TOOLKIT}/bin/nvcc" and seen["cuda_home"] == TOOLKIT, (phase, kind, seen)


def test_a_hidden_gpu_fails_apply_naming_the_variable_value_and_line(rows):
    a = rows[("a", "apply")]
    assert a["apply_exit"] != 0 and a["verify"] == "failed", a
    assert "CUDA_VISIBLE_DEVICES='1' leaves none of the host's 1 GPU(s) visible" in a["verify_reason"]
    assert "set at ~/.bashrc:1" in a["verify_reason"] and "ld cache" not in a["verify_reason"]
    for kind in ("ssh", "interactive", "login"):     # as the host shows it, before and after: fleet leaves the line
        assert rows[("a-before", kind)]["torch"]["cuda"] is False and rows[("a-after", kind)]["torch"]["cuda"] is False
    assert rows[("a-after", "bare")]["torch"]["cuda"] is True
    b = rows[("b", "apply")]
    assert b["apply_exit"] != 0
    assert "CUDA_VISIBLE_DEVICES='GPU-00000000-dead-beef-0000-000000000000'" in b["verify_reason"]
    assert "set at /etc/bash.bashrc:1" in b["verify_reason"]
    assert "CUDA_VISIBLE_DEVICES='' leaves none" in b["verify_reason"]
    assert "/etc/profile.d/zz-fleet-bench-visible.sh:2" in b["verify_reason"]


def test_another_toolkits_nvcc_first_is_the_toolkits_after_apply(rows):
    before = rows[("a-before", "interactive")]
    assert before["nvcc"] == "/opt/fleet-bench/cuda-12.4/bin/nvcc" and "12.4" in before["cuda_home"], before
    for kind in ("ssh", "interactive", "login"):
        after = rows[("a-after", kind)]
        assert after["nvcc"] == f"{TOOLKIT}/bin/nvcc" and after["cuda_home"] == TOOLKIT, (kind, after)
        assert "release 13." in (after.get("nvcc_version") or ""), after


def test_a_distribution_out_of_the_venv_refused_reuse_and_a_reused_verdict_says_what_it_compared(rows):
    p = rows[("p", "apply")]
    assert p["apply_exit"] == 0 and p["verify"] == "passed", p
    assert p["record_reason"].startswith("ran: changed since the last verify: ") and \
        "packages beside torch" in p["record_reason"], p["record_reason"]
    converged = rows[("converged", "apply")]["record_reason"]
    if converged.startswith("reused: "):
        assert "(compared: " in converged and "CUDA_VISIBLE_DEVICES" in converged, converged


def test_the_first_apply_passed_or_named_the_missing_pip_with_its_fix(rows):
    first = rows[("first", "apply")]
    assert first["apply_exit"] == 0 or ("the venv has no pip" in first["verify_reason"]
                                        and "ensurepip" in first["verify_reason"]), first
