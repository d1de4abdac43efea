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


# ---- Multi-GPU pods: topology, each GPU's fabric state, NVSwitch and the fabric manager (issue 28) ----
#
# On an NVSwitch system (HGX/DGX 8-GPU baseboards) the NVIDIA Fabric Manager must run, at exactly the driver's
# version, before CUDA initialises (cudaErrorSystemNotReady, 802, until then); a GPU that fails to register with the
# fabric keeps running but loses its NVLink peers (NVIDIA Fabric Manager User Guide,
# https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html). `nvidia-smi topo -m` prints the
# links per pair (NV# = a bonded set of # NVLinks; PIX/PXB/PHB/NODE/SYS = PCIe paths of growing length, the NVML
# topology levels), `nvidia-smi -q` a "Fabric" block per GPU (State / Status / CliqueId: nvmlGpuFabricInfo_t in the
# NVML API reference). The service is nvidia-fabricmanager, its packages nvidia-fabricmanager-<branch> and
# libnvidia-nscq-<branch> (Ubuntu's fabric-manager-<branch> source package; NVIDIA's CUDA apt repository).
FABRIC_QUERY = "pci.bus_id,fabric.state,fabric.status,fabric.cliqueId"
# what it runs, at once, and prints in order: fleet/remote/gpu_fabric.sh
FABRIC = f"{_TIMEOUT}\nfq={shlex.quote(FABRIC_QUERY)}\n" + remote.program("gpu_fabric")

_LINK = re.compile(r"^NV(\d+)$")
PCIE_KINDS = ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC")


def _link(cell: str) -> dict:
    """One `topo -m` cell -> {"kind": "nvlink", "links": 18} | {"kind": "PHB"} | {"kind": "self"}."""
    found = _LINK.match(cell)
    if found:
        return {"kind": "nvlink", "links": int(found[1])}
    if cell == "X":
        return {"kind": "self"}
    return {"kind": cell if cell in PCIE_KINDS else "unknown", "cell": cell}


def parse_topology(text: str) -> dict:
    """`nvidia-smi topo -m` -> {"gpus": 8, "pairs": {"0-1": {"kind": "nvlink", "links": 18}, ...}}.

        \tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
        GPU0\t X \tNV18\t0-51\t0\t\tN/A
        GPU1\tNV18\t X \t0-51\t0\t\tN/A
    One GPU gives {"gpus": 1, "pairs": {}}; NICs (NIC0...) are columns and rows of their own, not GPUs.
    """
    # nvidia-smi underlines the header with ANSI escapes even into a pipe (tests/data/captured/h100-device/nvidia-smi)
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)
    lines = [line for line in text.splitlines() if line.strip()]
    header = next((line for line in lines if re.match(r"^\s+GPU0\b", line) or line.startswith("\tGPU0")), None)
    if header is None:
        raise ValueError("no GPU0 column in `nvidia-smi topo -m`: " + " ".join(lines)[:200])
    columns = header.split()
    gpu_columns = [i for i, name in enumerate(columns) if re.fullmatch(r"GPU\d+", name)]
    pairs: dict[str, dict] = {}
    rows = 0
    for line in lines:
        cells = line.split()
        if line is header or not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        rows += 1
        row = int(cells[0][3:])
        values = cells[1:]
        for i in gpu_columns:
            if i >= len(values):
                raise ValueError(f"short topology row: {line.strip()!r}")
            col = int(columns[i][3:])
            if col > row:
                pairs[f"{row}-{col}"] = _link(values[i])
    if rows != len(gpu_columns):
        raise ValueError(f"{rows} GPU rows for {len(gpu_columns)} GPU columns in `nvidia-smi topo -m`")
    return {"gpus": rows, "pairs": pairs}


