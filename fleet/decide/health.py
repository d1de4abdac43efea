"""The GPU health verdict per host (issue 36): healthy, degraded, or "return this pod". Pure: facts.health in, a
verdict out (fleet/facts/health.py observes; this module judges, once, beside the rule each judgement follows).

The classes are NVIDIA's own:
- "return": a fault the renter cannot fix and the provider must. A row-remap FAILURE (GPU Memory Error
  Management guide, "Row Remapping": the RMA policy's case); a GPU missing from what was ordered, or seen by the
  kernel driver and lost to NVML / off the bus (Xid 79: "GPU has fallen off the bus", catalog action: reset the GPU
  or reboot the node); a recovery action of Reset, Reboot or Drain and Reset (nvmlDeviceGetGpuRecoveryAction: what
  the driver asks for before the GPU can be trusted again; on a rented pod only the provider can reset or reboot);
  the Xid codes whose catalog resolution a renter cannot take (a GPU reset, a node reboot, a repair); Xid 154's
  recovery action as the kernel line states it; ECC and row remapping as Azure grades them (issue 48: any SRAM
  uncorrectable error or the SRAM threshold exceeded, SRAM correctable above 10,000, DRAM above 20,000,000, more than
  512 rows remapped for uncorrectable errors). Every table and threshold: fleet/knowledge/gpu_faults.py, with sources.
- "degraded": the GPU works but less than it should, with NVIDIA's action: a row remap PENDING (applied at the next
  GPU reset; work can go on meanwhile), uncorrectable ECC errors since the driver loaded, ECC off, pages waiting to
  retire (pre-A100: Dynamic Page Retirement guide, "reload the driver"), a PCIe link narrower than its maximum (or
  slower, read under load), a power limit below the default, hardware or thermal clock slowdowns, Xid 94 (restart
  the job, reset the GPU when convenient), a recovery action of Drain P2P.
- the pod's own resources (issue 45, _resource_findings): a /dev/shm under NCCL's --shm-size=1g is "degraded" (DataLoader
  workers and NCCL's shared-memory transport fail); memlock, open files and the memory limit are notes.
- "note": shown, no change to the verdict (lifetime ECC history, PCIe replays, persistence mode off, a kernel log
  that cannot be read: Xid events "unreadable", never "clean"; the Xids whose catalog action is an application
  restart or none).
Each finding from a catalog or a threshold also says what the renter does (Finding.renter, gpu_faults.RENTER):
restart the job, watch, ask the provider for a GPU reset, ask for a reboot, or return the pod.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.knowledge import gpu_faults as faults
from fleet.remote import families
from fleet.decide.model import as_dict

RETURN, DEGRADED, NOTE = "return", "degraded", "note"
_ORDER = {RETURN: 0, DEGRADED: 1, NOTE: 2}

# The Xid catalog and the ECC thresholds, with their sources: fleet/knowledge/gpu_faults.py
XID_CATALOG = faults.XID_CATALOG
# nvmlGpuRecoveryAction_t as nvidia-smi prints it
RECOVERY = {"none": None, "reset": RETURN, "reboot": RETURN, "drain and reset": RETURN, "drain p2p": DEGRADED}
# clock-event reasons that mean hardware holds the clocks down (nvmlClocksEventReasons: HwSlowdown "HW slowdown
# ... to protect the GPU: temperature, power brake or the board's own signal", the thermal ones)
SLOWDOWNS = {"hw_slowdown": "hardware slowdown (thermal or power brake signal)",
             "hw_thermal_slowdown": "hardware thermal slowdown (the GPU too hot)",
             "hw_power_brake_slowdown": "power brake slowdown (the board's power supply asked for it)",
             "sw_thermal_slowdown": "software thermal slowdown (above the GPU's max operating temperature)"}
PROVIDER_WAY_OUT = ("return it: terminate the pod and rent another (report the GPU's UUID and the fault to the "
                    "provider so it leaves the pool; most providers do not bill a pod reported at once)")


# Keep or return, for each verdict, in a renter's terms: what the renter can do is keep the pod or hand it back.
ADVICE = {
    "healthy": "keep it: no GPU fault found",
    "degraded": ("keep it if your job can live with this (it runs, slower or less protected); else return it: "
                 "terminate the pod, rent another and report the GPU's UUID and the finding to the provider (a pod "
                 "cannot fix it)"),
    "return": PROVIDER_WAY_OUT,
    "unknown": ("keep it only for work `fleet verify` proves (it runs CUDA on each GPU): its health cannot be read "
                "here; return it if verify fails"),
    "none": "no NVIDIA GPU: keep it only for work without one",
}
# degraded by the pod's own resources alone (its GPUs sound): what is wrong is how the pod was started
POD_ADVICE = ("keep it if your job needs neither DataLoader workers nor NCCL across processes; else start it again "
              "with the larger setting named (or fix it in place where the line says how): the GPUs are sound")


@dataclass
class Finding:
    severity: str                   # "return" | "degraded" | "note"
    gpu: int | None                 # the GPU's index, None for the host
    field: str                      # the fact's field, as nvidia-smi names it ("remapped_rows.pending", "xid 79")
    value: str                      # what the host reported
    meaning: str
    action: str                     # NVIDIA's action (who can take it)
    uuid: str | None = None         # the GPU's UUID and PCI bus id: what a provider asks for in a report
    bus: str | None = None
    renter: str | None = None       # what the renter does (gpu_faults.RENTER's words): restart, reset, reboot, return

    def line(self) -> str:
        ids = ", ".join(x for x in (self.uuid, f"bus {self.bus}" if self.bus else None) if x)
        where = (f"GPU {self.gpu}" + (f" ({ids})" if ids else "")) if self.gpu is not None else "host"
        you = f"; you: {self.renter}" if self.renter else ""
        return f"{where}: {self.field}={self.value}: {self.meaning}; {self.action}{you}"


@dataclass
class HealthVerdict:
    verdict: str                    # "healthy" | "degraded" | "return" | "unknown" | "none" (no GPU, none expected)
    reason: str
    gpus: int = 0
    expected: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    way_out: str | None = None      # for "return": the provider's usual way out
    advice: str = ""                # every verdict: keep the pod or return it, in a renter's terms (ADVICE)

    def __post_init__(self):
        self.advice = self.advice or ADVICE.get(self.verdict, "")

    def to_json(self) -> dict:
        return as_dict(self)

    def summary(self) -> dict:
        """What a facts record keeps of the verdict (its class and one line; the findings are in decisions)."""
        return {"verdict": self.verdict, "reason": self.reason, "advice": self.advice}


class ExpectError(ValueError):
    """expect_gpus cannot be read; the message says how to write it."""


def parse_expect(text: str | int | None) -> dict:
    """The inventory's `expect_gpus` as fleet.parse.gpus reads it ("8x H200" -> {"count": 8, "model": "H200"})."""
    from fleet import parse

    try:
        return parse.gpus(text)
    except parse.Rejected as exc:
        raise ExpectError(f"expect_gpus={exc}") from None


