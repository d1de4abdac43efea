"""The GPU platforms fleet knows, one row each, and the kinds of GPU they carry (shared/DOMAIN.md).

Facts detect a platform from the signs in its row (`detect`); decisions read the rest of the row: the kind of
its GPU (and so whether forward compatibility may use cuda-compat), where its CUDA comes from, the form of its
driver's version, its torch sources and the verify role's performance rows. Adding a platform is adding a row
here (and its tests); tests/unit/test_platforms.py fails where any file of the package names a platform that
is not a row. Standard library only: fleet/workflows/script_runtime.py and the facts layer read it too.

Sources: developer.nvidia.com/cuda-gpus (GPU names); docs.nvidia.com/deploy/cuda-compatibility/forward-
compatibility.html (data-center GPUs and Jetson boards only; 804 elsewhere); NVIDIA/nvidia-container-toolkit
PR #1679 (compat on Thor -> 803); the JetPack release notes (L4T R36 is JetPack 6 on Orin, R38+ JetPack 7 on
Thor; R35 is JetPack 5); NVIDIA's dense bf16 peaks per data sheet (H100 SXM 989, PCIe 756, GH200 989).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.knowledge import allreduce, copy_floors


@dataclass(frozen=True)
class Kind:
    """A class of GPU, as forward compatibility sorts them."""
    name: str                 # data-center | jetson | thor | spark | geforce | workstation | unknown
    pattern: str | None       # GPU names of this kind on a discrete-GPU platform (None: only by platform)
    compat_error: int | None  # None: cuda-compat may be used; else the error a compat libcuda fails with
    refusal: str | None       # why cuda-compat may not be used, in decisions' reasons

    @property
    def harm(self) -> str | None:
        """What a startup line that puts cuda-compat on the path does here, regardless of the driver."""
        if self.compat_error is None:
            return None
        if self.name == "thor":
            return "error 803: cuda-compat breaks CUDA on Jetson Thor (NVIDIA container toolkit PR #1679)"
        return f"error {self.compat_error}: forward compatibility is not supported on this GPU"


_UNKNOWN_REFUSAL = ("fleet does not know this GPU to be a data-center GPU, and forward compatibility works only "
                    "on those (error 804 otherwise)")

# Name patterns first match wins, in this order (GeForce before data-center: "TITAN" would otherwise not matter,
# but a GeForce name never holds a data-center one).
KINDS: tuple[Kind, ...] = (
    Kind("thor", None, 803, "cuda-compat breaks CUDA on Jetson Thor (error 803)"),
    Kind("jetson", None, None, None),
    Kind("spark", None, 804, "the DGX Spark's GB10 is neither a data-center GPU nor a Jetson, the only GPUs "
                             "forward compatibility supports (error 804 otherwise)"),
    Kind("geforce", r"GeForce|\bTITAN\b|\bGTX\b", 804,
         "forward compatibility is not supported on GeForce GPUs (error 804)"),
    Kind("data-center", r"\b(GH200|GB200|GB300|B300|B200|B100|H200|H100|H800|H20|A100|A800|A40|A30|A16|A10G?|A2|"
                        r"L40S?|L20|L4|T4|V100|P100|P40|P4)\b|\bTesla\b", None, None),
    Kind("workstation", r"\b(RTX|Quadro)\b", 804,
         "forward compatibility covers only select NGC-ready RTX boards, and fleet does not know this one to be "
         "one (error 804 otherwise)"),
    Kind("unknown", None, 804, _UNKNOWN_REFUSAL),
)


# The bandwidth floors (issue 36) as shares of the datasheet: on the lent H200 a 4 GiB device-to-device copy moved
# 4.27 TB/s of traffic of the 4.8 TB/s sheet (89 %) and pinned 1 GiB copies 55.5 / 55.3 GB/s each way of PCIe Gen5
# x16's 64 (87 %): tests/data/captured/h200-device/health.txt. A floor well under those fails what is broken (memory
# clocks held down, a link trained to Gen4 or x8: about half), not a slow run.
MEMORY_FLOOR_SHARE = 0.7
HOST_FLOOR_SHARE = 0.6


@dataclass(frozen=True)
class Perf:
    """The verify role's performance row: a GPU name substring, its dense bf16/fp16 peak and the floors verify
    demands (TFLOP/s); its memory bandwidth (TB/s) and host link per direction (GB/s) from its datasheet, 0 where
    none applies (unified memory: no host copy to time) or none is known. Rows are tried in order, first match
    wins."""
    match: str
    peak: int
    matmul_floor: int
    attention_floor: int
    memory_tbs: float = 0.0
    host_gbs: float = 0.0

    def as_dict(self) -> dict:
        return {"match": self.match, "peak": self.peak, "matmul_floor": self.matmul_floor,
                "attention_floor": self.attention_floor, "memory_tbs": self.memory_tbs,
                "memory_floor_tbs": round(self.memory_tbs * MEMORY_FLOOR_SHARE, 2),
                "host_gbs": self.host_gbs, "host_floor_gbs": round(self.host_gbs * HOST_FLOOR_SHARE, 1)}


# Discrete data-center GPUs run on x86_64 and on Arm (SBSA) servers alike. "H100 PCIe" before "H100".
# Memory bandwidth and host link from NVIDIA's datasheets: H100 (nvidia.com/en-us/data-center/h100, "GPU memory
# bandwidth": SXM 3.35 TB/s, PCIe 2 TB/s; "Interconnect": PCIe Gen5 128 GB/s, i.e. 64 each way), H200
# (nvidia.com/en-us/data-center/h200: 4.8 TB/s, PCIe Gen5 128 GB/s).
_DGPU_PERF = (Perf("H100 PCIe", 756, 450, 250, 2.0, 64.0), Perf("H100", 989, 600, 350, 3.35, 64.0),
              Perf("H200", 989, 600, 350, 4.8, 64.0))


@dataclass(frozen=True)
class Platform:
    name: str
    # -- detection signs (what facts see) -------------------------------------------------------------
    arch: str | None              # uname -m it needs; None: any
    jetson: bool                  # a Jetson: /etc/nv_tegra_release, a `-tegra` kernel, or its GPU's name
    gpu: str | None               # GPU names that tell this platform (a Jetson's or the Spark's GB10)
    has_gpu: bool                 # False: the row for hosts with neither a GPU nor a loaded driver
    l4t: tuple[int, int | None] | None = None   # a Jetson's supported L4T majors [first, end)
    jetpack: tuple[int, int | None] | None = None   # ... and the JetPack majors they are [first, end)
    # -- what decisions read ------------------------------------------------------------------------
    generation: str | None = None  # a Jetson's generation (decide/jetson.py): orin | thor
    gpu_kind: str | None = None    # its GPU's kind where the platform fixes it; None: from the GPU's name
    cuda_source: str | None = "nvidia-apt"   # where fleet installs CUDA from: nvidia-apt | jetpack | None
    cuda_shipped_by: str | None = None       # the OS image that ships CUDA: jetpack | dgx-os | None
    driver_form: str = "full"     # full: 580.95.05; branch: Jetson drivers report the branch only (580.00)
    torch_sources: tuple[str, ...] = ("official",)   # torch_source values it runs, the default first
    jetson_index: str | None = None   # a Jetson's torch index (Jetson AI Lab) for its JetPack
    shipped_cuda: str | None = None   # the CUDA its JetPack ships where the facts name no JetPack release
    integrated_gpu: tuple[str, str] | None = None   # a Jetson's GPU (name, capability) where facts list none
    perf: tuple[Perf, ...] = ()
    allreduce: bool = False       # its multi-GPU hosts' all-reduce judged by knowledge/allreduce.py's rows
    summary: str = ""

    def as_json(self) -> dict:
        """What roles read of the row (decisions.platform): verify's GPU expectation and performance rows."""
        return {"name": self.name, "gpu": self.has_gpu, "perf": [p.as_dict() for p in self.perf],
                "copies": copy_floors.rows() if self.has_gpu else [],   # the copy engines' floors (issue 48)
                "allreduce": allreduce.config() if self.allreduce else None}


