"""Which torch wheel, from which index, and whether its architectures run this GPU.

Architectures per official wheel: fleet/decide/archs.py (per torch version range, variant, CPU). The
index's CUDA must run on the driver: fully, by minor-version compatibility (any 12.x on >= 525.60.13, any
13.x on >= 580: uv's torch backend picks the index by exactly this), or through cuda-compat. The toolkit and
the wheel must be one CUDA major (extensions built with nvcc 12 do not load into a CUDA 13 torch). aarch64
has CUDA wheels only from torch 2.9 on. The Jetson AI Lab index serves Jetson builds, publishes no
architecture list, links NVPL and cuDSS, and serves only some packages (PyPI is the extra index).
"""
from __future__ import annotations

import re
from dataclasses import replace

from fleet.knowledge import platforms
from fleet.knowledge.cuda_table import family_min_driver, forward_compat_supported, minor_compat_runs
from fleet.decide.archs import official_archs, official_row, variant_misses, variants
from fleet.knowledge.torch import RELEASES, published, release as torch_release
from fleet.decide.cuda import driver_fix, native_cuda
from fleet.decide.offers import CUDA13_FIRST_CAPABILITY, cuda13_dropped
from fleet.decide.gpu import forward_compat_refusal, runs_on
from fleet.decide.host import Host
from fleet.decide.jetson import is_jetson_index
from fleet.decide.model import CompatDecision, TorchDecision
from fleet.decide.offers import _covering_variant, twelve_offer
from fleet.decide.variables import Vars
from fleet.decide.versions import MIN_DRIVER, index_cuda, min_driver_for, version_key

FIRST_AARCH64_CUDA_TORCH = (2, 9)   # PyPI's aarch64 torch is a CUDA build from 2.9 on (pytorch/pytorch#160162)



def python_problem(host: Host, v: Vars, cuda: str | None = None, compat: CompatDecision | None = None) -> str | None:
    """The host's Python (which python_env is made from) against the torch release's published range (PyTorch
    RELEASE.md, both ends: fleet/knowledge/torch.py RELEASES); None where it fits or the release is unknown. With
    the official index's CUDA and compat: a newer release is offered as the nearest published pair that runs here
    (its Python, the GPUs, the driver, the toolkit's CUDA major), so the offer is one whole fix."""
    row = torch_release(v.torch_version)
    if host.python_version is None or row is None:
        return None
    low, high = row.python
    python = version_key(host.python_version)[:2]
    if python < version_key(low):
        return (f"torch {v.torch_version} needs Python >= {low} (PyTorch RELEASE.md) and this host's python3 is "
                f"{host.python_version}: install Python {low} or newer on the host, which python_env "
                f"{v.python_env} is made from, then run `fleet facts` again")
    if python <= version_key(high):
        return None
    newer = next((r for r in RELEASES if version_key(r.minor) > version_key(row.minor)
                  and version_key(r.python[0]) <= python <= version_key(r.python[1])
                  and (cuda is None or published(r.version, cuda, host.arch))
                  and (cuda is None or _runs_on_gpus(host, r.version, cuda))), None)
    upstream = _upstream_fix(host, v, compat) if compat is not None else None
    if upstream:
        return (f"torch {v.torch_version} has wheels for Python {low} to {high} only (PyTorch RELEASE.md) and this "
                f"host's python3 is {host.python_version}: {upstream}")
    pair = nearest_pair(host, v, compat, cuda) if cuda and compat is not None and host.gpus else None
    if pair and version_key(pair[0])[:2] > version_key(row.minor) and pair[1] == cuda:
        newer = torch_release(pair[0])   # the index kept: the first release with this Python for it
    elif pair and version_key(pair[0])[:2] > version_key(row.minor):
        return (f"torch {v.torch_version} has wheels for Python {low} to {high} only (PyTorch RELEASE.md) and this "
                f"host's python3 is {host.python_version}: {_pair_fix(host, v, compat, cuda)}")
    fix = (f"set torch_version={newer.version}, the first release with Python {host.python_version} wheels"
           + (f" for cu{cuda.replace('.', '')}" if cuda else "") if newer else
           f"install Python {high} on the host, which python_env {v.python_env} is made from, then run "
           f"`fleet facts` again")
    return (f"torch {v.torch_version} has wheels for Python {low} to {high} only (PyTorch RELEASE.md) and this "
            f"host's python3 is {host.python_version}: {fix}")


