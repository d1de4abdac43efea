"""Which torch wheel, from which index, and whether its architectures run this GPU.

Architectures per official index: PyTorch 2.9-2.11 support matrix (shared/DOMAIN.md).
The index's CUDA must not be newer than what the driver provides, natively or through
cuda-compat; aarch64 has CUDA wheels only from torch 2.9 on.
"""
from __future__ import annotations

import re

from fleet.decide.gpu import arch_entries, runs_on
from fleet.decide.host import Host
from fleet.decide.model import CompatDecision, TorchDecision
from fleet.decide.variables import Vars
from fleet.decide.cuda import native_cuda
from fleet.decide.versions import version_key

OFFICIAL_ARCHS: dict[tuple[str, str], str] = {
    ("12.6", "x86_64"): "5.0 6.0 7.0 7.5 8.0 8.6 9.0",
    ("12.6", "aarch64"): "8.0 9.0",
    ("12.8", "x86_64"): "7.5 8.0 8.6 9.0 10.0 12.0",
    ("12.8", "aarch64"): "8.0 9.0 10.0 12.0",
    ("13.0", "x86_64"): "7.5 8.0 8.6 9.0 10.0 12.0+PTX",
    ("13.0", "aarch64"): "8.0 9.0 10.0 11.0 12.0+PTX",
}
FIRST_AARCH64_CUDA_TORCH = (2, 9)
_INDEX_CUDA = re.compile(r"[/-]cu(\d+)(\d)/?$")  # .../cu130, or a mirror's .../jetson-cu130


def index_cuda(url: str) -> str | None:
    """'.../whl/cu130' -> '13.0'; '.../sbsa/cu126/' -> '12.6'; None where the URL does not say."""
    match = _INDEX_CUDA.search(url)
    return f"{int(match.group(1))}.{match.group(2)}" if match else None


def decide_torch(host: Host, v: Vars, compat: CompatDecision) -> TorchDecision:
    if not host.has_gpu:
        return _cpu_torch(v)
    jetson = v.torch_source == "jetson"
    url = v.jetson_torch_index_url if jetson else v.torch_index_url
    cuda = v.torch_cuda or index_cuda(url)
    if cuda is None:
        return _refused(v, url, None, f"cannot tell which CUDA the torch index {url} serves: "
                                      f"name it .../cuNNN (cu130) or set torch_cuda=13.0")
    problem = (_jetson_problem(host, url) if jetson else _aarch64_problem(host, v)) \
        or _driver_problem(host, v, compat, url, cuda)
    if problem:
        return _refused(v, url, cuda, problem)
    arch_list, origin = _arch_list(host, v, cuda, jetson)
    return _coverage(host, v, url, cuda, arch_list, origin)


def _cpu_torch(v: Vars) -> TorchDecision:
    url = re.sub(r"/cu\d+/?$", "/cpu", v.torch_index_url)
    return TorchDecision(url, v.torch_version, "official", None, True,
                         f"no NVIDIA GPU: torch {v.torch_version} CPU wheels from {url}; no CUDA decisions", [])


def _refused(v: Vars, url: str, cuda: str | None, why: str) -> TorchDecision:
    return TorchDecision(url, v.torch_version, v.torch_source, cuda, False, why, None, refuse=why)


def _jetson_problem(host: Host, url: str) -> str | None:
    if host.arch != "aarch64":
        return (f"the Jetson torch index {url} serves aarch64 (sbsa) wheels and this host is {host.arch}: "
                f"set torch_source=official")
    return None


def _aarch64_problem(host: Host, v: Vars) -> str | None:
    if host.arch == "aarch64" and version_key(v.torch_version)[:2] < FIRST_AARCH64_CUDA_TORCH:
        return (f"torch {v.torch_version} has no CUDA wheels for aarch64 (they start at 2.9; pip would "
                f"install a CPU build): set torch_version=2.9.0 or newer")
    return None