# In detection order: a Jetson before anything else, the Spark before other Arm GPU servers, cpu-only last.
PLATFORMS: tuple[Platform, ...] = (
    Platform("jetson-orin", "aarch64", True, r"\b(Orin|Xavier|Tegra)\b", True, l4t=(36, 38), jetpack=(6, 7),
             generation="orin", gpu_kind="jetson", cuda_source="jetpack", cuda_shipped_by="jetpack",
             driver_form="branch", torch_sources=("jetson",), jetson_index="https://pypi.jetson-ai-lab.io/jp6/cu126",
             integrated_gpu=("Orin (integrated GPU)", "8.7"),
             summary="Jetson AGX Orin on JetPack 6 (L4T R36): Tegra CUDA 12.x from JetPack"),
    Platform("jetson-thor", "aarch64", True, r"\bThor\b", True, l4t=(38, None), jetpack=(7, None),
             generation="thor", gpu_kind="thor", cuda_source="jetpack", cuda_shipped_by="jetpack",
             driver_form="branch", torch_sources=("official", "jetson"),
             jetson_index="https://pypi.jetson-ai-lab.io/sbsa/cu130", shipped_cuda="13.0",
             integrated_gpu=("NVIDIA Thor", "11.0"),
             perf=(Perf("Thor", 250, 10, 5),),
             summary="Jetson AGX Thor on JetPack 7 (L4T R38+): SBSA CUDA 13 from JetPack"),
    Platform("dgx-spark", "aarch64", False, r"\bGB10\b", True, gpu_kind="spark", cuda_shipped_by="dgx-os",
             perf=(Perf("GB10", 250, 20, 10),),
             summary="DGX Spark (GB10) on DGX OS, which ships CUDA"),
    # GH200 (nvidia.com/en-us/data-center/grace-hopper-superchip): 96 GB HBM3 at 4 TB/s; the host is over NVLink-C2C,
    # not PCIe: no host floor. Thor and GB10: unified LPDDR5X, no copy to the GPU to time; no floors known.
    Platform("sbsa-dgpu", "aarch64", False, None, True, perf=(Perf("GH200", 989, 600, 350, 4.0), *_DGPU_PERF),
             allreduce=True,
             summary="an Arm (SBSA) server with NVIDIA GPUs: GH200 / Grace-Hopper, GB200"),
    Platform("x86_64-dgpu", "x86_64", False, None, True, perf=_DGPU_PERF, allreduce=True,
             summary="an x86_64 server with NVIDIA GPUs (H100 pods)"),
    Platform("cpu-only", None, False, None, False, cuda_source=None, summary="no NVIDIA GPU and no driver"),
)