def _upstream_fix(host: Host, v: Vars, compat: CompatDecision) -> str | None:
    """Where the toolkit (CUDA 13 without the GPU) or the driver (compat) refuses first, its offer, which already names
    the torch that runs with it (fleet/decide/offers.py twelve_offer): the torch reasons offer that same one fix
    (issue 24), not a pair of their own."""
    if host.jetson or not host.gpus:
        return None
    if cuda13_dropped(host, v):
        return twelve_offer(host, v, need_12=True)
    if compat.refuse:
        return driver_fix(host, v, min_driver_for(v.cuda_version))
    return None


def torch_source(host: Host, v: Vars) -> str:
    """'jetson' where asked or where torch_index_url is the Jetson index; else, left to defaults, the first of
    the platform row's torch sources ('jetson' on an Orin: PyTorch's aarch64 wheels are SBSA builds, which
    JetPack 6's Tegra CUDA does not run)."""
    if v.torch_source == "jetson" or is_jetson_index(v.torch_index_url):
        return "jetson"
    return _sources(host)[0] if "torch_source" not in v.explicit else "official"


def decide_torch(host: Host, v: Vars, compat: CompatDecision) -> TorchDecision:
    if not host.has_gpu:
        decision = _cpu_torch(v)
        python = python_problem(host, v)
        return _refused(v, decision.index_url, None, "official", python) if python else decision
    own = host.jetson.cuda if host.jetson else None
    if own and own.split(".")[0] != v.cuda_major:   # the toolkit's refusal sets the JetPack's CUDA (decide/cuda.py):
        v = replace(v, cuda_version=own)            # torch is judged beside it, so the answer is one whole fix
    source = torch_source(host, v)
    url = _index_url(host, v, source)
    cuda = v.torch_cuda or index_cuda(url)
    frozen = platforms.release_by_index(url) if source == "jetson" else None
    if frozen and frozen.torch_newest and version_key(v.torch_version) > version_key(frozen.torch_newest):
        if "torch_version" not in v.explicit:   # the default torch is newer than this JetPack's index serves
            v = replace(v, torch_version=frozen.torch_newest)
        else:
            return _refused(v, url, cuda, source, _frozen_index(url, frozen))
    python = python_problem(host, v, cuda if source == "official" else None, compat)
    if python:
        return _refused(v, url, cuda, source, python)
    if cuda is None:
        return _refused(v, url, None, source, f"cannot tell which CUDA the torch index {url} serves: "
                                              f"name it .../cuNNN (cu130) or set torch_cuda=13.0")
    problem = (_jetson_problem(host, url) if source == "jetson" else _official_problem(host, v, compat, url, cuda)) \
        or _driver_problem(host, v, compat, url, cuda) or _major_mismatch(host, v, compat, url, cuda)
    if problem:
        return _refused(v, url, cuda, source, problem)
    arch_list, origin = _arch_list(host, v, cuda, source)
    decision = _coverage(host, v, compat, url, cuda, source, arch_list, origin)
    if source == "jetson":
        decision.extra_index_url = v.pip_index_url
        decision.reason += (f"; the Jetson index serves torch and a few wheels only: its dependencies come from "
                            f"{v.pip_index_url} (extra index)")
    return decision


