"""A non-root login user with passwordless sudo (as DGX Sparks are used), written into a host layer."""

from __future__ import annotations

import os
from pathlib import Path

from . import layers

FILES = Path(__file__).parent / "files"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def free_uid(passwd: str, start: int = 1000) -> int:
    used = {int(line.split(":")[2]) for line in passwd.splitlines() if line.count(":") >= 6}
    uid = start
    while uid in used:
        uid += 1
    return uid


def add_sudo_user(layer: Path, user: str, pubkey: str) -> None:
    passwd = _read("/etc/passwd")
    existing = next((line for line in passwd.splitlines() if line.startswith(user + ":")), None)
    if existing:
        uid, gid = int(existing.split(":")[2]), int(existing.split(":")[3])
    else:
        uid = gid = free_uid(passwd)
        layers.put(layer, "/etc/passwd", passwd + f"{user}:x:{uid}:{gid}:{user}:/home/{user}:/bin/bash\n")
        layers.put(layer, "/etc/shadow", _read("/etc/shadow") + f"{user}:*:20000:0:99999:7:::\n", 0o640,
                   gid=_group_id("shadow"))
        groups = _with_member(_read("/etc/group"), "sudo", user) + f"{user}:x:{gid}:\n"
        layers.put(layer, "/etc/group", groups)
        layers.put(layer, "/etc/gshadow", _read("/etc/gshadow") + f"{user}:!::\n", 0o640, gid=_group_id("shadow"))
    layers.put(layer, "/etc/sudoers.d/90-fleet-lab", f"# fleet lab: {user} uses sudo without a password\n"
                                                     f"{user} ALL=(ALL:ALL) NOPASSWD:ALL\n", 0o440)
    home = f"/home/{user}"
    layers.put(layer, f"{home}/.bashrc", (FILES / "bashrc").read_text(), 0o644, uid, gid)
    layers.put(layer, f"{home}/.profile", (FILES / "profile").read_text(), 0o644, uid, gid)
    layers.put(layer, f"{home}/.ssh/authorized_keys", pubkey, 0o600, uid, gid)
    for sub, mode in ((".ssh", 0o700), ("", 0o750)):
        path = layer / home.lstrip("/") / sub if sub else layer / home.lstrip("/")
        os.chown(path, uid, gid)
        os.chmod(path, mode)


def _with_member(group_file: str, group: str, user: str) -> str:
    out = []
    for line in group_file.splitlines():
        fields = line.split(":")
        if len(fields) == 4 and fields[0] == group:
            members = [m for m in fields[3].split(",") if m]
            fields[3] = ",".join(members + [user])
            line = ":".join(fields)
        out.append(line)
    return "\n".join(out) + "\n"


def _group_id(name: str) -> int:
    for line in _read("/etc/group").splitlines():
        fields = line.split(":")
        if fields[0] == name:
            return int(fields[2])
    return 0