@dataclass(frozen=True)
class JetPackRelease:
    """What a JetPack release ships: its L4T, CUDA, Python and Ubuntu, the Jetson AI Lab torch index built for its
    CUDA, and whether fleet plans for it."""
    jetpack: str      # "5" (every 5.x), "6.0", "6.2"
    l4t: str          # "35", "36.3"
    cuda: str         # the CUDA it ships, the only one its apt repository serves
    python: str
    ubuntu: str
    index: str        # the Jetson AI Lab index whose torch wheels are built for this CUDA and Python
    torch_newest: str | None = None   # the newest torch that index is known to serve; None: the index is current
    supported: bool = True
    # other CUDA for this L4T from NVIDIA's cuda-tegra local installers (jetson-containers' config lists them)
    local_cudas: tuple[str, ...] = ()
    boards: tuple[str, ...] = ()      # the Jetson families (JETSON_BOARDS) it supports


# Sources: developer.nvidia.com/embedded/jetpack-archive and each release's notes. JetPack 5.x (L4T R35) ships
# CUDA 11.4, Python 3.8 and Ubuntu 20.04 (JetPack 5.1.2 release notes); JetPack 6.0 (L4T R36.3) ships CUDA 12.2;
# 6.1 (R36.4) and 6.2 (R36.4.3) ship CUDA 12.6, Python 3.10, Ubuntu 22.04; JetPack 7.0 and 7.1 (R38) ship CUDA
# 13.0, Python 3.12, Ubuntu 24.04.
# A JetPack's apt repository (repo.download.nvidia.com/jetson, listed by nvidia-l4t-apt-source for its L4T
# release) serves only the CUDA that JetPack ships. Any other CUDA for Tegra comes from NVIDIA's cuda-tegra local
# installers (cuda-tegra-repo-ubuntu2204-12-6-local and -12-8-local for L4T R36, -ubuntu2004-11-8/-12-2 for R35:
# the "aarch64-jetson" choice of developer.nvidia.com/cuda-downloads; NVIDIA's blog "Simplifying CUDA Upgrades
# for NVIDIA Jetson Users", developer.nvidia.com/blog/simplifying-cuda-upgrades-for-nvidia-jetson-users/: from
# CUDA 11.8, JetPack 5.0+ takes newer CUDA with its cuda-compat "upgrade package" from there;
# github.com/dusty-nv/jetson-containers packages/cuda/cuda/config.py installs exactly these .debs per L4T), a
# multi-GB .deb whose repository lives in /var and whose key must be copied by hand, which fleet's apt resource
# does not do: fleet plans only the JetPack's own CUDA on a Jetson. (The r36.3 -> r36.4 apt upgrade of L4T is
# not offered either: no source at hand confirms it, so JetPack 6.0 is offered its own CUDA 12.2.)
# Torch indexes (pypi.jetson-ai-lab.io, formerly pypi.jetson-ai-lab.dev): one per JetPack major and CUDA
# (jetson-containers packages/cuda/cuda/config.py pip_cache: the path jp{JetPack major}/cu{CUDA}): jp5/cu114
# (JetPack 5: cp38 wheels; .../jp5/cu114/+f/4c1/d7a5d0ba92527/torch-2.2.0-cp38-cp38-linux_aarch64.whl the newest
# in public install scripts), jp6/cu122 (JetPack 6.0: cp310; .../jp6/cu122/+f/caa/8de487371c7f6/
# torch-2.4.0-cp310-cp310-linux_aarch64.whl the newest seen, with torch-2.3.0; its builds stopped when JetPack 6.1
# moved them to cu126), jp6/cu126 (JetPack 6.1 and 6.2), and sbsa/cu130 (JetPack 7). The torch role's pip check
# looks the pin up on the index (index_check), so a version it lacks fails the check, not the apply. JetPack 5 stays refused: fleet's Jetson plan (its NVPL and cuDSS, its verify) is built
# and tested for JetPack 6 and 7 builds, not for jp5's torch 2.2 on Python 3.8; the fix is a reflash.
_JAI = "https://pypi.jetson-ai-lab.io"
_R35_LOCAL, _R36_LOCAL = ("11.8", "12.2"), ("12.2", "12.4", "12.6", "12.8")   # jetson-containers, per L4T major
# Boards per release (each release's notes, "supported Jetson modules"): JetPack 5.x runs the Xavier and the Orin
# families; JetPack 6.x the Orin family only (AGX Orin, Orin NX, Orin Nano); JetPack 7.0 and 7.1 the Thor family
# only (AGX Thor, T5000, and from 7.1 T4000). JetPack 7.2 (L4T R39.2) runs both Orin and Thor and ships CUDA 13.2:
# SECONDARY sources only, OE4T/meta-tegra PR #2224 ("JetPack 7.2 / L4T R39.2.0: both Orin and Thor are supported,
# CUDA 13.2") and balena-os/balena-jetson-orin PR #621 (JetPack 7.2 for the Orin boards); its Ubuntu 24.04 and
# Python 3.12 are JetPack 7's, and no Jetson AI Lab index built for its CUDA 13.2 is known, so its Jetson index is
# JetPack 7's sbsa/cu130 (CUDA 13.0 builds, which CUDA 13.2's driver runs by minor-version compatibility).
# On 7.2 the Orin joins the unified SBSA CUDA 13 that Thor runs (NVIDIA's blog "What's New in CUDA Toolkit 13.0
# for Jetson Thor": one toolkit for Arm, "the only exception is Orin (sm_87), which will continue on its current
# path for now").
JETPACK_RELEASES: tuple[JetPackRelease, ...] = (
    JetPackRelease("5", "35", "11.4", "3.8", "20.04", f"{_JAI}/jp5/cu114", torch_newest="2.2.0", supported=False,
                   local_cudas=_R35_LOCAL, boards=("xavier", "orin")),
    JetPackRelease("6.0", "36.3", "12.2", "3.10", "22.04", f"{_JAI}/jp6/cu122", torch_newest="2.4.0",
                   local_cudas=_R36_LOCAL, boards=("orin",)),
    JetPackRelease("6.1", "36.4", "12.6", "3.10", "22.04", f"{_JAI}/jp6/cu126", local_cudas=_R36_LOCAL,
                   boards=("orin",)),
    JetPackRelease("6.2", "36.4", "12.6", "3.10", "22.04", f"{_JAI}/jp6/cu126", local_cudas=_R36_LOCAL,
                   boards=("orin",)),
    JetPackRelease("7.0", "38.2", "13.0", "3.12", "24.04", f"{_JAI}/sbsa/cu130", boards=("thor",)),
    JetPackRelease("7.1", "38.4", "13.0", "3.12", "24.04", f"{_JAI}/sbsa/cu130", boards=("thor",)),
    JetPackRelease("7.2", "39.2", "13.2", "3.12", "24.04", f"{_JAI}/sbsa/cu130", boards=("orin", "thor")),
)