def _index_url(host: Host, v: Vars, source: str) -> str:
    if source == "official":
        return v.torch_index_url
    if is_jetson_index(v.torch_index_url) and "torch_index_url" in v.explicit:
        return v.torch_index_url
    return v.jetson_torch_index_url or (host.jetson.index_url if host.jetson else
                                        "https://pypi.jetson-ai-lab.io/sbsa/cu130")


def _frozen_index(url: str, release) -> str:
    """A Jetson AI Lab index that stopped with its JetPack (jp6/cu122, jp5/cu114: fleet/knowledge/platforms.py
    JETPACK_RELEASES, with the sources) asked for a newer torch than it serves."""
    return (f"the Jetson index {url} is built for JetPack {release.jetpack}'s CUDA {release.cuda} and serves torch "
            f"{release.torch_newest} at newest: set torch_version={release.torch_newest}")


def _cpu_torch(v: Vars) -> TorchDecision:
    url = re.sub(r"/cu\d+/?$", "/cpu", v.torch_index_url)
    return TorchDecision(url, v.torch_version, "official", None, True,
                         f"no NVIDIA GPU: torch {v.torch_version} CPU wheels from {url}; no CUDA decisions", [])


def _refused(v: Vars, url: str, cuda: str | None, source: str, why: str) -> TorchDecision:
    return TorchDecision(url, v.torch_version, source, cuda, False, why, None, refuse=why)


def _jetson_problem(host: Host, url: str) -> str | None:
    if host.arch != "aarch64":
        return (f"the Jetson torch index {url} serves aarch64 (sbsa) wheels and this host is {host.arch}: "
                f"set torch_source=official")
    return None


def _official_problem(host: Host, v: Vars, compat: CompatDecision, url: str, cuda: str) -> str | None:
    """The (torch, CUDA variant, CPU) the official index would be asked for must be one PyTorch published
    (fleet/knowledge/torch.py RELEASES); where it is not, the nearest published pair that runs here is offered."""
    minor = version_key(v.torch_version)[:2]
    row = torch_release(v.torch_version)
    sbsa = row.variants("aarch64") if row else ()
    if "official" not in _sources(host) and host.jetson:
        return (f"PyTorch's official aarch64 wheels are SBSA builds and Orin on {host.jetson.label} runs Tegra "
                f"CUDA {host.jetson.cuda or '12.x'}: set torch_source=jetson ({host.jetson.index_url})")
    if host.arch == "aarch64" and minor < FIRST_AARCH64_CUDA_TORCH and (cuda not in sbsa
                                                                       or "download.pytorch.org" not in url):
        served = " and ".join("cu" + c.replace(".", "") for c in sbsa)
        fix = _upstream_fix(host, v, compat) or _pair_fix(host, v, compat, cuda, same_torch=bool(sbsa), url=url)
        if sbsa:
            pip = "pip would find none" if "download.pytorch.org" in url else "pip would install a CPU build"
            return (f"torch {v.torch_version} has aarch64 CUDA wheels only on PyTorch's {served} "
                    f"index{'es' if len(sbsa) > 1 else ''}, not on {url} ({pip}): {fix}")
        return (f"torch {v.torch_version} has no CUDA wheels for aarch64 (PyTorch's cu128 index serves them "
                f"from 2.7, PyPI from 2.9; pip would install a CPU build): {fix}")
    if published(v.torch_version, cuda, host.arch):
        return None
    if row is None:
        known = f"PyTorch's release matrix names torch {RELEASES[0].minor} to {RELEASES[-1].minor}"
    else:
        known = (f"PyTorch published torch {row.minor} for "
                 f"{', '.join('cu' + c.replace('.', '') for c in row.variants(host.arch))} on {host.arch}")
    fix = _upstream_fix(host, v, compat) or _pair_fix(host, v, compat, cuda)
    return (f"torch {v.torch_version} has no cu{cuda.replace('.', '')} wheels for {host.arch} ({known}; PyTorch "
            f"RELEASE.md), so pip would fail at apply: {fix}")