def _gpu_findings(g: dict, under_load: bool) -> list[Finding]:
    i, out = g.get("index"), []

    def add(severity, field_, value, meaning, action, renter=None):
        out.append(Finding(severity, i, field_, str(value), meaning, action, g.get("uuid"), g.get("bus"), renter))

    remap = g.get("remapped") or {}
    if remap.get("failure"):
        add(RETURN, "remapped_rows.failure", "Yes", "a row remap failed: the memory cannot be repaired in place",
            "NVIDIA's RMA policy: the provider replaces the GPU")
    if remap.get("pending"):
        add(DEGRADED, "remapped_rows.pending", "Yes", "a row remap waits for the next GPU reset (work goes on meanwhile)",
            "reset the GPU at the next chance: the provider's (nvidia-smi -r, or a reboot of the host)")
    unc = remap.get("uncorrectable") or 0
    if unc > faults.REMAP_UNCORRECTABLE_MAX and not remap.get("failure"):
        add(RETURN, "remapped_rows.uncorrectable", unc, f"more than {faults.REMAP_UNCORRECTABLE_MAX} rows remapped for "
            "uncorrectable errors: the memory is wearing out", f"{faults.ECC_SOURCE}: the node fails",
            renter=faults.RENTER["return"])
    elif unc > 0 and not remap.get("failure"):
        add(NOTE, "remapped_rows.uncorrectable", unc, "rows remapped for uncorrectable errors",
            "history: the rows are replaced; a failure or a pending remap would be a finding",
            renter=faults.RENTER["watch"])
    action = (g.get("recovery_action") or "")
    severity = RECOVERY.get(action.lower()) if action else None
    if severity:
        add(severity, "gpu_recovery_action", action, "the driver asks for this before the GPU is trusted again",
            "the provider's: a GPU reset or a reboot of the host" if severity == RETURN
            else "the provider's: a GPU reset (peer-to-peer traffic to this GPU stopped meanwhile)")
    ecc = g.get("ecc") or {}
    if (ecc.get("uncorrected_volatile") or 0) > 0:
        add(DEGRADED, "ecc.errors.uncorrected.volatile.total", ecc["uncorrected_volatile"],
            "uncorrectable memory errors since the driver loaded (the work that met them was killed)",
            "NVIDIA: check remapped rows and Xid 48/94/95; reset the GPU to clear the pending remap")
    elif (ecc.get("uncorrected_aggregate") or 0) > 0:
        add(NOTE, "ecc.errors.uncorrected.aggregate.total", ecc["uncorrected_aggregate"],
            "uncorrectable memory errors in the GPU's lifetime", "history: none since the driver loaded")
    if ecc.get("mode") is False:
        add(DEGRADED, "ecc.mode.current", "Disabled", "ECC is off: memory errors are neither corrected nor counted",
            "the provider's (ECC is switched on with the host's root and a GPU reset, not from a pod)")
    if g.get("retired_pending"):
        add(DEGRADED, "retired_pages.pending", "Yes", "memory pages wait to be retired (Dynamic Page Retirement)",
            "reload the driver or reboot the host (the provider's) to retire them")
    pcie = g.get("pcie") or {}
    if pcie.get("width") and pcie.get("width_max") and pcie["width"] < pcie["width_max"]:
        add(DEGRADED, "pcie.link.width.current", f"x{pcie['width']} of x{pcie['width_max']}",
            "the PCIe link trained narrower than it can: host transfers are slower",
            "the provider's: reseat the GPU or its riser, or move the pod")
    if pcie.get("gen") and pcie.get("gen_max") and pcie["gen"] < pcie["gen_max"]:
        if under_load:
            add(DEGRADED, "pcie.link.gen.current", f"Gen{pcie['gen']} of Gen{pcie['gen_max']} under load",
                "the PCIe link runs slower than it can while the GPU works", "the provider's: check the slot and BIOS")
        else:
            add(NOTE, "pcie.link.gen.current", f"Gen{pcie['gen']} of Gen{pcie['gen_max']} at rest",
                "an idle link drops its generation to save power", "judged under load (fleet verify)")
    if (g.get("pcie_replay") or 0) > 0:
        add(NOTE, "pcie.replay_counter", g["pcie_replay"], "PCIe packets the link had to resend",
            "a count that keeps rising is a bad link or riser: the provider's")
    power = g.get("power") or {}
    if power.get("limit") and power.get("default") and power["limit"] < power["default"] - 0.5:
        add(DEGRADED, "enforced.power.limit", f"{power['limit']:g} W of {power['default']:g} W default",
            "the GPU is power capped below its default: clocks drop under load",
            "the provider's: a pod cannot raise its power limit (the host's root sets it)")
    for reason in g.get("clock_events") or []:
        if reason in SLOWDOWNS:
            add(DEGRADED, f"clocks_event_reasons.{reason}", "Active", SLOWDOWNS[reason],
                "check cooling and power: the provider's")
        elif reason == "sw_power_cap" and not under_load:
            add(NOTE, "clocks_event_reasons.sw_power_cap", "Active", "clocks held at the power limit",
                "expected under full load; at rest it points at a low power limit")
    out += _ecc_split_findings(g.get("ecc_split") or {}, add)
    for code in g.get("xid") or []:
        out.append(_xid_finding(i, code))
    change = g.get("xid_recovery") or {}
    asked = faults.RECOVERY_CODES.get(change.get("to"))
    if asked and asked != "none":
        add(faults.RECOVERY_SEVERITY[asked], "xid 154", f"{change.get('to_text') or asked} (0x{change['to']:x})",
            "the driver's recovery action after an earlier Xid (the kernel log since boot)",
            "NVIDIA Xid catalog: follow Xid 154's action (the provider's)",
            renter=faults.RENTER[faults.RECOVERY_RENTER[asked]])
    if g.get("persistence") is False:
        add(NOTE, "persistence_mode", "Disabled", "the driver unloads between jobs (start-up costs each time)",
            "the host's root sets it (nvidia-smi -pm 1), not a pod: jobs start a little slower, nothing else")
    return out


