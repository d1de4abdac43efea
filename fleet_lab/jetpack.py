"""A stand-in for NVIDIA's JetPack apt repository (https://repo.download.nvidia.com/jetson/), from which a
Jetson Orin on JetPack 6 takes its CUDA toolkit.

Real Orins: the L4T root filesystem has the package nvidia-l4t-apt-source preinstalled, which lists this
repository for the board's SoC, and the repository's public key is preinstalled too (Jetson Linux Developer
Guide, "Software Packages and the Update Mechanism",
docs.nvidia.com/jetson/archives/r35.4.1/DeveloperGuide/text/SD/SoftwarePackagesAndTheUpdateMechanism.html). An
Orin flashed with the BSP only has no CUDA until `sudo apt install nvidia-jetpack` (or cuda-toolkit-12-6) from it
(JetPack 6.1 "How to Install and Configure JetPack SDK", docs.nvidia.com/jetson/archives/jetpack-archived/
jetpack-61/install-setup/index.html: "The Debian package management server can be accessed at
https://repo.download.nvidia.com/jetson/"). What boards carry, as seen on R36.4/R36.5 Orins:

    /etc/apt/sources.list.d/nvidia-l4t-apt-source.list
        deb https://repo.download.nvidia.com/jetson/common r36.4 main
        deb https://repo.download.nvidia.com/jetson/t234 r36.4 main
    /etc/apt/trusted.gpg.d/jetson-ota-public.asc

The repository is laid out as NVIDIA's, a Debian archive per channel (`common`, `t234`):
`<channel>/dists/r36.4/{InRelease,Release,Release.gpg}`, `<channel>/dists/r36.4/main/binary-arm64/Packages`,
`<channel>/pool/main/...`, signed with a key of its own (the lab's "Jetson OTA" key). `common` holds the CUDA
packages; `t234` holds the SoC's BSP packages, none of which fleet installs (an empty index here).

The stand-in packages are `Architecture: all`, as every lab package is (a lab host's dpkg says amd64), so the
index sits in binary-all too, which apt reads where the Release lists `all`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .debs import Deb, build_deb, sign_release, write_packages

L4T_SUITE = "r36.4"                 # L4T R36.4: JetPack 6.1 and 6.2
CHANNELS = ("common", "t234")       # t234: the Orin SoC
REPO_URL = "https://repo.download.nvidia.com/jetson"
SOURCES_LIST = "/etc/apt/sources.list.d/nvidia-l4t-apt-source.list"
KEY_PATH = "/etc/apt/trusted.gpg.d/jetson-ota-public.asc"
KEY_IN_MIRROR = "jetson-ota-public.asc"   # <mirror>/apt/jetson/, installed into Orin hosts at KEY_PATH
KEY_UID = "fleet lab stand-in Jetson OTA key <lab@fleet.invalid>"

# JetPack 6.1/6.2 ship CUDA 12.6 (nvcc V12.6.68) as cuda-toolkit-12-6 12.6.11-1 (JetPack 6.2 release notes;
# the package version as NVIDIA's l4t CUDA 12.6.11 images carry it).
CUDA = "/usr/local/cuda-12.6"
TARGET = "aarch64-linux"            # Tegra CUDA before 13 (fleet/decide/cuda.py toolkit_lib_dir)
NVCC = """#!/bin/sh
# fleet lab stand-in for JetPack 6's nvcc: answers --version like NVIDIA's, compiles nothing.
case "$1" in
  --version|-V)
    echo "nvcc: NVIDIA (R) Cuda compiler driver"
    echo "Copyright (c) 2005-2024 NVIDIA Corporation"
    echo "Built on Tue_Feb_27_16:18:36_PST_2024"
    echo "Cuda compilation tools, release 12.6, V12.6.68"
    echo "Build cuda_12.6.r12.6/compiler.34714021_0"
    echo "fleet lab stand-in: this nvcc compiles nothing"
    exit 0;;
esac
echo "nvcc (fleet lab stand-in): cannot compile anything; only --version is answered" >&2
exit 1
"""


def sources_list(suite: str = L4T_SUITE) -> str:
    return "".join(f"deb {REPO_URL}/{channel} {suite} main\n" for channel in CHANNELS)


def toolkit_deb(libs: Path) -> Deb:
    """cuda-toolkit-12-6 as JetPack 6 installs it: /usr/local/cuda-12.6 with aarch64-linux targets."""
    lib = f"{CUDA}/targets/{TARGET}/lib"
    return Deb(
        "cuda-toolkit-12-6", "12.6.11-1", "CUDA Toolkit 12.6 for JetPack 6 (nvcc --version, cudart, cuBLAS)",
        files={f"{CUDA}/bin/nvcc": NVCC.encode(),
               f"{CUDA}/version.json": b'{"cuda": {"name": "CUDA SDK", "version": "12.6.11"}}\n',
               f"{CUDA}/targets/{TARGET}/include/cuda.h": b"/* fleet lab stand-in */\n#define CUDA_VERSION 12060\n",
               f"{lib}/libcudart.so.12.6.68": libs / "cu12" / "libcudart.so.12",
               f"{lib}/libcublas.so.12.6.1.4": libs / "cu12" / "libcublas.so.12",
               f"{lib}/libcublasLt.so.12.6.1.4": libs / "cu12" / "libcublasLt.so.12",
               "/etc/ld.so.conf.d/988_cuda-12.conf": f"{lib}\n".encode()},
        links={f"{lib}/libcudart.so.12": "libcudart.so.12.6.68", f"{lib}/libcublas.so.12": "libcublas.so.12.6.1.4",
               f"{lib}/libcublasLt.so.12": "libcublasLt.so.12.6.1.4",
               f"{CUDA}/lib64": f"targets/{TARGET}/lib", f"{CUDA}/include": f"targets/{TARGET}/include"},
        executables={f"{CUDA}/bin/nvcc"}, triggers="activate-noawait ldconfig",
        postinst=(f"update-alternatives --install /usr/local/cuda cuda {CUDA} 126\n"
                  f"update-alternatives --install /usr/local/cuda-12 cuda-12 {CUDA} 126\n"))


def build(out: Path, libs: Path, gpg_home: Path, key: bytes) -> None:
    """<out>/<channel>/{pool,dists/r36.4} for each channel, signed; <out>/jetson-ota-public.asc."""
    packages = {"common": [toolkit_deb(libs)], "t234": []}
    for channel in CHANNELS:
        pool = out / channel / "pool" / "main"
        stanzas = [_stanza(deb, build_deb(deb, pool / deb.name[0] / deb.name), out / channel)
                   for deb in packages[channel]]
        dist = out / channel / "dists" / L4T_SUITE
        indexes = []
        for arch in ("arm64", "all"):
            indexes += write_packages(dist / "main" / f"binary-{arch}", stanzas)
        sign_release(dist, ["Origin: fleet lab stand-in", f"Label: fleet lab stand-in for Jetson {channel}",
                            f"Suite: {L4T_SUITE}", f"Codename: {L4T_SUITE}", "Architectures: arm64 all",
                            "Components: main"], indexes, gpg_home)
    (out / KEY_IN_MIRROR).write_bytes(key)


def _stanza(deb: Deb, path: Path, channel_root: Path) -> str:
    data = path.read_bytes()
    head, description = deb.control().rstrip("\n").split("\nDescription:", 1)
    return (head + f"\nFilename: {path.relative_to(channel_root).as_posix()}\nSize: {len(data)}"
            + f"\nSHA256: {hashlib.sha256(data).hexdigest()}\nDescription:{description}")
