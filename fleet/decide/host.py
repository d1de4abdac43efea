"""The parts of a facts record (docs/ARCHITECTURE.md, "Facts record") that decisions read.

Reading is strict about the shape decisions cannot do without (system.arch) and lenient
about the rest: a probe that could not read a source leaves it null, and decisions say
what they could not tell.
"""
from __future__ import annotations

from dataclasses import dataclass

from fleet.decide.gpu import Gpu, read_gpu
from fleet.decide.versions import major_minor, version_key

PLATFORMS = ("jetson-thor", "dgx-spark", "x86_64-dgpu", "sbsa-dgpu", "cpu-only")

# NVIDIA's apt repository names for (os_id, os_version).
_DISTROS = {("ubuntu", "24.04"): "ubuntu2404", ("ubuntu", "22.04"): "ubuntu2204", ("debian", "12"): "debian12"}


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

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus) and self.platform != "cpu-only"

    @property
    def repo_arch(self) -> str:
        """NVIDIA's repo and wheel naming: aarch64 servers and Thor are 'sbsa'."""
        return "x86_64" if self.arch == "x86_64" else "sbsa"

    @property
    def distro(self) -> str | None:
        version = self.os_version if self.os_id == "ubuntu" else self.os_version.split(".")[0]
        return _DISTROS.get((self.os_id, version))

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
    platform = facts.get("platform") or ("cpu-only" if not facts.get("gpus") else "")
    if platform not in PLATFORMS:
        raise FactsError(f"platform is {platform!r}, not one of {', '.join(PLATFORMS)}: "
                         f"re-gather the record with `fleet facts`.")
    cuda = facts.get("cuda") or {}
    python = facts.get("python") or {}
    return Host(
        name=str(facts.get("host") or "host"),
        arch=arch,
        os_id=str(system.get("os_id") or ""),
        os_version=str(system.get("os_version") or ""),
        platform=platform,
        gpus=tuple(read_gpu(entry, platform) for entry in facts.get("gpus") or [] if isinstance(entry, dict)),
        driver=_driver_version(facts),
        jetpack=(facts.get("jetson") or {}).get("jetpack"),
        toolkits=tuple(t for t in cuda.get("toolkits") or [] if isinstance(t, dict)),
        compat=cuda.get("compat"),
        python_version=_python_xy(python.get("version")),
        torch=facts.get("torch"),
        env_ld_library_path=str((facts.get("env") or {}).get("LD_LIBRARY_PATH") or ""),
        nvml_error=(facts.get("driver") or {}).get("nvml_error"),
    )


def host_refusal(host: Host) -> str | None:
    """A GPU host fleet must not plan for: NVML out of step with the kernel module, or a kernel driver whose
    GPUs cannot be read. Either way never CPU torch on a machine whose kernel has an NVIDIA driver (issue 11).

    The mismatch is what a user-space driver upgrade under a loaded kernel module leaves; a reboot or a
    module reload fixes it (tinygrad/open-gpu-kernel-modules#47, oddmario/NVIDIA-Ubuntu-Driver-Guide#4).
    """
    nvml = host.nvml_error or {}
    if nvml.get("mismatch"):
        library = f" (NVML {nvml['library_version']})" if nvml.get("library_version") else ""
        return (f"nvidia-smi fails with \"{nvml.get('message')}\": the user-space NVIDIA driver{library} no longer "
                f"matches the loaded kernel module {host.driver or '(unknown)'}, as an unattended driver upgrade "
                "leaves it, and CUDA fails the same way; reboot the host, or reload the nvidia kernel modules "
                "(rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia), then run fleet again")
    if host.driver and not host.gpus and host.platform != "jetson-thor":
        why = f" (nvidia-smi: {nvml['message']})" if nvml.get("message") else ""
        return (f"the kernel has NVIDIA driver {host.driver} but no GPU could be read{why}; fleet will not plan "
                "CPU torch on a GPU host: check /proc/driver/nvidia/gpus and nvidia-smi, then run fleet again")
    return None


def _section(facts: dict, name: str) -> dict:
    value = facts.get(name)
    if not isinstance(value, dict):
        raise FactsError(f"the facts record has no {name!r} object: re-gather it with `fleet facts`.")
    return value


def _driver_version(facts: dict) -> str | None:
    version = (facts.get("driver") or {}).get("version")
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
        return major_minor(str(version)) if version else None
    except ValueError:
        return None