def _driver_problem(host: Host, v: Vars, compat: CompatDecision, url: str, cuda: str) -> str | None:
    """The wheel's CUDA must not be newer than the driver gives, natively or via compat."""
    if host.driver is None:
        return None
    native = native_cuda(host)
    provided = v.cuda_version if compat.use and version_key(v.cuda_version) > version_key(native or "0") else native
    if provided and version_key(cuda) <= version_key(provided):
        return None
    gives = f"CUDA {provided}" if provided else "a CUDA older than 12.0"
    fix = f"set cuda_version={cuda} to bring cuda-compat" if not compat.use and not compat.refuse \
        else f"install a driver for CUDA {cuda}"
    return (f"torch wheels from {url} need CUDA {cuda} but driver {host.driver} gives {gives}"
            f"{' with cuda-compat' if compat.use else ''}: {fix}, "
            f"or use an index for CUDA {provided or '12.x'} or older")


def _arch_list(host: Host, v: Vars, cuda: str, jetson: bool) -> tuple[list[str] | None, str]:
    """The wheel's architectures: read off the installed torch where it is this very wheel,
    else from the support matrix; the Jetson index publishes none."""
    installed = host.torch or {}
    same_wheel = (str(installed.get("version") or "").split("+")[0] == v.torch_version
                  and str(installed.get("cuda") or "") == cuda and installed.get("arch_list"))
    if same_wheel:
        return list(installed["arch_list"]), "read from the installed torch"
    if jetson:
        return None, "the Jetson index publishes no architecture list"
    spec = OFFICIAL_ARCHS.get((cuda, host.arch))
    if spec is None:
        return None, f"fleet has no table for cu{cuda.replace('.', '')} {host.arch} wheels"
    return arch_entries(spec), "from PyTorch's support matrix"


def _coverage(host: Host, v: Vars, url: str, cuda: str, arch_list, origin: str) -> TorchDecision:
    def result(supported: bool, reason: str, refuse: str | None = None) -> TorchDecision:
        return TorchDecision(url, v.torch_version, v.torch_source, cuda, supported, reason, arch_list, refuse)

    wheel = f"torch {v.torch_version} from {url}"
    unknown = [g for g in host.gpus if g.capability is None]
    if unknown:
        return result(True, f"{wheel}; the capability of {unknown[0].label} is unknown (its driver did not "
                            f"report compute_cap and fleet does not know the name): "
                            f"verify checks that torch runs on it")
    if arch_list is None:
        return result(True, f"{wheel}; {origin}, so verify checks that torch runs on the "
                            + ", ".join(sorted({f"{g.label} ({g.capability})" for g in host.gpus})))
    notes = []
    for gpu in host.gpus:
        entry = runs_on(arch_list, gpu.capability)
        if entry is None:
            why = (f"{wheel} carries {' '.join(arch_list)} ({origin}): none runs on {gpu.label}, "
                   f"capability {gpu.capability} (a cubin needs the same major and an equal or lower minor, "
                   f"PTX a lower or equal capability); {_covering_fix(host, gpu.capability, url, v)}")
            return result(False, why, refuse=why)
        inferred = " (capability inferred from the name: the driver did not report it)" \
            if gpu.capability_source == "from the name" else ""
        notes.append(f"{entry} runs on {gpu.label}, capability {gpu.capability}{inferred}")
    return result(True, f"{wheel}: " + "; ".join(dict.fromkeys(notes)) + f" (architectures {origin})")


def _covering_fix(host: Host, capability: str, url: str, v: Vars) -> str:
    """The newest official index whose wheels run on `capability`, as a fix to set."""
    for cuda in sorted({c for c, _ in OFFICIAL_ARCHS}, key=version_key, reverse=True):
        spec = OFFICIAL_ARCHS.get((cuda, host.arch))
        if spec and runs_on(arch_entries(spec), capability):
            index = f"https://download.pytorch.org/whl/cu{cuda.replace('.', '')}"
            if index == url.rstrip("/"):  # the installed build differs from the published wheels
                return f"reinstall torch {v.torch_version} from {index}: its published wheels cover it"
            return f"set torch_index_url={index}"
    return f"no official torch index covers capability {capability} on {host.arch}"
