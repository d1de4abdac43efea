"""What makes a lab host a Thor, a Spark or an H100 pod (shared/DOMAIN.md), as data.

A `HostSpec` is one inventory host resolved against its profile: what the lab writes into that host.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace

from fleet.errors import InputError

UBUNTU_2404 = """PRETTY_NAME="Ubuntu 24.04.3 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.3 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"""

# JetPack 6 (Jetson Linux R36) ships an Ubuntu 22.04 root file system (developer.nvidia.com/embedded/jetpack-archive,
# JetPack 6.x: "Jetson Linux 36.x ... Ubuntu 22.04"); JetPack 7 (R38) moved to 24.04.
UBUNTU_2204 = """PRETTY_NAME="Ubuntu 22.04.5 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.5 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
"""

# Debian 13 "trixie" (debian.org os-release): NVIDIA serves it the CUDA 13 toolkit from its debian13 repository
DEBIAN_13 = """PRETTY_NAME="Debian GNU/Linux 13 (trixie)"
NAME="Debian GNU/Linux"
VERSION_ID="13"
VERSION="13 (trixie)"
VERSION_CODENAME=trixie
DEBIAN_VERSION_FULL=13.1
ID=debian
HOME_URL="https://www.debian.org/"
SUPPORT_URL="https://www.debian.org/support"
BUG_REPORT_URL="https://bugs.debian.org/"
"""

THOR_TEGRA_RELEASE = ("# R38 (release), REVISION: 2.0, GCID: 41844464, BOARD: generic, EABI: aarch64, "
                      "DATE: Fri Aug 22 00:55:42 UTC 2025\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n"
                      "TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")


@dataclass(frozen=True)
class Gpu:
    name: str
    compute_cap: str
    memory_mb: int | None       # None: nvidia-smi answers [N/A] (unified memory)
    forward_compat: str         # "datacenter" | "jetson-thor" | "consumer": what cuda-compat does here
    bus_id: str
    cuda_memory_mb: int         # what cuDeviceTotalMem reports (the shared memory on unified parts)


@dataclass(frozen=True)
class Profile:
    name: str
    machine: str                # uname -m
    kernel_release: str | None  # None: this machine's own (a pod is a container on the host's kernel)
    gpu: Gpu
    driver: str                 # default kernel driver; the inventory's `lab: {driver: ...}` overrides
    toolkit: bool               # CUDA 13.0 toolkit preinstalled (JetPack, DGX OS)
    driver_libdir: str          # where the driver's libcuda.so.1 lives
    tegra_release: str | None = None
    device_tree_model: str | None = None
    runpod: bool = False        # /etc/rp_environment sourced from root's .bashrc
    # How real hosts come broken (fleet_lab/breakage.py):
    nvidia_smi: bool = True     # False: a container started without the utility capability has none
    system_torch: bool = False  # the template's torch in the system Python (RunPod PyTorch templates)
    volume: str | None = None   # a volume mounted there, kept across restarts and resets (/workspace)
    without: tuple[str, ...] = ()   # Debian packages this image lacks (files hidden, dpkg status without them)
    apt_daily_s: int = 0        # seconds an apt-daily stand-in holds the dpkg and apt lists locks after boot
    compat: bool = False        # cuda-compat-13-0 preinstalled (the inventory's `compat: absent` leaves it out)
    container_env: str = ""     # lines the container's environment adds to /etc/rp_environment
    setup_script: str = ""      # /root/pod_setup.sh, sourced at the END of root's .bashrc (after rp_environment)
    userspace_driver: str | None = None   # the user-space driver (libcuda.so.1) when it is not the kernel's
    gpu_job_mib: int = 0        # a job started at boot holds this much GPU memory (nvidia-smi lists it)
    container_disk_gb: int = 0  # a container disk of this size for / (the overlay's upper on a tmpfs): 0 = none
    l4t_apt: str | None = None  # the L4T release whose JetPack apt repository the image lists (nvidia-l4t-apt-source)
    os_release: str = UBUNTU_2404   # /usr/lib/os-release (and /etc/lsb-release from it)
    # Several GPUs and the NVSwitch fabric between them (issue 28; fleet_lab/fabric.py):
    gpus: int = 1               # GPUs the driver shows (nvidia-smi, libcuda)
    fabric: str | None = None   # "managed": NVSwitch bare metal / VM running its own fabric manager;
                                # "provider": a container pod whose fabric is the provider's (never ready here)
    fm: str | None = None       # the fabric manager as the host comes: None (absent), "stopped" (installed at the
                                # driver's version and held, not running), "behind" (one version behind the driver,
                                # held: its daemon refuses to start at boot), "running"
    off_fabric: tuple[int, ...] = ()   # GPUs that fail to register with the fabric (their links fall to PCIe)
    systemd: bool = False       # a systemd host (the stand-in systemctl, fleet_lab/fabric.py): bare metal, VMs
    # GPU health (issue 36; fleet_lab/health.py): the lab's own kernel log (a stand-in dmesg answering its lines, no
    # /dev/kmsg as in Docker's default /dev) and a fault staged at boot (health.FAULTS; tests re-stage without a restart)
    kernel_log: bool = False
    fault: str | None = None
    shm_mb: int = 0             # /dev/shm a tmpfs of this size (Docker's default --shm-size is 64 MB); 0: no size set

    @property
    def own_dev(self) -> bool:
        """Its own /dev and cgroup namespace (fleet_lab/host.py): NVSwitch device files on an NVSwitch board only, and
        /proc/1/cgroup at its root as on bare metal. (Every host has its own PID namespace.)"""
        return self.fabric is not None or self.kernel_log

    @property
    def container(self) -> bool | None:
        """True: the host shows /.dockerenv; False: it hides this machine's (bare metal); None: as this machine."""
        return {"managed": False, "provider": True}.get(self.fabric)

    @property
    def multiarch(self) -> str:
        return f"{self.machine}-linux-gnu"

    @property
    def apt_arch(self) -> str:
        """The directory of NVIDIA's apt repository for this machine (ubuntu2404/<x86_64|sbsa>)."""
        return "x86_64" if self.machine == "x86_64" else "sbsa"