def _sources(host: Host) -> tuple[str, ...]:
    """The torch sources this host runs, the default first: the platform row's, except on a Jetson whose JetPack
    ships the unified SBSA CUDA 13, where PyTorch's official aarch64 wheels run as on any Arm server."""
    if host.jetson and host.jetson.sbsa:
        return ("official", "jetson")
    return host.row.torch_sources


def _runs_on_gpus(host: Host, torch: str, cuda: str) -> bool:
    """Every GPU here runs the official (torch, cuda) wheel: by its architecture row, else by the variant rule
    (a GPU whose capability is unknown is left to verify)."""
    archs = official_archs(torch, cuda, host.arch)
    return all(g.capability is None or (runs_on(archs, g.capability) is not None if archs is not None
                                        else not variant_misses(cuda, g.capability)) for g in host.gpus)


def _driver_runs(host: Host, v: Vars, compat: CompatDecision, cuda: str) -> bool:
    """The kernel driver runs a CUDA `cuda` wheel: fully, by minor-version compatibility, or through compat."""
    if host.driver is None:
        return True
    native = native_cuda(host)
    if native and version_key(cuda) <= version_key(native):
        return True
    if not host.jetson and minor_compat_runs(host.driver, cuda):
        return True
    return bool(compat.use) and version_key(cuda) <= version_key(v.cuda_version)


def nearest_pair(host: Host, v: Vars, compat: CompatDecision, cuda: str | None, same_torch: bool = False,
                 other: bool = True) -> tuple[str, str] | None:
    """The published (torch version, CUDA variant) nearest the asked one that this host runs: wheels for its CPU
    and its Python, carrying every GPU's architecture, a CUDA its driver runs and, on a Jetson, its JetPack's CUDA
    major. Nearest: the toolkit's CUDA major kept, then the torch release kept, then the index's CUDA kept, then
    the closest torch release (the newer on a tie), then a stable variant before an experimental one, then the
    closest CUDA. `other`: never the asked pair itself (False where only its index URL was wrong)."""
    asked_torch, asked_cuda = version_key(v.torch_version)[:2], version_key(cuda or v.cuda_version)[:2]
    python = version_key(host.python_version)[:2] if host.python_version else None
    best = None
    for row in RELEASES:
        minor = version_key(row.minor)
        if same_torch and minor != asked_torch:
            continue
        if python and not version_key(row.python[0]) <= python <= version_key(row.python[1]):
            continue
        for variant in row.variants(host.arch):
            major = variant.split(".")[0]
            if variant not in MIN_DRIVER or (host.jetson and host.jetson.cuda
                                              and major != host.jetson.cuda.split(".")[0]):
                continue
            if not _runs_on_gpus(host, row.version, variant) or not _driver_runs(host, v, compat, variant):
                continue
            distance = abs((minor[0] - asked_torch[0]) * 100 + minor[1] - asked_torch[1])
            here = version_key(variant)[:2]
            if other and minor == asked_torch and here == asked_cuda:   # the asked pair is what was refused
                continue
            key = (major != v.cuda_major, minor != asked_torch, here != asked_cuda, distance, minor < asked_torch,
                   variant in row.experimental,
                   abs((here[0] - asked_cuda[0]) * 100 + here[1] - asked_cuda[1]), here < asked_cuda)
            if best is None or key < best[0]:
                best = (key, row.version if minor != asked_torch else v.torch_version, variant)
    return best[1:] if best else None


