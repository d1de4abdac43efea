"""CUDA toolkit (which release, present or from where) and cuda-compat (on or off, and which rule decided).

Three rules decide whether the kernel driver runs a CUDA release, in this order (fleet/knowledge/cuda_table.py):
1. full support: driver >= the release's own minimum (CUDA release notes, table 3);
2. minor-version compatibility: driver >= the family minimum (525.60.13 for 12.x, 580 for 13.x; release
   notes table 2, as uv's torch backend uses it): no cuda-compat, SASS runs, a few features do not;
3. forward compatibility: below the family minimum, cuda-compat, only on data-center GPUs and Jetson and only
   from the driver branches NVIDIA lists for the release. A compat libcuda older than the kernel driver
   fails with error 803, so an installed package stays off the path (shared/DOMAIN.md).
Jetson follows its JetPack (fleet/decide/jetson.py), never the desktop table.
"""
from __future__ import annotations

from fleet.knowledge.cuda_table import (
    FORWARD_COMPAT_BRANCHES, family_min_driver, forward_compat_branch, forward_compat_branches,
    forward_compat_supported, minor_compat_runs,
)
from fleet.decide.gpu import forward_compat_refusal
from fleet.decide.host import Host
from fleet.decide.model import CompatDecision, CudaDecision
from fleet.knowledge import platforms
from fleet.knowledge.platforms import SHIPPED_BY
from fleet.decide.offers import cuda13_dropped, no_repo, repo_starts_later, twelve_offer
from fleet.decide.variables import Vars
from fleet.decide.versions import MIN_DRIVER, cuda_max_for_driver, min_driver_for, version_key

from fleet.decide.jetson import branch_cuda
from fleet.decide.keyring import KEYRING, pinned


def toolkit_dir(host: Host, cuda: str) -> str:
    installed = host.toolkit(cuda)
    return str(installed.get("path") or f"/usr/local/cuda-{cuda}") if installed else f"/usr/local/cuda-{cuda}"


def toolkit_lib_dir(host: Host, cuda: str) -> str:
    """The real directory behind lib64: targets/<target>/lib. From CUDA 13 every Arm GPU,
    Thor included, uses the unified SBSA toolkit; Jetson before 13 had aarch64-linux."""
    if host.arch == "x86_64":
        target = "x86_64-linux"
    elif host.jetson and version_key(cuda) < (13,):
        target = "aarch64-linux"
    else:
        target = "sbsa-linux"
    return f"{toolkit_dir(host, cuda)}/targets/{target}/lib"


def decide_cuda(host: Host, v: Vars) -> CudaDecision:
    if not host.has_gpu:
        return CudaDecision(None, False, "none", None, None, None, None, None,
                            "no NVIDIA GPU: no CUDA toolkit to install", keyring=_keyring(host, v),
                            keyring_sha256=pinned(_keyring(host, v), v.keyring_pins))
    cuda, package = v.cuda_version, f"cuda-toolkit-{v.cuda_dashed}"
    path, lib_dir = toolkit_dir(host, cuda), toolkit_lib_dir(host, cuda)

    def result(action, source, repo, reason, refuse=None) -> CudaDecision:
        return CudaDecision(cuda, action == "present", action, source, repo, package, path, lib_dir, reason,
                            refuse, keyring=_keyring(host, v), keyring_sha256=pinned(_keyring(host, v), v.keyring_pins))

    dropped = cuda13_dropped(host, v)
    if dropped:
        return result("none", None, None, dropped, refuse=dropped)
    other = _other_major_than_jetpack(host, cuda)
    if other:
        return result("none", "jetpack", None, other, refuse=other)
    below = sm110_needs_13(host, cuda)
    if below:
        return result("none", None, None, below, refuse=below)
    newer = _newer_than_jetpack(host, cuda)
    if newer:
        return result("none", "jetpack", None, newer, refuse=newer)
    installed = host.toolkit(cuda)
    if installed:
        source = host.row.cuda_shipped_by
        where = SHIPPED_BY.get(source, "installed")
        release = installed.get("full_version") or installed.get("version")
        nvcc = f" (nvcc {release})" if release and release != cuda else ""
        return result("present", source, None, f"CUDA {cuda} is {where} at {path}{nvcc}: nothing to install")
    if host.row.cuda_source == "jetpack":
        return result("install", "jetpack", None,
                      f"CUDA {cuda} is not installed: install {package} from {host.jetson.label}'s apt "
                      f"repository (Jetson takes CUDA from JetPack, not from the desktop repo)")
    repo = _apt_repo(host, v)
    if repo is None:
        why = no_repo(host, v)
        return result("install", None, None, why.split(": install it by hand")[0], refuse=why)
    early = repo_starts_later(host, v, cuda)
    if early:
        return result("install", None, repo, early, refuse=early)
    return result("install", "nvidia-apt", repo,
                  f"CUDA {cuda} is not installed: install {package} from NVIDIA's apt repo {repo}")