PROFILES = {
    "thor": Profile(
        name="thor", machine="aarch64", kernel_release="6.8.12-tegra",
        gpu=Gpu("NVIDIA Thor", "11.0", None, "jetson-thor", "00000000:01:00.0", 125772),
        driver="580.00", toolkit=True, driver_libdir="/usr/lib/aarch64-linux-gnu/nvidia",
        tegra_release=THOR_TEGRA_RELEASE, device_tree_model="NVIDIA Jetson AGX Thor Developer Kit"),
    "spark": Profile(
        name="spark", machine="aarch64", kernel_release="6.11.0-1016-nvidia",
        gpu=Gpu("NVIDIA GB10", "12.1", None, "consumer", "0000000F:01:00.0", 122572),
        driver="580.95.05", toolkit=True, driver_libdir="/usr/lib/aarch64-linux-gnu"),
    "h100-pod": Profile(
        name="h100-pod", machine="x86_64", kernel_release=None,
        gpu=Gpu("NVIDIA H100 80GB HBM3", "9.0", 81559, "datacenter", "00000000:00:07.0", 81559),
        driver="570.133.20", toolkit=False, driver_libdir="/usr/lib/x86_64-linux-gnu", runpod=True),
}

COMPAT_DIR = "/usr/local/cuda-13.0/compat"   # where cuda-compat-13-0 puts its libcuda
ORIN_TEGRA_RELEASE = ("# R36 (release), REVISION: 4.0, GCID: 37537400, BOARD: generic, EABI: aarch64, "
                      "DATE: Fri Sep 13 04:36:44 UTC 2024\n# KERNEL_VARIANT: oot\nTARGET_USERSPACE_LIB_DIR=nvidia\n"
                      "TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n")
_H100 = PROFILES["h100-pod"]

