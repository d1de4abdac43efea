"""Tarballs laid out as NVIDIA's `compute/nvpl/redist` and `compute/cudss/redist` have them: a
redistrib_<version>.json manifest at the top, <product>/<platform>/<product>-<platform>-<version>-archive.tar.xz."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from .catalog import NVPL_LIBS

PRODUCTS = {
    "nvpl": ("25.5", {"nvpl_blas": ("0.4.1.1", {"linux-sbsa"}, NVPL_LIBS[:2]),
                      "nvpl_lapack": ("0.3.1.1", {"linux-sbsa"}, NVPL_LIBS[2:])}),
    "cudss": ("0.7.1", {"libcudss": ("0.7.1.4", {"linux-sbsa", "linux-x86_64", "linux-aarch64"}, ["libcudss.so.0"])}),
}
# linux-aarch64 is NVIDIA's redistrib name for Jetson devices: cuDSS publishes its _cuda12 archive there (the CUDA 12
# build, what a JetPack 6 Orin runs; compute/cudss/redist/libcudss/linux-aarch64), the others the _cuda13 ones.
CUDA12_PLATFORMS = {"linux-aarch64"}


def build(out: Path, libs: Path) -> None:
    for product, (release, components) in PRODUCTS.items():
        manifest = {"release_date": "2025-09-30", "release_label": release, "release_product": product}
        for name, (version, platforms, sonames) in components.items():
            entry = {"name": f"fleet lab stand-in for {name}", "license": "stand-in", "version": version}
            for platform in sorted(platforms):
                cuda12 = platform in CUDA12_PLATFORMS
                suffix = ("_cuda12" if cuda12 else "_cuda13") if product == "cudss" else ""
                base = f"{name}-{platform}-{version}{suffix}-archive"
                rel = f"{name}/{platform}/{base}.tar.xz"
                data = _tarball(base, {f"lib/{s}": ((libs / "cu12") if cuda12 else libs).joinpath(s).read_bytes()
                                       for s in sonames})
                (out / product / rel).parent.mkdir(parents=True, exist_ok=True)
                (out / product / rel).write_bytes(data)
                entry[platform] = {"relative_path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                                   "md5": hashlib.md5(data).hexdigest(), "size": str(len(data))}
            manifest[name] = entry
        (out / product / f"redistrib_{release}.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _tarball(base: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz") as tar:
        for rel, data in {**files, "LICENSE": b"fleet lab stand-in: not NVIDIA software\n"}.items():
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size, info.mode, info.mtime = len(data), 0o755 if ".so" in rel else 0o644, 1735689600
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