def _other_major_than_jetpack(host: Host, cuda: str) -> str | None:
    """On a Jetson the CUDA major is its JetPack's: the JetPack's apt repository serves its own CUDA only, JetPack 6's
    Tegra CUDA 12 has no 13 (that comes with JetPack 7), and JetPack 7's SBSA CUDA 13 has no 12 (on Thor no CUDA 12
    toolkit targets sm_110 either)."""
    jp = host.jetson
    own = jp.cuda if jp else None
    if not own or version_key(cuda)[0] == version_key(own)[0]:
        return None
    if version_key(cuda)[0] > version_key(own)[0]:
        boards = [r for r in platforms.JETPACK_RELEASES if r.supported and jp.generation in r.boards
                  and version_key(r.cuda)[0] == version_key(cuda)[0]]
        comes = f"JetPack {boards[-1].jetpack}" if boards else "no JetPack release for this board"
        l4t = f" (L4T R{jp.l4t.split('.')[0]})" if jp.l4t else ""
        return (f"{jp.generation.capitalize()} on {jp.label}{l4t} has no CUDA {cuda}: {jp.label} ships CUDA {own} "
                f"and CUDA {version_key(cuda)[0]} comes with {comes}: set cuda_version={own}")
    thor = next((g for g in host.gpus if g.capability and g.capability.split(".")[0] == "11"), None)
    why = (f" ({thor.label} is capability {thor.capability}, sm_110 from CUDA 13.0 on: no CUDA 12 toolkit targets it)"
           if thor else "")
    return (f"{jp.label} ships CUDA {own} and its apt repository serves no CUDA {version_key(cuda)[0]}.x{why}: "
            f"set cuda_version={own}")


def sm110_needs_13(host: Host, cuda: str) -> str | None:
    """Capability 11.x is sm_110 only from CUDA 13.0, which renumbered Thor from sm_101 (CUDA 13.0 release notes;
    NVIDIA/cutlass CHANGELOG 4.2.0): no CUDA 12 nvcc targets it (a Jetson's own rule names its JetPack's CUDA)."""
    gpu = next((g for g in host.gpus if g.capability and g.capability.split(".")[0] == "11"), None)
    if gpu is None or version_key(cuda)[0] >= 13:
        return None
    return (f"{gpu.label} is capability {gpu.capability}, sm_110, which CUDA targets only from 13.0 (it renumbered "
            f"sm_101): no CUDA {cuda} toolkit builds for it: set cuda_version=13.0")


