"""Multi-GPU pods' facts (issue 28): the topology between GPUs, each GPU's fabric state, NVSwitch and the fabric
manager; a command for the probe's `fabric` section and its pure parsers (fleet/decide/fabric.py judges them)."""

from __future__ import annotations

import re
import shlex

from fleet import remote
from fleet.facts.gpu import _TIMEOUT, _value

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