# L4T release -> JetPack, as the facts name a Jetson's release from /etc/nv_tegra_release (shared/DOMAIN.md; JetPack 6
# release notes: R36.3 = 6.0, R36.4 = 6.1, R36.4.3 = 6.2; R38.2 = 7.0, R38.4 = 7.1; any R39 = 7.2). Only releases we
# know; others record the L4T alone.
JETPACK_FOR_L4T = {"36.3": "6.0", "36.4": "6.1", "36.4.3": "6.2", "38.2": "7.0", "38.4": "7.1", "39": "7.2"}


@dataclass(frozen=True)
class JetsonBoard:
    """A Jetson family as /proc/device-tree/model names its boards ("NVIDIA Jetson AGX Orin Developer Kit")."""
    family: str      # orin | thor | xavier | ...: what JetPackRelease.boards names
    model: str       # the pattern its boards' model strings match
    label: str
    # the newest JetPack that runs a board no JETPACK_RELEASES row names (older than the table); for the others
    # the table says it (newest_release), and nothing here repeats it
    older: str | None = None


# Sources: the JetPack archive's release pages (developer.nvidia.com/embedded/jetpack-archive): JetPack 4.6.x is the
# last for the Nano, TX1 and TX2. Thor's modules are T5000 and T4000.
# In this order: the first match wins ("Orin Nano" is an Orin, not a Nano).
JETSON_BOARDS: tuple[JetsonBoard, ...] = (
    JetsonBoard("thor", r"\bThor\b|\bT[45]000\b", "Jetson Thor"),
    JetsonBoard("orin", r"\bOrin\b", "Jetson Orin"),
    JetsonBoard("xavier", r"\bXavier\b", "Jetson Xavier"),
    JetsonBoard("tx2", r"\bTX2\b", "Jetson TX2", "4.6"),
    JetsonBoard("tx1", r"\bTX1\b", "Jetson TX1", "4.6"),
    JetsonBoard("nano", r"\bJetson Nano\b", "Jetson Nano", "4.6"),
)