def parse_fabric_query(text: str) -> list[dict]:
    """Each GPU's fabric registration -> one entry per GPU, in order, from the probe's query (`csv BUS, State,
    Status, CliqueId` lines) or, where the driver does not know those fields, the "Fabric" block of each GPU in
    `nvidia-smi -q` (filtered by the probe):
    {"bus": "00000000:18:00.0", "state": "Completed", "status": "Success", "clique": "32766"}; a GPU whose driver has no
    fabric block (PCIe cards, older drivers) gives state None.

        GPU 00000000:18:00.0
            Fabric
                State                             : Completed
                Status                            : Success
                CliqueId                          : 32766
    """
    gpus: list[dict] = []
    in_fabric = False
    for line in text.splitlines():
        if line.startswith("csv "):   # the probe's query of FABRIC_QUERY's fields, one GPU a line
            cells = [cell.strip() for cell in line[4:].split(",")]
            if len(cells) == 4 and re.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]", cells[0]):
                gpus.append({"bus": cells[0], "state": _value(cells[1]), "status": _value(cells[2]),
                             "clique": _value(cells[3])})
            continue
        head = re.match(r"^GPU ([0-9A-Fa-f:.]+)\s*$", line)
        if head:
            gpus.append({"bus": head[1], "state": None, "status": None, "clique": None})
            in_fabric = False
            continue
        if line.strip() == "Fabric":
            in_fabric = True
            continue
        field = re.match(r"^\s+(State|Status|CliqueId|Clique ID|ClusterUUID|Cluster UUID)\s+:\s*(.*)$", line)
        if field and gpus and in_fabric:
            key = {"State": "state", "Status": "status", "CliqueId": "clique", "Clique ID": "clique"}.get(field[1])
            if key and gpus[-1][key] is None:
                gpus[-1][key] = _value(field[2])
    return gpus


def fabric_ready(gpu: dict) -> bool | None:
    """A GPU's fabric registration: True once State is Completed with Status Success, False while it is not,
    None where the driver shows no fabric (a PCIe GPU: nothing to register)."""
    state = (gpu.get("state") or "").lower()
    if not state or state in ("n/a", "not supported"):
        return None
    return state == "completed" and (gpu.get("status") or "").lower() == "success"


def parse_fabric(text: str) -> dict:
    """The fabric section -> {"gpu_count", "pairs", "fabric": [...per GPU...], "nvswitch": bool, "nvswitch_devices",
    "container": bool, "service": "active" | "inactive" | "failed" | None, "process": bool,
    "packages": {"nvidia-fabricmanager-570": "570.172.08-1", ...}, "held": [...], "topology_error": str | None}."""
    parts: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("@@"):
            current = line[2:].strip()
            parts[current] = []
        elif current is not None:
            parts[current].append(line)
    if "nvswitch" not in parts:
        raise ValueError("no '@@nvswitch' part in the fabric section")
    out: dict = {"gpu_count": 0, "pairs": {}, "topology_error": None, "fabric": []}
    if "topo" in parts:
        topo_text = "\n".join(parts["topo"])
        try:
            topology = parse_topology(topo_text)
            out["gpu_count"], out["pairs"] = topology["gpus"], topology["pairs"]
        except ValueError as exc:
            out["topology_error"] = str(exc)[:200]
        out["fabric"] = parse_fabric_query("\n".join(parts.get("query", [])))
        if not out["gpu_count"]:
            out["gpu_count"] = len(out["fabric"])
    devices = [line.strip() for line in parts["nvswitch"] if line.startswith("/dev/")]
    bridges = sum(int(line.split()[1]) for line in parts["nvswitch"] if re.fullmatch(r"lspci \d+", line.strip()))
    out["nvswitch_devices"] = devices
    out["nvswitch"] = bool(devices or bridges)
    out["container"] = bool([line for line in parts.get("container", []) if line.strip()])
    service = process = None
    for line in parts.get("service", []):
        if line.startswith("systemctl "):
            service = line.split(" ", 1)[1].strip() or None
        elif line.strip() == "process":
            process = True
    out["service"], out["process"] = service, bool(process)
    packages, held = {}, []
    for line in parts.get("packages", []):
        fields = line.split()
        if len(fields) >= 3 and fields[2][1:2] == "i":   # ${db:Status-Abbrev}: want, then state (i = installed)
            packages[fields[0]] = fields[1]
            if fields[2].startswith("h"):
                held.append(fields[0])
    out["packages"], out["held"] = packages, held
    return out


def fabric_manager_version(packages: dict) -> str | None:
    """The installed nvidia-fabricmanager's upstream version: "570.172.08-1" -> "570.172.08" (None if absent)."""
    for name, version in sorted(packages.items()):
        if re.fullmatch(r"nvidia-fabricmanager(-\d+)?", name):
            return re.sub(r"^\d+:", "", version).split("-")[0]
    return None
