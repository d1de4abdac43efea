"""Stand-in .deb packages (built with dpkg-deb) and a GPG-signed flat apt repository, laid out like
NVIDIA's `compute/cuda/repos/ubuntu2404/<arch>/` so `deb [signed-by=...] URL /` lines work unchanged."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

from fleet.errors import LabError


@dataclass
class Deb:
    name: str
    version: str
    description: str
    files: dict[str, bytes | Path] = field(default_factory=dict)   # absolute path in the package -> content
    links: dict[str, str] = field(default_factory=dict)            # absolute path -> symlink target
    depends: list[str] = field(default_factory=list)
    postinst: str | None = None
    triggers: str | None = None                                    # e.g. "activate-noawait ldconfig"
    executables: set[str] = field(default_factory=set)

    @property
    def filename(self) -> str:
        return f"{self.name}_{self.version}_all.deb"

    def control(self) -> str:
        lines = [f"Package: {self.name}", f"Version: {self.version}", "Architecture: all",
                 "Maintainer: fleet lab <lab@fleet.invalid>", "Section: devel", "Priority: optional"]
        if self.depends:
            lines.append("Depends: " + ", ".join(self.depends))
        lines.append(f"Description: fleet lab stand-in: {self.description}")
        lines.append(" Not NVIDIA's package: a small stand-in built by `fleet lab` for rehearsals.")
        return "\n".join(lines) + "\n"


def build_deb(deb: Deb, out_dir: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="fleet-deb-") as tmp:
        stage = Path(tmp)
        for path, content in deb.files.items():
            target = stage / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            data = content.read_bytes() if isinstance(content, Path) else content
            target.write_bytes(data)
            executable = path in deb.executables or ".so" in target.name
            target.chmod(0o755 if executable else 0o644)
        for path, dest in deb.links.items():
            target = stage / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(dest)
        debian = stage / "DEBIAN"
        debian.mkdir()
        (debian / "control").write_text(deb.control())
        if deb.postinst:
            (debian / "postinst").write_text("#!/bin/sh\nset -e\n" + deb.postinst)
            (debian / "postinst").chmod(0o755)
        if deb.triggers:
            (debian / "triggers").write_text(deb.triggers + "\n")
        for d in stage.rglob("*"):
            if d.is_dir() and not d.is_symlink():
                d.chmod(0o755)
        out_dir.mkdir(parents=True, exist_ok=True)
        out = out_dir / deb.filename
        _run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(stage), str(out)], "dpkg-deb")
    return out


def write_repo(repo: Path, debs: list[Deb], keyring_home: Path) -> None:
    """Packages(.gz), Release, InRelease, Release.gpg for the .debs already in `repo` (a flat repo)."""
    stanzas = []
    for deb in debs:
        path = repo / deb.filename
        data = path.read_bytes()
        stanzas.append(deb.control().rstrip("\n").split("\nDescription:")[0]
                       + f"\nFilename: ./{deb.filename}\nSize: {len(data)}"
                       + f"\nMD5sum: {hashlib.md5(data).hexdigest()}\nSHA256: {hashlib.sha256(data).hexdigest()}"
                       + "\nDescription:" + deb.control().split("\nDescription:")[1].rstrip("\n"))
    indexes = write_packages(repo, stanzas)
    sign_release(repo, ["Origin: fleet lab stand-in", "Label: fleet lab stand-in for NVIDIA CUDA",
                        "Architectures: amd64 arm64 all"], indexes, keyring_home)


def write_packages(directory: Path, stanzas: list[str]) -> list[Path]:
    """Packages and Packages.gz (reproducible: no mtime in the gzip header) of these stanzas."""
    directory.mkdir(parents=True, exist_ok=True)
    packages = ("\n\n".join(stanzas) + "\n").encode() if stanzas else b""   # apt refuses a stanza-less "\n"
    (directory / "Packages").write_bytes(packages)
    (directory / "Packages.gz").write_bytes(gzip.compress(packages, mtime=0))
    return [directory / "Packages", directory / "Packages.gz"]


def sign_release(dist: Path, header: list[str], indexes: list[Path], gpg_home: Path) -> None:
    """`dist`/Release listing each index (path relative to dist, SHA256, size), then InRelease and Release.gpg
    signed with the lab's key: what apt checks before it trusts a repository."""
    release = [*header, f"Date: {formatdate(usegmt=True)}", "SHA256:"]
    for path in indexes:
        data = path.read_bytes()
        release.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {path.relative_to(dist)}")
    (dist / "Release").write_text("\n".join(release) + "\n")
    gpg = ["gpg", "--homedir", str(gpg_home), "--batch", "--yes", "--quiet"]
    _run(gpg + ["--clearsign", "-o", str(dist / "InRelease"), str(dist / "Release")], "gpg")
    _run(gpg + ["--detach-sign", "--armor", "-o", str(dist / "Release.gpg"), str(dist / "Release")], "gpg")


def make_signing_key(home: Path, uid: str = "fleet lab stand-in CUDA archive key <lab@fleet.invalid>",
                     armor: bool = False) -> bytes:
    """A fresh ed25519 signing key in `home`; returns the public key: a binary keyring (cuda-archive-keyring.gpg)
    or, with `armor`, ASCII-armored (an .asc file for /etc/apt/trusted.gpg.d)."""
    if not shutil.which("gpg"):
        raise LabError("the lab signs its stand-in apt repository with gpg, which is not installed; "
                       "run: apt-get install gnupg")
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    gpg = ["gpg", "--homedir", str(home), "--batch", "--quiet", "--passphrase", ""]
    _run(gpg + ["--quick-gen-key", uid, "ed25519", "sign", "never"], "gpg")
    return _run(["gpg", "--homedir", str(home), "--batch", "--export"] + (["--armor"] if armor else []), "gpg")


def stop_gpg_agent(home: Path) -> None:
    subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], capture_output=True,
                   env={**os.environ, "GNUPGHOME": str(home)})


def _run(cmd: list[str], what: str) -> bytes:
    proc = subprocess.run(cmd, capture_output=True)
    if proc.returncode != 0:
        raise LabError(f"{what} failed while building the lab mirror: {proc.stderr.decode(errors='replace').strip()}"
                       f"; install dpkg-dev and gnupg (apt-get install dpkg-dev gnupg) and try again")
    return proc.stdout
