"""The stand-ins themselves: which libraries, packages and wheels the mirror holds, and what is in each.

Sonames, package names, versions and install paths are NVIDIA's and PyTorch's; the contents are small
objects built here that say they are stand-ins.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from . import bandwidth, native, wheels
from .debs import Deb
from .native import SharedObject, c_string

COMPAT = "580.95.05"
TARGETS = {"x86_64": "x86_64-linux", "sbsa": "sbsa-linux"}
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "sbsa": "aarch64-linux-gnu"}


def _lib(soname: str, symbol: str, version: int, what: str, needed=(), runpath=None) -> SharedObject:
    return SharedObject("standin_lib.c", soname, {"LAB_SYMBOL": symbol, "LAB_VERSION": str(version),
                                                  "LAB_NAME": c_string(what)}, list(needed), runpath)


LIBRARIES = [
    _lib("libnvpl_blas_core.so.0", "nvpl_blas_core_get_version", 401, "NVPL BLAS core"),
    _lib("libnvpl_blas_lp64_gomp.so.0", "nvpl_blas_get_version", 401, "NVPL BLAS (LP64, GNU OpenMP)",
         ["libnvpl_blas_core.so.0"], "$ORIGIN"),
    _lib("libnvpl_lapack_core.so.0", "nvpl_lapack_core_get_version", 301, "NVPL LAPACK core"),
    _lib("libnvpl_lapack_lp64_gomp.so.0", "nvpl_lapack_get_version", 301, "NVPL LAPACK (LP64, GNU OpenMP)",
         ["libnvpl_lapack_core.so.0", "libnvpl_blas_lp64_gomp.so.0"], "$ORIGIN"),
    _lib("libcudss.so.0", "cudssGetVersion", 701, "cuDSS 0.7.1 for CUDA 13"),
    _lib("libcudart.so.13", "fleet_lab_cudart_version", 13000, "CUDA runtime 13.0"),
    _lib("libcublasLt.so.13", "fleet_lab_cublaslt_version", 130100, "cuBLASLt 13.1"),
    _lib("libcublas.so.13", "fleet_lab_cublas_version", 130100, "cuBLAS 13.1", ["libcublasLt.so.13"], "$ORIGIN"),
    _lib("libnvidia-ptxjitcompiler.so.1", "fleet_lab_ptxjit_version", 58095, "PTX JIT compiler 580.95.05"),
    _lib("libnvidia-nvvm.so.4", "fleet_lab_nvvm_version", 58095, "NVVM 580.95.05"),
    _lib("libnvidia-nscq.so.2", "nscq_session_create", 2, "NSCQ (NVSwitch Configuration and Query)"),
]

# JetPack 6's CUDA 12.6 (fleet_lab/jetpack.py) and the nvidia-cudss-cu12 wheel: the same sonames' CUDA 12 builds,
# in <libs>/cu12/ (one directory per soname set, as the link step finds them by soname).
CU12_LIBRARIES = [
    _lib("libcudss.so.0", "cudssGetVersion", 701, "cuDSS 0.7.1 for CUDA 12"),
    _lib("libcudart.so.12", "fleet_lab_cudart_version", 12060, "CUDA runtime 12.6 (JetPack 6)"),
    _lib("libcublasLt.so.12", "fleet_lab_cublaslt_version", 120601, "cuBLASLt 12.6 (JetPack 6)"),
    _lib("libcublas.so.12", "fleet_lab_cublas_version", 120601, "cuBLAS 12.6 (JetPack 6)", ["libcublasLt.so.12"],
         "$ORIGIN"),
]

NVPL_LIBS = ["libnvpl_blas_lp64_gomp.so.0", "libnvpl_blas_core.so.0",
             "libnvpl_lapack_lp64_gomp.so.0", "libnvpl_lapack_core.so.0"]


def build_libraries(out: Path) -> None:
    for obj in LIBRARIES:
        native.build(obj, out / obj.soname, link_dir=out)
    for obj in CU12_LIBRARIES:
        native.build(obj, out / "cu12" / obj.soname, link_dir=out / "cu12")
    for (index, machine), flags in wheels.ARCH_FLAGS.items():
        _build_torch_libs(out / "torch" / f"{index}-{machine}", out, flags, jetson=index.startswith("jetson"))


def _build_torch_libs(out: Path, standins: Path, arch_flags: str, jetson: bool) -> None:
    needed = ["libnvpl_lapack_lp64_gomp.so.0", "libnvpl_blas_lp64_gomp.so.0", "libcudss.so.0"] if jetson else []
    cpu = SharedObject("libtorch_cpu.c", "libtorch_cpu.so", {"LAB_NVPL": "1"} if jetson else {}, needed)
    native.build(cpu, out / "lib" / "libtorch_cpu.so", link_dir=standins)
    py = SharedObject("libtorch_python.c", "libtorch_python.so", {}, ["libtorch_cpu.so"], "$ORIGIN")
    native.build(py, out / "lib" / "libtorch_python.so", link_dir=out / "lib")
    ext = SharedObject("torch_C.c", None, {"LAB_ARCH_FLAGS": c_string(arch_flags)}, ["libtorch_python.so"],
                       "$ORIGIN/lib")
    native.build(ext, out / "_C.so", link_dir=out / "lib")


def build_wheels(out: Path, libs: Path, py: str) -> None:
    """whl/cu130 (x86_64 + aarch64), whl/jetson-cu130 and whl/jetson-jp6-cu126 (aarch64), whl/pypi (NVPL, cuDSS)."""
    for index, machines in (("cu130", ("x86_64", "aarch64")), ("jetson-cu130", ("aarch64",)),
                            ("jetson-jp6-cu126", ("aarch64",)), ("cpu", ("x86_64", "aarch64"))):
        built = []
        for machine in machines:
            src = libs / "torch" / f"{index}-{machine}"
            files = {"torch/_C.so": (src / "_C.so").read_bytes()}
            files.update({f"torch/lib/{p.name}": p.read_bytes() for p in sorted((src / "lib").iterdir())})
            plat = f"linux_{machine}" if index.startswith("jetson") else f"manylinux_2_28_{machine}"
            content = wheels.torch_files(files, wheels.ARCH_FLAGS[(index, machine)], index)
            requires = []
            if index == "cu130":   # PyTorch's cu130 wheel: its real size and its nvidia-* wheels (bandwidth.py)
                content["torch/lib/fleet-lab-payload.bin"] = bandwidth.payload("torch")
                requires = [f"{n}=={bandwidth.NVIDIA_WHEEL_VERSION}" for n in bandwidth.NVIDIA_WHEELS]
            built.append(wheels.write_wheel(out / index / "torch", "torch", wheels.torch_version(index),
                                            f"{py}-{py}-{plat}", content,
                                            f"fleet lab stand-in for PyTorch ({index} index), not PyTorch",
                                            requires))
        projects = {"torch": built}
        if index == "cu130":
            projects.update(_nvidia_wheels(out / index, machines))
        wheels.write_index(out / index, projects)
    lib = lambda name: (libs / name).read_bytes()  # noqa: E731
    pypi = {
        "nvpl-blas": [wheels.write_wheel(
            out / "pypi" / "nvpl-blas", "nvpl_blas", "0.4.1.1", "py3-none-manylinux2014_aarch64",
            {f"nvpl/lib/{n}": lib(n) for n in NVPL_LIBS[:2]}, "fleet lab stand-in for NVPL BLAS")],
        "nvpl-lapack": [wheels.write_wheel(
            out / "pypi" / "nvpl-lapack", "nvpl_lapack", "0.3.1.1", "py3-none-manylinux2014_aarch64",
            {f"nvpl/lib/{n}": lib(n) for n in NVPL_LIBS[2:]}, "fleet lab stand-in for NVPL LAPACK",
            ["nvpl-blas"])],
        "nvidia-cudss-cu13": [wheels.write_wheel(
            out / "pypi" / "nvidia-cudss-cu13", "nvidia_cudss_cu13", "0.7.1.4", f"py3-none-manylinux_2_27_{m}",
            {"nvidia/cu13/lib/libcudss.so.0": lib("libcudss.so.0")}, "fleet lab stand-in for cuDSS (CUDA 13)")
            for m in ("x86_64", "aarch64")],
        # the CUDA 12 build (what fleet installs for an Orin's jp6/cu126 torch): nvidia/cu12/lib, as NVIDIA's wheel
        "nvidia-cudss-cu12": [wheels.write_wheel(
            out / "pypi" / "nvidia-cudss-cu12", "nvidia_cudss_cu12", "0.7.1.4", f"py3-none-manylinux_2_27_{m}",
            {"nvidia/cu12/lib/libcudss.so.0": (libs / "cu12" / "libcudss.so.0").read_bytes()},
            "fleet lab stand-in for cuDSS (CUDA 12)") for m in ("x86_64", "aarch64")],
    }
    uv = fetch_uv(out.parent.parent / "downloads")
    if uv:   # the real uv wheels, as PyPI serves them (fleet installs uv into the venv with pip)
        (out / "pypi" / "uv").mkdir(parents=True, exist_ok=True)
        pypi["uv"] = [Path(shutil.copy2(w, out / "pypi" / "uv" / w.name)) for w in uv]
    # PyPI's simple pages link the files on files.pythonhosted.org (fleet_lab/serve.py serves both names)
    wheels.write_index(out / "pypi", pypi, files_url="https://files.pythonhosted.org/packages/")


UV_VERSION = "0.13.9"


def fetch_uv(cache: Path) -> list[Path]:
    """uv's real wheels (x86_64 and aarch64, a static binary each) from PyPI, kept in <lab root>/downloads so a
    rebuilt mirror does not fetch them again. None where PyPI cannot be reached: the mirror then has no uv and
    fleet installs torch with pip (fleet/resources/pip.py), as on a host without PyPI."""
    import subprocess
    import sys
    got = []
    for machine in ("x86_64", "aarch64"):
        have = sorted(cache.glob(f"uv-{UV_VERSION}-*{machine}*.whl"))
        if not have:
            cache.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run([sys.executable, "-m", "pip", "download", f"uv=={UV_VERSION}", "--no-deps",
                                   "--only-binary", ":all:", "--platform", f"manylinux_2_17_{machine}",
                                   "--python-version", "3.12", "-d", str(cache), "-q",
                                   "--disable-pip-version-check"], capture_output=True, text=True, timeout=300)
            have = sorted(cache.glob(f"uv-{UV_VERSION}-*{machine}*.whl"))
            if not have:
                print(f"fleet lab: could not fetch uv {UV_VERSION} ({machine}) from PyPI; the mirror serves no uv "
                      f"(fleet falls back to pip): {proc.stderr.strip()[-300:]}", file=sys.stderr)
        got += have[:1]
    return got


def _nvidia_wheels(index_dir: Path, machines) -> dict[str, list[Path]]:
    """Stand-ins for torch cu130's nvidia-* requirements: real names, scaled real sizes (bandwidth.py)."""
    projects = {}
    for name in bandwidth.NVIDIA_WHEELS:
        data = bandwidth.payload(name)
        projects[name] = [wheels.write_wheel(
            index_dir / name, name.replace("-", "_"), bandwidth.NVIDIA_WHEEL_VERSION, f"py3-none-manylinux_2_27_{m}",
            {bandwidth.nvidia_package_path(name): data}, f"fleet lab stand-in for {name} (its size only)")
            for m in machines]
    return projects


