"""Build the stand-in mirror once, cache it under <lab root>/mirror/<hash of the builder's sources>.

    apt/ubuntu2404/{x86_64,sbsa}/   signed flat apt repositories (cuda-keyring, cuda-toolkit-13-0, ...)
    apt/debian13/x86_64/            the same for Debian 13; apt/ubuntu2204/arm64/: a JetPack 6 Jetson's cuDSS
    apt/ubuntu/                     the distribution's archive: what slim images lack (fleet_lab/distro.py)
    apt/jetson/{common,t234}/       the JetPack apt repository (r36.4: cuda-toolkit-12-6; fleet_lab/jetpack.py)
    whl/cu130/  whl/jetson-cu130/  whl/jetson-jp6-cu126/  whl/pypi/
                                    PEP 503 indexes (torch; nvpl-blas, nvpl-lapack, nvidia-cudss-cu13, -cu12)
    redist/nvpl/  redist/cudss/     tarballs laid out as NVIDIA's compute/<product>/redist
    git/cutlass.git                 bare repository with tags v4.2.1, v4.3.0, v4.7.0
    native/                         per-host objects: libcuda.so.<driver>, the uname() override, bin/nvidia-smi

    tls/                            the lab CA and the server certificate (fleet_lab/tls.py)

Hosts reach it over HTTPS under the real source hostnames (fleet_lab/serve.py). README.md beside this
file lists each stand-in.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import bandwidth, catalog, debs, distro, gitrepo, jetpack, native, paths, redist, tls, wheels
from .profiles import PROFILES

HOST_PYTHON = "/usr/bin/python3"   # the interpreter lab hosts run (Debian's, with venv)


def python_tag() -> str:
    """cpXY of the hosts' python3, so pip on a lab host accepts the stand-in torch wheels."""
    out = subprocess.run([HOST_PYTHON, "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
                         capture_output=True, text=True)
    return "cp" + (out.stdout.strip() or "%d%d" % sys.version_info[:2])


def source_hash() -> str:
    digest = hashlib.sha256(python_tag().encode())
    digest.update(f"scale={bandwidth.scale()}".encode())   # the stand-ins' sizes (bandwidth.py)
    here = Path(__file__).parent
    for path in sorted(p for p in here.rglob("*") if _is_builder_source(p, here)):
        digest.update(path.relative_to(here).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


BUILDER_FILES = {"bandwidth.py", "catalog.py", "debs.py", "wheels.py", "redist.py", "gitrepo.py", "mirror.py", "native.py",
                 "profiles.py", "layers.py", "tls.py", "breakage.py", "distro.py", "jetpack.py",
                 "fabric.py"}   # layers.py: the profile layers are cached under the same hash
BUILDER_DIRS = {"native", "standin_torch", "files"}


def _is_builder_source(path: Path, here: Path) -> bool:
    rel = path.relative_to(here).parts
    if not path.is_file() or "__pycache__" in rel:
        return False
    return rel[0] in BUILDER_FILES or rel[0] in BUILDER_DIRS


def ensure(root: Path | None = None) -> Path:
    """The built mirror for the current sources; builds it (a few seconds) when missing."""
    cache = paths.mirror_cache(root)
    target = cache / source_hash()
    if (target / ".complete").exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
    try:
        build(building)
        (building / ".complete").write_text("ok\n")
        building.chmod(0o755)
        try:
            building.rename(target)
        except OSError:          # another `up` finished the same build first
            shutil.rmtree(building)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    for old in cache.iterdir():
        if old != target and not old.name.startswith(".build-"):
            shutil.rmtree(old, ignore_errors=True)
    return target


KEYRING_PINS = "keyring.sha256"


def write_keyring_pins(out: Path) -> None:
    """The digests of the lab's own cuda-keyring .debs at the URLs it answers for NVIDIA's (sha256sum's form):
    fleet pins NVIDIA's real keyring by sha256 (fleet/decide/keyring.py), so the lab names its stand-in's, as it
    names its host keys in known_hosts; `up` points the inventory's top-level `keyring_pins:` here."""
    import hashlib
    from fleet.decide.keyring import KEYRING, url
    lines = []
    for arch in ("x86_64", "sbsa"):
        deb = out / "apt" / "ubuntu2404" / arch / KEYRING
        lines.append(f"{hashlib.sha256(deb.read_bytes()).hexdigest()}  {url(f'ubuntu2404/{arch}')}\n")
    (out / KEYRING_PINS).write_text("".join(lines))


def build(out: Path) -> None:
    libs = out / "native" / "lib"
    catalog.build_libraries(libs)
    for profile in PROFILES.values():
        driver_lib(out, profile.driver)
    driver_lib(out, "580.159.04")
    driver_lib(out, catalog.COMPAT, compat=True)
    gpg_home = Path(tempfile.mkdtemp(prefix="fleet-gpg-"))
    jetson_home = Path(tempfile.mkdtemp(prefix="fleet-gpg-jetson-"))
    try:
        keyring = debs.make_signing_key(gpg_home)
        repos = {("ubuntu2404", arch): catalog.debs_for(arch, libs, keyring, out) for arch in ("x86_64", "sbsa")}
        # Debian 13 (NVIDIA's debian13 repository serves the CUDA 13 toolkit) and a JetPack 6 Jetson's ubuntu2204/arm64
        # (the Tegra builds of NVIDIA's libraries: cuDSS), issue 47
        repos[("debian13", "x86_64")] = catalog.debs_for("x86_64", libs, keyring, out, distro="debian13")
        repos[("ubuntu2204", "arm64")] = catalog.jetson_arm64_debs(libs, keyring)
        for (distro_name, arch), packages in repos.items():
            repo = out / "apt" / distro_name / arch
            for deb in packages:
                debs.build_deb(deb, repo)
            debs.write_repo(repo, packages, gpg_home)
        (out / "apt" / "cuda-archive-keyring.gpg").write_bytes(keyring)
        write_keyring_pins(out)
        distro.build(out / "apt" / "ubuntu", gpg_home)   # git, curl, python3-venv for slim images
        # JetPack's repository signs with a key of its own (Jetson OTA), trusted on Jetsons only
        jetson_key = debs.make_signing_key(jetson_home, jetpack.KEY_UID, armor=True)
        jetpack.build(out / "apt" / "jetson", libs, jetson_home, jetson_key)
    finally:
        for home in (gpg_home, jetson_home):
            debs.stop_gpg_agent(home)
            shutil.rmtree(home, ignore_errors=True)
    catalog.build_wheels(out / "whl", libs, python_tag())
    redist.build(out / "redist", libs)
    gitrepo.build_cutlass(out / "git" / "cutlass.git")
    tls.build(tls.tls_dir(out))
    for dirpath, dirnames, filenames in os.walk(out):
        os.chmod(dirpath, 0o755)


def driver_lib(mirror: Path, version: str, compat: bool = False) -> Path:
    """libcuda.so.<version> answering `version` (built on first use; hosts may set any lab driver)."""
    kind = "compat" if compat else "driver"
    out = mirror / "native" / kind / f"libcuda.so.{version}"
    if not out.exists():
        obj = native.SharedObject("libcuda.c", "libcuda.so.1",
                                  {"LAB_DRIVER": native.c_string(version), "LAB_COMPAT": str(int(compat))})
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        native.build(obj, tmp)
        tmp.rename(out)
    return out


def nvidia_smi(mirror: Path) -> Path:
    """The stand-in nvidia-smi (fleet_lab/native/nvidia_smi.c), one program for every profile."""
    out = mirror / "native" / "bin" / "nvidia-smi"
    if not out.exists():
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        native.build_program("nvidia_smi.c", tmp)
        tmp.rename(out)
    return out


def uname_lib(mirror: Path, machine: str, release: str) -> Path:
    out = mirror / "native" / "uname" / f"libfleet_uname-{machine}-{release}.so"
    if not out.exists():
        obj = native.SharedObject("uname_override.c", None, {"LAB_MACHINE": native.c_string(machine),
                                                             "LAB_RELEASE": native.c_string(release)})
        tmp = out.with_name(f".{out.name}.{os.getpid()}")
        native.build(obj, tmp)
        tmp.rename(out)
    return out