def _newer_than_jetpack(host: Host, cuda: str) -> str | None:
    """A Jetson with Tegra CUDA (before 13) asking a 12.x newer than its JetPack ships (6.0 and 12.6, 6.2 and 12.8). Its JetPack's apt repository
    serves only that JetPack's CUDA; newer Tegra CUDA (with its cuda-compat) comes only from NVIDIA's cuda-tegra
    local installers (fleet/knowledge/platforms.py JETPACK_RELEASES, with the sources), which fleet does not install,
    and NVIDIA's desktop repository serves SBSA builds that a Tegra driver does not run. The one fix: the JetPack's
    own CUDA, with the Jetson index built for it (fleet/decide/torch_wheel.py takes that index by default)."""
    jp = host.jetson
    own = (jp.cuda or native_cuda(host)) if jp else None   # a release the table lacks: its driver branch's CUDA
    if not own or host.row.cuda_source != "jetpack" or version_key(cuda) <= version_key(own) \
            or version_key(cuda)[0] != version_key(own)[0]:
        return None
    if version_key(own) >= (13,):   # JetPack 7's CUDA is the unified SBSA toolkit: its own rule (compat, 803)
        return None
    later = [r for r in platforms.JETPACK_RELEASES if r.supported and r.cuda == cuda]
    ships = (f"; JetPack {later[-1].jetpack} (L4T R{later[-1].l4t}) ships CUDA {cuda}" if later else "")
    release = platforms.jetpack_release(jp.jetpack, jp.l4t) or next(   # a release the table lacks: its L4T major's
        (r for r in platforms.JETPACK_RELEASES if jp.l4t and r.l4t.split(".")[0] == jp.l4t.split(".")[0]), None)
    ubuntu = f"ubuntu{release.ubuntu.replace('.', '')}" if release else "ubuntu2204"
    where = (f"comes only from NVIDIA's cuda-tegra local installer (cuda-tegra-repo-{ubuntu}-{cuda.replace('.', '-')}"
             f"-local), which fleet does not install" if release and cuda in release.local_cudas
             else "comes from no repository fleet knows")
    return (f"{jp.label} ships CUDA {own} and its apt repository serves no other CUDA; CUDA {cuda} for Tegra "
            f"{where}{ships}: set cuda_version={own}")


def _apt_repo(host: Host, v: Vars) -> str | None:
    if "{distro}" in v.cuda_apt_repo and host.distro is None:
        return None
    return v.cuda_apt_repo.format(distro=host.distro or "", arch=host.repo_arch)


def _keyring(host: Host, v: Vars) -> str | None:
    """The keyring in the repository of this OS and CPU, whatever CUDA's own source (JetPack, DGX OS,
    present): NVPL, cuDSS and cuda-compat come from that repository too. Ubuntu 24.04 where the OS is not
    one NVIDIA names (a Jetson's L4T is Ubuntu-based; the keyring is the same in every repo)."""
    distro = host.distro or _jetson_ubuntu(host)
    if "{distro}" in v.cuda_apt_repo and distro is None:
        return None
    repo = v.cuda_apt_repo.format(distro=distro or "ubuntu2404", arch=host.repo_arch)
    return repo + ("" if repo.endswith("/") else "/") + KEYRING


def _jetson_ubuntu(host: Host) -> str | None:
    """A Jetson whose record names no distribution: the Ubuntu its JetPack release is built on (JETPACK_RELEASES:
    by JetPack, else by L4T, else the current release of its generation: Orin JetPack 6, Thor JetPack 7)."""
    if not host.jetson:
        return None
    jp, l4t = host.jetson.jetpack, host.jetson.l4t
    release = platforms.jetpack_release(jp, l4t) or next(
        (r for r in platforms.JETPACK_RELEASES if l4t and (l4t == r.l4t or l4t.startswith(r.l4t + "."))), None) \
        or next((r for r in reversed(platforms.JETPACK_RELEASES)
                 if r.jetpack.split(".")[0] == {"orin": "6", "thor": "7"}.get(host.jetson.generation)), None)
    return f"ubuntu{release.ubuntu.replace('.', '')}" if release else None


def native_cuda(host: Host) -> str | None:
    """The newest CUDA the kernel driver runs with every feature, without cuda-compat."""
    if host.driver is None:
        return None
    if host.jetson:
        return host.jetson.cuda or branch_cuda(host.driver)
    return cuda_max_for_driver(host.driver)




def compat_dir(v: Vars) -> str:
    return f"/usr/local/cuda-{v.cuda_version}/compat"


