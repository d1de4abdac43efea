"""NVPL and cuDSS (which the Jetson AI Lab torch wheels link without declaring), the
LD_LIBRARY_PATH that follows from every decision, and who provides each soname.

Wheels put their libraries in site-packages/nvpl/lib and site-packages/nvidia/cu13/lib,
off the loader path; NVIDIA's apt cuDSS lands in /usr/lib/aarch64-linux-gnu/libcudss/13
and needs an /etc/ld.so.conf.d entry; NVPL's apt packages land on the default path.

Redist tarballs follow NVIDIA's layout, as each product's redistrib_<release>.json lists it
(developer.download.nvidia.com/compute/nvpl/redist/redistrib_25.5.json, compute/cudss/redist):
<product>/<platform>/<name>-<platform>-<version>-archive.tar.xz; NVPL ships BLAS and LAPACK as
separate archives, cuDSS names its CUDA major (libcudss-linux-sbsa-0.7.1.4_cuda13-archive.tar.xz).

A JetPack 6 Jetson (Tegra CUDA 12) takes cuDSS as NVIDIA builds it for Jetson devices: the `linux-aarch64`
redistrib platform (developer.download.nvidia.com/compute/cudss/redist/libcudss/linux-aarch64 lists
libcudss-linux-aarch64-0.7.1.4_cuda12-archive.tar.xz beside the _cuda13 one) and the `arm64` directory of
the apt repository (ubuntu2204/arm64), with that repository's keyring; JetPack 7 runs the unified SBSA CUDA 13
and stays linux-sbsa / sbsa (fleet/decide/host.py Host.repo_arch, redist_platform). NVPL is published for Arm
SBSA servers only (compute/nvpl/redist/nvpl_blas has a linux-sbsa directory alone, and NVIDIA's conda packages of
it are constrained to arm-variant sbsa, where cuDSS's have a Tegra variant), so its rows stay SBSA on every Arm host.
"""
from __future__ import annotations

from fleet.decide.host import Host
from fleet.decide.model import CompatDecision, CudaDecision, LibraryDecision, Provider, TorchDecision
from fleet.decide.variables import Vars

NVPL_SONAMES = ("libnvpl_blas_lp64_gomp.so.0", "libnvpl_lapack_lp64_gomp.so.0",
                "libnvpl_blas_core.so.0", "libnvpl_lapack_core.so.0")
CUDSS_SONAME = "libcudss.so.0"
APT_CUDSS_DIR = "/usr/lib/aarch64-linux-gnu/libcudss/{major}"


def _site_packages(host: Host, v: Vars) -> str | None:
    if host.python_version is None:
        return None
    return f"{v.python_env}/lib/python{host.python_version}/site-packages"


def _not_needed(torch: TorchDecision, what: str) -> LibraryDecision:
    if torch.source == "jetson" and not torch.supported:
        why = f"{what}: not decided, the torch decision refused the host"
    elif torch.cuda is None:
        why = f"{what}: not needed, CPU torch does not link it"
    else:
        why = f"{what}: not needed, the official torch wheels do not link it"
    return LibraryDecision(False, None, [], None, [], None, why)


def decide_nvpl(host: Host, v: Vars, torch: TorchDecision) -> LibraryDecision:
    if torch.source != "jetson" or not torch.supported:
        return _not_needed(torch, "NVPL")
    why = "the Jetson-index torch links NVPL BLAS/LAPACK without declaring them"
    if v.nvpl_source == "apt":
        repo = v.cuda_apt_repo.format(distro=host.distro or "ubuntu2404", arch="sbsa")
        return LibraryDecision(True, "apt", ["libnvpl-blas0", "libnvpl-lapack0"], repo, [], "default",
                               f"{why}: apt packages from {repo}, on the default loader path")
    if v.nvpl_source == "tarball":
        lib = f"{v.nvpl_home}/lib"
        archives = [redist_url(v.nvpl_redist_url, name, "linux-sbsa", version)
                    for name, version in (("nvpl_blas", v.nvpl_blas_version), ("nvpl_lapack", v.nvpl_lapack_version))]
        return LibraryDecision(True, "tarball", ["nvpl_blas", "nvpl_lapack"], v.nvpl_redist_url, [lib],
                               "ld_library_path",
                               f"{why}: BLAS and LAPACK archives {' and '.join(archives)} into {v.nvpl_home}, "
                               f"{lib} on LD_LIBRARY_PATH", archives=archives)
    return _from_pypi(host, v, why, ["nvpl-blas", "nvpl-lapack"], "nvpl/lib")


