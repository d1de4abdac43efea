"""What fleet offers instead of a refusal: the newest CUDA 12.x stack that works where CUDA 13 cannot.

A pod user cannot change the host's driver, and CUDA 13 cannot drive a Volta: both still run a 12.x
toolkit and a torch variant whose wheels carry their architecture.

Sources: CUDA 13.0 release notes ("Deprecated or Dropped Features": offline compilation and library
support for Maxwell, Pascal and Volta removed) and NVIDIA's technical blog "Navigating GPU Architecture
Support" (compute capability below 7.5: stay on CUDA 12.9 with the r580 driver); minor-version and forward
compatibility as in fleet/knowledge/cuda_table.py; the torch variants in fleet/decide/archs.py.
"""
from __future__ import annotations

from dataclasses import replace

from fleet.knowledge.cuda_table import MIN_DRIVER, family_min_driver, forward_compat_supported, minor_compat_runs
from fleet.knowledge.torch import RELEASES, arch_row, published, release as torch_release
from fleet.decide.archs import FIRST_CU128_TORCH, official_archs, variant_misses, variants
from fleet.decide.gpu import forward_compat_refusal, runs_on
from fleet.decide.host import Host
from fleet.decide.variables import Vars
from fleet.knowledge.apt_repos import RPM_ONLY
from fleet.decide.versions import index_cuda, version_key

CUDA13_FIRST_CAPABILITY = (7, 5)   # CUDA 13.0 builds for sm_75 and newer only


def cuda13_dropped(host: Host, v: Vars) -> str | None:
    """Why CUDA 13 cannot drive one of this host's GPUs, with the 12.x offer; None where it can."""
    if version_key(v.cuda_version)[0] < 13:
        return None
    for gpu in host.gpus:
        if gpu.capability and tuple(int(p) for p in gpu.capability.split(".")) < CUDA13_FIRST_CAPABILITY:
            offer = twelve_offer(host, v, need_12=True)
            row = host.apt_distro
            none = ("no CUDA 12.x that fleet knows runs on this driver; install driver >= 525.60.13"
                    if not (row and row.first_cuda and _needs_repo(host, v)) else
                    f"NVIDIA's {row.repo} repository serves no CUDA 12.x (it starts with {row.first_cuda}); install "
                    f"CUDA 12.x on it by hand, or use a host whose distribution's repository serves it")
            return (f"CUDA {v.cuda_version} dropped Maxwell, Pascal and Volta (sm_50 to sm_72; CUDA 13.0 release "
                    f"notes) and {gpu.label} has capability {gpu.capability}: " + (offer or none))
    return None


def twelve_offer(host: Host, v: Vars, need_12: bool = False, covered: bool = False) -> str | None:
    """'set cuda_version=12.9 and torch_index_url=.../cu128 (...)' where a 12.x stack runs here; `covered`: only
    where an official 12.x index of this torch covers every GPU (else None, and the caller offers another pair)."""
    if host.jetson or host.driver is None or (version_key(v.cuda_version)[0] < 13 and not need_12):
        return None
    if any(g.capability and g.capability.split(".")[0] == "11" for g in host.gpus):
        return None   # sm_110 has no CUDA 12 (fleet/decide/archs.py FIRST_CUDA_FOR_MAJOR)
    compat_ok = not any(forward_compat_refusal(g) for g in host.gpus)
    for cuda in sorted((c for c in MIN_DRIVER if c.startswith("12.")), key=version_key, reverse=True):
        if not repo_serves(host, v, cuda):   # Debian 13, Ubuntu 26.04: NVIDIA's repository has no 12.x
            continue
        if minor_compat_runs(host.driver, cuda):
            how = f"driver {host.driver} runs any CUDA 12.x by minor-version compatibility"
        elif compat_ok and forward_compat_supported(host.driver, cuda):
            how = f"cuda-compat-{cuda.replace('.', '-')} supports R{version_key(host.driver)[0]}"
        else:
            continue
        # this torch's wheels, where they are for the host's Python (PyTorch RELEASE.md's range; else another release)
        index = (_covering_variant(host, v, cuda) or _first_variant(host, v, cuda)) if _python_fits(host, v) else None
        if covered and not index:
            return None
        release = None if index else _twelve_release(host, v, cuda)   # this torch has no 12.x that covers the GPUs
        if release:   # the nearest release that has one (torch 2.12 on Blackwell: 2.11.0 on cu128), in the one offer
            index = release[1]
        if not index and any(g.capability and variant_misses(cuda, g.capability) for g in host.gpus):
            continue   # no wheel built with this CUDA runs on the GPU (Blackwell before 12.8): no offer of it
        torch = (f" and torch_index_url=https://download.pytorch.org/whl/cu{index.replace('.', '')}"
                 if index else " (no official torch variant covers the GPU: check torch_version)")
        if release:
            torch += f" and torch_version={release[0]}"
        if index and not variants(v.torch_version, host.arch) and \
                version_key(v.torch_version) < version_key(FIRST_CU128_TORCH) and index == "12.8":
            torch += f" and torch_version={FIRST_CU128_TORCH}"
        return f"set cuda_version={cuda}{torch} ({how})"
    return None


