"""How real hosts come broken, each through the real mechanism (the profile fields after `runpod`):

    nvidia_smi=False   no /usr/bin/nvidia-smi (a container without the `utility` driver capability)
    system_torch       the stand-in torch pip-installed into the system Python (a RunPod PyTorch template)
    volume             a directory of the host bound at e.g. /workspace: kept across restarts and resets
    without            Debian packages missing: their files hidden by whiteouts, their dpkg status gone
    apt_daily_s        an apt-daily stand-in holding dpkg's and apt's locks (fcntl, as apt takes them) at boot
    container_env      lines added to /etc/rp_environment (the container's ENV, as RunPod's start.sh writes it)
    setup_script       /root/pod_setup.sh, sourced at the end of root's .bashrc (after rp_environment)
    userspace_driver   libcuda.so.1 of another driver than the kernel module's (fleet_lab/host.py writes it)
    gpu_job_mib        a job started at boot holding a lab GPU handle with that many MiB (nvidia-smi lists it)
    container_disk_gb  / on a disk of that size: the overlay's upper and work dirs on a size-limited tmpfs
                       (disk_lines), so `df /` reports it and writes past it fail with ENOSPC

`to_layer` writes a profile's part into its shared layer; `boot_lines` are the shell lines the host's
namespace runs before sshd.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

from . import layers
from .paths import MIRROR_IN_HOST

APT_DAILY = "/usr/lib/fleet-lab/apt-daily"
# The locks apt and dpkg take with fcntl(F_SETLK) (apt-pkg/contrib/fileutl.cc GetLock): a process holding
# them makes `apt-get install` fail with "Could not get lock ... It is held by process N (unattended-upgr)".
APT_DAILY_SCRIPT = '''#!/usr/bin/python3
"""fleet lab stand-in for apt-daily/unattended-upgrades: NOT Ubuntu's. Holds dpkg's and apt's locks for
the seconds given, as apt.systemd.daily does on a fresh VM's first boot."""
import fcntl, os, sys, time
with open("/proc/self/comm", "w") as fh:
    fh.write("unattended-upgr")
