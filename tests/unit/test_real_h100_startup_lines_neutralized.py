"""Issue 11 on the real H100 (driver 580.159.04, cuda-compat 580.95.05 installed), reached over real SSH
(the carried sshd), run by tests/data/h100-device/issue11/run.sh on 2026-11-22: the transcripts and records
it wrote, unedited. Traps set by hand: a compat export in /etc/rp_environment sourced at the top of
~/.bashrc, and a pod_setup.sh sourced at its end; then a job holding 59 GB of the GPU."""

import json
import re
from pathlib import Path

import pytest

from fleet.engine import probe
from fleet.facts import gpu, shells
from fleet.sections import split_sections

DATA = Path(__file__).resolve().parents[1] / "data" / "h100-device" / "issue11"
COMPAT_LIB = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
DRIVER_LIB = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@pytest.fixture(scope="module")
def transcript() -> list[str]:
    """The transcript cut into steps: '$ command' then its output and '[exit N]'."""
    return re.split(r"\n(?=\$ |# )", (DATA / "transcript.txt").read_text())


def shell_checks(step: str) -> dict[str, tuple[int, str]]:
    rows = re.findall(r"^(ssh host cmd|bash -i)\s*: cuInit (\d+) torch.cuda.is_available (\w+) libcuda (\S+)", step, re.M)
    return {kind: (int(code), avail, lib) for kind, code, avail, lib in rows}


def test_before_both_shells_got_803_from_the_compat_libcuda(transcript):
    runs = [s for s in transcript if s.startswith("$ F run")]
    before = shell_checks(runs[0])
    assert before == {"ssh host cmd": (803, "False", COMPAT_LIB), "bash -i": (803, "False", COMPAT_LIB)}


def test_after_apply_both_shells_get_cuda_from_the_driver_libcuda(transcript):
    after = shell_checks([s for s in transcript if s.startswith("$ F run")][1])
    assert after == {"ssh host cmd": (0, "True", DRIVER_LIB), "bash -i": (0, "True", DRIVER_LIB)}


def test_check_before_names_the_lines_and_the_803(transcript):
    check = next(s for s in transcript if s.startswith("$ F apply") and "--check" in s.splitlines()[0])
    assert "neutralizes ~/.bashrc:1 (via /etc/rp_environment:1) puts /usr/local/cuda-13.0/compat first: error 803" in check
    assert "(via ~/pod_setup.sh:1) puts /usr/local/cuda-13.0/compat first" in check
    assert f"CUDA error 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (system has unsupported display driver / cuda driver " \
           f"combination) from {COMPAT_LIB}" in check


def test_the_facts_after_apply_name_each_neutralized_line_and_every_shell_is_clean():
    facts = load("facts-after-apply.json")
    lines = {line["origin"]: line for line in facts["env"]["compat_lines"]}
    assert set(lines) == {"/etc/rp_environment:1", "~/pod_setup.sh:1"}
    assert lines["/etc/rp_environment:1"]["shells"] == ["noninteractive", "interactive", "login"]
    assert lines["~/pod_setup.sh:1"]["shells"] == ["interactive"]
    assert all(line["harm"].startswith("error 803 under driver 580.159.04") for line in lines.values())
    for kind in shells.KINDS:
        assert facts["shells"][kind]["LD_LIBRARY_PATH"] == "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
    cuda = facts["verify"]["cuda"]
    assert {k: (v["code"], v["libcuda_real"]) for k, v in cuda.items()} == {
        "noninteractive": (0, DRIVER_LIB), "interactive": (0, DRIVER_LIB)}


def test_the_second_apply_changed_nothing_in_one_command():
    doc = load("apply-noop.json")
    assert doc["hosts"]["h100"]["changed"] == 0 and doc["hosts"]["h100"]["failed"] == 0
    assert doc["stats"]["h100"]["remote_commands"] == 1


def test_a_busy_gpu_skipped_perf_and_the_apply_exited_0(transcript):
    busy = load("facts-busy.json")["verify"]
    assert busy["passed"] and busy["perf"]["skipped"] == "perf skipped: 1 process, 59 GB in use, 100 % busy"
    assert busy["perf"]["look"]["processes"] == 1 and busy["perf"]["look"]["used_mb"] > 58 * 1024
    step = next(s for s in transcript if "perf skipped:" in s)
    assert step.rstrip().endswith("[exit 0]") and "in state: nothing to change" in step


def test_idle_perf_is_the_standard_case_within_floor_and_peak():
    for name in ("facts-after-apply.json", "facts-idle.json"):
        perf = load(name)["verify"]["perf"]
        assert perf["full_size"] and perf["attention_case"] == "B=16 H=96 S=4096 D=128 fp16 causal"
        assert perf["matmul_floor"] < perf["matmul_tflops"] < perf["peak_tflops"]
        assert perf["attention_floor"] < perf["attention_tflops"] < perf["peak_tflops"]
        assert perf["free_gb"] * 0.1 * 2**30 >= 4 * 16 * 96 * 4096 * 128 * 2   # fits the 10 % share


def test_the_real_probe_parses_without_errors_and_the_kernel_names_the_gpu():
    sections = split_sections((DATA / "probe-framed.txt").read_text())
    record = probe.parse(sections, "h100")
    # the capture predates the verify_fingerprint and loader sources (issue 23) and paths (issue 26): their absence
    # is the one error allowed (and fabric, issue 28; the pod's resources, issue 45)
    assert [e for e in record["probe"]["errors"]
            if not e.startswith(("facts.verify_fingerprint: no output", "facts.loader: no output",
                                 "facts.paths: no output", "facts.fabric: no output", "facts.health: no output",
                                 "facts.health_xml: no output", "facts.xid: no output", "facts.programs: no output",
                                 "facts.smi_version: no output", "facts.resources: no output"))] == []
    kernel = gpu.parse_kernel_gpus(sections["facts.kernel_gpus"].output)
    assert kernel["gpus"] == [{"name": "NVIDIA H100 80GB HBM3", "uuid": record["gpus"][0]["uuid"],
                               "bus": "0000:00:06.0"}]
    assert kernel["devices"] == ["/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"]
    assert all(record["shells"][k]["rc"] == 0 for k in shells.KINDS)
