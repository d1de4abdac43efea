"""The parts of a facts record (docs/ARCHITECTURE.md, "Facts record") that decisions read.

Reading is strict about the shape decisions cannot do without (system.arch) and lenient
about the rest: a probe that could not read a source leaves it null, and decisions say
what they could not tell.
"""
from __future__ import annotations

from dataclasses import dataclass

from fleet.knowledge import platforms
from fleet.knowledge.apt_repos import AptDistro, apt_distro
from fleet.decide.gpu import Gpu, read_gpu
from fleet.decide.jetson import JetPack, jetpack_of, jetson_gpu, with_driver
from fleet.decide.versions import major_minor, version_key


class FactsError(ValueError):
    """The facts record lacks what decisions need; the message says what and how to fix it."""


@dataclass(frozen=True)
class Host:
    name: str
    arch: str                    # uname -m: x86_64 | aarch64
    os_id: str
    os_version: str
    platform: str
    gpus: tuple[Gpu, ...]
    driver: str | None           # the KERNEL driver's version
    jetpack: str | None
    toolkits: tuple[dict, ...]
    compat: dict | None          # an installed cuda-compat: {path, version, in_use}
    python_version: str | None   # "3.12"
    torch: dict | None
    env_ld_library_path: str
    nvml_error: dict | None = None   # nvidia-smi's NVML failure: {message, mismatch, library_version}
    jetson: JetPack | None = None   # the JetPack generation, on a Jetson

    @property
    def row(self) -> platforms.Platform:
        """This host's platform row (fleet/knowledge/platforms.py)."""
        return platforms.platform(self.platform)

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus) and self.row.has_gpu

    @property
    def tegra(self) -> bool:
        """A Jetson whose JetPack ships Tegra CUDA (before 13: JetPack 6), not the unified SBSA toolkit."""
        return bool(self.jetson) and not self.jetson.sbsa

    @property
    def repo_arch(self) -> str:
        """NVIDIA's apt repository directory for this CPU: aarch64 servers and JetPack 7 (Thor, and the Orin on
        7.2) are 'sbsa'; a JetPack 6 Jetson is 'arm64' (ubuntu2204/arm64: the libraries built for Tegra)."""
        if self.arch == "x86_64":
            return "x86_64"
        return "arm64" if self.tegra else "sbsa"

    @property
    def redist_platform(self) -> str:
        """NVIDIA's redistrib platform name: linux-x86_64, linux-sbsa, and linux-aarch64 for Jetson devices with
        Tegra CUDA (the cuDSS redist index publishes libcudss-linux-aarch64-<version>_cuda12 archives; conda-forge's
        Tegra variant repackages that archive). JetPack 7's unified toolkit takes linux-sbsa."""
        if self.arch == "x86_64":
            return "linux-x86_64"
        return "linux-aarch64" if self.tegra else "linux-sbsa"

    @property
    def apt_distro(self) -> AptDistro | None:
        return apt_distro(self.os_id, self.os_version)

    @property
    def distro(self) -> str | None:
        row = self.apt_distro
        return row.repo if row else None

    def toolkit(self, cuda: str) -> dict | None:
        """The installed toolkit of release `cuda` ('13.0'), matched on major.minor."""
        for toolkit in self.toolkits:
            try:
                if major_minor(str(toolkit.get("version"))) == cuda:
                    return toolkit
            except ValueError:
                continue
        return None


def read_host(facts) -> Host:
    if not isinstance(facts, dict):
        raise FactsError("the facts record is not a JSON object: point at a file written by `fleet facts`.")
    system = _section(facts, "system")
    arch = system.get("arch")
    if arch not in ("x86_64", "aarch64"):
        raise FactsError(f"system.arch is {arch!r}, not x86_64 or aarch64: re-gather the record with `fleet facts`.")
    gpu_entries = _list(facts, "gpus")
    no_gpu = next(p.name for p in platforms.PLATFORMS if not p.has_gpu)
    platform = facts.get("platform") or (no_gpu if not gpu_entries else "")
    if platforms.platform(platform) is None:
        raise FactsError(f"platform is {platform!r}, not one of {', '.join(platforms.NAMES)}: "
                         f"re-gather the record with `fleet facts`.")
    cuda, python, jetson = _object(facts, "cuda"), _object(facts, "python"), _object(facts, "jetson")
    names = " ".join(_text(g.get("name")) for g in gpu_entries if isinstance(g, dict))
    jetpack = jetpack_of(_text(jetson.get("l4t")) or None, _text(jetson.get("jetpack")) or None, names,
                         _text(jetson.get("model")) or None) \
        if platforms.platform(platform).jetson or jetson else None
    driver = _driver_version(facts)
    if jetpack:  # a release the table lacks: its CUDA (and index) by the driver's branch
        jetpack = with_driver(jetpack, driver)
    if jetpack:  # records gathered before fleet told JetPack 6 from 7 name the Thor row on an Orin
        platform = next(p.name for p in platforms.jetsons() if p.generation == jetpack.generation)
    gpus = tuple(read_gpu(entry, platform) for entry in gpu_entries if isinstance(entry, dict))
    if jetpack and not gpus:  # Orin on JetPack 6 has no nvidia-smi: its integrated GPU is still there
        gpus = (jetson_gpu(jetpack.generation),)
    return Host(
        name=_text(facts.get("host")) or "host",
        arch=arch,
        os_id=_text(system.get("os_id")),
        os_version=_text(system.get("os_version")),
        platform=platform,
        gpus=gpus,
        driver=driver,
        jetpack=_text(jetson.get("jetpack")) or None,
        toolkits=tuple(t for t in _list(cuda, "toolkits", "cuda.toolkits") if isinstance(t, dict)),
        compat=_object(cuda, "compat", "cuda.compat") or None,
        python_version=_python_xy(python.get("version")),
        torch=_object(facts, "torch") or None,
        env_ld_library_path=_text(_object(facts, "env").get("LD_LIBRARY_PATH")),
        nvml_error=_object(_object(facts, "driver"), "nvml_error", "driver.nvml_error") or None,
        jetson=jetpack,
    )


