"""The verify program (fleet/remote/verify_host.py) with the config the engine renders, run here (no torch on this machine, so
main() stops at torch_installed): its explanations of CUDA's errors, the MIG share, check-mode and CPU-only."""

import json
from pathlib import Path

import pytest

from fleet.engine import decide_tasks
from fleet.inventory import Host
from fleet.roles import load_roles, roles_dirs

import verify_program

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"


def rendered(record: str, check_mode: bool = False, **variables) -> dict:
    """The CONFIG_JSON the verify role renders for this record's host."""
    facts = json.loads((RECORDS / f"{record}.json").read_text())
    plan = decide_tasks(load_roles(None, roles_dirs()), Host("h", address="192.0.2.1", vars=variables), facts,
                        check_mode=check_mode)
    return verify_program.config_of(next(t for t in plan.tasks if t.id == "verify.0"))


@pytest.fixture(scope="module")
def verify():
    return verify_program.fresh(rendered("h100-pod-580-compat"))


def test_without_torch_it_says_so(verify, capsys):
    assert [c["name"] for c in verify["CHECKS"]] == ["torch_installed"]


def test_803_from_a_compat_libcuda_names_the_library_and_the_fix(verify):
    text = verify["explain"]({"code": 803, "name": "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "text": "system has ...",
                              "libcuda": "/usr/local/cuda-13.0/compat/libcuda.so.1",
                              "libcuda_real": "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05",
                              "libcuda_version": "580.95.05"})
    assert text.startswith("CUDA error 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (system has ...) from "
                           "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05: the cuda-compat libcuda 580.95.05")
    # no step of the loader known: the fix names every mechanism to look at, never LD_LIBRARY_PATH alone
    assert text.endswith("fix: find what puts /usr/local/cuda-13.0/compat first (LD_PRELOAD, /etc/ld.so.preload, "
                         "LD_LIBRARY_PATH, the ld cache) and take it out")


@pytest.mark.parametrize("code, words", [
    (803, "upgraded without a reboot"), (804, "does not support it"), (35, "older than this CUDA runtime"),
    (999, "modprobe nvidia_uvm"), (100, "CUDA_VISIBLE_DEVICES"), (46, "exclusive-process")])
def test_each_driver_error_has_its_cause_and_fix(verify, code, words):
    text = verify["explain"]({"code": code, "name": "N", "text": "T", "libcuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                              "libcuda_real": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"})
    assert text.startswith(f"CUDA error {code} N (T) from /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04: ")
    assert words in text and "; fix: " in text


def test_a_libcuda_the_loader_cannot_find_is_said_so(verify):
    assert "could not be loaded" in verify["explain"]({"load_error": "libcuda.so.1: cannot open shared object file"})


def test_a_mig_slice_is_judged_as_its_share_of_the_gpu(verify):
    # NVIDIA MIG user guide: an H100/A100 has 7 compute slices; 3g.40gb is 3 of them
    assert verify["mig_share"]("NVIDIA H100 80GB HBM3 MIG 3g.40gb") == pytest.approx(3 / 7)
    assert verify["mig_share"]("NVIDIA H100 80GB HBM3") == 1.0


def test_check_mode_and_cpu_only_switch_off_what_they_must():
    assert rendered("h100-pod-580-compat")["perf"] is True
    assert rendered("h100-pod-580-compat", check_mode=True)["perf"] is False
    assert rendered("h100-pod-580-compat", verify_perf=False)["perf"] is False
    assert rendered("cpu-only")["gpu_expected"] is False and rendered("thor")["gpu_expected"] is True
    # and the program takes them so
    program = verify_program.fresh(rendered("cpu-only", check_mode=True), run=False)
    assert program["PERF"] is False and program["GPU_EXPECTED"] is False
    assert verify_program.fresh(rendered("thor"), run=False)["GPU_EXPECTED"] is True
