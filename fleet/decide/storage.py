"""Where the big, lasting things go (venv, pip's cache, pip's temporary files), read from the host's mounts.

A RunPod pod's container disk is small and "lost on stop/restart"; its volume disk is mounted at /workspace
and "retained until Pod deleted" (docs.runpod.io/pods/storage/types). So where /workspace is its own
mount, the venv, pip's cache and pip's TMPDIR go there unless the user set them, and only where the probe found
each of those paths safe to run as root (facts.paths, fleet/facts/paths.py: a 1777 /workspace is not: any user
could plant the venv fleet then runs as root). Pure: facts + vars in.

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


def volume_trusted(facts: dict | None) -> bool:
    """True when the probe found every path the volume would hold owned by root (or the user), writable by no other."""
    found = facts.get("paths") if isinstance(facts, dict) else None
    return isinstance(found, dict) and all(path in found and found[path] is None for path in ON_VOLUME.values())


def placement(facts: dict | None, vars: dict) -> dict:
    if not workspace_volume(facts) or not volume_trusted(facts):
        return {}
    return {name: value for name, value in ON_VOLUME.items() if vars.get(name) in (None, "")}


def host_vars(facts: dict | None, vars: dict) -> dict:
    extra = placement(facts, vars)
    return {**vars, **extra} if extra else vars