def decide_compat(host: Host, v: Vars) -> CompatDecision:
    path, package, installed = compat_dir(v), f"cuda-compat-{v.cuda_dashed}", host.compat
    gate = start_gate(host, v)

    def off(reason: str, refuse: str | None = None) -> CompatDecision:
        return CompatDecision(False, reason, path, package, installed, refuse, gate)

    if not host.has_gpu:
        return off("no NVIDIA GPU: no CUDA, no cuda-compat")
    cuda = v.cuda_version
    if host.driver is None:
        return off(f"the kernel driver's version is unknown, so fleet cannot tell whether CUDA "
                   f"{cuda} needs cuda-compat: check /proc/driver/nvidia/version and re-run `fleet facts`")
    if host.jetson:
        return _jetson_compat(host, v, off)
    need = min_driver_for(cuda)
    if need is None:   # a 13.x newer than the driver table: the family's rule, said in the plan
        return _later_compat(host, v, off)
    if version_key(host.driver) >= version_key(need):
        return off(f"full support: kernel driver {host.driver} >= {need} needed by CUDA {cuda}"
                   + _keep_off_note(host, path))
    family = family_min_driver(cuda)
    if minor_compat_runs(host.driver, cuda):
        return off(f"minor-version compatibility: kernel driver {host.driver} >= {family} runs any CUDA "
                   f"{v.cuda_major}.x build (CUDA release notes, table 2; full {cuda} features from {need}): "
                   f"no cuda-compat" + _keep_off_note(host, path))
    below = (f"kernel driver {host.driver} < {need} needed by CUDA {cuda}, and below {family} that "
             f"minor-version compatibility needs for any CUDA {v.cuda_major}.x")
    gpu = next((g for g in host.gpus if forward_compat_refusal(g)), host.gpus[0])
    why_not = forward_compat_refusal(gpu)
    if why_not:
        return off(f"{below}, but {why_not}", refuse=f"{gpu.label} on driver {host.driver} cannot run CUDA {cuda}: "
                                                     f"{why_not}; {driver_fix(host, v, need)}")
    branch = f"R{forward_compat_branch(host.driver)}"
    if not forward_compat_supported(host.driver, cuda):
        listed = ", ".join(forward_compat_branches(cuda)) or "none older than its own"
        why = (f"{package} supports upgrades only from the driver branches NVIDIA lists for CUDA {cuda} "
               f"({listed}; NVIDIA forward compatibility), not {branch}")
        return off(f"{below}, but {why}", refuse=f"{gpu.label} on driver {host.driver} cannot run CUDA {cuda}: "
                                                 f"{why}; {driver_fix(host, v, need)}")
    return CompatDecision(True, f"{below}; {gpu.label} is a data-center GPU on {branch}, a branch {package} "
                                f"supports (forward compatibility): {package} goes first on LD_LIBRARY_PATH",
                          path, package, installed, gate=gate)


def _later_compat(host: Host, v: Vars, off) -> CompatDecision:
    """CUDA newer than the driver table (13.4 while it ends at 13.3; fleet/knowledge/cuda_table.py later_release):
    what fleet assumes, in the plan. Any 13.x build runs on a driver >= 580 by minor-version compatibility (CUDA
    release notes table 2), without cuda-compat; its own full-support minimum is not in the table, so features
    needing it may be missing. Below 580 nothing fleet knows runs it: forward compatibility lists its branches per
    release, and this release's list is not known."""
    cuda, family = v.cuda_version, family_min_driver(v.cuda_version)
    newest = max(MIN_DRIVER, key=version_key)
    assumed = (f"CUDA {cuda} is newer than fleet's driver table, which ends at {newest} (CUDA release notes); "
               f"fleet assumes the rule for every {v.cuda_major}.x")
    if minor_compat_runs(host.driver, cuda):
        return off(f"{assumed}: minor-version compatibility, kernel driver {host.driver} >= {family} runs it "
                   f"without cuda-compat (features that need {cuda}'s own driver, not in the table yet, may be "
                   f"missing)" + _keep_off_note(host, compat_dir(v)))
    gpu = host.gpus[0]
    why = (f"{assumed}, which needs a driver >= {family} (minor-version compatibility), and NVIDIA's list of "
           f"driver branches cuda-compat-{v.cuda_dashed} supports is not known to fleet")
    return off(f"kernel driver {host.driver} < {family}: {why}",
               refuse=f"{gpu.label} on driver {host.driver} cannot run CUDA {cuda}: {why}; "
                      f"{driver_fix(host, v, family)}")