def jetson_board(model: str | None) -> JetsonBoard | None:
    """The family of a Jetson by its /proc/device-tree/model; None where the model is absent or unknown."""
    return next((b for b in JETSON_BOARDS if model and re.search(b.model, str(model))), None)


def releases_for(family: str, planned: bool = False) -> tuple[JetPackRelease, ...]:
    """The JetPack releases whose notes list this board family, oldest first (JETPACK_RELEASES is in release
    order); `planned`: only those fleet plans for."""
    return tuple(r for r in JETPACK_RELEASES if family in r.boards and (r.supported or not planned))


def jetpack_name(release: JetPackRelease) -> str:
    """"JetPack 7.2"; a row for a whole major ("5") is every 5.x: "JetPack 5.x"."""
    return f"JetPack {release.jetpack}{'' if '.' in release.jetpack else '.x'}"


def newest_release(family: str) -> str:
    """The newest JetPack that runs this board family, in words: from JETPACK_RELEASES where a row lists it, else
    the board's own row (a board older than the table)."""
    rows = releases_for(family)
    board = next((b for b in JETSON_BOARDS if b.family == family), None)
    return jetpack_name(rows[-1]) if rows else f"JetPack {board.older if board else '(unknown)'}"


def board_unsupported(model: str | None) -> str | None:
    """Why fleet refuses this board, with it named: no JetPack release fleet plans for runs it; None otherwise."""
    board = jetson_board(model)
    if board is None or releases_for(board.family, planned=True):
        return None
    planned = [r.jetpack for r in JETPACK_RELEASES if r.supported]
    return (f"this Jetson is the board {model} ({board.label}), which no JetPack release fleet plans for supports "
            f"(JetPack {planned[0]} to {planned[-1]}, whose boards each release's notes list; the {board.label}'s "
            f"newest is {newest_release(board.family)}), and no reflash brings it one: provision it by hand, or "
            f"replace the board")