def _first_variant(host: Host, v: Vars, cuda: str) -> str | None:
    """Where no table row covers this torch version: the first variant the variant rule lets run on every GPU
    here (fleet/decide/archs.py FIRST_CUDA_FOR_MAJOR), if `cuda` runs it."""
    if variants(v.torch_version, host.arch):
        return None
    needed = [variant_first for g in host.gpus if g.capability
              and (variant_first := variant_misses("0.0", g.capability))]
    first = max(needed, key=version_key) if needed else None
    return first if first and version_key(first) <= version_key(cuda) else None


def _covering_variant(host: Host, v: Vars, cuda: str) -> str | None:
    """The newest official 12.x variant, not newer than `cuda`, whose wheels run on every GPU here."""
    for variant in variants(v.torch_version, host.arch):
        if variant.split(".")[0] != "12" or version_key(variant) > version_key(cuda):
            continue
        archs = official_archs(v.torch_version, variant, host.arch) or []
        if all(g.capability and runs_on(archs, g.capability) for g in host.gpus):
            return variant
    return None


def _python_fits(host: Host, v: Vars) -> bool:
    """The host's Python is in the torch release's published range (PyTorch RELEASE.md), or either is unknown."""
    row = torch_release(v.torch_version)
    if row is None or not host.python_version:
        return True
    return version_key(row.python[0]) <= version_key(host.python_version)[:2] <= version_key(row.python[1])


def _twelve_release(host: Host, v: Vars, cuda: str) -> tuple[str, str] | None:
    """Where this torch release publishes no official 12.x variant covering every GPU here (torch 2.12 dropped
    cu128, and its cu126 carries no Blackwell: PyTorch RELEASE.md): the nearest release that does, with a variant not
    newer than `cuda`, for the host's Python (the older on a tie: newer ones dropped the 12.x variants)."""
    asked = version_key(v.torch_version)[:2]
    python = version_key(host.python_version)[:2] if host.python_version else None
    best = None
    for row in RELEASES:
        if python and not version_key(row.python[0]) <= python <= version_key(row.python[1]):
            continue
        variant = _covering_variant(host, replace(v, torch_version=row.version), cuda) or _untabled(host, row, cuda)
        if not variant:
            continue
        minor = version_key(row.minor)
        key = (abs((minor[0] - asked[0]) * 100 + minor[1] - asked[1]), minor > asked)
        if best is None or key < best[0]:
            best = (key, row.version, variant)
    return best[1:] if best else None


def _untabled(host: Host, row, cuda: str) -> str | None:
    """The newest 12.x variant (not newer than `cuda`) a release published for this CPU with no architecture row
    (aarch64 2.7 and 2.8), where the variant rule lets it run on every GPU (verify then checks, as the torch decision
    says for such wheels)."""
    found = [c for c in row.variants(host.arch) if c.startswith("12.") and version_key(c) <= version_key(cuda)
             and not arch_row(row.version, c, host.arch)
             and all(g.capability and not variant_misses(c, g.capability) for g in host.gpus)]
    return max(found, key=version_key) if found else None


def _needs_repo(host: Host, v: Vars, cuda: str | None = None) -> bool:
    """The toolkit would come from NVIDIA's apt repository for this distribution (not JetPack, not DGX OS, not
    already installed, and cuda_apt_repo is NVIDIA's per-distribution layout)."""
    return (host.row.cuda_source == "nvidia-apt" and not host.jetson and "{distro}" in v.cuda_apt_repo
            and (cuda is None or host.toolkit(cuda) is None))


def repo_serves(host: Host, v: Vars, cuda: str) -> bool:
    """NVIDIA's repository for this distribution serves CUDA `cuda` (fleet/knowledge/apt_repos.py first_cuda), or
    the toolkit does not come from there."""
    if not _needs_repo(host, v, cuda):
        return True
    row = host.apt_distro
    if row is None:   # RPM only, or no repository fleet knows: nothing to install from
        return False
    return not row.first_cuda or version_key(cuda)[:2] >= version_key(row.first_cuda)[:2]