def _pair_fix(host: Host, v: Vars, compat: CompatDecision, cuda: str | None, same_torch: bool = False,
              url: str | None = None) -> str:
    """The nearest published pair as one fix to set; where none runs here, what to change by hand. `url`: the index
    asked, where its URL, not its CUDA, may be what is wrong (PyPI for an early aarch64 torch)."""
    other = url is None or url.rstrip("/") == official_index(cuda or "")
    pair = nearest_pair(host, v, compat, cuda, same_torch, other) or (
        None if not same_torch else nearest_pair(host, v, compat, cuda, other=other))
    if pair is None:
        return (f"no torch release PyTorch published runs here ({host.arch}, "
                + ", ".join(f"{g.label} {g.capability}" for g in host.gpus)
                + f", driver {host.driver}): install a driver for a newer CUDA")
    torch, variant = pair
    parts = ([f"torch_index_url={official_index(variant)}"] if variant != cuda or not other else []) \
        + ([f"torch_version={torch}"] if torch != v.torch_version else []) \
        + ([f"cuda_version={variant}"] if variant.split(".")[0] != v.cuda_major else [])
    return "set " + " and ".join(parts)


def _driver_problem(host: Host, v: Vars, compat: CompatDecision, url: str, cuda: str) -> str | None:
    """The wheel's CUDA must run on the driver: fully, by minor-version compatibility, or through compat."""
    if _driver_runs(host, v, compat, cuda):
        return None
    native = native_cuda(host)
    gives = f"CUDA {native}" if native else "a CUDA older than 12.0"
    family = family_min_driver(cuda)
    rule = f" (any {cuda.split('.')[0]}.x needs >= {family})" if family and not host.jetson else ""
    # One fix (issue 24): no "index for CUDA 12.2 or older" beside it, which no current torch publishes.
    if host.jetson and host.row.cuda_source == "jetpack" and host.jetson.cuda:
        # a Jetson runs its JetPack's CUDA only (no cuda-compat for Tegra from any repository fleet uses): the
        # Jetson index built for it, with the newest torch that index serves where this one is newer
        fix = f"set torch_index_url={host.jetson.index_url}"
        if host.jetson.sbsa and "download.pytorch.org" in url:   # PyTorch's own wheels run here: the nearest pair
            fix = _pair_fix(host, v, compat, cuda)
        own = platforms.release_by_index(host.jetson.index_url)
        if own and own.torch_newest and "torch_version" in v.explicit \
                and version_key(v.torch_version) > version_key(own.torch_newest):
            fix += f" and torch_version={own.torch_newest}"
    elif cuda13_dropped(host, v):   # the toolkit's refusal offers the 12.x stack: the same offer here
        fix = twelve_offer(host, v, need_12=True) or f"install a driver for CUDA {cuda}"
    elif compat.refuse and cuda == v.cuda_version and not host.jetson:   # the same fix as compat's refusal
        fix = driver_fix(host, v, min_driver_for(cuda))
    elif not compat.use and not compat.refuse and _compat_brings(host, cuda):
        fix = f"set cuda_version={cuda} to bring cuda-compat"
    elif not compat.use and not compat.refuse and not host.jetson:   # the nearest published pair that runs here
        fix = _pair_fix(host, v, compat, cuda)
    else:
        fix = f"install a driver for CUDA {cuda}"
    return (f"torch wheels from {url} need CUDA {cuda} but driver {host.driver} gives {gives}{rule}"
            f"{' with cuda-compat' if compat.use else ''}: {fix}")


def _compat_brings(host: Host, cuda: str) -> bool:
    """cuda-compat for `cuda` would run here: every GPU a kind forward compatibility supports and an architecture
    CUDA `cuda` builds for (CUDA 13 dropped sm_50 to sm_72), on a driver branch NVIDIA lists for it
    (fleet/knowledge/cuda_table.py FORWARD_COMPAT_BRANCHES)."""
    old = version_key(cuda)[0] >= 13 and any(
        g.capability and tuple(version_key(g.capability)[:2]) < CUDA13_FIRST_CAPABILITY for g in host.gpus)
    return bool(host.driver) and not old and not any(forward_compat_refusal(g) for g in host.gpus) \
        and forward_compat_supported(host.driver, cuda)


