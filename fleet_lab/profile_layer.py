"""The read-only layers under each lab host's overlay (top first):

    host layer      per host: hostname, sshd config and key, authorized_keys, the driver's libcuda, users
    profile layer   per profile: os-release, tegra release, nvidia-smi, uname override, preinstalled .debs,
                    and masks hiding what this machine has that the simulated host must not (/usr/local,
                    apt sources, /root, /home, CUDA entries in ld.so.conf.d)
    /               this machine

The writable upper dir starts empty, so `reset` only wipes it. Overlay whiteouts (0/0 character devices)
and opaque directories (xattr trusted.overlay.opaque=y) do the masking, as container images do.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import breakage, fabric, health, jetpack, tls
from . import mirror as mirror_mod
from .layers import dpkg_in_layer, link, opaque_dir, put, whiteout
from .paths import MIRROR_IN_HOST
from .profiles import Profile

FILES = Path(__file__).parent / "files"
USR_LOCAL = ("bin", "etc", "games", "include", "lib", "sbin", "share", "src")


def build_profile_layer(layer: Path, profile: Profile, mirror: Path, compat: bool, driver: str | None = None) -> None:
    """Write the profile into `layer` (a fresh directory), then install its preinstalled packages."""
    _masks(layer)
    put(layer, "/usr/lib/os-release", profile.os_release)
    link(layer, "/etc/os-release", "../usr/lib/os-release")
    put(layer, "/etc/lsb-release", _lsb_release(profile.os_release))
    put(layer, "/usr/bin/nvidia-smi", mirror_mod.nvidia_smi(mirror).read_bytes(), 0o755)
    (layer / MIRROR_IN_HOST.lstrip("/")).mkdir(parents=True, exist_ok=True)
    if profile.tegra_release:
        put(layer, "/etc/nv_tegra_release", profile.tegra_release)
        put(layer, "/etc/ld.so.conf.d/nvidia-tegra.conf", f"{profile.driver_libdir}\n")
    if profile.l4t_apt:   # what nvidia-l4t-apt-source leaves on an L4T image (fleet_lab/jetpack.py)
        put(layer, jetpack.SOURCES_LIST, jetpack.sources_list(profile.l4t_apt))
        put(layer, jetpack.KEY_PATH, (mirror / "apt" / "jetson" / jetpack.KEY_IN_MIRROR).read_bytes())
    if profile.machine != "x86_64":
        put(layer, f"/etc/ld.so.conf.d/{profile.multiarch}.conf",
            f"# Multiarch support\n/usr/local/lib/{profile.multiarch}\n/lib/{profile.multiarch}\n"
            f"/usr/lib/{profile.multiarch}\n")
    if profile.kernel_release:
        lib = mirror_mod.uname_lib(mirror, profile.machine, profile.kernel_release)
        put(layer, "/usr/lib/fleet-lab/libfleet_uname.so", lib.read_bytes(), 0o755)
        put(layer, "/etc/ld.so.preload", "/usr/lib/fleet-lab/libfleet_uname.so\n")
    root_home(layer, profile)
    trust_lab_ca(layer, mirror)
    # how real hosts come broken: no nvidia-smi, missing packages, held locks, ...
    breakage.to_layer(layer, profile, mirror)
    # several GPUs: /.dockerenv or not, the fabric manager as the host comes (issue 28)
    fabric.to_layer(layer, profile, driver or profile.driver, mirror,
                    f"{MIRROR_IN_HOST}/apt/ubuntu2404/{profile.apt_arch}")
    # GPU health: the lab's own kernel log (issue 36)
    health.to_layer(layer, profile)
    packages = []
    if profile.toolkit:
        packages.append("cuda-toolkit-13-0_13.0.2-1_all.deb")
    if compat:
        packages.append("cuda-compat-13-0_580.95.05-0ubuntu1_all.deb")
    if packages:
        repo = f"{MIRROR_IN_HOST}/apt/ubuntu2404/{profile.apt_arch}"
        dpkg_in_layer(layer, mirror, ["dpkg", "-i"] + [f"{repo}/{p}" for p in packages])
    for mount_point in (MIRROR_IN_HOST, "/srv"):   # hosts reach the mirror over HTTPS only
        if (layer / mount_point.lstrip("/")).is_dir() and not any((layer / mount_point.lstrip("/")).iterdir()):
            (layer / mount_point.lstrip("/")).rmdir()


def _lsb_release(os_release: str) -> str:
    fields = {k: v.strip('"') for k, v in (line.split("=", 1) for line in os_release.splitlines() if "=" in line)}
    return (f"DISTRIB_ID={fields.get('ID', 'ubuntu').capitalize()}\nDISTRIB_RELEASE={fields['VERSION_ID']}\n"
            f"DISTRIB_CODENAME={fields['VERSION_CODENAME']}\n"
            f'DISTRIB_DESCRIPTION="{fields["PRETTY_NAME"]}"\n')


def trust_lab_ca(layer: Path, mirror: Path) -> None:
    """The lab CA in the host's system store, the way a site adds its own CA (update-ca-certificates reads
    /usr/local/share/ca-certificates), and pip told to use that store (/etc/pip.conf `cert =`: pip
    otherwise trusts only its bundled certifi, pip.pypa.io/en/stable/topics/https-certificates/)."""
    put(layer, "/usr/local/share/ca-certificates/fleet-lab-ca.crt", (tls.tls_dir(mirror) / "ca.pem").read_bytes())
    dpkg_in_layer(layer, mirror, ["update-ca-certificates"])
    put(layer, "/etc/pip.conf", "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n")


def _masks(layer: Path) -> None:
    usr_local = opaque_dir(layer, "/usr/local")
    for sub in USR_LOCAL:
        (usr_local / sub).mkdir(exist_ok=True)
    link(layer, "/usr/local/man", "share/man")
    opaque_dir(layer, "/etc/apt/sources.list.d")
    put(layer, "/etc/apt/sources.list", "# fleet lab: no distribution mirror; apt sees only what roles add\n")
    opaque_dir(layer, "/root", 0o700)
    opaque_dir(layer, "/home")
    for scratch in ("/tmp", "/var/tmp"):   # a fresh host's are empty, not this machine's
        os.chmod(opaque_dir(layer, scratch), 0o1777)
    conf_d = Path("/etc/ld.so.conf.d")
    for entry in sorted(conf_d.iterdir()) if conf_d.is_dir() else []:
        try:
            text = entry.read_text(errors="replace")
        except OSError:
            continue
        if "/usr/local/cuda" in text:
            whiteout(layer, str(entry))
    if Path("/etc/ld.so.preload").exists():
        whiteout(layer, "/etc/ld.so.preload")


def root_home(layer: Path, profile: Profile) -> None:
    bashrc = (FILES / "bashrc").read_text()
    if profile.runpod:
        bashrc += "source /etc/rp_environment\n"   # appended by RunPod's start script, after the early return
        put(layer, "/etc/rp_environment", (FILES / "rp_environment").read_text())
    put(layer, "/root/.bashrc", bashrc)
    put(layer, "/root/.profile", (FILES / "profile").read_text())
