"""GPU, driver and Jetson facts: commands for the probe sections and their pure parsers."""

from __future__ import annotations

import re
import shlex

from fleet import remote
from fleet.knowledge import platforms
from fleet.knowledge.platforms import JETPACK_FOR_L4T

QUERY_FULL = "index,name,driver_version,compute_cap,memory.total,uuid"
# Drivers around 470 reject compute_cap: ask again without it rather than lose every GPU fact.
QUERY_OLD = "index,name,driver_version,memory.total,uuid"

# A wedged GPU can hang nvidia-smi for minutes; the gather must still come back.
_TIMEOUT = "t=; command -v timeout >/dev/null 2>&1 && t='timeout 30'"

NVIDIA_SMI = f"{_TIMEOUT}\nq={shlex.quote(QUERY_FULL)}\n" + remote.program("gpu_smi")   # QUERY_OLD made there


DRIVER = (
    "if [ -r /proc/driver/nvidia/version ]; then echo 'source proc'; cat /proc/driver/nvidia/version\n"
    "elif [ -r /sys/module/nvidia/version ]; then echo 'source sysfs'; cat /sys/module/nvidia/version\n"
    "else echo 'source none'; fi"
)

# The kernel driver proves a GPU even where nvidia-smi is missing or NVML fails: one information file per GPU,
# and the device nodes (NVIDIA driver README, "Kernel Modules" and "procfs" chapters).
KERNEL_GPUS = (
    "for f in /proc/driver/nvidia/gpus/*/information; do [ -r \"$f\" ] && { printf '@@gpu %s\\n' \"$f\"; cat \"$f\"; }; done\n"
    "for d in /dev/nvidia[0-9]* /dev/nvidiactl /dev/nvidia-uvm; do [ -e \"$d\" ] && printf '@@dev %s\\n' \"$d\"; done\n"
    "true"
)

TEGRA = "if [ -r /etc/nv_tegra_release ]; then cat /etc/nv_tegra_release; fi"
DT_MODEL = "if [ -r /proc/device-tree/model ]; then tr -d '\\000' < /proc/device-tree/model; echo; fi"

_MISSING = {"[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", ""}
_VERSION = r"\d+\.\d+(?:\.\d+)?"


def _value(text: str) -> str | None:
    text = text.strip()
    return None if text in _MISSING else text


def parse_gpu_line(line: str, fields: list[str]) -> dict:
    """One CSV line of `nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits` -> a GPU.

        0, NVIDIA H100 80GB HBM3, 580.159.04, 9.0, 81559, GPU-270f419f-...
      -> {"index": 0, "name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04",
          "compute_cap": "9.0", "memory_mb": 81559, "uuid": "GPU-270f419f-..."}
    GB10 answers "[N/A]" for memory.total (unified memory): memory_mb is then None.
    """
    values = [part.strip() for part in line.split(",")]
    if len(values) != len(fields):
        raise ValueError(f"expected {len(fields)} fields, got {len(values)}: {line.strip()!r}")
    row = dict(zip(fields, values))
    if not row["index"].isdigit():
        raise ValueError(f"not a GPU line: {line.strip()!r}")
    memory = _value(row.get("memory.total", ""))
    cap = _value(row.get("compute_cap", ""))
    return {
        "index": int(row["index"]),
        "name": _value(row["name"]),
        "driver_version": _value(row["driver_version"]),
        "compute_cap": cap if cap and re.fullmatch(r"\d+\.\d+", cap) else None,
        "memory_mb": int(float(memory)) if memory and re.fullmatch(r"\d+(\.\d+)?", memory) else None,
        "uuid": _value(row.get("uuid", "")),
    }


def parse_nvidia_smi(text: str) -> dict:
    """The nvidia_smi section -> {"gpus": [...], "rejected": message | None}.

        rejected Field "compute_cap" is not a valid field to query.
        query index,name,driver_version,memory.total,uuid
        0, Tesla V100-SXM2-16GB, 470.82.01, 16160, GPU-...
    A missing nvidia-smi gives no GPUs; a failing one (no driver loaded) raises with its message.
    """
    if "nvidia-smi: not installed" in text:
        return {"gpus": [], "rejected": None, "installed": False}
    failure = nvml_failure(text)
    if failure:
        return {"gpus": [], "rejected": None, "installed": True, "failure": failure}
    rejected = re.search(r"^rejected (.*)$", text, re.M)
    query = None
    gpus, other = [], []
    for line in text.splitlines():
        if line.startswith("query "):
            query = line[6:].strip().split(",")
        elif line.startswith("rejected ") or not line.strip():
            continue
        elif query is not None and re.match(r"\s*\d+\s*,", line):
            gpus.append(parse_gpu_line(line, query))
        else:
            other.append(line.strip())
    if not gpus and other:
        raise ValueError("nvidia-smi: " + " ".join(other)[:300])
    return {"gpus": gpus, "rejected": rejected[1].strip() if rejected else None, "installed": True}