# What a job takes from the pod besides its GPUs (issue 45; facts.system.resources, fleet/remote/pod_resources.sh).
# NCCL's user guide (Troubleshooting, "Shared memory"): NCCL creates its segments in /dev/shm and "will fail to
# initialize" without enough; "Docker containers default to limited shared and pinned memory resources": launch with
# `--shm-size=1g --ulimit memlock=-1`. PyTorch's README (Docker image): DataLoader workers pass batches through shared
# memory and "the default shared memory segment size that container runs with is not enough" (--ipc=host or
# --shm-size). Docker's default --shm-size is 64 MB; captured on the lent H200 (shared/captured/h200-multi): at 64 MB a
# DataLoader with two workers fails in every kind of shell.
SHM_FLOOR_MB = 1024        # NCCL's guide's --shm-size=1g
# the usual soft default: torch's file_descriptor sharing keeps one open per shared tensor; one threshold for the
# session here and for each kind of shell (fleet/remote/families.py judge_limits)
NOFILE_FLOOR = families.NOFILE_FLOOR


def _resource_findings(resources: dict | None, limits_conf: list | None = None) -> list[Finding]:
    """limits_conf: the shells facts' pam_limits lines, which name where the session's ulimit comes from."""
    if not isinstance(resources, dict):
        return []

    def at(item, value):
        line = families.limits_line(limits_conf, item, value)
        return f" (set at {line})" if line else ""
    out = []
    shm = resources.get("shm")
    if isinstance(shm, dict) and shm.get("size_mb") is not None and shm["size_mb"] < SHM_FLOOR_MB:
        out.append(Finding(DEGRADED, None, "/dev/shm", f"{shm['size_mb']} MB ({shm.get('free_mb')} MB free)",
                           "DataLoader workers and NCCL's shared-memory transport fail (NCCL's guide asks for "
                           "--shm-size=1g; Docker's default is 64 MB)",
                           "start the pod with a larger shared memory (docker --shm-size=1g or --ipc=host; a "
                           "provider's template setting), or as root where the pod allows it: "
                           "mount -o remount,size=1g /dev/shm"))
    memlock = resources.get("memlock_kb")
    if isinstance(memlock, int):
        out.append(Finding(NOTE, None, "ulimit -l", f"{memlock} KB{at('memlock', memlock)}",
                           "locked (pinned) memory is capped: NCCL over RDMA/InfiniBand wants it unlimited (NCCL's "
                           "guide: --ulimit memlock=-1); one host's NVLink and PCIe traffic do not need it",
                           "docker --ulimit memlock=-1, or /etc/security/limits.conf as root"))
    nofile = resources.get("nofile")
    if isinstance(nofile, int) and nofile <= NOFILE_FLOOR:
        out.append(Finding(NOTE, None, "ulimit -n", f"{nofile}{at('nofile', nofile)}",
                           "few open files: DataLoader workers sharing many tensors can hit 'Too many open files'",
                           "ulimit -n 65536 in the job's shell, or torch.multiprocessing.set_sharing_strategy"
                           "('file_system')"))
    if resources.get("memory_limit_mb"):
        out.append(Finding(NOTE, None, "memory limit", f"{resources['memory_limit_mb']} MB",
                           "the container's memory limit (cgroup): host memory a job, its workers and /dev/shm's "
                           "pages share", "size the DataLoader's workers and prefetch under it"))
    return out


