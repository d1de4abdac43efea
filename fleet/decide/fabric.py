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
- The NVSwitch generation (issue 48 item 4), from the GPUs' name (NVSWITCH_GEN): on the fourth (HGX B200/B300) the
  fabric manager does not start without the NVLink Subnet Manager and the ib_umad kernel module (Fabric Manager User
  Guide, "What is NVLink Subnet Manager?": fourth-generation NVSwitches are InfiniBand-managed devices, configured by
  NVLSM through the IB management datagram interface, /dev/infiniband/umad*, which ib_umad provides; NVLSM ships as
  the `nvlsm` package in the same CUDA repository and the fabric manager's service starts it). So gen 4 adds the
  `nvlsm` package (not pinned to the driver: its own release line) and ib_umad, loaded now and at every boot
  (/etc/modules-load.d). A GB200 NVL72 compute tray runs neither: its NVSwitches sit in the NVLink switch trays,
  whose NVOS runs NVLSM and the fabric manager (NVIDIA Multi-Node NVLink user guide), and the tray sees no NVSwitch.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SERVICE = "nvidia-fabricmanager"
NVLSM = "nvlsm"
GEN4_MODULES = ["ib_umad"]
# GPU name -> the NVSwitch generation of its HGX/DGX baseboard (Fabric Manager User Guide, "NVSwitch-Based Systems":
# DGX-2/HGX-2 V100 the first, DGX/HGX A100 the second, DGX/HGX H100 (and H200, H800, H20 boards) the third,
# DGX/HGX B200 and B300 the fourth). First match wins.
NVSWITCH_GEN = (("B300", 4), ("B200", 4), ("H200", 3), ("H100", 3), ("H800", 3), ("H20", 3), ("A100", 2),
                ("A800", 2), ("V100", 1))


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
    generation: int | None = None      # the NVSwitch generation (NVSWITCH_GEN), where fleet manages the fabric
    nvlsm: bool = False                # gen 4: the NVLink Subnet Manager's package (NVLSM) goes with it
    modules: list[str] = field(default_factory=list)   # gen 4: ["ib_umad"], loaded now and at every boot


def packages_for(version: str) -> list[str]:
    branch = version.split(".")[0]
    return [f"nvidia-fabricmanager-{branch}={version}-1", f"libnvidia-nscq-{branch}={version}-1"]


def generation(facts: dict) -> int | None:
    """The NVSwitch generation the GPUs' name says (NVSWITCH_GEN), None where no row matches."""
    names = " ".join(g.get("name") or "" for g in facts.get("gpus") or [])
    return next((gen for match, gen in NVSWITCH_GEN if match in names), None)


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
    gen = generation(facts)
    gen4 = {"generation": gen, "nvlsm": gen == 4, "modules": list(GEN4_MODULES) if gen == 4 else []}
    need = (f"; NVSwitch generation 4: the NVLink Subnet Manager ({NVLSM}) and {', '.join(GEN4_MODULES)} with it"
            if gen == 4 else "")
    installed = set(fabric.get("packages") or {})
    if have == version and running and set(names) <= installed and set(names) <= held \
            and (gen != 4 or NVLSM in installed):
        return FabricDecision("present", f"fabric manager {version} running and held, as the driver{need}", count,
                              branch, version, packages_for(version), SERVICE, warn=_off_fabric(not_ready), **gen4)
    if gen == 4 and have == version and running and NVLSM not in installed:
        why = (f"fabric manager {version} running but no NVLink Subnet Manager ({NVLSM}): a fourth-generation "
               "NVSwitch board needs it")
        return FabricDecision("install", why, count, branch, version, packages_for(version), SERVICE, **gen4)
    if have and have != version:
        why = f"fabric manager {have} is not the driver's {version} (it must match exactly, or CUDA answers 802)"
    elif not have:
        why = f"NVSwitch host without a fabric manager: install {branch} at the driver's {version} (else CUDA answers 802)"
    elif not running:
        why = f"fabric manager {version} installed but {SERVICE} is not running: enable and start it"
    else:
        why = f"fabric manager {version} running but not held: hold it with the driver"
    # GPUs not on the fabric while the fabric manager is wrong: the install is the fix, not a second finding
    return FabricDecision("install", why + need, count, branch, version, packages_for(version), SERVICE, **gen4)


def _off_fabric(not_ready: str | None) -> str | None:
    return (f"GPU(s) off the fabric ({not_ready}): their NVLink peers are lost and collectives fall back to PCIe"
            if not_ready else None)