def decide_cudss(host: Host, v: Vars, torch: TorchDecision) -> LibraryDecision:
    if torch.source != "jetson" or not torch.supported:
        return _not_needed(torch, "cuDSS")
    major = (torch.cuda or v.cuda_version).split(".")[0]
    why = "the Jetson-index torch links libcudss.so.0 without declaring it"
    if v.cudss_source == "apt":   # a JetPack 6 Jetson's from ubuntu2204/arm64 (Host.repo_arch), not sbsa
        repo = v.cuda_apt_repo.format(distro=host.distro or "ubuntu2404", arch=host.repo_arch)
        lib = APT_CUDSS_DIR.format(major=major)
        return LibraryDecision(True, "apt", [f"libcudss0-cuda-{major}"], repo, [lib], "ld.so.conf.d",
                               f"{why}: libcudss0-cuda-{major} from {repo}; {lib} goes in /etc/ld.so.conf.d")
    if v.cudss_source == "tarball":
        lib = f"{v.cudss_home}/lib"
        platform = host.redist_platform   # linux-aarch64 on a JetPack 6 Jetson (Tegra CUDA 12)
        archives = [redist_url(v.cudss_redist_url, "libcudss", platform, f"{v.cudss_version}_cuda{major}")]
        return LibraryDecision(True, "tarball", [f"libcudss-cuda{major}"], v.cudss_redist_url, [lib],
                               "ld_library_path",
                               f"{why}: archive {archives[0]} into {v.cudss_home}, {lib} on LD_LIBRARY_PATH",
                               archives=archives)
    return _from_pypi(host, v, why + f" (cuDSS {v.cudss_version} ships that soname)",
                      [f"nvidia-cudss-cu{major}=={v.cudss_version}"], f"nvidia/cu{major}/lib")


def redist_url(base: str, name: str, platform: str, version: str) -> str:
    """NVIDIA's redist layout: <base>/<name>/<platform>/<name>-<platform>-<version>-archive.tar.xz."""
    return f"{base.rstrip('/')}/{name}/{platform}/{name}-{platform}-{version}-archive.tar.xz"


def _from_pypi(host: Host, v: Vars, why: str, packages: list[str], subdir: str) -> LibraryDecision:
    site = _site_packages(host, v)
    if site is None:
        refuse = (f"the facts hold no python.version, so fleet cannot name the directory where "
                  f"{', '.join(packages)} land: install python3 and re-run `fleet facts`")
        return LibraryDecision(True, "pypi", packages, "pypi", [], "ld_library_path", refuse, refuse)
    lib = f"{site}/{subdir}"
    return LibraryDecision(True, "pypi", packages, "pypi", [lib], "ld_library_path",
                           f"{why}: wheels {', '.join(packages)} into {v.python_env}; {lib} on LD_LIBRARY_PATH")


def ld_library_path(compat: CompatDecision, cuda: CudaDecision, *libraries: LibraryDecision) -> list[str]:
    """compat first (it must shadow the driver's libcuda), the toolkit, then NVPL and cuDSS
    directories that no ld.so.conf.d entry or default path already serves."""
    dirs = [compat.path] if compat.use else []
    dirs += [cuda.lib_dir] if cuda.lib_dir else []
    for library in libraries:
        if library.needed and library.loader == "ld_library_path":
            dirs += library.lib_dirs
    return list(dict.fromkeys(dirs))


def missing_providers(host: Host, v: Vars, compat: CompatDecision, torch: TorchDecision,
                      nvpl: LibraryDecision, cudss: LibraryDecision) -> dict[str, Provider]:
    """For verify: the role (or outside party) that provides each soname it may find missing."""
    if not host.has_gpu:
        return {}
    major = v.cuda_major
    providers = {"libcuda.so.1": _libcuda(compat, v)}
    official = torch.source == "official"
    for soname in (f"libcudart.so.{major}", f"libcublas.so.{major}"):
        providers[soname] = Provider("torch", True, f"torch's nvidia-*-cu{major} wheels bring {soname}; "
                                     f"the cuda_toolkit role's lib dir has it for everything else") if official else \
            Provider("cuda_toolkit", True, f"the CUDA {v.cuda_version} toolkit's lib dir provides {soname}")
    providers["libcudnn.so.9"] = (
        Provider("torch", True, f"torch's nvidia-cudnn-cu{major} wheel brings it") if official else
        Provider("cudnn", False, f"not fleet's: install libcudnn9-cuda-{major} from NVIDIA's apt repo"
                                 + (f" ({host.jetson.label} ships it)" if host.jetson else "")))
    for soname in NVPL_SONAMES:
        providers[soname] = _library_provider("nvpl", nvpl)
    providers[CUDSS_SONAME] = _library_provider("cudss", cudss)
    return providers


def _libcuda(compat: CompatDecision, v: Vars) -> Provider:
    if compat.use:
        return Provider("cuda_compat", True, f"{compat.package} puts libcuda.so.1 in {compat.path}, "
                                             f"which env_hooks puts first on LD_LIBRARY_PATH")
    return Provider("driver", False, "not fleet's: libcuda.so.1 comes with the NVIDIA driver; install the "
                                     "driver, or start the container with the NVIDIA runtime so it mounts it")


def _library_provider(role: str, library: LibraryDecision) -> Provider:
    if library.needed:
        return Provider(role, True, f"the {role} role provides it: {library.reason}")
    return Provider(role, True, f"the {role} role provides it, but it is off for this host ({library.reason}), "
                                f"so what misses it is not torch: look at the program that loads it")