def _major_mismatch(host: Host, v: Vars, compat: CompatDecision, url: str, cuda: str) -> str | None:
    """A CUDA 12 toolkit beside a CUDA 13 torch: what nvcc builds (extensions, CUTLASS kernels) links
    libcudart.so.12 while torch brings libcudart.so.13."""
    if cuda.split(".")[0] == v.cuda_major:
        return None
    return (f"torch wheels from {url} are built for CUDA {cuda} but the toolkit is CUDA {v.cuda_version}: "
            f"extensions built with it would link libcudart.so.{v.cuda_major} beside torch's "
            f"libcudart.so.{cuda.split('.')[0]}; {_same_major_fix(host, v, compat, cuda)}")


def _same_major_fix(host: Host, v: Vars, compat: CompatDecision, cuda: str) -> str:
    """The one fix for a toolkit and a torch of two CUDA majors: the same offer the toolkit's refusal makes."""
    if host.jetson and host.jetson.cuda:   # the toolkit is the JetPack's: where it is, the index is what to change
        if v.cuda_major == host.jetson.cuda.split(".")[0]:
            return _pair_fix(host, v, compat, cuda)
        return f"set cuda_version={host.jetson.cuda}"
    upstream = _upstream_fix(host, v, compat)
    if upstream:
        return upstream
    if cuda.startswith("12."):
        offer = twelve_offer(host, v, need_12=True, covered=True)
        if offer:
            return offer
        return _pair_fix(host, v, compat, cuda) if host.gpus else f"set cuda_version={cuda}"
    index = _covering_variant(host, v, v.cuda_version)
    if index:
        return f"set torch_index_url={official_index(index)}"
    if cuda not in MIN_DRIVER:   # a CUDA fleet installs no toolkit for (cu118): the nearest pair of the toolkit's
        return _pair_fix(host, v, compat, cuda)
    return f"set cuda_version={cuda}"


def official_index(cuda: str) -> str:
    return f"https://download.pytorch.org/whl/cu{cuda.replace('.', '')}"


def _arch_list(host: Host, v: Vars, cuda: str, source: str) -> tuple[list[str] | None, str]:
    """The wheel's architectures: read off the installed torch where it is this very wheel, else from the
    table of official wheels; the Jetson index publishes none (and PyTorch's matrix does not apply to it)."""
    installed = host.torch or {}
    arch_list = installed.get("arch_list")
    same_wheel = (str(installed.get("version") or "").split("+")[0] == v.torch_version
                  and str(installed.get("cuda") or "") == cuda and isinstance(arch_list, list) and arch_list)
    if same_wheel:
        return [str(a) for a in arch_list], "read from the installed torch"
    if source == "jetson":
        return None, "the Jetson index publishes no architecture list (PyTorch's matrix does not cover its builds)"
    row = official_row(v.torch_version, cuda, host.arch)
    if row is None:
        return None, f"fleet has no table for torch {v.torch_version} cu{cuda.replace('.', '')} {host.arch} wheels"
    return official_archs(v.torch_version, cuda, host.arch), f"from {row.source}"