def jetson_refusal(host: Host) -> str | None:
    """A Jetson fleet plans nothing for: a board no planned JetPack runs, a board the record does not tell on a
    release that runs two, or a release older than fleet plans for (fleet/knowledge/platforms.py); None else."""
    if not host.jetson:
        return None
    return platforms.board_unsupported(host.jetson.model) or host.jetson.board_unknown \
        or platforms.unsupported(host.platform, host.jetson.l4t, host.jetpack)


def host_refusal(host: Host) -> str | None:
    """A GPU host fleet must not plan for: NVML out of step with the kernel module, or a kernel driver whose
    GPUs cannot be read. Either way never CPU torch on a machine whose kernel has an NVIDIA driver (issue 11).

    The mismatch is what a user-space driver upgrade under a loaded kernel module leaves; a reboot or a
    module reload fixes it (tinygrad/open-gpu-kernel-modules#47, oddmario/NVIDIA-Ubuntu-Driver-Guide#4).
    """
    old = jetson_refusal(host)
    if old:
        return old
    nvml = host.nvml_error or {}
    if nvml.get("mismatch"):
        library = f" (NVML {nvml['library_version']})" if nvml.get("library_version") else ""
        return (f"nvidia-smi fails with \"{nvml.get('message')}\": the user-space NVIDIA driver{library} no longer "
                f"matches the loaded kernel module {host.driver or '(unknown)'}, as an unattended driver upgrade "
                "leaves it, and CUDA fails the same way; reboot the host, or reload the nvidia kernel modules "
                "(rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia), then run fleet again")
    if host.driver and not host.gpus and not host.row.jetson:
        why = f" (nvidia-smi: {nvml['message']})" if nvml.get("message") else ""
        return (f"the kernel has NVIDIA driver {host.driver} but no GPU could be read{why}; fleet will not plan "
                "CPU torch on a GPU host: check /proc/driver/nvidia/gpus and nvidia-smi, then run fleet again")
    return None


def _object(parent: dict, key: str, where: str | None = None) -> dict:
    """An optional object: {} where it is absent or null; a damaged one (a list, a number) is an error."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FactsError(f"{where or key} is {type(value).__name__} {_short(value)}, not an object: "
                         f"re-gather the record with `fleet facts`.")
    return value


def _list(parent: dict, key: str, where: str | None = None) -> list:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FactsError(f"{where or key} is {type(value).__name__} {_short(value)}, not a list: "
                         f"re-gather the record with `fleet facts`.")
    return value


def _text(value) -> str:
    """A scalar as text; a nested value where text belongs is damage."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise FactsError(f"a {type(value).__name__} {_short(value)} stands where the record holds text: "
                         f"re-gather the record with `fleet facts`.")
    return str(value)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _section(facts: dict, name: str) -> dict:
    value = facts.get(name)
    if not isinstance(value, dict):
        raise FactsError(f"the facts record has no {name!r} object: re-gather it with `fleet facts`.")
    return value


def _driver_version(facts: dict) -> str | None:
    version = _object(facts, "driver").get("version")
    if version is None:
        return None
    try:
        version_key(str(version))
    except ValueError:
        raise FactsError(f"driver.version is {version!r}, not a version like 580.159.04: "
                         f"re-gather the record with `fleet facts`.") from None
    return str(version)


def _python_xy(version) -> str | None:
    try:
        return major_minor(_text(version)) if version else None
    except ValueError:
        return None
