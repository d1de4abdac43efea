"""CUDA toolkit (which release, present or from where) and cuda-compat (on or off, and why).

cuda-compat is forward compatibility: a newer libcuda for an older KERNEL driver. It is
used only where the kernel driver is older than the wanted CUDA needs AND the GPU may use
it; where the kernel driver is new enough, a compat libcuda on the path fails with error 803,
so an installed package must stay off the path (shared/DOMAIN.md, "Forward compatibility").
"""
from __future__ import annotations

from fleet.decide.gpu import forward_compat_refusal
from fleet.decide.host import Host
from fleet.decide.model import CompatDecision, CudaDecision
from fleet.decide.variables import Vars
from fleet.decide.versions import MIN_DRIVER, cuda_max_for_driver, min_driver_for, version_key


def toolkit_dir(host: Host, cuda: str) -> str:
    installed = host.toolkit(cuda)
    return str(installed.get("path") or f"/usr/local/cuda-{cuda}") if installed else f"/usr/local/cuda-{cuda}"


def toolkit_lib_dir(host: Host, cuda: str) -> str:
    """The real directory behind lib64: targets/<target>/lib. From CUDA 13 every Arm GPU,
    Thor included, uses the unified SBSA toolkit; Jetson before 13 had aarch64-linux."""
    if host.arch == "x86_64":
        target = "x86_64-linux"
    elif host.jetpack and version_key(cuda) < (13,):
        target = "aarch64-linux"
    else:
        target = "sbsa-linux"
    return f"{toolkit_dir(host, cuda)}/targets/{target}/lib"


def decide_cuda(host: Host, v: Vars) -> CudaDecision:
    if not host.has_gpu:
        return CudaDecision(None, False, "none", None, None, None, None, None,
                            "no NVIDIA GPU: no CUDA toolkit to install")
    cuda, package = v.cuda_version, f"cuda-toolkit-{v.cuda_dashed}"
    path, lib_dir = toolkit_dir(host, cuda), toolkit_lib_dir(host, cuda)
    installed = host.toolkit(cuda)
    if installed:
        source = {"jetson-thor": "jetpack", "dgx-spark": "dgx-os"}.get(host.platform)
        where = {"jetpack": "shipped with JetPack", "dgx-os": "preinstalled by DGX OS"}.get(source, "installed")
        release = installed.get("full_version") or installed.get("version")
        nvcc = f" (nvcc {release})" if release and release != cuda else ""
        return CudaDecision(cuda, True, "present", source, None, package, path, lib_dir,
                            f"CUDA {cuda} is {where} at {path}{nvcc}: nothing to install")
    if host.platform == "jetson-thor":
        jetpack = f"JetPack {host.jetpack}" if host.jetpack else "JetPack"
        return CudaDecision(cuda, False, "install", "jetpack", None, package, path, lib_dir,
                            f"CUDA {cuda} is not installed: install {package} from {jetpack}'s apt "
                            f"repository (Thor takes CUDA from JetPack, not from the desktop repo)")
    repo = _apt_repo(host, v)
    if repo is None:
        os_name = f"{host.os_id} {host.os_version}".strip() or "an OS the facts do not name"
        why = f"CUDA {cuda} is not installed and NVIDIA has no apt repo fleet knows for {os_name} ({host.arch})"
        return CudaDecision(cuda, False, "install", None, None, package, path, lib_dir, why, refuse=(
            f"{why}: install it by hand or set cuda_apt_repo to a repository that serves {package}"))
    return CudaDecision(cuda, False, "install", "nvidia-apt", repo, package, path, lib_dir,
                        f"CUDA {cuda} is not installed: install {package} from NVIDIA's apt repo {repo}")


def _apt_repo(host: Host, v: Vars) -> str | None:
    if "{distro}" in v.cuda_apt_repo and host.distro is None:
        return None
    return v.cuda_apt_repo.format(distro=host.distro or "", arch=host.repo_arch)


def _is_jetson(host: Host) -> bool:
    return bool(host.jetpack) or any(g.kind in ("thor", "jetson") for g in host.gpus)


