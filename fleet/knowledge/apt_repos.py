"""Which distributions NVIDIA serves CUDA to as apt repositories, and from which CUDA release each starts.

One row per (os-release ID, VERSION_ID) whose packages fleet installs with apt: the repository's directory name
under developer.download.nvidia.com/compute/cuda/repos/ and the first CUDA release it serves (None: every release
fleet plans, 12.0 on). Sources, read as follows (the words are ours):

- NVIDIA Driver Installation Guide (docs.nvidia.com/datacenter/tesla/driver-installation-guide, releases 615 and
  620: "Linux System Requirements" and the per-distribution network repository sections): the Debian-family
  repositories are debian12, debian13, ubuntu2204, ubuntu2404 and ubuntu2604 ($distro/$arch, x86_64 and sbsa); RHEL
  and its rebuilds (Rocky, Alma, Oracle), Fedora, SUSE (SLES, openSUSE), Amazon Linux, Azure Linux and KylinOS
  are served as RPM repositories (dnf, zypper, tdnf) only.
- The CUDA release each repository starts with: debian13 was added with CUDA 13.0 (public install scripts take
  cuda-toolkit-13-0 to 13-3 from debian13/x86_64; nothing of 12.x is published there); ubuntu2604 serves CUDA 13.3
  and newer (its local installer is cuda-repo-ubuntu2604-13-3-local; public scripts take cuda-toolkit-13-3 from
  ubuntu2604/x86_64 and fall back to ubuntu2404 for 13.2, which ubuntu2604 does not carry).
- A JetPack 6 Jetson (Tegra CUDA 12) takes NVIDIA's libraries from the repository's `arm64` directory
  (ubuntu2204/arm64), not `sbsa`: fleet/decide/host.py Host.repo_arch.

The older rows keep first = None as fleet has planned them since issue 11 (their repositories carry every 12.x
and 13.x fleet offers there).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AptDistro:
    os_id: str
    version: str             # VERSION_ID as the facts record it (Debian: the major)
    repo: str                # the directory under .../compute/cuda/repos/
    first_cuda: str | None   # the first CUDA release the repository serves; None: every one fleet plans


APT_DISTROS: tuple[AptDistro, ...] = (
    AptDistro("ubuntu", "22.04", "ubuntu2204", None),
    AptDistro("ubuntu", "24.04", "ubuntu2404", None),
    AptDistro("ubuntu", "26.04", "ubuntu2604", "13.3"),
    AptDistro("debian", "12", "debian12", None),
    AptDistro("debian", "13", "debian13", "13.0"),
)

# os-release IDs of distributions NVIDIA serves CUDA to as RPM packages only (the driver installation guide's
# dnf/zypper/tdnf repositories): fleet installs with apt, so these are refused with that said.
RPM_ONLY: dict[str, str] = {
    "rhel": "Red Hat Enterprise Linux", "rocky": "Rocky Linux", "almalinux": "AlmaLinux", "ol": "Oracle Linux",
    "fedora": "Fedora", "sles": "SUSE Linux Enterprise Server", "opensuse-leap": "openSUSE Leap",
    "amzn": "Amazon Linux", "azurelinux": "Azure Linux", "kylin": "KylinOS",
}


def apt_distro(os_id: str, version: str) -> AptDistro | None:
    """The row of this OS ("debian", "13.1" or "13") ; None where NVIDIA serves it no apt repository fleet knows."""
    version = version if os_id == "ubuntu" else version.split(".")[0]
    return next((d for d in APT_DISTROS if (d.os_id, d.version) == (os_id, version)), None)