def board_unknown(l4t: str | None, jetpack: str | None, gpu_names: str, model: str | None) -> str | None:
    """Why fleet cannot plan for a Jetson whose release runs more than one generation (JetPack 7.2 runs Orin and
    Thor, JetPack 5 Xavier and Orin) where the record tells the board by neither its model nor its GPU's name:
    the generation decides the CUDA path, the GPU's architecture, cuda-compat (error 803 on Thor) and verify's
    rows, and a guess would plan one board's stack on the other. None where the board is told or the release
    runs one generation."""
    release = jetpack_release(jetpack, l4t)
    if release is None or len(release.boards) < 2 or jetson_board(model) is not None:
        return None
    if _named_by_gpu(gpu_names) is not None:
        return None
    named = " and the ".join(jetson_board_label(f) for f in release.boards)
    seen = f"its board model {model!r} is none fleet knows" if model else "the record names no board model"
    runs = f"JetPack {jetpack}" if jetpack else jetpack_name(release)
    return (f"cannot tell the board: this Jetson runs {runs} (L4T R{l4t or release.l4t}), which runs both the "
            f"{named}, {seen} and no GPU name tells the generation; read /proc/device-tree/model on the "
            f"host (`cat /proc/device-tree/model`), then run `fleet facts` again, which records it")


def jetson_board_label(family: str) -> str:
    return next((b.label for b in JETSON_BOARDS if b.family == family), family)


def jetpack_release(jetpack: str | None, l4t: str | None = None) -> JetPackRelease | None:
    """The release a Jetson's facts name: by JetPack ("6.2", or any "5.x"), else by its L4T release ("36.3"; "36.4"
    is 6.1, 6.2 and 6.2.1 alike, which ship the same; any R35 is JetPack 5)."""
    for release in JETPACK_RELEASES:
        if jetpack and (str(jetpack) == release.jetpack or str(jetpack).split(".")[0] == release.jetpack):
            return release
    by_l4t = [r for r in JETPACK_RELEASES if l4t and (str(l4t) == r.l4t or str(l4t).startswith(r.l4t + "."))]
    return by_l4t[-1] if by_l4t else None


def jetpack_cudas() -> tuple[str, ...]:
    """Every CUDA a JetPack ships ("11.4", "12.2", ...): releases `cuda_version` may name beside the driver table's."""
    return tuple(dict.fromkeys(r.cuda for r in JETPACK_RELEASES))


def release_by_index(url: str) -> JetPackRelease | None:
    """The JetPack release whose Jetson AI Lab index this is (a mirror's path ending the same way counts)."""
    tail = "/".join(url.rstrip("/").split("/")[-2:])
    return next((r for r in JETPACK_RELEASES if r.index.endswith("/" + tail)), None)


NAMES: tuple[str, ...] = tuple(p.name for p in PLATFORMS)
_BY_NAME = {p.name: p for p in PLATFORMS}
_KIND_BY_NAME = {k.name: k for k in KINDS}

# What each source of a preinstalled CUDA is, in decisions' reasons.
SHIPPED_BY = {"jetpack": "shipped with JetPack", "dgx-os": "preinstalled by DGX OS"}


def platform(name) -> Platform | None:
    """The row named `name`; None for anything else (a damaged record's dict or number included)."""
    return _BY_NAME.get(name) if isinstance(name, str) else None


def kind(name: str) -> Kind:
    return _KIND_BY_NAME.get(name, _KIND_BY_NAME["unknown"])


def jetsons() -> tuple[Platform, ...]:
    return tuple(p for p in PLATFORMS if p.jetson)


def jetson_generation(generation: str) -> Platform:
    """The Jetson row of a generation ('orin', 'thor')."""
    return next(p for p in jetsons() if p.generation == generation)


def _major(version: str | None) -> int | None:
    head = str(version or "").split(".")[0]
    return int(head) if head.isdigit() else None


def _named_by_gpu(gpu_names: str) -> Platform | None:
    """The Jetson row whose generation the GPU's name says ("NVIDIA Thor", "Orin (nvgpu)"); None otherwise."""
    return next((row for row in jetsons() if gpu_names and re.search(rf"\b{row.generation}\b", gpu_names, re.I)),
                None)