def _xid_finding(gpu: int | None, code: int) -> Finding:
    meaning, bucket, renter = faults.XID.get(code, ("an Xid the catalog lists", "see the catalog", "watch"))
    severity = faults.SEVERITY[renter]
    if code == 154:   # its own finding carries the action it names (the xid_recovery finding)
        severity = NOTE
    return Finding(severity, gpu, "xid", str(code), meaning + " (the kernel log since boot)",
                   f"NVIDIA Xid catalog: {bucket}" + (" (the provider's)" if severity == RETURN else ""),
                   renter=faults.RENTER[renter])


def _ecc_split_findings(split: dict, add) -> list[Finding]:
    """SRAM and DRAM errors as Azure grades them (gpu_faults: the thresholds and their source); `add` appends to the
    GPU's findings, so this returns nothing of its own."""
    vol, agg = split.get("volatile") or {}, split.get("aggregate") or {}
    if agg.get("sram_threshold_exceeded"):
        add(RETURN, "ecc.sram_threshold_exceeded", "Yes", "SRAM uncorrectable errors passed NVIDIA's RMA threshold",
            "NVIDIA Xid 48 flow: the RMA flow (the provider replaces the GPU)", renter=faults.RENTER["return"])
    for scope, counts in (("volatile", vol), ("aggregate", agg)):
        for kind in ("sram_uncorrectable_parity", "sram_uncorrectable_secded"):
            if (counts.get(kind) or 0) > 0:
                add(RETURN, f"ecc.{scope}.{kind}", counts[kind], "uncorrectable errors in the GPU's SRAM (caches, "
                    "register files): no row remap repairs SRAM", f"{faults.ECC_SOURCE}: any fails the node",
                    renter=faults.RENTER["return"])
        if (counts.get("sram_correctable") or 0) > faults.SRAM_CORRECTABLE_MAX:
            add(RETURN, f"ecc.{scope}.sram_correctable", counts["sram_correctable"],
                f"SRAM correctable errors above {faults.SRAM_CORRECTABLE_MAX:,}", f"{faults.ECC_SOURCE}: the node fails",
                renter=faults.RENTER["return"])
        for kind in ("dram_correctable", "dram_uncorrectable"):
            if (counts.get(kind) or 0) > faults.DRAM_ERRORS_MAX:
                add(RETURN, f"ecc.{scope}.{kind}", counts[kind], f"DRAM (HBM) errors above {faults.DRAM_ERRORS_MAX:,}",
                    f"{faults.ECC_SOURCE}: the node fails", renter=faults.RENTER["return"])
        if scope == "aggregate" and 0 < (counts.get("dram_uncorrectable") or 0) <= faults.DRAM_ERRORS_MAX \
                and not (vol.get("dram_uncorrectable") or 0):
            add(NOTE, "ecc.aggregate.dram_uncorrectable", counts["dram_uncorrectable"],
                "DRAM uncorrectable errors in the GPU's lifetime (row remapping repairs them)",
                "history: none since the driver loaded", renter=faults.RENTER["watch"])
    return []


