"""bench/h200/families.sh's run on the lent H200, as its transcript says (issue 45 item 2). Ready for the data: after
the run, put families-transcript.txt and families-answers.jsonl under tests/data/h200-device/families/ and move this
file to tests/unit/test_real_h200_families.py (it is not collected from bench/).

Each claim is held to what a plain SSH client asked each kind of shell on the host, never to fleet's verdict alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "h200-device" / "families"
# set in every SSH session by the lent machine's sshd (SetEnv), which fleet's traced kinds do not start from
SESSION = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")
KIND = {"ssh": "noninteractive", "interactive": "interactive", "login": "login"}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in (DATA / "families-answers.jsonl").read_text().splitlines() if line.strip()]


def asked(rows, phase) -> dict:
    out = {}
    for r in rows:
        if r["phase"] == phase and r["what"] == "asked":
            pairs = (line[4:].split("=", 1) for line in r["raw"].splitlines() if line.startswith("var "))
            out[KIND[r["kind"]]] = {k: v for k, v in pairs if v != "@unset"}
    return out


def one(rows, phase, what) -> dict:
    return next(r for r in rows if r["phase"] == phase and r["what"] == what)


def test_each_trap_reaches_the_kinds_its_file_is_read_by(rows):
    clean, traps = asked(rows, "clean"), asked(rows, "traps")
    assert all("NCCL_P2P_DISABLE" not in v for v in clean.values())
    assert all(traps[k]["NCCL_P2P_DISABLE"] == "1" for k in KIND.values())
    assert traps["login"]["CUDA_LAUNCH_BLOCKING"] == "1" and "CUDA_LAUNCH_BLOCKING" not in traps["interactive"]
    assert traps["interactive"]["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"


def test_facts_record_what_each_kind_gets_with_its_line(rows):
    traps = asked(rows, "traps")
    for r in rows:
        if r["phase"] == "traps" and r["what"] == "facts" and r["kind"] in traps:
            recorded = {k: v for k, v in (r["families"] or {}).items() if k in traps[r["kind"]] or k in SESSION}
            expected = {k: v for k, v in traps[r["kind"]].items() if k not in SESSION}
            assert {k: v for k, v in recorded.items() if k not in SESSION} == expected, r["kind"]
    nonint = next(r for r in rows if r["phase"] == "traps" and r["what"] == "facts" and r["kind"] == "noninteractive")
    assert nonint["set_by"]["NCCL_P2P_DISABLE"] == "/root/.bashrc:1"


def test_the_trap_is_no_longer_a_reused_pass_and_verify_names_it(rows):
    assert int(one(rows, "clean", "check")["exit"]) == 0 and int(one(rows, "clean", "check")["reused"]) >= 1
    check = one(rows, "traps", "check")
    assert int(check["exit"]) != 0 and int(check["reused"]) == 0
    verify = one(rows, "traps", "verify")
    assert verify["exit"] != 0 and not verify["passed"]
    detail = {c["name"]: c["detail"] for c in verify["checks"]}
    assert "NCCL_P2P_DISABLE='1' set at ~/.bashrc:1" in detail["job_variables_ssh"]
    assert "CUDA_LAUNCH_BLOCKING='1' set at ~/.profile:" in detail["job_variables_login"]
    assert one(rows, "undone", "verify")["exit"] == 0
