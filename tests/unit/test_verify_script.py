"""The verify program (fleet/remote/verify/) with the config the engine renders, run here (no torch on this machine, so
main() stops at torch_installed): its explanations of CUDA's errors, the MIG share, check-mode and CPU-only."""

import json
from pathlib import Path

import pytest

from fleet.engine import decide_tasks
from fleet.inventory import Host
from fleet.roles import load_roles, roles_dirs

import verify_program
from fleet.remote.verify import explain, perf

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
    assert [c["name"] for c in verify.checks] == ["torch_installed"]


def test_803_from_a_compat_libcuda_names_the_library_and_the_fix(verify):
    text = explain.explain(verify, {"code": 803, "name": "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "text": "system has ...",
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
    text = explain.explain(verify, {"code": code, "name": "N", "text": "T",
                                    "libcuda": "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                    "libcuda_real": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"})
    assert text.startswith(f"CUDA error {code} N (T) from /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04: ")
    assert words in text and "; fix: " in text


def test_a_libcuda_the_loader_cannot_find_is_said_so(verify):
    said = explain.explain(verify, {"load_error": "libcuda.so.1: cannot open shared object file"})
    assert "could not be loaded" in said


def test_a_mig_slice_is_judged_as_its_share_of_the_gpu(verify):
    # NVIDIA MIG user guide: an H100/A100 has 7 compute slices; 3g.40gb is 3 of them
    assert perf.mig_share("NVIDIA H100 80GB HBM3 MIG 3g.40gb") == pytest.approx(3 / 7)
    assert perf.mig_share("NVIDIA H100 80GB HBM3") == 1.0


def test_check_mode_and_cpu_only_switch_off_what_they_must():
    assert rendered("h100-pod-580-compat")["perf"] is True
    assert rendered("h100-pod-580-compat", check_mode=True)["perf"] is False
    assert rendered("h100-pod-580-compat", verify_perf=False)["perf"] is False
    assert rendered("cpu-only")["gpu_expected"] is False and rendered("thor")["gpu_expected"] is True
    # and the program takes them so
    program = verify_program.fresh(rendered("cpu-only", check_mode=True), run=False)
    assert program.config.perf is False and program.config.gpu_expected is False
    assert verify_program.fresh(rendered("thor"), run=False).config.gpu_expected is True


def test_the_installed_program_carries_the_loaders_rules_and_runs_where_fleet_is_not(tmp_path):
    """The file the host gets (fleet/resources/verify.py: verify_program) run by a Python that cannot import fleet
    (-I -S: no site-packages): it answers, the other kinds' probe answers, every module it carries imports there, and
    its rules and trace reader are the bundled text of fleet/remote/loader_rules.py and trace.py, the modules the
    facts parse with."""
    import subprocess
    import sys

    from fleet import remote
    from fleet.remote import loader_rules
    from fleet.resources.verify import verify_program

    program = verify_program()
    path = tmp_path / program.file
    path.write_text(program.text)
    run = subprocess.run([sys.executable, "-I", "-S", str(path), "{}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and [c["name"] for c in json.loads(run.stdout)["checks"]] == ["torch_installed"]
    probe = subprocess.run([sys.executable, "-I", "-S", str(path), "--cuda-probe", "13000"], capture_output=True,
                           text=True, timeout=120)
    assert probe.stdout.startswith("@@fleet-cuda {"), probe
    change = "@@change\t1\t/root/.bash_profile\t2\t/usr/lib\t/usr/local/cuda-13.0/compat:/usr/lib\texport X\t"
    code = (f"import importlib, runpy; ns = runpy.run_path({str(path)!r}); "
            "[importlib.import_module('fleet_remote.' + name) for name in ns['_BUNDLED']]; "
            "from fleet_remote import loader_rules as r, trace; "
            f"print(r.__name__, r.startup_line([r.parse_change({change!r})], '/usr/local/cuda-13.0/compat', '/root'), "
            "trace.loader_rules is r)")
    asked = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert asked.stdout.split() == ["fleet_remote.loader_rules", "~/.bash_profile:2", "True"], asked
    bundled = json.loads(subprocess.run([sys.executable, "-I", "-S", "-c", f"import json, runpy; print(json.dumps("
                                         f"runpy.run_path({str(path)!r})['_BUNDLED']))"], capture_output=True,
                                        text=True, timeout=120).stdout)
    assert bundled["loader_rules"] == remote.source("loader_rules") and bundled["trace"] == remote.source("trace")
    assert set(bundled) == {"families", "loader_rules", "resolve_rules", "trace", "tables", *remote.package("verify")}
    assert loader_rules.startup_line([loader_rules.parse_change(change)], "/usr/local/cuda-13.0/compat", "/root") \
        == "~/.bash_profile:2"
