"""A GPU host is a GPU host without nvidia-smi (issue 11): the kernel driver's GPUs count, an NVML version
mismatch refuses the host with its cause and fix, and CPU torch is never planned where the kernel has a driver."""

import copy
import json
from pathlib import Path

from fleet.decide import decide
from fleet.facts import gpu as gpu_facts
from fleet.facts.record import assemble

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"
MISMATCH = {"message": "Failed to initialize NVML: Driver/library version mismatch", "mismatch": True,
            "library_version": "580.159"}


def pod(**driver) -> dict:
    record = copy.deepcopy(json.loads((RECORDS / "h100-pod-570.json").read_text()))
    # as the record reads when nvidia-smi gave nothing and the kernel driver named the GPU
    record["gpus"] = [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_cap": None, "memory_mb": None,
                       "uuid": "GPU-1", "source": "kernel"}]
    record["driver"].update(driver)
    return record


def test_a_gpu_named_by_the_kernel_alone_gets_cuda_torch():
    decisions = decide(pod(nvml_error=None))
    assert decisions.refuse is None and decisions.gpu is True
    assert decisions.torch.index_url.endswith("/cu130")
    assert decisions.compat.use is True   # 570 under CUDA 13.0 on an H100 (capability from the name)


def test_an_nvml_mismatch_refuses_with_cause_and_fix():
    refuse = decide(pod(nvml_error=MISMATCH)).refuse
    assert refuse.startswith('nvidia-smi fails with "Failed to initialize NVML: Driver/library version mismatch"')
    assert "NVML 580.159" in refuse and "kernel module 570.133.20" in refuse
    assert "reboot the host, or reload the nvidia kernel modules" in refuse


def test_a_driver_without_readable_gpus_is_refused_not_given_cpu_torch():
    record = pod(nvml_error={"message": "NVIDIA-SMI has failed", "mismatch": False, "library_version": None})
    record["gpus"] = []
    decisions = decide(record)
    assert decisions.refuse and "will not plan CPU torch" in decisions.refuse
    assert "NVIDIA-SMI has failed" in decisions.refuse


def test_the_probe_record_keeps_the_gpu_when_nvml_fails():
    """From section texts to decisions: NVML mismatch output + the kernel's information files."""
    outputs = {
        "uname": "x86_64\npod\n6.8.0-51-generic\n",
        "driver": "source proc\nNVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20  Release Build\n",
        "nvidia_smi": "rejected Failed to initialize NVML: Driver/library version mismatch\nquery index,name\n"
                      "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.159\n",
        "nvidia_smi_header": "Failed to initialize NVML: Driver/library version mismatch\n",
        "kernel_gpus": "@@gpu /proc/driver/nvidia/gpus/0000:00:07.0/information\nModel: \t NVIDIA H100 80GB HBM3\n"
                       "GPU UUID: \t GPU-9\n@@dev /dev/nvidia0\n",
    }
    record = assemble(outputs, expected=list(outputs))
    assert record["platform"] == "x86_64-dgpu"
    assert record["gpus"] == [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_cap": None, "memory_mb": None,
                               "uuid": "GPU-9", "source": "kernel"}]
    assert record["driver"]["nvml_error"] == MISMATCH and record["driver"]["devices"] == ["/dev/nvidia0"]
    assert gpu_facts.nvml_failure(outputs["nvidia_smi"])["mismatch"] is True