# NVML failures that leave the GPU in place: nvidia-smi prints one of these and exits non-zero (18 is
# NVML_ERROR_LIB_RM_VERSION_MISMATCH in the NVML API reference). The mismatch is what a driver upgrade under a
# loaded kernel module leaves (tinygrad/open-gpu-kernel-modules#47 shows the output; a reboot or a module
# reload fixes it: oddmario/NVIDIA-Ubuntu-Driver-Guide#4).
_NVML_FAILURES = (r"Failed to initialize NVML: [^\n]*", r"NVIDIA-SMI has failed because it couldn't communicate[^\n]*")


def nvml_failure(text: str) -> dict | None:
    """-> {"message": "Failed to initialize NVML: Driver/library version mismatch", "mismatch": True,
    "library_version": "580.159"} for a failing nvidia-smi, else None."""
    plain = "\n".join(line for line in text.splitlines() if not line.startswith("rejected ")) or text
    for pattern in _NVML_FAILURES:
        found = re.search(pattern, plain)
        if found:
            library = re.search(r"NVML library version:\s*(\S+)", text)
            return {"message": found[0].strip(), "mismatch": "version mismatch" in found[0].lower(),
                    "library_version": library[1] if library else None}
    return None


def parse_kernel_gpus(text: str) -> dict:
    """The kernel_gpus section -> {"gpus": [{name, uuid, bus}], "devices": ["/dev/nvidia0", ...]}.

        @@gpu /proc/driver/nvidia/gpus/0000:00:07.0/information
        Model: 		 NVIDIA H100 80GB HBM3
        GPU UUID: 	 GPU-270f419f-...
        Bus Location: 	 0000:00:07.0
        @@dev /dev/nvidia0
    """
    gpus, devices = [], []
    if text.strip() and not text.lstrip().startswith("@@"):
        raise ValueError("not the kernel driver's GPU listing: " + text.strip()[:100])
    for line in text.splitlines():
        if line.startswith("@@gpu "):
            bus = line[6:].rstrip("/").split("/")[-2] if "/gpus/" in line else None
            gpus.append({"name": None, "uuid": None, "bus": bus})
        elif line.startswith("@@dev "):
            devices.append(line[6:].strip())
        elif gpus and ":" in line:
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "Model":
                gpus[-1]["name"] = value or None
            elif key == "GPU UUID":
                gpus[-1]["uuid"] = value if value and "?" not in value else None
    return {"gpus": gpus, "devices": devices}


def parse_smi_header(text: str) -> dict:
    """`nvidia-smi` table header -> {"driver_version": "580.159.04", "cuda_version": "13.0"}.

        | NVIDIA-SMI 580.159.04   Driver Version: 580.159.04     CUDA Version: 13.0     |
    "CUDA Version" follows whichever libcuda is loaded (compat changes it): informative, never decisive.
    """
    if "nvidia-smi: not installed" in text or nvml_failure(text):
        return {"driver_version": None, "cuda_version": None}
    driver = re.search(rf"Driver Version:\s*({_VERSION})", text)
    cuda = re.search(r"CUDA Version:\s*(\d+\.\d+)", text)
    if not driver:
        raise ValueError("no 'Driver Version:' in the nvidia-smi header")
    return {"driver_version": driver[1], "cuda_version": cuda[1] if cuda else None}


# nvidia-smi's driver and CUDA versions (what the table's header says: NVML's system versions), from `nvidia-smi
# --version` (20 ms on the lent H200 against the table's 105 ms and `-q -x`'s 115 ms):
#     NVIDIA-SMI version  : 580.159.04
#     NVML version        : 580.159
#     DRIVER version      : 580.159.04
#     CUDA Version        : 13.0
# The table's header is asked after it only where it has no DRIVER and CUDA lines or NVML failed (a driver whose
# nvidia-smi has no --version, or one without the CUDA line: what the table says then).
SMI_VERSION = f"{_TIMEOUT}\n" + remote.program("gpu_smi_version")   # fleet/remote/gpu_smi_version.sh