def start_gate(host: Host, v: Vars) -> dict | None:
    """This rule's driver half, for the gate that re-checks it at every start (CompatDecision.gate): compat
    only below the driver the CUDA release needs natively, from the branches forward compatibility supports
    for it (their first driver each), and never where the compat libcuda is not newer than the kernel driver
    (error 803; NVIDIA's container toolkit and AWS's deep-learning containers check the same at start)."""
    if not host.has_gpu:
        return None
    if host.jetson:   # its driver reports the branch only; JetPack, not the desktop table, says what it runs
        return {"below": None, "branches": []}
    cuda = v.cuda_version
    try:
        need = min_driver_for(cuda)
    except (KeyError, ValueError):
        return None
    if need is None:
        return None
    supported = forward_compat_branches(cuda)   # once, not once per branch
    firsts = [first for branch, (first, newest) in sorted(FORWARD_COMPAT_BRANCHES.items())
              if f"R{branch}" in supported]
    return {"below": need, "branches": firsts}


def _jetson_compat(host: Host, v: Vars, off) -> CompatDecision:
    """JetPack ships its CUDA. Thor: never cuda-compat (error 803). Orin: forward compatibility is supported on
    Jetson boards, but the Tegra cuda-compat comes only with NVIDIA's cuda-tegra local installer, which fleet does
    not install, so a newer 12.x is refused with the toolkit (_newer_than_jetpack) and compat stays off."""
    jp, cuda, path = host.jetson, v.cuda_version, compat_dir(v)
    never = platforms.kind(host.row.gpu_kind).refusal   # the Jetson row's GPU kind: Thor's refuses (803)
    ships = jp.cuda or native_cuda(host)
    if ships and version_key(cuda) <= version_key(ships):
        return off(f"{jp.label} ships CUDA {ships} with kernel driver {host.driver} (the r{version_key(host.driver)[0]} "
                   f"branch: Jetson drivers report the branch only), which runs CUDA {cuda}: no cuda-compat"
                   + (f" (never on {jp.generation.capitalize()}: error {platforms.kind(host.row.gpu_kind).compat_error})"
                      if never else "") + _keep_off_note(host, path))
    if never:
        why = never
        return off(f"{jp.label} ships CUDA {ships}, older than {cuda}, but {why}",
                   refuse=f"{jp.generation.capitalize()} on {jp.label} (driver {host.driver}) cannot run CUDA {cuda}: it ships CUDA {ships} "
                          f"and {why}; install a JetPack that ships CUDA {cuda}, or set cuda_version={ships}")
    if version_key(cuda)[0] != version_key(ships or "12.0")[0]:
        return off(f"{jp.label} ships CUDA {ships}: CUDA {cuda} is another family, refused with the toolkit")
    if _newer_than_jetpack(host, cuda):   # no cuda-compat for Tegra from any repository fleet uses
        return off(f"{jp.label} ships CUDA {ships}: CUDA {cuda} and its cuda-compat are refused with the toolkit")
    package = f"cuda-compat-{v.cuda_dashed}"
    return CompatDecision(True, f"{jp.label} ships CUDA {ships}, older than {cuda}; forward compatibility is "
                                f"supported on Jetson boards: {package} goes first on LD_LIBRARY_PATH",
                          path, package, host.compat, gate=start_gate(host, v))


def _keep_off_note(host: Host, path: str) -> str:
    """An installed compat package next to a new enough driver is the 803 trap: say so."""
    if not host.compat:
        return ""
    compat = host.compat
    label = f"cuda-compat {compat['version']}" if compat.get("version") else "cuda-compat"
    note = f"; {label} is installed but must stay off the path (error 803)"
    # `in_use` counts the ld cache too: the path claim only where compat is on the path itself
    if compat.get("on_ld_library_path") or path in host.env_ld_library_path.split(":"):
        note += ": it is on LD_LIBRARY_PATH now and env_hooks takes it off"
    if compat.get("registered_ldconfig"):
        note += ("; it is registered with ldconfig (every process gets it): env_hooks' ld_aside takes its "
                 "/etc/ld.so.conf.d entry out and runs ldconfig (fleet's own drop-in: the cuda_compat gate removes it)")
    return note


def driver_fix(host: Host, v: Vars, need: str | None) -> str:
    """Upgrade the driver, or (a pod user cannot) the CUDA 12.x stack that works on this driver."""
    fix = f"install driver >= {need or family_min_driver(v.cuda_version)}"
    offer = twelve_offer(host, v)
    return f"{fix}, or {offer}" if offer else fix