# Hosts as real ones come (issue 13); `fleet lab up` with no inventory still starts only the classic four.
PROFILES.update({
    # RunPod's PyTorch template: torch in the system Python, /etc/rp_environment, a /workspace volume.
    # Its container disk is small (5 GB: less than torch's 10 GB check) and lost on restart, as RunPod's is.
    "runpod-pytorch": replace(_H100, name="runpod-pytorch", driver="580.159.04", system_torch=True,
                              volume="/workspace", container_disk_gb=5),
    # A container started without NVIDIA_DRIVER_CAPABILITIES=utility: libcuda is there, nvidia-smi is not.
    "no-smi": replace(_H100, name="no-smi", runpod=False, nvidia_smi=False),
    # Jetson AGX Orin on JetPack 6.1/6.2 (L4T R36.4): CUDA 12.6, no nvidia-smi, driver branch 540. Flashed with
    # the L4T BSP only, as flash.sh / l4t_initrd_flash leave it: no CUDA toolkit yet, but the JetPack apt
    # repository in its sources with its key trusted (nvidia-l4t-apt-source; fleet_lab/jetpack.py cites it),
    # from which `apt install cuda-toolkit-12-6` (or nvidia-jetpack) brings CUDA.
    "orin-jp6": Profile(
        name="orin-jp6", machine="aarch64", kernel_release="5.15.148-tegra",
        gpu=Gpu("Orin (nvgpu)", "8.7", None, "jetson-orin", "00000000:00:00.0", 62841),
        driver="540.4.0", toolkit=False, driver_libdir="/usr/lib/aarch64-linux-gnu/nvidia",
        tegra_release=ORIN_TEGRA_RELEASE, device_tree_model="NVIDIA Jetson AGX Orin Developer Kit",
        nvidia_smi=False, l4t_apt="r36.4", os_release=UBUNTU_2204),
    # A GeForce card (no forward compatibility: cuda-compat gives 804) on driver 570.
    "geforce-pod": replace(_H100, name="geforce-pod", runpod=False,
                           gpu=Gpu("NVIDIA GeForce RTX 4090", "8.9", 24564, "consumer", "00000000:01:00.0", 24564)),
    # A minimal image: no git, no curl, no python3-venv (ensurepip missing), as slim bases ship.
    "minimal": replace(_H100, name="minimal", runpod=False, driver="580.159.04",
                       without=("git", "curl", "python3-venv", "python3.11-venv")),
    # A fresh cloud VM: apt-daily runs at boot and holds the dpkg and apt lists locks for a while.
    "fresh-vm": replace(_H100, name="fresh-vm", runpod=False, driver="580.159.04", apt_daily_s=20),
    # A pod from a template like the seed's (shared/DOMAIN.md, "Seen on a real H100"): driver 580, cuda-compat
    # installed, compat in the container's environment (/etc/rp_environment, sourced at the end of .bashrc)
    # and a setup script sourced after it that puts compat first. `ssh host cmd` stops at .bashrc's early
    # return and has CUDA; every interactive shell loads the compat libcuda: error 803.
    "seed-template": replace(_H100, name="seed-template", driver="580.159.04", compat=True,
                             container_env=f"export LD_LIBRARY_PATH={COMPAT_DIR}:$LD_LIBRARY_PATH\n",
                             setup_script=("# pod setup (as the seed template's pod_setup.sh): CUDA 13 first\n"
                                           f"export LD_LIBRARY_PATH={COMPAT_DIR}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\n"
                                           "export PATH=/usr/local/cuda/bin:$PATH\n")),
    # An H100 VM after unattended-upgrades replaced the user-space driver (570 -> 580) under the loaded 570
    # kernel module: nvidia-smi says "Failed to initialize NVML: Driver/library version mismatch" (exit 18),
    # cuInit answers 803, /proc/driver/nvidia/version still says 570. Fixed only by a reboot (or module reload).
    "nvml-mismatch": replace(_H100, name="nvml-mismatch", runpod=False, userspace_driver="580.159.04"),
    # An H100 VM on Debian 13 with driver 580 (issue 47): CUDA 13.0 comes from NVIDIA's debian13 repository.
    "debian13-pod": replace(_H100, name="debian13-pod", runpod=False, driver="580.159.04", os_release=DEBIAN_13),
    # Someone else's training job holds 58 GB of the 80 at 100 % (as measured on a real H100, DOMAIN.md).
    "busy-gpu": replace(_H100, name="busy-gpu", driver="580.159.04", gpu_job_mib=59392),
})

# An HGX H100 8-GPU baseboard (NVSwitch), driver 580.159.04 (CUDA 13: the cu130 torch runs), as each is found (issue 28; fleet_lab/fabric.py). Bare
# metal or a VM given the whole baseboard manages its own fabric; a container pod sees the provider's.
# torch (the stand-in) in the system Python and a venv that sees it (fabric.VENV): verify runs there.
# Bare metal and VMs run systemd; two boards without it (rarer) take fleet's other path: the daemon started directly.
_HGX = replace(_H100, name="hgx-h100", runpod=False, driver="580.159.04", gpus=8, fabric="managed", system_torch=True,
               systemd=True)
PROFILES.update({
    "hgx-fm-missing": replace(_HGX, name="hgx-fm-missing"),
    "hgx-fm-stopped": replace(_HGX, name="hgx-fm-stopped", fm="stopped", systemd=False),
    "hgx-fm-behind": replace(_HGX, name="hgx-fm-behind", fm="behind"),
    "hgx-healthy": replace(_HGX, name="hgx-healthy", fm="running"),
    "hgx-gpu-off": replace(_HGX, name="hgx-gpu-off", fm="running", off_fabric=(3,), systemd=False),
    "hgx-container": replace(_HGX, name="hgx-container", runpod=True, fabric="provider", systemd=False),
    # NVSwitch generation 4 (issue 48): an HGX B200 board, no fabric manager yet; its fabric manager starts only with
    # the NVLink Subnet Manager and ib_umad (fleet_lab/fabric.py: the stand-in modprobe, lsmod and nvlsm)
    "hgx-b200": replace(_HGX, name="hgx-b200", gpu=Gpu("NVIDIA B200", "10.0", 183359, "datacenter",
                                                       "00000000:18:00.0", 183359)),
})