def parse_smi_versions(text: str) -> dict:
    """The smi_version section (SMI_VERSION) -> {"driver_version": "580.159.04", "cuda_version": "13.0"}, each None
    where it is not there (no nvidia-smi, NVML failing).

        NVIDIA-SMI version  : 580.159.04
        NVML version        : 580.159
        DRIVER version      : 580.159.04
        CUDA Version        : 13.0
    Where the section asked the table's header after it (`@@header`), parse_smi_header reads that. A probe of
    83fa5ab..e611fe2 carried them in its health_xml section (`-q -x`'s <driver_version>, <cuda_version>): read too.
    "CUDA Version" follows whichever libcuda is loaded (compat changes it): informative, never decisive.
    """
    answer, _, header = text.partition("@@header\n")
    if header.strip():
        try:
            return parse_smi_header(header)
        except ValueError:
            pass
    if nvml_failure(answer) or not answer.strip():
        return {"driver_version": None, "cuda_version": None}
    driver = (re.search(rf"^DRIVER version\s*:\s*({_VERSION})\s*$", answer, re.M)
              or re.search(rf"<driver_version>\s*({_VERSION})\s*</driver_version>", answer))
    cuda = (re.search(r"^CUDA Version\s*:\s*(\d+\.\d+)\s*$", answer, re.M)
            or re.search(r"<cuda_version>\s*(\d+\.\d+)\s*</cuda_version>", answer))
    if not driver:
        raise ValueError("no 'DRIVER version' in nvidia-smi --version, nor a table header after it")
    return {"driver_version": driver[1], "cuda_version": cuda[1] if cuda else None}


def parse_driver_version(text: str) -> str:
    """/proc/driver/nvidia/version or /sys/module/nvidia/version -> "580.159.04".

        NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)
        NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023
        580.159.04
    """
    match = re.search(rf"Kernel Module(?:\s+for\s+\S+)?\s+({_VERSION})\b", text)
    if match:
        return match[1]
    stripped = text.strip()
    if re.fullmatch(_VERSION, stripped):
        return stripped
    raise ValueError("no driver version in the kernel module's version file")


def parse_driver(text: str) -> dict:
    """The driver section -> {"version": "580.159.04" | None, "source": "proc" | "sysfs" | None}."""
    match = re.match(r"source (\w+)\n?", text)
    if not match:
        raise ValueError("no 'source' line")
    source = match[1]
    if source == "none":
        return {"version": None, "source": None}
    return {"version": parse_driver_version(text[match.end():]), "source": source}




def jetpack_for_l4t(l4t: str | None) -> str | None:
    """"38.2" -> "7.0", "38.4" -> "7.1", "39.0" (any R39) -> "7.2", unknown -> None."""
    if not l4t:
        return None
    major, _, minor = l4t.partition(".")
    return JETPACK_FOR_L4T.get(f"{major}.{minor.split('.')[0]}") or JETPACK_FOR_L4T.get(major)


def parse_tegra_release(text: str) -> dict | None:
    """/etc/nv_tegra_release -> {"l4t": "38.2", "l4t_full": "38.2.0", "jetpack": "7.0"}; empty -> None.

        # R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, DATE: Mon Aug 18 2025
    """
    if not text.strip():
        return None
    match = re.search(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+(?:\.\d+)*)", text)
    if not match:
        raise ValueError("no '# R<major> (release), REVISION: x.y' line")
    revision = match[2].split(".")
    l4t = f"{match[1]}.{revision[0]}"
    full = f"{match[1]}.{match[2]}"
    return {"l4t": l4t, "l4t_full": full, "jetpack": JETPACK_FOR_L4T.get(full) or jetpack_for_l4t(l4t)}


def parse_dt_model(text: str) -> str | None:
    """/proc/device-tree/model (NULs removed) -> "NVIDIA Jetson AGX Thor Developer Kit" | None."""
    return text.strip() or None


def detect_platform(arch: str | None, kernel: str | None, gpu_names: list[str], tegra: bool,
                    has_driver: bool, l4t: str | None = None, model: str | None = None) -> str:
    """The name of the platform whose detection signs these are (fleet/knowledge/platforms.py, in its order).

    Jetson first: a tegra release file, a `-tegra` kernel or a Jetson GPU's name; its board (/proc/device-tree/model)
    tells which, else its GPU's name, else its L4T release.
    Then GB10 on aarch64 is a Spark. A loaded driver with no nvidia-smi still counts as a GPU host (the GPU is
    there, the tool is not).
    """
    return platforms.detect(arch, kernel, gpu_names, tegra, has_driver, l4t, model).name
