"""GPU, driver and Jetson parsers: the real H100 capture plus the Thor, GB10 and old-driver formats."""

import re
from pathlib import Path

import pytest

from fleet.facts import gpu

CAPTURED = Path(__file__).parents[1] / "data" / "captured"
FULL = gpu.QUERY_FULL.split(",")


def fixture(host: str, source: str) -> str:
    return (CAPTURED / host / f"{source}.txt").read_text()


def captured_block(name: str) -> str:
    text = (CAPTURED / "h100-device" / "probe.txt").read_text()
    return re.search(rf"^== {re.escape(name)}\n(.*?)(?=^== |\Z)", text, re.M | re.S)[1]


def test_real_h100_query_line():
    line = captured_block("nvidia-smi").strip()
    assert gpu.parse_gpu_line(line, FULL) == {
        "index": 0, "name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04", "compute_cap": "9.0",
        "memory_mb": 81559, "uuid": "GPU-270f419f-43bf-663b-3c9a-c3be552893cf"}


def test_real_h100_section():
    parsed = gpu.parse_nvidia_smi(fixture("h100", "nvidia_smi"))
    assert parsed["rejected"] is None
    assert [g["compute_cap"] for g in parsed["gpus"]] == ["9.0"]


def test_gb10_memory_not_available():
    (spark,) = gpu.parse_nvidia_smi(fixture("gb10", "nvidia_smi"))["gpus"]
    assert spark["name"] == "NVIDIA GB10"
    assert spark["compute_cap"] == "12.1"
    assert spark["memory_mb"] is None


def test_thor_line():
    (thor,) = gpu.parse_nvidia_smi(fixture("thor", "nvidia_smi"))["gpus"]
    assert (thor["name"], thor["compute_cap"], thor["driver_version"]) == ("NVIDIA Thor", "11.0", "580.00")


def test_old_driver_rejects_compute_cap():
    parsed = gpu.parse_nvidia_smi(fixture("old-driver", "nvidia_smi"))
    assert 'Field "compute_cap" is not a valid field' in parsed["rejected"]
    assert [g["index"] for g in parsed["gpus"]] == [0, 1]
    assert all(g["compute_cap"] is None and g["memory_mb"] == 16160 for g in parsed["gpus"])
    assert parsed["gpus"][0]["driver_version"] == "470.82.01"


def test_nvidia_smi_missing_is_no_gpus():
    assert gpu.parse_nvidia_smi("nvidia-smi: not installed\n")["gpus"] == []


def test_nvidia_smi_without_driver_keeps_its_message():
    text = ("rejected NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
            "query index,name,driver_version,memory.total,uuid\n"
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n")
    found = gpu.parse_nvidia_smi(text)
    assert found["gpus"] == [] and "couldn't communicate" in found["failure"]["message"]
    assert found["failure"]["mismatch"] is False


# What nvidia-smi prints after a driver upgrade under a loaded module (tinygrad/open-gpu-kernel-modules#47),
# as the probe's section shows it (the first query fails, so it asks again without compute_cap).
NVML_MISMATCH = ("rejected Failed to initialize NVML: Driver/library version mismatch NVML library version: 580.159 \n"
                 "query index,name,driver_version,memory.total,uuid\n"
                 "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.159\n")


def test_nvml_mismatch_is_recorded_with_the_library_version():
    found = gpu.parse_nvidia_smi(NVML_MISMATCH)
    assert found["gpus"] == [] and found["failure"] == {
        "message": "Failed to initialize NVML: Driver/library version mismatch", "mismatch": True,
        "library_version": "580.159"}
    assert gpu.parse_smi_header(NVML_MISMATCH.split("query")[1]) == {"driver_version": None, "cuda_version": None}


KERNEL_GPUS = """@@gpu /proc/driver/nvidia/gpus/0000:00:07.0/information
Model: \t\t NVIDIA H100 80GB HBM3
IRQ:   \t\t 0
GPU UUID: \t GPU-270f419f-0000-0000-0000-000000000000
Video BIOS: \t ??.??.??.??.??
Bus Type: \t PCIe
Bus Location: \t 0000:00:07.0
@@dev /dev/nvidia0
@@dev /dev/nvidiactl
"""


def test_the_kernel_driver_names_the_gpus_without_nvidia_smi():
    found = gpu.parse_kernel_gpus(KERNEL_GPUS)
    assert found == {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-270f419f-0000-0000-0000-000000000000",
                               "bus": "0000:00:07.0"}], "devices": ["/dev/nvidia0", "/dev/nvidiactl"]}
    assert gpu.parse_kernel_gpus("") == {"gpus": [], "devices": []}