def jetson_row(l4t: str | None, gpu_names: str, jetpack: str | None = None, model: str | None = None) -> Platform:
    """Which Jetson: by its board (/proc/device-tree/model), else its GPU's name, else its L4T release (or JetPack),
    else the newest. One L4T release may run two generations (R39: JetPack 7.2 runs Orin and Thor), so the number
    alone decides only where nothing names the board. An L4T older than every row's, and a board of no row's
    generation (a Xavier), is the oldest row's, which decisions refuse (`unsupported`, `board_unsupported`)."""
    rows = sorted(jetsons(), key=lambda p: p.l4t[0])
    board = jetson_board(model)
    if board is not None:
        return next((row for row in rows if row.generation == board.family), rows[0])
    named = _named_by_gpu(gpu_names)
    if named is not None:
        return named
    for version, field in ((l4t, "l4t"), (jetpack, "jetpack")):
        major = _major(version)
        if major is None:
            continue
        for row in rows:
            first, end = getattr(row, field)
            if major >= first and (end is None or major < end):
                return row
        return rows[0]   # older than every row (the newest row has no end)
    return next((row for row in rows if re.search(row.gpu, gpu_names)), rows[-1])


def detect(arch: str | None, kernel: str | None, gpu_names: list[str], tegra: bool, has_driver: bool,
           l4t: str | None = None, model: str | None = None) -> Platform:
    """The row whose signs the facts show (facts/gpu.py: detect_platform)."""
    names = " ".join(name or "" for name in gpu_names)
    if tegra or (kernel or "").endswith("-tegra") or any(re.search(p.gpu, names) for p in jetsons()):
        return jetson_row(l4t, names, model=model)
    has_gpu = bool(gpu_names) or has_driver
    for row in PLATFORMS:
        if row.jetson or row.has_gpu != has_gpu or (row.arch and row.arch != arch):
            continue
        if row.gpu is None or re.search(row.gpu, names):
            return row
    return _BY_NAME["x86_64-dgpu"]   # a GPU on a CPU fleet knows no row for: judged as a discrete GPU


def gpu_kind(name: str, platform_name: str) -> str:
    """The kind of a GPU: the platform's where it fixes one, else a platform's GPU name, else the name's kind."""
    row = platform(platform_name)
    if row and row.gpu_kind:
        return row.gpu_kind
    for row in PLATFORMS:
        if row.gpu and row.gpu_kind and re.search(row.gpu, name):
            return row.gpu_kind
    return next((k.name for k in KINDS if k.pattern and re.search(k.pattern, name)), "unknown")


def unsupported(platform_name: str, l4t: str | None, jetpack: str | None) -> str | None:
    """Why fleet refuses this Jetson's release (JetPack 5 on an Orin), with the fix; None where it is supported.
    By its L4T, else by its JetPack (a record without /etc/nv_tegra_release still names JetPack 5)."""
    row, major = platform(platform_name), _major(l4t)
    oldest = min(p.l4t[0] for p in jetsons())
    if row is None or not row.jetson:
        return None
    if major is not None:
        if major >= oldest:
            return None
    elif _major(jetpack) is None or _major(jetpack) >= min(p.jetpack[0] for p in jetsons()):
        return None
    named = " ".join(filter(None, (f"JetPack {jetpack}" if jetpack else None, f"(L4T R{l4t})" if l4t else None)))
    release = jetpack_release(jetpack, l4t)
    ships = (f", which ships CUDA {release.cuda} and Python {release.python} on Ubuntu {release.ubuntu}"
             if release else "")
    # the board's newest release fleet plans for, from the table (JETPACK_RELEASES boards): JetPack 7.2 runs the Orin
    planned = releases_for(row.generation, planned=True)
    newest, label = planned[-1], jetson_board_label(row.generation)
    torch = (f"; its torch would be {release.index.rsplit('/', 2)[-2]}/{release.index.rsplit('/', 1)[-1]}'s "
             f"builds (torch {release.torch_newest} at newest, for Python {release.python}), its apt repository "
             f"serves only CUDA {release.cuda}, and CUDA {' and '.join(release.local_cudas)} for it come only from "
             f"NVIDIA's cuda-tegra local installers, which fleet does not install"
             if release and release.torch_newest and release.local_cudas else "")
    return (f"this Jetson runs {named.removeprefix('(').removesuffix(')') if not jetpack else named}{ships}, "
            f"older than fleet plans for (the {label} on JetPack {', '.join(r.jetpack for r in planned)}{torch}): "
            f"reflash it with JetPack {newest.jetpack} (L4T R{newest.l4t}), the newest release for the {label}, "
            f"using NVIDIA SDK Manager, then run `fleet facts` and fleet again")