NVCC = """#!/bin/sh
# fleet lab stand-in for nvcc: answers --version like NVIDIA's, compiles nothing.
case "$1" in
  --version|-V)
    echo "nvcc: NVIDIA (R) Cuda compiler driver"
    echo "Copyright (c) 2005-2025 NVIDIA Corporation"
    echo "Built on Wed_Aug_20_01:58:59_PM_PDT_2025"
    echo "Cuda compilation tools, release 13.0, V13.0.88"
    echo "Build cuda_13.0.r13.0/compiler.36424714_0"
    echo "fleet lab stand-in: this nvcc compiles nothing"
    exit 0;;
esac
echo "nvcc (fleet lab stand-in): cannot compile anything; only --version is answered" >&2
exit 1
"""


def keyring_deb(distro: str, arch: str, keyring: bytes) -> Deb:
    """cuda-keyring as NVIDIA's repository for <distro>/<arch> ships it: the key and the line naming that repository
    (the lab's hosts resolve the name to its mirror)."""
    source = f"https://developer.download.nvidia.com/compute/cuda/repos/{distro}/{arch}/"
    return Deb("cuda-keyring", "1.1-1", "CUDA archive keyring and repository entry",
               files={"/usr/share/keyrings/cuda-archive-keyring.gpg": keyring,
                      f"/etc/apt/sources.list.d/cuda-{distro}-{arch}.list":
                          f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {source} /\n".encode()})


def debs_for(arch: str, libs: Path, keyring: bytes, mirror: Path, distro: str = "ubuntu2404") -> list[Deb]:
    """The packages of one flat repository (<distro>/<arch>: ubuntu2404, and debian13 for x86_64, which NVIDIA serves
    the CUDA 13 toolkit from too); NVPL exists only for sbsa, as at NVIDIA."""
    multiarch, target = MULTIARCH[arch], TARGETS[arch]
    lib = lambda name: libs / name  # noqa: E731
    cuda = "/usr/local/cuda-13.0"
    packages = [
        keyring_deb(distro, arch, keyring),
        Deb("cuda-toolkit-13-0", "13.0.2-1", "CUDA Toolkit 13.0 (nvcc --version, cudart, cuBLAS)",
            files={f"{cuda}/bin/nvcc": NVCC.encode(),
                   f"{cuda}/version.json": b'{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}\n',
                   f"{cuda}/targets/{target}/include/cuda.h": b"/* fleet lab stand-in */\n#define CUDA_VERSION 13000\n",
                   f"{cuda}/targets/{target}/lib/libcudart.so.13.0.96": lib("libcudart.so.13"),
                   f"{cuda}/targets/{target}/lib/libcublas.so.13.1.0.3": lib("libcublas.so.13"),
                   f"{cuda}/targets/{target}/lib/libcublasLt.so.13.1.0.3": lib("libcublasLt.so.13"),
                   "/etc/ld.so.conf.d/988_cuda-13.conf": f"{cuda}/targets/{target}/lib\n".encode(),
                   # NVIDIA's toolkit is ~3 GB of .debs: the scaled bytes, a real data member (bandwidth.py)
                   bandwidth.PAYLOAD["cuda-toolkit-13-0"]: bandwidth.payload("cuda-toolkit-13-0")},
            links={f"{cuda}/targets/{target}/lib/libcudart.so.13": "libcudart.so.13.0.96",
                   f"{cuda}/targets/{target}/lib/libcublas.so.13": "libcublas.so.13.1.0.3",
                   f"{cuda}/targets/{target}/lib/libcublasLt.so.13": "libcublasLt.so.13.1.0.3",
                   f"{cuda}/lib64": f"targets/{target}/lib", f"{cuda}/include": f"targets/{target}/include"},
            executables={f"{cuda}/bin/nvcc"}, triggers="activate-noawait ldconfig",
            postinst=(f"update-alternatives --install /usr/local/cuda cuda {cuda} 130\n"
                      f"update-alternatives --install /usr/local/cuda-13 cuda-13 {cuda} 130\n")),
        Deb("cuda-compat-13-0", f"{COMPAT}-0ubuntu1", "CUDA 13.0 forward compatibility (driver 580.95.05)",
            files={f"{cuda}/compat/libcuda.so.{COMPAT}": mirror / "native" / "compat" / f"libcuda.so.{COMPAT}",
                   f"{cuda}/compat/libnvidia-ptxjitcompiler.so.{COMPAT}": lib("libnvidia-ptxjitcompiler.so.1"),
                   f"{cuda}/compat/libnvidia-nvvm.so.{COMPAT}": lib("libnvidia-nvvm.so.4")},
            links={f"{cuda}/compat/libcuda.so.1": f"libcuda.so.{COMPAT}", f"{cuda}/compat/libcuda.so": "libcuda.so.1",
                   f"{cuda}/compat/libnvidia-ptxjitcompiler.so.1": f"libnvidia-ptxjitcompiler.so.{COMPAT}",
                   f"{cuda}/compat/libnvidia-nvvm.so.4": f"libnvidia-nvvm.so.{COMPAT}"}),
        # Like NVIDIA's: lands outside the loader's path and ships no /etc/ld.so.conf.d entry.
        Deb("libcudss0-cuda-13", "0.7.1.4-1", "cuDSS 0.7.1 for CUDA 13 (needs an /etc/ld.so.conf.d entry)",
            files={f"/usr/lib/{multiarch}/libcudss/13/libcudss.so.0.7.1": lib("libcudss.so.0")},
            links={f"/usr/lib/{multiarch}/libcudss/13/libcudss.so.0": "libcudss.so.0.7.1"}),
    ]
    if arch == "sbsa":
        packages += _nvpl_debs(multiarch, libs)
    from . import fabric   # NVIDIA Fabric Manager and NSCQ per driver branch (issue 28)
    packages += fabric.debs(multiarch, lib("libnvidia-nscq.so.2"))
    return packages


def jetson_arm64_debs(libs: Path, keyring: bytes) -> list[Deb]:
    """ubuntu2204/arm64: what NVIDIA builds for a JetPack 6 Jetson (Tegra CUDA 12) besides JetPack's own repository,
    of which fleet installs cuDSS (libcudss0-cuda-12, CUDA 12 build) when cudss_source is apt (fleet/decide/libs.py).
    Its CUDA toolkit comes from JetPack's repository (fleet_lab/jetpack.py), not from here."""
    cu12 = libs / "cu12" / "libcudss.so.0"
    return [keyring_deb("ubuntu2204", "arm64", keyring),
            Deb("libcudss0-cuda-12", "0.7.1.4-1",
                "cuDSS 0.7.1 for CUDA 12 on Jetson (needs an /etc/ld.so.conf.d entry)",
                files={"/usr/lib/aarch64-linux-gnu/libcudss/12/libcudss.so.0.7.1": cu12},
                links={"/usr/lib/aarch64-linux-gnu/libcudss/12/libcudss.so.0": "libcudss.so.0.7.1"})]


def _nvpl_debs(multiarch: str, libs: Path) -> list[Deb]:
    def files(names):
        return {f"/usr/lib/{multiarch}/{n}": libs / n for n in names}
    return [
        Deb("libnvpl-blas0", "0.4.1.1-1", "NVPL BLAS runtime", files=files(NVPL_LIBS[:2]),
            triggers="activate-noawait ldconfig"),
        Deb("libnvpl-lapack0", "0.3.1.1-1", "NVPL LAPACK runtime", files=files(NVPL_LIBS[2:]),
            depends=["libnvpl-blas0"], triggers="activate-noawait ldconfig"),
        Deb("nvpl", "25.5-1", "NVIDIA Performance Libraries (meta package)",
            depends=["libnvpl-blas0", "libnvpl-lapack0"]),
    ]