def _coverage(host: Host, v: Vars, compat: CompatDecision, url: str, cuda: str, source: str, arch_list,
              origin: str) -> TorchDecision:
    def result(supported: bool, reason: str, refuse: str | None = None) -> TorchDecision:
        return TorchDecision(url, v.torch_version, source, cuda, supported, reason, arch_list, refuse)

    wheel = f"torch {v.torch_version} from {url}"
    unknown = [g for g in host.gpus if g.capability is None]
    if unknown:
        return result(True, f"{wheel}; the capability of {unknown[0].label} is unknown (its driver did not "
                            f"report compute_cap and fleet does not know the name): "
                            f"verify checks that torch runs on it")
    if arch_list is None and source == "official":   # no table row: the variant rule still holds
        missed = next(((g, first) for g in host.gpus if (first := variant_misses(cuda, g.capability))), None)
        if missed:
            gpu, first = missed
            cite = ("CUDA 13.0 renumbered it from sm_101 to sm_110" if gpu.capability.startswith("11.")
                    else "pytorch/pytorch#150733")
            why = (f"{wheel} is built with CUDA {cuda}, and no wheel built with CUDA below {first} runs on "
                   f"{gpu.label}, capability {gpu.capability} (nvcc before {first} cannot target it and those "
                   f"builds ship no PTX for it; {cite}): {_variant_fix(host, v, compat, cuda)}")
            return result(False, why, refuse=why)
    if arch_list is None:
        return result(True, f"{wheel}; {origin}, so verify checks that torch runs on the "
                            + ", ".join(sorted({f"{g.label} ({g.capability})" for g in host.gpus})))
    notes = []
    for gpu in host.gpus:
        entry = runs_on(arch_list, gpu.capability)
        if entry is None:
            why = (f"{wheel} carries {' '.join(arch_list)} ({origin}): none runs on {gpu.label}, "
                   f"capability {gpu.capability} (a cubin needs the same major and an equal or lower minor, "
                   f"PTX a lower or equal capability); {_covering_fix(host, gpu.capability, url, v, compat=compat)}")
            return result(False, why, refuse=why)
        inferred = " (capability inferred from the name: the driver did not report it)" \
            if gpu.capability_source == "from the name" else ""
        notes.append(f"{entry} runs on {gpu.label}, capability {gpu.capability}{inferred}")
    return result(True, f"{wheel}: " + "; ".join(dict.fromkeys(notes)) + f" (architectures {origin})")


def _variant_fix(host: Host, v: Vars, compat: CompatDecision, cuda: str) -> str:
    """The one fix where the index's CUDA is too old for a GPU: the covering index from the table, else the
    nearest published pair whose wheels can carry it."""
    return _upstream_fix(host, v, compat) or _covering_fix(host, "", "", v, fallback=False, compat=compat) \
        or _pair_fix(host, v, compat, cuda)


def _covering_fix(host: Host, capability: str, url: str, v: Vars, fallback: bool = True,
                  compat: CompatDecision | None = None) -> str | None:
    """The newest official index whose wheels run on `capability` (and on this driver, and on a Jetson with its
    JetPack's CUDA major), as a fix to set."""
    for cuda in variants(v.torch_version, host.arch):
        if compat is not None and not _driver_runs(host, v, compat, cuda) and not (
                cuda.split(".")[0] != v.cuda_major and not host.jetson and _compat_brings(host, cuda)):
            continue   # a wheel this driver cannot run (nor the cuda-compat its offered cuda_version brings) is no fix
        if host.jetson and host.jetson.cuda and cuda.split(".")[0] != host.jetson.cuda.split(".")[0]:
            continue   # a Jetson runs its JetPack's CUDA major only
        if all(g.capability and runs_on(official_archs(v.torch_version, cuda, host.arch) or [], g.capability)
               for g in host.gpus):   # every GPU of the host, so a mixed host gets one fix
            index = official_index(cuda)
            if index == url.rstrip("/"):  # the installed build differs from the published wheels
                return f"reinstall torch {v.torch_version} from {index}: its published wheels cover it"
            if cuda.split(".")[0] != v.cuda_major and cuda.startswith("12."):
                offer = twelve_offer(host, v, need_12=True)   # the same offer the toolkit's refusal makes
                if offer:
                    return offer
            also = "" if cuda.split(".")[0] == v.cuda_major else f" with cuda_version={cuda}"
            return f"set torch_index_url={index}{also}"
    if not fallback:
        return None
    if compat is not None and host.gpus and not host.jetson:   # another torch release covers it: the nearest pair
        pair = _upstream_fix(host, v, compat) or _pair_fix(host, v, compat, index_cuda(url) or v.cuda_version,
                                                            url=url or None)
        return f"no official torch {v.torch_version} index covers capability {capability} on {host.arch}; {pair}"
    return f"no official torch {v.torch_version} index covers capability {capability} on {host.arch}"