held = []
for path in ("/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock",
             "/var/cache/apt/archives/lock"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    held.append(fd)
open("/run/fleet-lab-apt-daily", "w").close()   # the host's boot waits for this before sshd starts
time.sleep(float(sys.argv[1]))
'''


GPU_JOB = "/usr/lib/fleet-lab/gpu-job"
GPU_JOBS = "/run/fleet-lab/gpu-jobs"   # native/nvidia_smi.c lists the processes holding one of these open
GPU_JOB_SCRIPT = f'''#!/usr/bin/python3
"""fleet lab stand-in for someone else's training job: NOT a GPU program. Holds a lab GPU handle
({GPU_JOBS}/train, its content the MiB it uses) open until the host stops, as a CUDA process holds
/dev/nvidia*; the stand-in nvidia-smi lists it and counts its memory as used."""
import os, sys, time
with open("/proc/self/comm", "w") as fh:
    fh.write("python3")
os.makedirs("{GPU_JOBS}", exist_ok=True)
handle = open("{GPU_JOBS}/train", "w+")
handle.write(sys.argv[1] + "\\n")
handle.flush()
while True:
    time.sleep(3600)
'''


def to_layer(layer: Path, profile, mirror: Path) -> None:
    if not profile.nvidia_smi:
        target = layer / "usr/bin/nvidia-smi"
        if target.exists():
            target.unlink()
        if Path("/usr/bin/nvidia-smi").exists():
            layers.whiteout(layer, "/usr/bin/nvidia-smi")
    for package in profile.without:
        hide_package(layer, package)
    if profile.without:   # a slim image still has its distribution's sources: apt can install what it lacks
        from . import distro
        layers.put(layer, "/etc/apt/sources.list.d/ubuntu.sources", distro.SOURCES)
        layers.put(layer, distro.KEYRING, (mirror / "apt" / "cuda-archive-keyring.gpg").read_bytes())
    if profile.volume:
        (layer / profile.volume.lstrip("/")).mkdir(parents=True, exist_ok=True)
    if profile.apt_daily_s:
        layers.put(layer, APT_DAILY, APT_DAILY_SCRIPT, 0o755)
    if profile.gpu_job_mib:
        layers.put(layer, GPU_JOB, GPU_JOB_SCRIPT, 0o755)
    if profile.container_env:
        env = layer / "etc/rp_environment"
        layers.put(layer, "/etc/rp_environment", env.read_text() + profile.container_env)
    if profile.setup_script:
        layers.put(layer, "/root/pod_setup.sh", profile.setup_script)
        bashrc = layer / "root/.bashrc"
        layers.put(layer, "/root/.bashrc", bashrc.read_text() + "source /root/pod_setup.sh\n")
    if profile.system_torch:
        wheel = next((mirror / "whl" / "cu130" / "torch").glob(f"torch-*manylinux_2_28_{profile.machine}.whl"))
        # pip as a Dockerfile runs it: into /usr/local/lib/python3.X/dist-packages, past Debian's PEP 668 guard
        layers.dpkg_in_layer(layer, mirror, ["python3", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                                             "--break-system-packages", f"{MIRROR_IN_HOST}/{wheel.relative_to(mirror)}"])


def hide_package(layer: Path, package: str) -> None:
    """The image lacks `package`: a whiteout for each of its files, and dpkg no longer lists it."""
    info = Path("/var/lib/dpkg/info")
    listing = next((p for p in (info / f"{package}.list", info / f"{package}:amd64.list") if p.exists()), None)
    if listing is None:
        return
    for line in listing.read_text().splitlines():
        path = Path(line)
        if line.startswith("/") and (path.is_symlink() or path.is_file()) and not (layer / line.lstrip("/")).exists() \
                and not line.startswith("/usr/local/"):
            layers.whiteout(layer, line)
    _hide_emptied_dirs(layer, listing.read_text().splitlines())
    for entry in info.glob(f"{listing.stem}.*"):
        layers.whiteout(layer, str(entry))
    status = layer / "var/lib/dpkg/status"
    text = status.read_text() if status.exists() else Path("/var/lib/dpkg/status").read_text()
    kept = [s for s in text.split("\n\n") if s.strip() and f"Package: {package}\n" not in s + "\n"]
    layers.put(layer, "/var/lib/dpkg/status", "\n\n".join(kept) + "\n")


def _hide_emptied_dirs(layer: Path, listed: list[str]) -> None:
    """A directory of the package that holds nothing else is gone too, as on an image that never had the
    package: a leftover /usr/lib/python3.X/ensurepip would still import (as a namespace package)."""
    for line in sorted((d for d in listed if d.startswith("/") and Path(d).is_dir() and not Path(d).is_symlink()),
                       key=lambda d: d.count("/"), reverse=True):
        ours = layer / line.lstrip("/")
        if not ours.is_dir() or any(not (e.is_char_device() or e.is_dir()) for e in ours.rglob("*")):
            continue   # nothing of it hidden, or the layer itself writes there
        hidden = {e.name for e in ours.iterdir() if e.is_char_device()}   # whiteouts
        if all(name in hidden or name == "__pycache__" for name in os.listdir(line)):
            shutil.rmtree(ours)
            layers.whiteout(layer, line)


def disk_lines(profile, host_dir: Path) -> list[str]:
    """Before the overlay is mounted: a small container disk (lost on restart, as a pod's is). A tmpfs of
    that size inside the host's own mount namespace gets a copy of the provisioned upper dir and serves as
    the overlay's upper and work (disk/upper, disk/work: one mount, as overlayfs needs), so `df /` reports
    the tmpfs (overlayfs answers statfs from its upper). Memory is taken only by what the host writes."""
    if not profile.container_disk_gb:
        return []
    d = shlex.quote(str(host_dir))
    return [f"mkdir -p {d}/disk",
            f"mount -t tmpfs -o size={int(profile.container_disk_gb)}g,mode=755 fleet-lab-container-disk {d}/disk",
            f"mkdir {d}/disk/upper {d}/disk/work",
            f"cp -a {d}/upper/. {d}/disk/upper/"]


def boot_lines(profile, host_dir: Path, merged: str) -> list[str]:
    lines = []
    if profile.volume:
        volume = host_dir / "volume"
        volume.mkdir(parents=True, exist_ok=True)
        lines.append(f"mount --bind {shlex.quote(str(volume))} {merged}{profile.volume}")
    if profile.apt_daily_s:
        lines += [f"chroot {merged} {APT_DAILY} {int(profile.apt_daily_s)} </dev/null >/dev/null 2>&1 &",
                  f"n=0; until [ -e {merged}/run/fleet-lab-apt-daily ] || [ $n -ge 200 ]; do sleep 0.05; n=$((n+1)); done"]
    if profile.gpu_job_mib:
        job = f"{merged}{GPU_JOBS}/train"
        lines += [f"chroot {merged} {GPU_JOB} {int(profile.gpu_job_mib)} </dev/null >/dev/null 2>&1 &",
                  f"n=0; until [ -s {job} ] || [ $n -ge 200 ]; do sleep 0.05; n=$((n+1)); done"]
    return lines
