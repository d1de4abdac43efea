"""Where the big, lasting things go (venv, pip's cache, pip's temporary files), read from the host's mounts.

A RunPod pod's container disk is small and "lost on stop/restart"; its volume disk is mounted at /workspace
and "retained until Pod deleted" (docs.runpod.io/pods/storage/types). So where /workspace is its own
mount, the venv, pip's cache and pip's TMPDIR go there unless the user set them, and only where the probe found
each of those paths safe to run as root (facts.paths, fleet/facts/paths.py: a 1777 /workspace is not: any user
could plant the venv fleet then runs as root), and only where /workspace is the pod's OWN volume: a network
volume (RunPod's network storage replaces the volume disk at /workspace and other pods of the account attach it;
an NFS, CIFS, CephFS, MooseFS or FUSE mount anywhere) is a disk other machines write, where root's venv would run
what any of them put there (issue 49: a .pth written there ran as root during `fleet verify`). Its owner and mode,
asked from this pod, say nothing of the other machines: the venv stays on the container disk unless the user sets
python_env there knowing that (docs/decisions/volume.md). Pure: facts + vars in.

    placement(facts, vars) -> {name: value}   the variables to add (never one the user set)
    host_vars(facts, vars) -> vars with them
"""
from __future__ import annotations

from fleet.knowledge.storage import ON_VOLUME, WORKSPACE


def workspace_volume(facts: dict | None) -> bool:
    """True when the probe's df of /workspace names /workspace itself as the mount point."""
    system = (facts or {}).get("system") if isinstance(facts, dict) else None
    disks = system.get("disks") if isinstance(system, dict) else None   # a damaged record: no volume known
    return isinstance(disks, list) and any(isinstance(d, dict) and d.get("path") == WORKSPACE
                                           and d.get("mount") == WORKSPACE for d in disks)


# What a network filesystem's source looks like in df: host:/export (NFS), mon:6789:/ (CephFS), mfs#master:9421
# (MooseFS, as RunPod's network volumes mount), //server/share (CIFS); and the FUSE network filesystems' names.
_NETWORK_FS = ("sshfs", "s3fs", "gcsfuse", "juicefs", "rclone", "goofys", "blobfuse", "mountpoint-s3", "nfs",
               "glusterfs", "lustre", "beegfs", "wekafs", "cephfs", "ceph-fuse", "moosefs", "9p", "virtiofs")


def network_source(source: str) -> bool:
    """Whether a df filesystem source names another machine's disk (NFS, CephFS, CIFS, MooseFS, FUSE remotes)."""
    lowered = source.lower()
    return (":" in source or "#" in source or source.startswith("//")
            or any(lowered == name.rstrip(".") or lowered.startswith(name) for name in _NETWORK_FS))


def workspace_shared(facts: dict | None) -> str | None:
    """Why /workspace is a disk other machines can write (its df source), or None for the pod's own volume."""
    system = (facts or {}).get("system") if isinstance(facts, dict) else None
    disks = system.get("disks") if isinstance(system, dict) else None
    for disk in disks if isinstance(disks, list) else []:
        if isinstance(disk, dict) and disk.get("path") == WORKSPACE and disk.get("mount") == WORKSPACE:
            source = str(disk.get("filesystem") or "")
            if network_source(source):
                return f"{WORKSPACE} is a network volume ({source}): other machines write it"
    return None


def volume_trusted(facts: dict | None) -> bool:
    """True when the probe found every path the volume would hold owned by root (or the user), writable by no other."""
    found = facts.get("paths") if isinstance(facts, dict) else None
    return isinstance(found, dict) and all(path in found and found[path] is None for path in ON_VOLUME.values())


def placement(facts: dict | None, vars: dict) -> dict:
    if not workspace_volume(facts) or not volume_trusted(facts) or workspace_shared(facts):
        return {}
    return {name: value for name, value in ON_VOLUME.items() if vars.get(name) in (None, "")}


def host_vars(facts: dict | None, vars: dict) -> dict:
    extra = placement(facts, vars)
    return {**vars, **extra} if extra else vars
