"""The `fabric` decision (issue 28): what a multi-GPU host needs for the links between its GPUs. Pure.

- A host that manages its own NVSwitch fabric (NVSwitch devices seen, not a container: HGX/DGX bare metal or a VM
  given the whole baseboard) needs NVIDIA Fabric Manager and NSCQ at exactly the driver's version: FM aborts on any
  other, and until it has set the fabric up CUDA initialisation fails with cudaErrorSystemNotReady (802) (NVIDIA
  Fabric Manager User Guide, docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide). Packages per driver branch
  from NVIDIA's CUDA apt repository, named as NVIDIA's packaging builds them (github.com/NVIDIA/apt-packaging-fabric-
  manager: nvidia-fabricmanager-<branch>_<version>-1), held with the driver; the service is nvidia-fabricmanager.
- A container (a rented pod) sees the fabric's result only: the fabric manager runs on the provider's host. A fabric
  not ready there is a warning naming the state and that the fix is the provider's; fleet installs nothing.
- No NVSwitch (one GPU, PCIe cards, NVLink bridges between pairs): nothing to run; the role is skipped.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SERVICE = "nvidia-fabricmanager"


@dataclass
class FabricDecision:
    action: str                        # "none" | "install" | "present" | "provider"
    reason: str
    gpus: int = 0
    branch: str | None = None          # "570"
    version: str | None = None         # the driver's, which FM must equal: "570.172.08"
    packages: list[str] = field(default_factory=list)   # ["nvidia-fabricmanager-570=570.172.08-1", ...]
    service: str | None = None         # "nvidia-fabricmanager" where fleet runs it
    warn: str | None = None            # the provider's fix, or a GPU off the fabric
    refuse: str | None = None


def packages_for(version: str) -> list[str]:
    branch = version.split(".")[0]
    return [f"nvidia-fabricmanager-{branch}={version}-1", f"libnvidia-nscq-{branch}={version}-1"]


def _not_ready(fabric: dict) -> str | None:
    groups: dict[str, list[str]] = {}
    for i, g in enumerate(fabric.get("fabric") or []):
        if g.get("ready") is False:
            state = g.get("state") or "?"
            state += f" ({g['status']})" if g.get("status") and g["status"].lower() not in ("success", "n/a") else ""
            groups.setdefault(state, []).append(str(i))
    return "; ".join(f"GPU{'s' if len(ids) > 1 else ''} {','.join(ids)} fabric state {state}"
                     for state, ids in groups.items()) or None


def decide_fabric(facts: dict) -> FabricDecision:
    fabric = facts.get("fabric") or {}
    count = int(fabric.get("gpu_count") or len(facts.get("gpus") or []))
    not_ready = _not_ready(fabric)
    if fabric.get("container"):
        if not_ready:
            warn = (f"the GPU fabric is not ready ({not_ready}): in a container the fabric manager runs on the "
                    "provider's host, so the fix is the provider's (restart the pod on a healthy host or ask them)")
            return FabricDecision("provider", warn, count, warn=warn)
        return FabricDecision("none", f"a container with {count} GPU(s): the provider runs any fabric manager", count)
    if not fabric.get("manages_fabric"):
        why = ("no GPU: no links to check" if count == 0 else "one GPU: no links to check" if count == 1
               else f"{count} GPUs without NVSwitch: no fabric manager needed")
        return FabricDecision("none", why, count)
    version = fabric.get("driver_version") or (facts.get("driver") or {}).get("version")
    if not version:
        return FabricDecision("none", "NVSwitch seen but no driver loaded: the driver comes first", count,
                              refuse="an NVSwitch host without a loaded NVIDIA driver: install the driver first")
    branch = version.split(".")[0]
    have = fabric.get("fm_version")
    running = fabric.get("fm_running")
    held = set(fabric.get("held") or [])
    names = [p.split("=")[0] for p in packages_for(version)]
    if have == version and running and set(names) <= set((fabric.get("packages") or {})) and set(names) <= held:
        return FabricDecision("present", f"fabric manager {version} running and held, as the driver", count, branch,
                              version, packages_for(version), SERVICE, warn=_off_fabric(not_ready))
    if have and have != version:
        why = f"fabric manager {have} is not the driver's {version} (it must match exactly, or CUDA answers 802)"
    elif not have:
        why = f"NVSwitch host without a fabric manager: install {branch} at the driver's {version} (else CUDA answers 802)"
    elif not running:
        why = f"fabric manager {version} installed but {SERVICE} is not running: enable and start it"
    else:
        why = f"fabric manager {version} running but not held: hold it with the driver"
    # GPUs not on the fabric while the fabric manager is wrong: the install is the fix, not a second finding
    return FabricDecision("install", why, count, branch, version, packages_for(version), SERVICE)


def _off_fabric(not_ready: str | None) -> str | None:
    return (f"GPU(s) off the fabric ({not_ready}): their NVLink peers are lost and collectives fall back to PCIe"
            if not_ready else None)