def judged(facts: dict, vars: dict | None) -> dict:
    """facts.health with the host's verdict in it (`verdict`, `reason`), as the facts record keeps it: `fleet facts`
    compares it across hosts. A bad expect_gpus (checked before any host is contacted) reads as nothing expected."""
    try:
        expect = parse_expect((vars or {}).get("expect_gpus"))
    except ExpectError:
        expect = {}
    return {**(facts.get("health") or {}), **decide_health(facts, expect).summary()}


def _verify_findings(verify: dict | None, seen: list[Finding]) -> list[Finding]:
    """What the last verify measured under load (fleet/remote/verify/perf.py: the link and clock-event reasons
    sampled while every GPU worked, the bandwidths against the platform row's floors), while it still holds."""
    if not isinstance(verify, dict) or verify.get("verdict") == "stale":
        return []
    out, known = [], {(f.gpu, f.field) for f in seen if f.severity != NOTE}
    for g in (verify.get("load") or {}).get("gpus") or []:
        i, gen, top = g.get("index"), g.get("gen"), g.get("gen_max")
        if gen and top and gen < top:
            out.append(Finding(DEGRADED, i, "pcie.link.gen.current", f"Gen{gen:g} of Gen{top:g} under load",
                               "the PCIe link runs slower than it can while the GPU works",
                               "the provider's: check the slot, riser and BIOS"))
        for reason in g.get("events") or []:
            if reason in SLOWDOWNS and (i, f"clocks_event_reasons.{reason}") not in known:
                out.append(Finding(DEGRADED, i, f"clocks_event_reasons.{reason}", "Active under load",
                                   SLOWDOWNS[reason], "check cooling and power: the provider's"))
    figures = verify.get("bandwidth") or {}
    for key, floor_key, unit, scale in (("d2d_traffic_gbs", "memory_floor_tbs", "TB/s", 1000),
                                        ("h2d_gbs", "host_floor_gbs", "GB/s", 1), ("d2h_gbs", "host_floor_gbs", "GB/s", 1)):
        value, floor = figures.get(key), figures.get(floor_key)
        if value is not None and floor and value / scale < floor:
            out.append(Finding(DEGRADED, 0, f"bandwidth.{key}", f"{value / scale:.2f} {unit} (floor {floor:g})",
                               "measured under the floor for this GPU (a link trained down, memory clocks held)",
                               "the provider's: the slot, riser or the GPU"))
    return out


