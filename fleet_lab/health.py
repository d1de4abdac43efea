"""GPU health in the lab (issue 36): pods broken the way real ones come, staged in what the stand-ins read.

- The stand-in nvidia-smi (native/nvidia_smi.c) answers every health field fleet asks, in driver 580's formats (the
  lent H200's capture): query fields (gpu_recovery_action among them, as the H200's 580 answers it; refused, and
  left out of -q -x, on a driver before 550), `--query-remapped-rows`, `-q -x`'s recovery action and PCIe replays.
  A healthy H100 at rest unless /proc/driver/nvidia/fleet-lab-gpu says otherwise: `health.<gpu>.<key>=value`
  (or `health.<key>=` for every GPU), the last line naming a key winning.
- A stand-in dmesg (DMESG_SCRIPT) answers the host's kernel log from the same file's `kmsg=` lines (the driver's
  load lines, any Xid staged); `kernel_log=closed` makes it fail as util-linux's does where kernel.dmesg_restrict=1
  and the user lacks CAP_SYSLOG (an unprivileged container): "dmesg: read kernel buffer failed: Operation not
  permitted", exit 1. These hosts have a /dev of their own without kmsg (Docker's default /dev has none), and no
  journal: a closed log is closed every way the probe asks.
- FAULTS: each fault as lines of that file, on GPU 1 of a two-GPU pod (so a verdict must name the GPU). A profile
  stages one at boot (profiles.py `fault`); `stage()` rewrites the file of a running host (bound read-only into it,
  read afresh by every call), so tests switch faults without a restart.

What the lab cannot stand for: a real GPU's counters moving (a count that rises between two reads), the link's
generation dropping at idle and rising under load, bandwidth (no GPU memory here), NVML's own latency.
"""

from __future__ import annotations

from pathlib import Path

from . import fabric, layers
from .paths import host_dir

GPU_FILE = "proc-driver/nvidia/fleet-lab-gpu"   # under the host's directory; the host sees /proc/driver/nvidia/...
STAGED = "# staged\n"                           # what follows it is the fault (stage() replaces it)
FAULT_GPU = 1

DMESG_SCRIPT = """#!/bin/sh
# fleet lab stand-in for dmesg(1): NOT util-linux's. This lab host's kernel ring buffer: the kmsg= lines of
# /proc/driver/nvidia/fleet-lab-gpu (fleet_lab/health.py). kernel_log=closed: util-linux's answer under
# kernel.dmesg_restrict=1 without CAP_SYSLOG.
g=/proc/driver/nvidia/fleet-lab-gpu
if [ "$(sed -n 's/^kernel_log=//p' "$g" | tail -n 1)" = closed ]; then
  echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1
fi
printf '[    0.000000] Linux version %s (fleet lab stand-in kernel log)\\n' "$(uname -r)"
sed -n 's/^kmsg=//p' "$g"
"""


def kernel_bus(bus: str) -> str:
    """nvidia-smi's "00000000:2A:00.0" as the driver's kernel messages write it: "0000:2a:00"."""
    return bus.lower()[4:].rsplit(".", 1)[0]


def _xid(g: int, code: int, text: str, at: str = "812.518463") -> str:
    return f"kmsg=[  {at}] NVRM: Xid (PCI:{kernel_bus(fabric.BUS_IDS[g])}): {code}, {text}"