def native_cuda(host: Host) -> str | None:
    """The newest CUDA the kernel driver runs without cuda-compat.

    Jetson drivers report only their branch ('580.00' on Thor with JetPack 7), and JetPack
    ships the CUDA of that branch, so on Jetson the branch decides, not the desktop table.
    """
    if host.driver is None:
        return None
    if _is_jetson(host):
        branch = version_key(host.driver)[0]
        fitting = [c for c in MIN_DRIVER if version_key(MIN_DRIVER[c])[0] <= branch]
        return max(fitting, key=version_key) if fitting else None
    return cuda_max_for_driver(host.driver)


def driver_runs(host: Host, cuda: str) -> bool:
    native = native_cuda(host)
    return native is not None and version_key(native) >= version_key(cuda)


def _new_enough(host: Host, cuda: str) -> str:
    need = min_driver_for(cuda)
    if _is_jetson(host):
        return (f"kernel driver {host.driver} is JetPack's r{version_key(host.driver)[0]} branch, which runs "
                f"CUDA {cuda} (Jetson drivers report the branch only); never cuda-compat on a Jetson with a new "
                f"enough driver (error 803 on Thor)")
    return f"kernel driver {host.driver} >= {need} needed by CUDA {cuda}"


def compat_dir(v: Vars) -> str:
    return f"/usr/local/cuda-{v.cuda_version}/compat"


def decide_compat(host: Host, v: Vars) -> CompatDecision:
    path, package, installed = compat_dir(v), f"cuda-compat-{v.cuda_dashed}", host.compat

    def off(reason: str, refuse: str | None = None) -> CompatDecision:
        return CompatDecision(False, reason, path, package, installed, refuse)

    if not host.has_gpu:
        return off("no NVIDIA GPU: no CUDA, no cuda-compat")
    need = min_driver_for(v.cuda_version)
    if host.driver is None:
        return off(f"the kernel driver's version is unknown, so fleet cannot tell whether CUDA "
                   f"{v.cuda_version} needs cuda-compat: check /proc/driver/nvidia/version and re-run `fleet facts`")
    if driver_runs(host, v.cuda_version):
        return off(_new_enough(host, v.cuda_version) + _keep_off_note(host, path))
    gpu = next((g for g in host.gpus if forward_compat_refusal(g)), host.gpus[0])
    why_not = forward_compat_refusal(gpu)
    if why_not:
        return off(f"kernel driver {host.driver} < {need} needed by CUDA {v.cuda_version}, but {why_not}",
                   refuse=f"{gpu.label} on driver {host.driver} cannot run CUDA {v.cuda_version}: "
                          f"{why_not}; {_driver_fix(host, need)}")
    kind = "a Jetson" if gpu.kind == "jetson" else "a data-center GPU"
    return CompatDecision(True, f"kernel driver {host.driver} < {need} needed by CUDA {v.cuda_version}; "
                                f"{gpu.label} is {kind}: {package} goes first on LD_LIBRARY_PATH",
                          path, package, installed)


def _keep_off_note(host: Host, path: str) -> str:
    """An installed compat package next to a new enough driver is the 803 trap: say so."""
    if not host.compat:
        return ""
    compat = host.compat
    label = f"cuda-compat {compat['version']}" if compat.get("version") else "cuda-compat"
    note = f"; {label} is installed but must stay off the path (error 803)"
    if compat.get("in_use") or compat.get("on_ld_library_path") or path in host.env_ld_library_path.split(":"):
        note += ": it is on LD_LIBRARY_PATH now and env_hooks takes it off"
    if compat.get("registered_ldconfig"):
        note += "; it is registered with ldconfig: remove its /etc/ld.so.conf.d entry and run ldconfig"
    return note


def _driver_fix(host: Host, need: str) -> str:
    """Jetson drivers come with JetPack and report their branch: name the branch."""
    if _is_jetson(host):
        return f"install a JetPack whose driver is r{version_key(need)[0]} or newer"
    return f"install driver >= {need}"
