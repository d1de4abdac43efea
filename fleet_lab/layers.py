"""Writing into one read-only layer of a lab host: a file, a link, an opaque directory, a whiteout, and a
command (dpkg) run with its writes landing in the layer. What goes into a profile's layer is
fleet_lab/profile_layer.py; these primitives know no profile, mirror or breakage."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from fleet.errors import LabError
from .paths import MIRROR_IN_HOST



def put(layer: Path, path: str, content: str | bytes, mode: int = 0o644, uid: int = 0, gid: int = 0) -> Path:
    target = layer / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    target.write_bytes(content.encode() if isinstance(content, str) else content)
    os.chmod(target, mode)
    os.chown(target, uid, gid)
    return target


def link(layer: Path, path: str, dest: str) -> None:
    target = layer / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    target.symlink_to(dest)


def opaque_dir(layer: Path, path: str, mode: int = 0o755) -> Path:
    """A directory that hides whatever the layers below have at `path`."""
    target = layer / path.lstrip("/")
    target.mkdir(parents=True, exist_ok=True)
    os.chmod(target, mode)
    os.setxattr(target, "trusted.overlay.opaque", b"y")
    return target


def whiteout(layer: Path, path: str) -> None:
    """Hide `path` of the layers below."""
    target = layer / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))


def dpkg_in_layer(layer: Path, mirror: Path, command: list[str]) -> None:
    """Run `command` in a throw-away namespace whose overlay writes into `layer` (so dpkg registers the
    packages as a real install would)."""
    work = layer.parent / f".{layer.name}.work"
    merged = layer.parent / f".{layer.name}.m"
    for d in (work, merged):
        d.mkdir(parents=True, exist_ok=True)
    m = str(merged)
    script = (f"set -e\nmount -t overlay overlay -o lowerdir=/,upperdir={layer},workdir={work} {m}\n"
              f"for d in proc dev sys; do mount --rbind /$d {m}/$d; done\n"
              f"mount -t tmpfs tmpfs {m}/run\nmount --bind -o ro {mirror} {m}{MIRROR_IN_HOST}\n"
              f"exec chroot {m} " + " ".join(command) + "\n")
    proc = subprocess.run(["unshare", "-m", "-u", "--propagation", "private", "--fork", "sh", "-c", script],
                          capture_output=True, text=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                                              "DEBIAN_FRONTEND": "noninteractive"})
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(merged, ignore_errors=True)
    if proc.returncode != 0:
        raise LabError(f"running {' '.join(command)} in the lab's profile layer failed: "
                       f"{(proc.stderr or proc.stdout).strip()[-500:]}")