def decide_health(facts: dict, expect: dict | None = None, *, under_load: bool = False) -> HealthVerdict:
    """facts (a record) and what the inventory expects (parse_expect) -> the verdict. `under_load`: the fields were
    sampled while the GPU worked (verify), so a PCIe generation below its maximum counts."""
    expect = expect or {}
    health = facts.get("health") or {}
    gpus = health.get("gpus") or []
    findings: list[Finding] = []
    count = len(gpus)
    if not health.get("installed") and not gpus:
        if expect.get("count") or (facts.get("gpus") or []):
            return HealthVerdict("unknown", "nvidia-smi is not installed: GPU health cannot be read", count, expect)
        return HealthVerdict("none", "no NVIDIA GPU: nothing to judge", 0, expect)
    if health.get("error") and not gpus and not health.get("lost"):
        return HealthVerdict("unknown", f"nvidia-smi answered no GPU health: {health['error']}", 0, expect)
    for gone in health.get("lost") or []:
        findings.append(Finding(RETURN, gone.get("index"), "gpu", f"lost ({gone.get('bus')})",
                                "a GPU the kernel driver holds that NVML cannot reach (off the bus)",
                                "NVIDIA: reset the GPU or reboot the node: the provider's", bus=gone.get("bus")))
        findings += [_xid_finding(gone.get("index"), code) for code in gone.get("xid") or []]
    if expect.get("count") and count < expect["count"]:
        findings.append(Finding(RETURN, None, "count", f"{count} of {expect['count']} expected",
                                "fewer GPUs than ordered", "the provider's: the pod is not what was rented"))
    elif expect.get("count") and count > expect["count"]:
        findings.append(Finding(NOTE, None, "count", f"{count} ({expect['count']} expected)", "more GPUs than expected",
                                "check expect_gpus"))
    model = (expect.get("model") or "").lower()
    for g in gpus:
        if model and model not in (g.get("name") or "").lower():
            findings.append(Finding(RETURN, g.get("index"), "name", g.get("name") or "?",
                                    f"not the {expect['model']} ordered", "the provider's: the pod is not what was rented"))
        findings += _gpu_findings(g, under_load)
    findings += [_xid_finding(None, code) for code in health.get("xid_other") or []]
    findings += _verify_findings(facts.get("verify"), findings)
    findings += _resource_findings((facts.get("system") or {}).get("resources"),
                                   (facts.get("shells") or {}).get("limits_conf"))
    log = health.get("kernel_log") or "unreadable"
    if log in ("unreadable", "empty"):
        findings.append(Finding(NOTE, None, "xid", log, "the kernel log cannot be read here (dmesg_restrict, a "
                                "container): Xid events are unknown, not absent", "run as root, or ask the provider"))
    findings.sort(key=lambda f: (_ORDER[f.severity], -1 if f.gpu is None else f.gpu))
    worst = next((f.severity for f in findings if f.severity != NOTE), None)
    verdict = {RETURN: "return", DEGRADED: "degraded"}.get(worst or "", "healthy")
    shown = [f for f in findings if f.severity == worst] if worst else []
    if verdict == "return":
        reason = "return this pod: " + "; ".join(f.line() for f in shown)
    elif verdict == "degraded":
        reason = "degraded: " + "; ".join(f.line() for f in shown)
    else:
        reason = f"healthy: {count} GPU(s)" + (", Xid events unreadable" if log in ("unreadable", "empty") else "")
    pod_only = verdict == "degraded" and all(f.field == "/dev/shm" for f in shown)
    return HealthVerdict(verdict, reason, count, expect, findings, PROVIDER_WAY_OUT if verdict == "return" else None,
                         POD_ADVICE if pod_only else "")