# fault -> the lines staging it on GPU g. The first seven are the issue's; the rest are the same families' cases
# it does not name. Each value is what the real driver prints for it (nvidia-smi's fields, NVIDIA's Xid text).
FAULTS = {
    "healthy": lambda g: [],
    "link-down": lambda g: [f"health.{g}.pcie_width=8"],                       # trained to x8 of x16
    "remap-pending": lambda g: [f"health.{g}.remap_pending=Yes", f"health.{g}.remap_unc=1"],
    "ecc-uncorrectable": lambda g: [f"health.{g}.ecc_unc_vol=2", f"health.{g}.ecc_unc_agg=2"],
    "xid79": lambda g: [f"health.{g}.lost=1",
                        _xid(g, 79, "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                        f"kmsg=[  812.518470] NVRM: GPU {kernel_bus(fabric.BUS_IDS[g])}.0: GPU has fallen off the bus."],
    "power-cap": lambda g: [f"health.{g}.power_limit=400.00"],                 # of 700.00 W default
    "log-closed": lambda g: ["kernel_log=closed"],
    # not named by the issue, same families
    "remap-failure": lambda g: [f"health.{g}.remap_failure=Yes", f"health.{g}.remap_unc=512"],
    "recovery-reset": lambda g: [f"health.{g}.recovery=Reset"],
    "retired-pending": lambda g: ["name=Tesla V100-SXM2-32GB", "compute_cap=7.0", "health.remapper=no",
                                  f"health.{g}.retired_pending=Yes"],          # an older GPU retires pages
    "thermal": lambda g: [f"health.{g}.events=0x40", f"health.{g}.temp=94"],    # HW thermal slowdown
    "xid95": lambda g: [_xid(g, 95, "pid=4411, name=python3, Uncontained: FBHUB. RST: Yes, D-RST: No")],
    "width-gen": lambda g: [f"health.{g}.pcie_gen=3", f"health.{g}.pcie_width=4"],
    # issue 48: ECC and remapping as operators grade them (fleet/knowledge/gpu_faults.py), Xid with its action
    "sram-uncorrectable": lambda g: [f"health.{g}.volatile.sram_uncorrectable_secded=1",
                                     f"health.{g}.aggregate.sram_uncorrectable_secded=1",
                                     f"health.{g}.ecc_unc_vol=1", f"health.{g}.ecc_unc_agg=1"],
    "sram-threshold": lambda g: [f"health.{g}.aggregate.sram_uncorrectable_parity=3",
                                 f"health.{g}.aggregate.sram_threshold_exceeded=Yes", f"health.{g}.ecc_unc_agg=3"],
    "remap-over-512": lambda g: [f"health.{g}.remap_unc=513", f"health.{g}.aggregate.dram_uncorrectable=513",
                                 f"health.{g}.ecc_unc_agg=513"],
    "dram-history": lambda g: [f"health.{g}.remap_unc=3", f"health.{g}.aggregate.dram_uncorrectable=3",
                               f"health.{g}.ecc_unc_agg=3"],
    # the kernel's order on a GPU that fell over: the fault, then Xid 154 with the driver's recovery action
    "xid154-reboot": lambda g: [_xid(g, 119, "pid=2211, name=python3, Timeout after 6s of waiting for RPC response "
                                "from GPU0 GSP!"),
                                _xid(g, 154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
                                "Required)", "812.601200")],
    "xid13": lambda g: [_xid(g, 13, "pid=4411, name=python3, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): "
                        "Out Of Range Address")],
}


def fault_lines(fault: str | None) -> list[str]:
    return FAULTS[fault or "healthy"](FAULT_GPU)


def gpu_lines(spec) -> str:
    """The health part of the host's GPU file: the kernel log's boot lines, then the profile's fault."""
    if not spec.prof.kernel_log:
        return ""
    boot = [f"kmsg=[    4.512345] nvidia: loading out-of-tree module taints kernel.",
            f"kmsg=[    4.601234] NVRM: loading NVIDIA UNIX Open Kernel Module for {spec.prof.machine}  {spec.driver}  "
            "Release Build  (fleet-lab@stand-in)"]
    return "\n".join(boot) + "\n" + STAGED + "".join(line + "\n" for line in fault_lines(spec.prof.fault))


def stage(root: Path, name: str, fault: str) -> None:
    """Stage `fault` on a running lab host (what its nvidia-smi and dmesg answer from their next call on)."""
    path = host_dir(name, root) / GPU_FILE
    base = path.read_text().split(STAGED, 1)[0]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(base + STAGED + "".join(line + "\n" for line in fault_lines(fault)))
    tmp.replace(path)


def to_layer(layer: Path, profile) -> None:
    """The stand-in dmesg, and no journal (a container image's), on the hosts with the lab's own kernel log."""
    if not profile.kernel_log:
        return
    layers.put(layer, "/usr/bin/dmesg", DMESG_SCRIPT, 0o755)
    if Path("/usr/bin/journalctl").exists():
        layers.whiteout(layer, "/usr/bin/journalctl")
