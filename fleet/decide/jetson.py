"""Jetson generations: what each JetPack ships and where its torch wheels live.

Orin runs JetPack 6 (L4T R36: CUDA 12.x built for Tegra, `aarch64-linux` targets) and JetPack 7.2; Thor runs
JetPack 7 (L4T R38 and later: the unified SBSA CUDA 13, which 7.2 brings to the Orin too). The generation comes
from the board (/proc/device-tree/model), then the GPU's name, and only then the L4T release, since R39 (7.2)
runs both. Generations differ in CUDA, in which torch wheels run, and in
cuda-compat: forward compatibility is supported on Jetson boards (an Orin could take a newer 12.x through
cuda-compat, but that Tegra package comes only with NVIDIA's cuda-tegra local installer, which fleet does not
install: fleet/decide/cuda.py refuses it), and on Thor with JetPack 7 a compat libcuda fails with error 803.

Sources: developer.nvidia.com/embedded/jetpack-archive and the JetPack 6.0/6.1/6.2/7.0/7.1 release notes
(CUDA 12.2 in 6.0, 12.6 in 6.1 and 6.2, 13.0 in 7.0 and 7.1; 7.2's CUDA 13.2 from secondary sources, see
JETPACK_RELEASES); docs.nvidia.com/deploy/cuda-compatibility
/forward-compatibility.html ("Jetson boards"); NVIDIA/nvidia-container-toolkit PR #1679 (compat on Thor ->
803); pypi.jetson-ai-lab.io (indexes jp6/cu122 for JetPack 6.0, jp6/cu126 for 6.1 and 6.2, sbsa/cu130 for
JetPack 7; fleet/knowledge/platforms.py JETPACK_RELEASES).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from fleet.knowledge import platforms
from fleet.knowledge.cuda_table import MIN_DRIVER, version_key
from fleet.decide.gpu import Gpu


@dataclass(frozen=True)
class JetPack:
    generation: str        # "orin" | "thor"
    jetpack: str | None    # "6.2", "7.0"; None where the facts do not name it
    cuda: str | None       # the CUDA this JetPack ships ("12.6"); None where fleet does not know it
    index_url: str         # the Jetson AI Lab index for this JetPack's torch wheels
    l4t: str | None = None  # "36.4": the L4T release, where the facts name it
    model: str | None = None  # /proc/device-tree/model: "NVIDIA Jetson AGX Orin Developer Kit"
    board_unknown: str | None = None  # why the generation is a guess (a release of two, no board named)

    @property
    def label(self) -> str:
        return f"JetPack {self.jetpack}" if self.jetpack else f"JetPack {self.major}"

    @property
    def sbsa(self) -> bool:
        """Its JetPack ships the unified SBSA CUDA 13 (JetPack 7), which PyTorch's official aarch64 wheels run on."""
        return bool(self.cuda) and version_key(self.cuda)[0] >= 13

    @property
    def major(self) -> str:
        return str(platforms.jetson_generation(self.generation).jetpack[0])


def jetpack_of(l4t: str | None, jetpack: str | None, gpu_names: str, model: str | None = None) -> JetPack:
    """The generation (by the board's model, else the GPU's name, else the L4T release), and what its release ships
    (fleet/knowledge/platforms.py JETPACK_RELEASES: by JetPack, else by L4T): its CUDA and the Jetson AI Lab index
    built for that CUDA (JetPack 6.0: jp6/cu122, 6.1/6.2: jp6/cu126). A release the table does not name keeps its
    row's: JetPack 7.0 and 7.1 ship CUDA 13.0 (sbsa/cu130). Where the release runs two generations and nothing
    names the board, the row is a guess, and `board_unknown` says so (decisions refuse)."""
    row = platforms.jetson_row(l4t, gpu_names, jetpack, model)
    release = platforms.jetpack_release(jetpack, l4t)
    cuda = release.cuda if release else row.shipped_cuda
    index = release.index if release else row.jetson_index
    return JetPack(row.generation, str(jetpack) if jetpack else None, cuda, index, l4t or None, model or None,
                   platforms.board_unknown(l4t, jetpack, gpu_names, model))


def branch_cuda(driver: str) -> str | None:
    """A Jetson driver reports only its branch ('580.00'): the newest CUDA of that branch."""
    branch = version_key(driver)[0]
    fitting = [c for c in MIN_DRIVER if version_key(MIN_DRIVER[c])[0] <= branch]
    return max(fitting, key=version_key) if fitting else None


def with_driver(jp: JetPack, driver: str | None) -> JetPack:
    """A release the table does not name (L4T R36.2): its CUDA by the driver's branch, and the Jetson index built
    for that CUDA in its JetPack major, so every decision reads one CUDA for the board and one index."""
    if jp.cuda or not driver:
        return jp
    cuda = branch_cuda(driver)
    release = next((r for r in reversed(platforms.JETPACK_RELEASES)
                    if r.cuda == cuda and r.jetpack.split(".")[0] == jp.major), None)
    return replace(jp, cuda=cuda, index_url=release.index if release else jp.index_url)


def is_jetson_index(url: str) -> bool:
    """The Jetson AI Lab index (or a mirror named after it): its wheels link NVPL and cuDSS."""
    return "jetson-ai-lab" in url or "/jetson-" in url or url.rstrip("/").split("/")[-1].startswith("jetson")


def jetson_gpu(gen: str) -> Gpu:
    """The integrated GPU of a Jetson whose facts list none (no nvidia-smi on JetPack 6), from its row: Orin is
    8.7, Thor 11.0 (developer.nvidia.com/cuda-gpus)."""
    row = platforms.jetson_generation(gen)
    name, capability = row.integrated_gpu
    return Gpu(name, capability, "from the JetPack generation", row.gpu_kind)