def test_gpu_line_with_wrong_field_count_raises():
    with pytest.raises(ValueError, match="expected 6 fields"):
        gpu.parse_gpu_line("0, NVIDIA H100, 580.159.04", FULL)


def test_smi_header_real_h100():
    assert gpu.parse_smi_header(captured_block("nvidia-smi header")) == {
        "driver_version": "580.159.04", "cuda_version": "13.0"}


def test_smi_header_thor():
    assert gpu.parse_smi_header(fixture("thor", "nvidia_smi_header"))["driver_version"] == "580.00"


def test_proc_driver_real_h100_both_files():
    lines = captured_block("proc driver").strip().split("\n")  # the /proc file (2 lines), then the sysfs one
    assert gpu.parse_driver_version("\n".join(lines[:2])) == "580.159.04"
    assert gpu.parse_driver_version(lines[2]) == "580.159.04"
    assert gpu.parse_driver(fixture("h100", "driver")) == {"version": "580.159.04", "source": "proc"}
    assert gpu.parse_driver(fixture("h100", "driver_sysfs")) == {"version": "580.159.04", "source": "sysfs"}


@pytest.mark.parametrize("host, version", [("thor", "580.00"), ("gb10", "580.95.05"), ("old-driver", "470.82.01")])
def test_proc_driver_formats(host, version):
    assert gpu.parse_driver(fixture(host, "driver"))["version"] == version


def test_no_driver():
    assert gpu.parse_driver("source none\n") == {"version": None, "source": None}


def test_driver_garbage_raises():
    with pytest.raises(ValueError):
        gpu.parse_driver("source proc\nNVRM: something else entirely\n")


def test_tegra_release_thor():
    assert gpu.parse_tegra_release(fixture("thor", "tegra")) == {"l4t": "38.2", "l4t_full": "38.2.0", "jetpack": "7.0"}


@pytest.mark.parametrize("line, l4t, jetpack", [
    ("# R38 (release), REVISION: 4.0, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "38.4", "7.1"),
    ("# R39 (release), REVISION: 0.1, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "39.0", "7.2"),
    ("# R36 (release), REVISION: 4.3, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "36.4", "6.2"),  # Orin
    ("# R36 (release), REVISION: 4.0, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "36.4", "6.1"),
    ("# R35 (release), REVISION: 6.0, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x", "35.6", None),
])
def test_tegra_release_jetpack_table(line, l4t, jetpack):
    parsed = gpu.parse_tegra_release(line)
    assert (parsed["l4t"], parsed["jetpack"]) == (l4t, jetpack)


def test_tegra_absent_and_garbage():
    assert gpu.parse_tegra_release("") is None
    with pytest.raises(ValueError):
        gpu.parse_tegra_release("R38 something\n")


@pytest.mark.parametrize("arch, kernel, names, tegra, driver, expected", [
    ("aarch64", "6.8.12-tegra", ["NVIDIA Thor"], True, True, "jetson-thor"),
    ("aarch64", "6.8.12-tegra", [], False, False, "jetson-thor"),        # kernel alone tells
    ("aarch64", "6.8.0", ["NVIDIA Thor"], False, True, "jetson-thor"),   # GPU name alone tells
    ("aarch64", "6.11.0-1016-nvidia", ["NVIDIA GB10"], False, True, "dgx-spark"),
    ("x86_64", "6.8.0", ["NVIDIA H100 80GB HBM3"], False, True, "x86_64-dgpu"),
    ("aarch64", "6.8.0", ["NVIDIA GH200 480GB"], False, True, "sbsa-dgpu"),
    ("x86_64", "6.8.0", [], False, True, "x86_64-dgpu"),                 # driver loaded, nvidia-smi missing
    ("x86_64", "6.1.0", [], False, False, "cpu-only"),
])
def test_platform(arch, kernel, names, tegra, driver, expected):
    assert gpu.detect_platform(arch, kernel, names, tegra, driver) == expected


def test_platform_tells_orin_on_jetpack_6_from_thor():
    assert gpu.detect_platform("aarch64", "5.15.148-tegra", [], True, True, "36.4") == "jetson-orin"
    assert gpu.detect_platform("aarch64", "6.8.12-tegra", [], True, True, "38.2") == "jetson-thor"


