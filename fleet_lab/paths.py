"""Where the lab keeps its state, and the two files SSH connections to lab hosts need.

    <root>/id_ed25519, id_ed25519.pub   the key fleet logs in with (authorized on every lab host)
    <root>/known_hosts                  every lab host's key (the lab generated them, so it vouches for them)
    <root>/keyring.sha256               the digests of the lab's cuda-keyring .debs (the inventory's keyring_pins:)
    <root>/hosts/<name>/                one host: upper/ work/ merged/ (the overlay), host.json, sshd.log
    <root>/mirror/<hash>/               the built stand-in mirror, cached by a hash of the builder's sources

`root` defaults to $FLEET_LAB_ROOT, else /var/lib/fleet-lab.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_ROOT = "/var/lib/fleet-lab"
MIRROR_IN_HOST = "/srv/fleet-lab-mirror"


def lab_root(root: str | Path | None = None) -> Path:
    if root is not None:
        return Path(root)
    return Path(os.environ.get("FLEET_LAB_ROOT") or DEFAULT_ROOT)


def lab_key(root: str | Path | None = None) -> Path:
    return lab_root(root) / "id_ed25519"


def lab_known_hosts(root: str | Path | None = None) -> Path:
    return lab_root(root) / "known_hosts"


def lab_keyring_pins(root: str | Path | None = None) -> Path:
    return lab_root(root) / "keyring.sha256"


def hosts_dir(root: str | Path | None = None) -> Path:
    return lab_root(root) / "hosts"


def host_dir(name: str, root: str | Path | None = None) -> Path:
    return hosts_dir(root) / name


def mirror_cache(root: str | Path | None = None) -> Path:
    return lab_root(root) / "mirror"