def repo_starts_later(host: Host, v: Vars, cuda: str) -> str | None:
    """The toolkit's refusal where the distribution's repository starts after `cuda` (Ubuntu 26.04: 13.3), with the
    one offer that plans here (repo_offer)."""
    if repo_serves(host, v, cuda):
        return None
    row = host.apt_distro
    offer = repo_offer(host, v)
    old = next((g for g in host.gpus if g.capability and version_key(row.first_cuda)[0] >= 13
                and tuple(int(p) for p in g.capability.split(".")) < CUDA13_FIRST_CAPABILITY), None)
    if offer:
        fix = offer
    elif old:   # CUDA 13 dropped it, and this repository serves no 12.x
        fix = (f"{old.label} (capability {old.capability}) runs no CUDA 13 (CUDA 13.0 dropped sm_50 to sm_72), so "
               f"install CUDA {cuda} on it by hand, or use a host whose distribution's repository serves CUDA 12.x")
    else:
        fix = (f"install driver >= {family_min_driver(row.first_cuda)}, which runs CUDA {row.first_cuda} by "
               f"minor-version compatibility, or use a host whose distribution's repository serves CUDA {cuda}")
    return (f"NVIDIA's {row.repo} repository serves CUDA {row.first_cuda} and newer, not {cuda} (NVIDIA driver "
            f"installation guide; fleet/knowledge/apt_repos.py): {fix}")


def repo_refusal(host: Host, v: Vars) -> str | None:
    """Where the toolkit must come from NVIDIA's apt repository for this distribution and none serves it: a
    distribution NVIDIA serves only as RPM (or not at all), or a repository that starts after the CUDA asked.
    Refused before anything else is decided, so the answer offers one fix (issue 24)."""
    if not host.has_gpu or not _needs_repo(host, v, v.cuda_version) or host.driver is None:
        return None
    if host.distro is None:
        return no_repo(host, v)
    early = repo_starts_later(host, v, v.cuda_version)
    if early:
        return early
    row = host.apt_distro   # CUDA 13 dropped the GPU and this repository serves no 12.x to offer instead
    if not row.first_cuda or version_key(row.first_cuda)[0] < 13:
        return None
    dropped = cuda13_dropped(host, v)
    return dropped if dropped and not twelve_offer(host, v, need_12=True) else None


def repo_release(host: Host) -> str | None:
    """The oldest release this distribution's repository serves that runs here (repo_offer), or None."""
    row = host.apt_distro
    if host.driver is None or not row or not row.first_cuda:
        return None
    if any(g.capability and tuple(int(p) for p in g.capability.split(".")) < CUDA13_FIRST_CAPABILITY
           for g in host.gpus) and version_key(row.first_cuda)[0] >= 13:
        return None
    compat_ok = not any(forward_compat_refusal(g) for g in host.gpus)
    served = sorted((c for c in MIN_DRIVER if version_key(c) >= version_key(row.first_cuda)), key=version_key)
    return next((cuda for cuda in served if minor_compat_runs(host.driver, cuda)
                 or (compat_ok and forward_compat_supported(host.driver, cuda))), None)


def repo_offer(host: Host, v: Vars) -> str | None:
    """The oldest release this distribution's repository serves that runs here: on this driver fully or by
    minor-version compatibility (or through cuda-compat on a branch NVIDIA lists), on every GPU (CUDA 13 dropped
    sm_50 to sm_72), with the torch index moved to the same CUDA major where it is another."""
    cuda = repo_release(host)
    if cuda is None:
        return None
    fix = f"set cuda_version={cuda}"
    asked = index_cuda(v.torch_index_url)
    if asked and (asked.split(".")[0] != cuda.split(".")[0] or not published(v.torch_version, asked, host.arch)):
        index = next((c for c in variants(v.torch_version, host.arch) if c.split(".")[0] == cuda.split(".")[0]
                      and version_key(c) <= version_key(cuda)
                      and all(g.capability and runs_on(official_archs(v.torch_version, c, host.arch) or [],
                                                       g.capability) for g in host.gpus)), None)
        if index is None:
            return None
        fix += f" and torch_index_url=https://download.pytorch.org/whl/cu{index.replace('.', '')}"
    return fix


def no_repo(host: Host, v: Vars) -> str:
    """The refusal where NVIDIA has no apt repository for this distribution: served as RPM only (RHEL and its
    rebuilds, Fedora, SUSE, Amazon Linux, ...: fleet/knowledge/apt_repos.py RPM_ONLY), or not at all."""
    cuda, package = v.cuda_version, f"cuda-toolkit-{v.cuda_dashed}"
    os_name = f"{host.os_id} {host.os_version}".strip() or "an OS the facts do not name"
    rpm = RPM_ONLY.get(host.os_id)
    why = (f"CUDA {cuda} is not installed and NVIDIA serves CUDA for {rpm} ({os_name}) only as RPM packages (its "
           f"driver installation guide's dnf/zypper repositories), which fleet does not install: fleet installs "
           f"with apt" if rpm else
           f"CUDA {cuda} is not installed and NVIDIA has no apt repo fleet knows for {os_name} ({host.arch})")
    return f"{why}: install it by hand or set cuda_apt_repo to a repository that serves {package}"
