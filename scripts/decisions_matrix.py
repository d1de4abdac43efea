#!/usr/bin/env python3
"""Write docs/DECISIONS.md: what `fleet decide` answers for each situation (GPU family x kernel driver
branch x wanted CUDA x platform), generated from the code over the records in tests/data/records.

    python3 scripts/decisions_matrix.py           # rewrite docs/DECISIONS.md
    python3 scripts/decisions_matrix.py --check   # exit 1 when the checked-in file is stale (CI)
"""
from __future__ import annotations

import copy
import json
import re
import textwrap
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleet.decide import decide  # noqa: E402

RECORDS = ROOT / "tests" / "data" / "records"
OUT = ROOT / "docs" / "DECISIONS.md"
INDEX = {"12.6": "cu126", "12.8": "cu128", "12.9": "cu128", "13.0": "cu130", "13.1": "cu130", "13.2": "cu130",
         "13.3": "cu130", "13.4": "cu130"}

# (GPU family, record, GPU name + capability or None to keep the record's, kernel driver or None)
FAMILIES = {
    "H100 (data-center, 9.0)": ("h100-pod-570", None),
    "A100 (data-center, 8.0)": ("a100-470", ("NVIDIA A100-SXM4-80GB", "8.0")),
    "V100 (data-center, 7.0)": ("h100-pod-570", ("Tesla V100-SXM2-32GB", "7.0")),
    "RTX 4090 (GeForce, 8.9)": ("geforce-550", None),
    "RTX 5090 (GeForce, 12.0)": ("geforce-550", ("NVIDIA GeForce RTX 5090", "12.0")),
}
DESKTOP = [  # (family, driver, wanted CUDA)
    ("H100 (data-center, 9.0)", "535.261.03", "13.0"), ("H100 (data-center, 9.0)", "550.163.01", "12.8"),
    ("H100 (data-center, 9.0)", "550.163.01", "13.0"), ("H100 (data-center, 9.0)", "570.133.20", "12.8"),
    ("H100 (data-center, 9.0)", "570.133.20", "12.9"), ("H100 (data-center, 9.0)", "570.133.20", "13.0"),
    ("H100 (data-center, 9.0)", "570.133.20", "13.2"), ("H100 (data-center, 9.0)", "580.159.04", "13.0"),
    ("H100 (data-center, 9.0)", "580.159.04", "13.1"), ("H100 (data-center, 9.0)", "580.159.04", "13.2"),
    ("H100 (data-center, 9.0)", "595.45.04", "13.2"),
    ("A100 (data-center, 8.0)", "470.256.02", "12.6"), ("A100 (data-center, 8.0)", "470.256.02", "12.8"),
    ("A100 (data-center, 8.0)", "470.256.02", "13.0"), ("A100 (data-center, 8.0)", "535.261.03", "12.6"),
    ("A100 (data-center, 8.0)", "580.95.05", "13.0"),
    ("V100 (data-center, 7.0)", "470.256.02", "12.6"), ("V100 (data-center, 7.0)", "570.133.20", "12.9"),
    ("V100 (data-center, 7.0)", "570.133.20", "13.0"), ("V100 (data-center, 7.0)", "580.95.05", "13.0"),
    ("RTX 4090 (GeForce, 8.9)", "550.54.14", "12.6"), ("RTX 4090 (GeForce, 8.9)", "550.54.14", "12.8"),
    ("RTX 4090 (GeForce, 8.9)", "550.54.14", "13.0"), ("RTX 4090 (GeForce, 8.9)", "580.95.05", "13.0"),
    ("RTX 5090 (GeForce, 12.0)", "570.133.20", "12.8"), ("RTX 5090 (GeForce, 12.0)", "570.133.20", "13.0"),
    ("RTX 5090 (GeForce, 12.0)", "580.95.05", "13.0"),
]
# (label, record, variables)
OTHERS = [
    ("GB10 (DGX Spark, 12.1) / 580.95.05 / 13.0", "spark", {}),
    ("GB10 (DGX Spark, 12.1) / 580.95.05 / 13.1", "spark", {"cuda_version": "13.1"}),
    ("Thor (JetPack 7.0) / 580.00 / 13.0", "thor", {}),
    ("Thor (JetPack 7.0) / 580.00 / 13.0, Jetson index", "thor", {"torch_source": "jetson"}),
    ("Thor (JetPack 7.0) / 580.00 / 13.1", "thor", {"cuda_version": "13.1"}),
    ("Orin (JetPack 6.2) / 540.4.0 / defaults (12.6)", "orin-jp6", {}),
    ("Orin (JetPack 6.2) / 540.4.0 / 12.8", "orin-jp6", {"cuda_version": "12.8"}),
    ("Orin (JetPack 6.2) / 540.4.0 / 13.0", "orin-jp6", {"cuda_version": "13.0"}),
    ("Orin (JetPack 6.2) / 540.4.0 / official wheels", "orin-jp6", {"torch_source": "official"}),
    ("no GPU (cpu-only) / none / 13.0", "cpu-only", {}),
]
# Situations no record holds as is (issue 24): (label, record, changes to its facts, variables). A change is
# {"gpus": [(name, capability), ...]} (replacing the GPUs), "driver", "platform", "python", "jetson" (a dict).
GH200 = {"platform": "sbsa-dgpu", "gpus": [("NVIDIA GH200 480GB", "9.0")], "driver": "570.133.20"}
JP5 = {"jetson": {"l4t": "35.4", "l4t_full": "35.4.1", "jetpack": "5.1.2"}, "python": "3.8.10", "os_version": "20.04"}
JP60 = {"jetson": {"l4t": "36.3", "l4t_full": "36.3.0", "jetpack": "6.0"}, "driver": "540.3.0"}
H100_580 = {"driver": "580.95.05"}
DEBIAN13 = {"os_id": "debian", "os_version": "13", "driver": "580.95.05"}
UBUNTU2604 = {"os_id": "ubuntu", "os_version": "26.04", "driver": "580.95.05"}
VARIED = [
    ("GH200 (sbsa) / 570.133.20 / torch 2.8.0 cu128", "spark", GH200,
     {"cuda_version": "12.8", "torch_version": "2.8.0", "torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("GH200 (sbsa) / 570.133.20 / torch 2.8.0 cu126", "spark", GH200,
     {"cuda_version": "12.6", "torch_version": "2.8.0", "torch_index_url": "https://download.pytorch.org/whl/cu126"}),
    ("GH200 (sbsa) / 570.133.20 / torch 2.6.0 cu126", "spark", GH200,
     {"cuda_version": "12.6", "torch_version": "2.6.0", "torch_index_url": "https://download.pytorch.org/whl/cu126"}),
    ("GB200 (sbsa, 10.0) / 580.95.05 / torch 2.7.1 cu128", "spark",
     {"platform": "sbsa-dgpu", "gpus": [("NVIDIA GB200", "10.0")], "driver": "580.95.05"},
     {"cuda_version": "12.8", "torch_version": "2.7.1", "torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("RTX 5090 (GeForce, 12.0) / 570.133.20 / torch 2.6.0 cu126", "geforce-550",
     {"gpus": [("NVIDIA GeForce RTX 5090", "12.0")], "driver": "570.133.20"},
     {"cuda_version": "12.6", "torch_version": "2.6.0", "torch_index_url": "https://download.pytorch.org/whl/cu126"}),
    ("B200 (data-center, 10.0) / 570.133.20 / torch 2.5.1 cu124", "h100-pod-570",
     {"gpus": [("NVIDIA B200", "10.0")]},
     {"cuda_version": "12.6", "torch_version": "2.5.1", "torch_index_url": "https://download.pytorch.org/whl/cu124"}),
    ("H100 + V100 (mixed) / 550.163.01 / 13.0 (cu130)", "h100-pod-570",
     {"gpus": [("NVIDIA H100 80GB HBM3", "9.0"), ("Tesla V100-SXM2-32GB", "7.0")], "driver": "550.163.01"}, {}),
    ("H100 / 570.133.20 / Python 3.9, torch 2.11.0", "h100-pod-570", {"python": "3.9.18"}, {}),
    ("Orin (JetPack 5.1.2, L4T R35.4) / 35.4.1 / defaults", "orin-jp6",
     {"jetson": {"l4t": "35.4", "l4t_full": "35.4.1", "jetpack": "5.1.2"}, "python": "3.8.10",
      "os_version": "20.04", "driver": "35.4.1"}, {}),
    ("Orin (JetPack 5.1.2, no L4T in the record) / defaults", "orin-jp6",
     {"jetson": {"l4t": None, "l4t_full": None, "jetpack": "5.1.2"}, "python": "3.8.10",
      "os_version": "20.04"}, {}),
    ("Orin (JetPack 5.1.2, L4T R35.4) / cuda_version=12.6", "orin-jp6",
     {"jetson": {"l4t": "35.4", "l4t_full": "35.4.1", "jetpack": "5.1.2"}, "python": "3.8.10",
      "os_version": "20.04"}, {"cuda_version": "12.6"}),
    ("Orin (JetPack 5.1.2, L4T R35.4) / cuda_version=11.4 (its own)", "orin-jp6", {**JP5, "driver": "35.4.1"},
     {"cuda_version": "11.4"}),
    ("Orin (JetPack 6.0, L4T R36.3) / 540.3.0 / defaults (12.2)", "orin-jp6", JP60, {}),
    ("Orin (JetPack 6.0, L4T R36.3) / 540.3.0 / 12.6", "orin-jp6", JP60, {"cuda_version": "12.6"}),
    ("Orin (JetPack 6.0, L4T R36.3) / 540.3.0 / torch 2.11.0", "orin-jp6", JP60, {"torch_version": "2.11.0"}),
    ("Orin (JetPack 6.0, L4T R36.3) / 540.3.0 / the jp6/cu126 index", "orin-jp6", JP60,
     {"torch_index_url": "https://pypi.jetson-ai-lab.io/jp6/cu126"}),
    ("Orin (L4T R36.3, no JetPack in the record) / 540.3.0 / defaults", "orin-jp6",
     {**JP60, "jetson": {"l4t": "36.3", "l4t_full": "36.3.0", "jetpack": None}}, {}),
    ("Orin (L4T R36.2, a release the table lacks) / 540.2.0 / defaults (its branch's 12.2)", "orin-jp6",
     {"jetson": {"l4t": "36.2", "l4t_full": "36.2.0", "jetpack": None}, "driver": "540.2.0"}, {}),
    ("Orin (L4T R36.2, a release the table lacks) / 540.2.0 / 12.6", "orin-jp6",
     {"jetson": {"l4t": "36.2", "l4t_full": "36.2.0", "jetpack": None}, "driver": "540.2.0"}, {"cuda_version": "12.6"}),
    ("Orin (JetPack 6.1, L4T R36.4) / 540.4.0 / defaults (12.6)", "orin-jp6",
     {"jetson": {"l4t": "36.4", "l4t_full": "36.4.0", "jetpack": "6.1"}}, {}),
    ("Orin (JetPack 6.1, L4T R36.4) / 540.4.0 / 12.8", "orin-jp6",
     {"jetson": {"l4t": "36.4", "l4t_full": "36.4.0", "jetpack": "6.1"}}, {"cuda_version": "12.8"}),
    ("Thor (JetPack 7.1, L4T R38.4) / 580.00 / defaults", "thor",
     {"jetson": {"l4t": "38.4", "l4t_full": "38.4.0", "jetpack": "7.1"}}, {}),
    ("H100 / 570.133.20 / cuda_version=11.4 (JetPack 5's)", "h100-pod-570", {}, {"cuda_version": "11.4"}),
    # issue 37: what each torch release publishes, Thor's CUDA-13-only sm_110, JetPack by board
    ("H100 / 580.95.05 / torch 2.8.0 on cu130 (cu130 starts with 2.9)", "h100-pod-570", {"driver": "580.95.05"},
     {"torch_version": "2.8.0", "torch_index_url": "https://download.pytorch.org/whl/cu130"}),
    ("H100 / 570.133.20 / torch 2.9.0 on cu129 (2.8 alone published cu129)", "h100-pod-570", {},
     {"cuda_version": "12.9", "torch_version": "2.9.0", "torch_index_url": "https://download.pytorch.org/whl/cu129"}),
    ("H100 / 580.95.05 / torch 2.12.0 on cu128 (2.12 dropped cu128)", "h100-pod-570", {"driver": "580.95.05"},
     {"cuda_version": "12.8", "torch_version": "2.12.0", "torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("V100 / 580.95.05 / torch 2.10.0 cu128 (2.10's cu128 still carries sm_70)", "h100-pod-570",
     {"gpus": [("Tesla V100-SXM2-32GB", "7.0")], "driver": "580.95.05"},
     {"cuda_version": "12.8", "torch_version": "2.10.0", "torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("H100 / 570.133.20 / Python 3.14, torch 2.8.0 cu128 (2.8 stops at 3.13)", "h100-pod-570", {"python": "3.14.0"},
     {"cuda_version": "12.8", "torch_version": "2.8.0", "torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("H100 / 570.133.20 / Python 3.14, torch 2.11.0 cu128", "h100-pod-570", {"python": "3.14.0"},
     {"cuda_version": "12.8", "torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("Thor (JetPack 7.0) / 580.00 / torch 2.8.0 with CUDA 12.9 (cu129)", "thor", {},
     {"cuda_version": "12.9", "torch_version": "2.8.0", "torch_index_url": "https://download.pytorch.org/whl/cu129"}),
    ("Thor (JetPack 7.0) / 580.00 / torch 2.8.0 on cu130", "thor", {}, {"torch_version": "2.8.0"}),
    ("Thor (JetPack 7.0) / 580.00 / torch 2.11.0 cu128 (no sm_110 below CUDA 13)", "thor", {},
     {"torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("Orin (JetPack 7.2, L4T R39.2, its board named) / 595.00 / defaults (13.2)", "orin-jp6",
     {"jetson": {"l4t": "39.2", "l4t_full": "39.2.0", "jetpack": "7.2",
                 "model": "NVIDIA Jetson AGX Orin Developer Kit"}, "driver": "595.00", "os_version": "24.04",
      "python": "3.12.3"}, {}),
    ("Orin (JetPack 7.2, L4T R39.2) / 595.00 / cuda_version=12.6", "orin-jp6",
     {"jetson": {"l4t": "39.2", "l4t_full": "39.2.0", "jetpack": "7.2",
                 "model": "NVIDIA Jetson Orin Nano Developer Kit"}, "driver": "595.00", "os_version": "24.04",
      "python": "3.12.3"}, {"cuda_version": "12.6"}),
    ("Thor (JetPack 7.2, L4T R39.2) / 595.00 / defaults (13.2)", "thor",
     {"jetson": {"l4t": "39.2", "l4t_full": "39.2.0", "jetpack": "7.2"}, "driver": "595.00"}, {}),
    ("Xavier (JetPack 5.1.2, L4T R35.4) / defaults: the board named", "orin-jp6",
     {**JP5, "jetson": {**JP5["jetson"], "model": "NVIDIA Jetson AGX Xavier Developer Kit"}}, {}),
    ("Xavier NX (L4T R36.3 claimed) / defaults: no JetPack fleet plans runs it", "orin-jp6",
     {**JP60, "jetson": {**JP60["jetson"], "model": "NVIDIA Jetson Xavier NX Developer Kit"}}, {}),
    ("Jetson on JetPack 7.2 (L4T R39.2), no board model, no GPU name / 595.00: Orin or Thor", "thor",
     {"jetson": {"l4t": "39.2", "l4t_full": "39.2.0", "jetpack": "7.2", "model": None}, "gpus": [],
      "driver": "595.00"}, {}),
    ("Jetson on JetPack 5.1.2 (L4T R35.4), no board model / defaults: Xavier or Orin", "orin-jp6",
     {**JP5, "jetson": {**JP5["jetson"], "model": None}}, {}),
    # issue 47, round four: distributions NVIDIA serves today, CUDA releases after the table, a JetPack 6 Jetson's
    # own library builds, and offers that plan at once
    ("H100 on Debian 13 / 580.95.05 / defaults (13.0 from debian13)", "h100-pod-570", DEBIAN13, {}),
    ("H100 on Debian 13 / 580.95.05 / 12.8 (debian13 starts at 13.0)", "h100-pod-570", DEBIAN13,
     {"cuda_version": "12.8", "torch_index_url": "https://download.pytorch.org/whl/cu128"}),
    ("V100 on Debian 13 / 580.95.05 / defaults: CUDA 13 dropped Volta, debian13 has no 12.x", "h100-pod-570",
     {**DEBIAN13, "gpus": [("Tesla V100-SXM2-32GB", "7.0")]}, {}),
    ("H100 on Ubuntu 26.04 / 580.95.05 / defaults: ubuntu2604 starts at 13.3, so 13.3", "h100-pod-570", UBUNTU2604,
     {}),
    ("H100 on Ubuntu 26.04 / 580.95.05 / cuda_version=13.0 asked: not in ubuntu2604", "h100-pod-570", UBUNTU2604,
     {"cuda_version": "13.0"}),
    ("H100 on Ubuntu 26.04 / 610.43.02 / 13.3", "h100-pod-570", {**UBUNTU2604, "driver": "610.43.02"},
     {"cuda_version": "13.3"}),
    ("H100 on Ubuntu 26.04 / 570.133.20 / 13.3: no 13.x below 580 there", "h100-pod-570",
     {**UBUNTU2604, "driver": "570.133.20"}, {"cuda_version": "13.3"}),
    ("H100 on Rocky Linux 9 / 580.95.05 / defaults: NVIDIA serves it RPM only", "h100-pod-570",
     {"os_id": "rocky", "os_version": "9.6", "driver": "580.95.05"}, {}),
    ("H100 / 580.95.05 / 13.3 (minor-version compatibility; full from 610.43.02)", "h100-pod-570", H100_580,
     {"cuda_version": "13.3"}),
    ("H100 / 610.43.02 / 13.3 (full support)", "h100-pod-570", {"driver": "610.43.02"}, {"cuda_version": "13.3"}),
    ("H100 / 570.133.20 / 13.3: cuda-compat-13-3 not for R570", "h100-pod-570", {}, {"cuda_version": "13.3"}),
    ("H100 / 580.95.05 / 13.4 (newer than the table: the 13.x rule)", "h100-pod-570", H100_580,
     {"cuda_version": "13.4"}),
    ("H100 / 570.133.20 / 13.5 (newer than the table, below 580)", "h100-pod-570", {}, {"cuda_version": "13.5"}),
    ("H100 / 580.95.05 / 14.0 (a major fleet knows no rule for)", "h100-pod-570", H100_580, {"cuda_version": "14.0"}),
    ("Orin (JetPack 6.2) / 540.4.0 / cuDSS tarball (linux-aarch64)", "orin-jp6", {}, {"cudss_source": "tarball"}),
    ("Orin (JetPack 6.2) / 540.4.0 / cuDSS apt (ubuntu2204/arm64)", "orin-jp6", {}, {"cudss_source": "apt"}),
    ("Thor (JetPack 7.0) / 580.00 / Jetson index, cuDSS tarball (linux-sbsa)", "thor", {},
     {"torch_source": "jetson", "cudss_source": "tarball"}),
    ("RTX 5090 / 575.64.03 / torch 2.12.0 (no 12.x of 2.12 covers sm_120)", "geforce-550",
     {"gpus": [("NVIDIA GeForce RTX 5090", "12.0")], "driver": "575.64.03"}, {"torch_version": "2.12.0"}),
    ("GB200 (sbsa) / 575.64.03 / torch 2.12.0", "spark",
     {"platform": "sbsa-dgpu", "gpus": [("NVIDIA GB200", "10.0")], "driver": "575.64.03"}, {"torch_version": "2.12.0"}),
]


# Multi-GPU pods (issue 28): (label, container, NVSwitch, topology file, nvidia-smi -q file, service, packages)
FABRIC_DATA = ROOT / "tests" / "data" / "fabric"
FM = "nvidia-fabricmanager-570 {v}-1 {h} \nlibnvidia-nscq-570 {v}-1 {h} \n"
FABRIC = [
    ("1 GPU (the real H100's layout)", False, False, None, None, "", ""),
    ("8 GPU HGX, NVSwitch, no fabric manager", False, True, "topo-8-nv18.txt", "q-8-in-progress.txt", "inactive", ""),
    ("8 GPU HGX, fabric manager installed, stopped", False, True, "topo-8-nv18.txt", "q-8-in-progress.txt", "inactive",
     FM.format(v="570.133.20", h="hi")),
    ("8 GPU HGX, fabric manager one version behind the driver", False, True, "topo-8-nv18.txt", "q-8-in-progress.txt",
     "failed", FM.format(v="570.124.06", h="hi")),
    ("8 GPU HGX, healthy (FM at the driver's version, held, running)", False, True, "topo-8-nv18.txt",
     "q-8-completed.txt", "active", FM.format(v="570.133.20", h="hi")),
    ("8 GPU HGX, healthy FM, GPU 3 off the fabric", False, True, "topo-8-gpu3-off.txt", "q-8-gpu3-failed.txt",
     "active", FM.format(v="570.133.20", h="hi")),
    ("8 GPU container pod, fabric not ready", True, False, "topo-8-nv18.txt", "q-8-in-progress.txt", "", ""),
    ("8 GPU container pod, fabric ready", True, False, "topo-8-nv18.txt", "q-8-completed.txt", "", ""),
]
ONE_GPU_TOPO = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-25\t0\t\tN/A\n"


def fabric_situation(container, nvswitch, topo, query, service, packages) -> dict:
    """The h100-pod-570 record with its fabric facts parsed, by fleet's own parsers, from these outputs."""
    from fleet.facts import fabric
    from fleet.facts.record import fabric_facts

    facts = copy.deepcopy(record("h100-pod-570"))
    topo_text = (FABRIC_DATA / topo).read_text() if topo else ONE_GPU_TOPO
    query_text = (FABRIC_DATA / query).read_text() if query else "GPU 00000000:00:07.0\n    Fabric\n        State : N/A\n"
    section = (f"@@topo\n{topo_text}@@query\n{query_text}@@nvswitch\n{'/dev/nvidia-nvswitch0' if nvswitch else ''}\n"
               f"@@container\n{'dockerenv' if container else ''}\n@@service\n"
               f"{'systemctl ' + service if service else ''}\n@@packages\n{packages}")
    facts["fabric"] = fabric_facts(fabric.parse_fabric(section), facts["driver"]["version"])
    return facts


def fabric_row(label: str, *situation) -> str:
    f = decide(fabric_situation(*situation), {}).fabric
    note = f["warn"] if f["warn"] and f["warn"] != f["reason"] else ""
    return (f"| {label} | {f['gpus']} | {f['action']} | {', '.join(f['packages']) or '-'} | "
            f"{note.replace('|', '/') or '-'} | {f['reason'].replace('|', '/')} |")


def record(name: str) -> dict:
    return json.loads((RECORDS / f"{name}.json").read_text())


def desktop_situation(family: str, driver: str, cuda: str) -> tuple[str, dict, dict]:
    name, gpu = FAMILIES[family]
    facts = copy.deepcopy(record(name))
    if gpu:
        facts["gpus"][0].update(name=gpu[0], compute_cap=gpu[1])
    facts["driver"]["version"] = driver
    variables = {"cuda_version": cuda, "torch_index_url": f"https://download.pytorch.org/whl/{INDEX[cuda]}"}
    return f"{family} / {driver} / {cuda} ({INDEX[cuda]})", facts, variables


def varied(name: str, change: dict) -> dict:
    facts = copy.deepcopy(record(name))
    if "gpus" in change:
        facts["gpus"] = [{"index": i, "name": n, "compute_cap": c, "memory_mb": None, "uuid": f"GPU-{i}"}
                         for i, (n, c) in enumerate(change["gpus"])]
    if "driver" in change:
        facts["driver"]["version"] = change["driver"]
    if "platform" in change:
        facts["platform"] = change["platform"]
    if "python" in change:
        facts["python"]["version"] = change["python"]
    if "os_version" in change:
        facts["system"]["os_version"] = change["os_version"]
    if "os_id" in change:
        facts["system"]["os_id"] = change["os_id"]
    if "jetson" in change:
        facts["jetson"].update(change["jetson"])
    return facts


def situations() -> list[tuple[str, dict, dict]]:
    """Every situation of the matrix: (label, facts, variables)."""
    return ([desktop_situation(*s) for s in DESKTOP]
            + [(label, record(name), variables) for label, name, variables in OTHERS]
            + [(label, varied(name, change), variables) for label, name, change, variables in VARIED])


# The sweep (issue 47): every combination below, each answered by `fleet decide` and each refusal's offered variables
# fed back once (tests/unit/test_decide_distributions_and_later_cuda.py). Desktop and Arm servers: GPU x kernel driver x wanted CUDA
# (its torch index) x torch release x distribution; Jetsons: release x CUDA asked x torch source x cuDSS and NVPL
# sources.
SWEEP_GPUS = {   # label: (record, platform or None, GPU name, capability)
    "H100": ("h100-pod-570", None, "NVIDIA H100 80GB HBM3", "9.0"),
    "A100": ("h100-pod-570", None, "NVIDIA A100-SXM4-80GB", "8.0"),
    "V100": ("h100-pod-570", None, "Tesla V100-SXM2-32GB", "7.0"),
    "RTX 4090": ("geforce-550", None, "NVIDIA GeForce RTX 4090", "8.9"),
    "RTX 5090": ("geforce-550", None, "NVIDIA GeForce RTX 5090", "12.0"),
    "B200": ("h100-pod-570", None, "NVIDIA B200", "10.0"),
    "GH200": ("spark", "sbsa-dgpu", "NVIDIA GH200 480GB", "9.0"),
    "GB200": ("spark", "sbsa-dgpu", "NVIDIA GB200", "10.0"),
}
SWEEP_DRIVERS = ("470.256.02", "535.261.03", "550.163.01", "570.133.20", "575.64.03", "580.95.05", "595.45.04",
                 "610.43.02")
SWEEP_CUDA = (None, "12.6", "12.8", "12.9", "13.0", "13.2", "13.3", "13.4")   # None: the defaults
SWEEP_TORCH = ("2.11.0", "2.12.0")
SWEEP_DISTROS = (("ubuntu", "24.04"), ("debian", "13"), ("ubuntu", "26.04"), ("rocky", "9.6"))
# and the host's Python against the torch release (PyTorch RELEASE.md: 2.8 stops at 3.13, 2.9 starts at 3.10)
SWEEP_PYTHON = (("535.261.03", "570.133.20", "575.64.03", "580.95.05"), ("3.9.18", "3.14.0"),
                ("2.8.0", "2.9.0", "2.13.0"), (None, "12.8", "13.0"))
# and a torch index asked beside the CUDA asked (an older variant, one this torch never published)
SWEEP_INDEX = (("550.163.01", "575.64.03", "590.44.01"), (("ubuntu", "24.04"), ("debian", "13"), ("ubuntu", "26.04")),
               ("cu126", "cu132"), (None, "13.1", "13.5"))
SWEEP_JETSONS = {   # label: (record, changes)
    "Orin JetPack 6.0": ("orin-jp6", JP60),
    "Orin JetPack 6.2": ("orin-jp6", {}),
    "Thor JetPack 7.0": ("thor", {}),
    "Thor JetPack 7.1": ("thor", {"jetson": {"l4t": "38.4", "l4t_full": "38.4.0", "jetpack": "7.1"}}),
    "Orin JetPack 7.2": ("orin-jp6", {"jetson": {"l4t": "39.2", "l4t_full": "39.2.0", "jetpack": "7.2",
                                                 "model": "NVIDIA Jetson AGX Orin Developer Kit"},
                                      "driver": "595.00", "os_version": "24.04", "python": "3.12.3"}),
}


def sweep() -> list[tuple[str, dict, dict]]:
    """Every situation of the sweep: (label, facts, variables)."""
    out = []
    for label, (name, platform, gpu, cap) in SWEEP_GPUS.items():
        for driver in SWEEP_DRIVERS:
            for os_id, os_version in SWEEP_DISTROS:
                change = {"gpus": [(gpu, cap)], "driver": driver, "os_id": os_id, "os_version": os_version}
                if platform:
                    change["platform"] = platform
                facts = varied(name, change)
                for cuda in SWEEP_CUDA:
                    for torch in SWEEP_TORCH:
                        variables = {"torch_version": torch} if cuda is None else {
                            "cuda_version": cuda, "torch_version": torch,
                            "torch_index_url": f"https://download.pytorch.org/whl/{INDEX[cuda]}"}
                        out.append((f"{label} / {driver} / {os_id} {os_version} / CUDA {cuda or 'default'} / "
                                    f"torch {torch}", facts, variables))
    drivers, pythons, torches, cudas = SWEEP_PYTHON
    for label, (name, platform, gpu, cap) in SWEEP_GPUS.items():
        for driver in drivers:
            for python in pythons:
                change = {"gpus": [(gpu, cap)], "driver": driver, "python": python}
                if platform:
                    change["platform"] = platform
                facts = varied(name, change)
                for torch in torches:
                    for cuda in cudas:
                        variables = {"torch_version": torch} if cuda is None else {
                            "cuda_version": cuda, "torch_version": torch,
                            "torch_index_url": f"https://download.pytorch.org/whl/{INDEX[cuda]}"}
                        out.append((f"{label} / {driver} / Python {python} / CUDA {cuda or 'default'} / "
                                    f"torch {torch}", facts, variables))
    drivers, distros, indexes, cudas = SWEEP_INDEX
    for label, (name, platform, gpu, cap) in SWEEP_GPUS.items():
        for driver in drivers:
            for os_id, os_version in distros:
                change = {"gpus": [(gpu, cap)], "driver": driver, "os_id": os_id, "os_version": os_version}
                if platform:
                    change["platform"] = platform
                facts = varied(name, change)
                for index in indexes:
                    for cuda in cudas:
                        variables = {"torch_version": "2.10.0",
                                     "torch_index_url": f"https://download.pytorch.org/whl/{index}",
                                     **({"cuda_version": cuda} if cuda else {})}
                        out.append((f"{label} / {driver} / {os_id} {os_version} / CUDA {cuda or 'default'} / "
                                    f"torch 2.10.0 on {index}", facts, variables))
    for label, (name, change) in SWEEP_JETSONS.items():
        facts = varied(name, change)
        for cuda in (None, "12.6", "12.8", "13.0", "13.2"):
            for source in ("default", "jetson", "official"):
                for libs in ("pypi", "apt", "tarball"):
                    variables = {"nvpl_source": libs, "cudss_source": libs}
                    if cuda:
                        variables["cuda_version"] = cuda
                    if source != "default":
                        variables["torch_source"] = source
                    out.append((f"{label} / CUDA {cuda or 'its own'} / torch {source} / libraries {libs}", facts,
                                variables))
    return out


def one_round(label: str, facts: dict, variables: dict, decided=None) -> tuple[bool, str | None]:
    """(refused, why the one round fails or None): a refusal's offered variables (every `NAME=VALUE` its texts
    propose, one value each), fed back, must be accepted; a refusal offering none names a fix outside fleet's
    variables (a driver to install, a reflash, a reboot). `decided`: decide(facts, variables) when the caller has it
    already (decide is pure: the tests share one decision per situation of the sweep)."""
    d = decided if decided is not None else decide(facts, variables)
    if not d.refuse:
        return False, None
    fix = offered_fix(d)
    if not fix:
        return True, None if OUTSIDE_FIX.search(d.refuse) else f"no fix offered: {d.refuse}"
    again = decide(facts, {**variables, **fix})
    return True, None if again.refuse is None else f"{d.refuse}\n  fed back {fix}:\n  {again.refuse}"


def offered_fix(d) -> dict[str, str]:
    from fleet.decide import DEFAULTS
    pattern = re.compile(r"\b(" + "|".join(sorted(DEFAULTS, key=len, reverse=True)) + r")=([^\s,;()]+)")
    found: dict[str, set[str]] = {}
    for text in [d.refuse or ""] + list(d.reasons.values()) + [p.reason for p in d.missing_providers.values()]:
        for name, value in pattern.findall(text):
            found.setdefault(name, set()).add(value.rstrip("."))
    return {name: sorted(values)[0] for name, values in found.items()}


OUTSIDE_FIX = re.compile(r"reflash|install|reboot|reload|run `fleet facts` again")


def sweep_summary() -> str:
    situations = sweep()
    results = [one_round(*s) for s in situations]
    refused = sum(r for r, _ in results)
    failed = sum(1 for _, why in results if why)
    return (f"The sweep (scripts/decisions_matrix.py sweep(): {len(SWEEP_GPUS)} GPUs x {len(SWEEP_DRIVERS)} drivers x "
            f"{len(SWEEP_DISTROS)} distributions x {len(SWEEP_CUDA)} CUDA releases (the default among them) x "
            f"{len(SWEEP_TORCH)} torch releases; the GPUs x {len(SWEEP_PYTHON[0])} drivers x Python 3.9 and 3.14 x "
            f"torch 2.8, 2.9, 2.13 x 3 CUDA; the GPUs x 3 drivers x 3 distributions x torch 2.10 on cu126 and "
            f"cu132 x 3 CUDA; and {len(SWEEP_JETSONS)} Jetson releases x CUDA asked x torch source x "
            f"library source): "
            f"{len(situations)} situations, {refused} refused; fed back once, the offered variables of "
            f"{refused - failed} of the {refused} refusals are accepted ({failed} not).")


def row(label: str, facts: dict, variables: dict) -> str:
    d = decide(facts, variables)
    verdict = "**refused**" if d.refuse else "ok"
    compat = "on" if d.compat.use else "off"
    torch = "cpu" if d.torch.cuda is None else f"{d.torch.source} cu{d.torch.cuda.replace('.', '')}"
    why = d.refuse or f"{d.compat.reason}. torch: {d.torch.reason}" + (
        f". cuDSS: {d.cudss.reason}" if "cudss_source" in variables else "")
    return f"| {label} | {d.cuda.wanted or '-'} | {verdict} | {compat} | {torch} | {why.replace('|', '/')} |"


def render() -> str:
    lines = [
        "# What fleet decides, situation by situation",
        "",
        "Generated by `python3 scripts/decisions_matrix.py` from `fleet/decide` over the records in",
        "`tests/data/records` (CI fails when this file is stale: tests/unit/test_decisions_doc.py). Each",
        "situation is GPU family / kernel driver / wanted CUDA (torch index); the reason is `fleet decide`'s own.",
        "",
        "Rules and their sources (cited again beside each rule in the code):",
        "",
        "- Full support per release: CUDA release notes, table 3 (fleet/knowledge/cuda_table.py MIN_DRIVER).",
        "- Minor-version compatibility: any 12.x on >= 525.60.13, any 13.x on >= 580: CUDA release notes table 2;",
        "  astral-sh/uv crates/uv-torch (fleet/knowledge/cuda_table.py FAMILY_MIN_DRIVER). cuda-compat only below it.",
        "- Forward compatibility: data-center GPUs and Jetson only (804 on GeForce), from the driver branches",
        "  NVIDIA lists per CUDA release: docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html",
        "  (fleet/knowledge/cuda_table.py FORWARD_COMPAT_BRANCHES).",
        "- CUDA 13 dropped Maxwell, Pascal and Volta (sm_50 to sm_72): CUDA 13.0 release notes (fleet/decide/offers.py).",
        "- What each torch release publishes: its CUDA variants per CPU (stable and experimental) and its Python",
        "  range, both ends: PyTorch RELEASE.md (fleet/knowledge/torch.py RELEASES; rows read from a secondary",
        "  copy of the file). A pair no row names is refused with the nearest published pair that runs here.",
        "- Torch wheel architectures per (torch range, variant, CPU): pytorch .ci/manywheel/build_cuda.sh,",
        "  aarch64_ci_build.sh, pytorch/pytorch#175253 (2.11's cu128 drops Volta), RELEASE.md's CUDA support",
        "  matrix, a real 2.11.0+cu130 wheel (fleet/knowledge/torch.py ARCH_ROWS).",
        "- Capability 11.x (Thor) is sm_110 from CUDA 13.0 only, which renumbered it from sm_101: no CUDA 12",
        "  toolkit or wheel targets it (fleet/decide/archs.py FIRST_CUDA_FOR_MAJOR); on a Jetson the CUDA major is",
        "  its JetPack's (fleet/decide/cuda.py).",
        "- The Jetson generation from the board (/proc/device-tree/model), then the GPU, then the L4T release; a",
        "  board no JetPack release fleet plans for supports is refused with the board named",
        "  (fleet/knowledge/platforms.py JETSON_BOARDS, JETPACK_RELEASES boards).",
        "- A release that runs two generations (JetPack 7.2: Orin and Thor; JetPack 5: Xavier and Orin) with",
        "  neither the board model nor a GPU name in the record is refused (\"cannot tell the board\"), with the",
        "  fix: read /proc/device-tree/model, which `fleet facts` records. Not planned as what both share: the",
        "  generation decides more than the CUDA (7.2 ships 13.2 to both): the GPU's architecture every torch",
        "  offer is checked against (sm_87 or sm_110), cuda-compat (error 803 on Thor), the torch sources, verify's",
        "  performance rows, and on JetPack 5 whether any reflash helps (a Xavier's newest is JetPack 5.x); a",
        "  guessed generation would plan one board's stack on the other (fleet/knowledge/platforms.py",
        "  board_unknown). A real Jetson always has the model file, so only a damaged or hand-made record lacks it.",
        "- An old release (JetPack 5) is told to reflash with the newest JetPack whose notes list its board, read",
        "  from JETPACK_RELEASES (an Orin: 7.2), never a second copy of it.",
        "- JetPack generations: JetPack release notes, Jetson AI Lab indexes (fleet/decide/jetson.py); what each",
        "  JetPack release ships, JetPack 5 (L4T R35: CUDA 11.4, Python 3.8, Ubuntu 20.04) refused with a reflash:",
        "  fleet/knowledge/platforms.py JETPACK_RELEASES.",
        "- A JetPack's apt repository serves only its own CUDA; newer Tegra CUDA (and its cuda-compat) comes only",
        "  from NVIDIA's cuda-tegra local installers (NVIDIA blog \"Simplifying CUDA Upgrades for NVIDIA Jetson",
        "  Users\"; dusty-nv/jetson-containers packages/cuda/cuda/config.py), which fleet does not install: an Orin",
        "  asking a newer 12.x is refused with its JetPack's own CUDA offered (fleet/decide/cuda.py).",
        "- Torch per JetPack release: the Jetson AI Lab index built for its CUDA (5: jp5/cu114, torch 2.2.0 at",
        "  newest; 6.0: jp6/cu122, torch 2.4.0 at newest; 6.1/6.2: jp6/cu126; 7: sbsa/cu130); on a frozen index",
        "  the default torch is its newest (fleet/decide/torch_wheel.py, JETPACK_RELEASES).",
        "- aarch64 torch below 2.9: CUDA wheels only on PyTorch's cu128 (2.7, 2.8) and cu129 (2.8) indexes:",
        "  pytorch/pytorch#160162 (fleet/knowledge/torch.py RELEASES, aarch64).",
        "- No wheel built with CUDA below 12.8 runs on capability 10.x or 12.x, whatever the torch version:",
        "  pytorch/pytorch#150733 (fleet/decide/archs.py FIRST_CUDA_FOR_MAJOR); the per-release rows refine it.",
        "- The host's Python against the torch release, both ends (2.9 to 2.12: 3.10 to 3.14; 2.5 to 2.8: 3.9 to",
        "  3.13): PyTorch RELEASE.md (fleet/knowledge/torch.py RELEASES).",
        "- One fix per answer: every refusal's offered variables, fed back, are accepted",
        "  (tests/unit/test_decide_one_fix_per_answer.py runs it over every row below).",
        "- Distributions (issue 47): NVIDIA's apt repositories per distribution, from the NVIDIA Driver Installation",
        "  Guide's distribution list (debian12, debian13, ubuntu2204, ubuntu2404, ubuntu2604), each with the first CUDA",
        "  it serves (debian13: 13.0; ubuntu2604: 13.3); RHEL and its rebuilds, Fedora, SUSE, Amazon Linux, Azure Linux",
        "  and KylinOS are served as RPM only and refused saying so (fleet/knowledge/apt_repos.py).",
        "- CUDA releases after the table: 13.3 needs >= 610.43.02 for full support (CUDA 13.3 release notes, table",
        "  of toolkit driver versions); a later 13.x (13.4, 13.5: out, with no toolkit driver in the notes, the Linux",
        "  driver being unbundled from 13.4 on) runs on >= 580 by minor-version compatibility without cuda-compat,",
        "  which the plan says; below 580 it is refused; a newer major (14.0) is refused in the answer, never a",
        "  bad-input exit (fleet/knowledge/cuda_table.py later_release).",
        "- A JetPack 6 Jetson (Tegra CUDA 12) takes cuDSS as NVIDIA builds it for Jetson: the `linux-aarch64` redistrib",
        "  platform (compute/cudss/redist/libcudss/linux-aarch64) and the `arm64` apt directory (ubuntu2204/arm64) with",
        "  its keyring; JetPack 7 stays linux-sbsa / sbsa (fleet/decide/host.py repo_arch, redist_platform).",
        *textwrap.wrap(sweep_summary(), 112, initial_indent="- ", subsequent_indent="  "),
        "",
        "| situation | CUDA | verdict | compat | torch | reason |",
        "|---|---|---|---|---|---|",
    ]
    lines += [row(*s) for s in situations()]
    lines += [
        "",
        "## Multi-GPU pods: the fabric (issue 28)",
        "",
        "The `fabric` decision (fleet/decide/fabric.py) over the H100 record (driver 570.133.20) with its fabric facts",
        "parsed from `nvidia-smi topo -m` / `nvidia-smi -q` outputs in tests/data/fabric. NVSwitch systems need NVIDIA",
        "Fabric Manager at exactly the driver's version (else CUDA answers 802, cudaErrorSystemNotReady): NVIDIA Fabric",
        "Manager User Guide; package names as NVIDIA's packaging builds them (NVIDIA/apt-packaging-fabric-manager).",
        "In a container the fabric manager is the provider's.",
        "",
        "| situation | GPUs | action | packages | warning | reason |",
        "|---|---|---|---|---|---|",
    ]
    lines += [fabric_row(label, *rest) for label, *rest in FABRIC]
    # hand-written sections (design decisions no table shows), one file each, in name order
    for section in sorted((ROOT / "docs" / "decisions").glob("*.md")):
        lines += ["", section.read_text().rstrip("\n")]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python3 scripts/decisions_matrix.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