# GPU health (issue 36): a 2-GPU H100 pod on driver 580 with the lab's own kernel log, healthy or with a fault staged
# (fleet_lab/health.py FAULTS: a link trained down, a remap pending, uncorrectable ECC, Xid 79, a power cap, a closed
# kernel log, ...); faults sit on GPU 1, so a verdict must name the GPU.
_POD2 = replace(_H100, name="h100x2-pod", driver="580.159.04", gpus=2, kernel_log=True)
PROFILES.update({"h100x2-pod": _POD2})
PROFILES.update({f"h100x2-{fault}": replace(_POD2, name=f"h100x2-{fault}", fault=fault)
                 for fault in ("link-down", "remap-pending", "ecc-uncorrectable", "xid79", "power-cap", "log-closed")})

# A pod started with Docker's default --shm-size (64 MB, issue 45): DataLoader workers and NCCL's shared memory fail
PROFILES.update({"h100x2-small-shm": replace(_POD2, name="h100x2-small-shm", shm_mb=64)})

COMPAT_VERSION = "580.95.05"   # cuda-compat-13-0 as found on the real H100 (shared/captured)


@dataclass
class HostSpec:
    name: str
    address: str
    port: int
    user: str
    profile: str
    driver: str
    compat_installed: bool
    inventory: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def prof(self) -> Profile:
        return PROFILES[self.profile]

    def layer_key(self) -> str:
        """What the shared profile layer depends on (hosts with equal keys share one layer)."""
        compat = '-compat' if self.compat_installed else ''
        if self.prof.fabric:   # the fabric hosts' layers differ only in the fabric manager release preinstalled
            from .fabric import preinstalled   # (stopped, healthy and gpu-off share one: they differ at boot)
            fm = preinstalled(self.prof, self.driver) or "none"
            enabled = "-enabled" if self.prof.systemd and self.prof.fm in ("running", "behind") else ""
            gen4 = "-b200" if "B200" in self.prof.gpu.name else ""   # its own stand-ins (fabric.gen4)
            return (f"{self.prof.gpus}gpu-{self.prof.fabric}{'-systemd' if self.prof.systemd else ''}-fm-{fm}{enabled}"
                    f"{gen4}{compat}")
        if self.prof.kernel_log:   # the health pods differ only in the fault staged at boot (not in the layer)
            return f"{self.prof.gpus}gpu-kernel-log-{self.driver}{compat}"
        return f"{self.profile}{compat}"

    def digest(self) -> str:
        """Changes when anything the host is built from changes (then `up` recreates it)."""
        fields = asdict(self)
        fields.pop("inventory")
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


LAB_KEYS = ("profile", "driver", "compat")


def spec_for(host) -> HostSpec:
    """Resolve an inventory Host with a `lab:` mapping ({profile, driver, compat}) into a HostSpec; bad
    values are input errors naming the host's line."""
    lab = host.lab or {}
    unknown = sorted(set(lab) - set(LAB_KEYS))
    if unknown:
        raise InputError(f"lab settings of host {host.name!r} have unknown key {unknown[0]!r}; "
                         f"use {', '.join(LAB_KEYS)}", line=host.line)
    if lab.get("profile") not in PROFILES:
        raise InputError(f"lab profile of host {host.name!r} is {lab.get('profile')!r}; write 'profile:' as one of "
                         f"{', '.join(PROFILES)}", line=host.line)
    profile = PROFILES[lab["profile"]]
    raw = lab.get("driver", profile.driver)
    if isinstance(raw, float):   # YAML reads 580.00 as the number 580.0
        raise InputError(f"lab driver of host {host.name!r} reads as the number {raw!r}; quote it, "
                         f"e.g. driver: \"{raw:.2f}\"", line=host.line)
    driver = str(raw)
    if not all(part.isdigit() for part in driver.split(".")) or int(driver.split(".")[0]) < 400:
        raise InputError(f"lab driver of host {host.name!r} is {driver!r}; write a Linux driver version "
                         "such as 570.133.20", line=host.line)
    compat = lab.get("compat")
    if compat not in (None, "installed", "absent"):
        raise InputError(f"lab compat of host {host.name!r} is {compat!r}; write 'installed', 'absent' or leave it out",
                         line=host.line)
    if host.address is None or not host.address.startswith("127."):
        raise InputError(f"lab host {host.name!r} must have a loopback address (127.x.y.z) such as 127.0.1.11, "
                         f"not {host.address!r}", line=host.line)
    if profile.fm:
        from .fabric import FM_BEHIND
        if driver not in FM_BEHIND:
            raise InputError(f"lab profile {profile.name} of host {host.name!r} preinstalls a fabric manager, served for "
                             f"drivers {', '.join(FM_BEHIND)} only; write one of them as 'driver:'", line=host.line)
    installed = compat == "installed" or (compat is None and profile.compat)
    return HostSpec(name=host.name, address=host.address, port=host.port, user=host.user, profile=profile.name,
                    driver=driver, compat_installed=installed)
