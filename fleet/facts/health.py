"""GPU health facts (issue 36): what a rented pod's GPUs say about themselves, read-only, without DCGM.

Three sections, each a command plus a pure parser (fleet/facts/sources.py rows `health`, `health_xml`, `xid`), run at
once: the routine probe (apply, facts, verify, bootstrap) runs `health` and `xid`; `fleet health` all three. Each field's source and meaning, from NVIDIA's documents:

- `nvidia-smi --query-gpu=...` (nvidia-smi(1) "--help-query-gpu"; NVML device queries), one line per GPU:
  `pcie.link.gen.current/max`, `pcie.link.width.current/max` (nvmlDeviceGetCurrPcieLinkGeneration / Width and
  their Max: "max possible with this device and system"; an idle GPU drops its generation to save power, so the
  generation is judged under load, the width at any time); `ecc.mode.current`; `ecc.errors.uncorrected.volatile.
  total` (since the last driver load) and `.aggregate.total` (the GPU's lifetime, in its InfoROM);
  `retired_pages.pending` (pre-A100 GPUs: a page waits for the next driver reload to be retired; "[N/A]" on GPUs
  that remap rows instead); `clocks_event_reasons.*` (nvmlDeviceGetCurrentClocksEventReasons; older drivers spell
  it `clocks_throttle_reasons.*`: asked again with that spelling when the new one is refused);
  `enforced.power.limit` against `power.default_limit`; `temperature.gpu` and `.memory`; `persistence_mode`.
- `nvidia-smi --query-remapped-rows=...` (nvmlDeviceGetRemappedRows; NVIDIA GPU Memory Error Management guide,
  "Row Remapping"): rows remapped for correctable and uncorrectable errors, PENDING (applied at the next GPU reset)
  and FAILURE (a remap failed: the RMA policy's case). A100 and later.
  `gpu_recovery_action` (nvmlDeviceGetGpuRecoveryAction: None, Reset, Reboot, Drain P2P, Drain and Reset: what the
  driver asks for after an error it cannot recover from alone) is a query field too on the drivers that have it (the
  lent H200's 580 answers "None"): asked LAST in the same call; a driver that refuses it ("Field
  \"gpu_recovery_action\" is not a valid field to query.") is asked again without it and leaves it None.
- `nvidia-smi -q -x`, filtered (the XML's element names are NVIDIA's DTD, nvsmi_device_v13.dtd on driver 580):
  `replay_counter` and `replay_rollover_counter` (nvmlDeviceGetPcieReplayCounter: link-level retries of PCIe packets;
  a rising count is a bad link or riser; a note, never the verdict) and `gpu_recovery_action` again. No `--query-gpu`
  field answers the replay counter, and `-d` cannot be combined with `-x`: only the whole `-q -x` has it (115 ms on
  the lent H200, the slowest nvidia-smi start of a probe). So `health_xml` is `fleet health`'s (fleet/workflows/
  health.py SOURCES), not the routine probe's: apply, facts, verify and bootstrap's record has no replay count, and
  takes the recovery action from the query (health_facts: the XML's only where the query has none).
- The kernel log (dmesg, else /dev/kmsg, else `journalctl -k -b`), for `NVRM: Xid (PCI:<bus>): <code>, ...` lines
  (NVIDIA Xid catalog, docs.nvidia.com/deploy/xid-errors): nvidia-smi has no Xid field. A log this user may not read
  is "unreadable", never "clean": an unprivileged container often cannot read it.

What each finding means and what NVIDIA says to do is judged in fleet/decide/health.py (facts observe).
"""

from __future__ import annotations

import re
import shlex

from fleet import remote

from fleet.facts.gpu import _TIMEOUT, _value

# The fields asked in ONE call, in this order; EVENT on drivers that know clocks_event_reasons (530 and later: the
# lent H200's 580 answers both spellings), THROTTLE on older ones. RECOVERY last, where the driver knows it (the
# H200's 580 does): nvidia-smi names the first field it refuses, so a pre-530 driver names a clocks_event_reasons field
# (asked again with the throttle spelling, no recovery action: it has none) and a 530-549 one names this.
FIELDS = ("index,name,uuid,pci.bus_id,persistence_mode,pcie.link.gen.current,pcie.link.gen.max,"
          "pcie.link.width.current,pcie.link.width.max,ecc.mode.current,ecc.errors.uncorrected.volatile.total,"
          "ecc.errors.uncorrected.aggregate.total,ecc.errors.corrected.volatile.total,retired_pages.pending,"
          "clocks_event_reasons.active,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,"
          "clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_thermal_slowdown,"
          "clocks_event_reasons.sw_power_cap,power.draw,enforced.power.limit,power.default_limit,temperature.gpu,"
          "temperature.memory,clocks.sm,clocks.max.sm")
FIELDS_THROTTLE = FIELDS.replace("clocks_event_reasons.", "clocks_throttle_reasons.")
RECOVERY = "gpu_recovery_action"
REMAP_FIELDS = ("gpu_bus_id,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,"
                "remapped_rows.failure")

HEALTH = (f"{_TIMEOUT}\nfields={shlex.quote(FIELDS)} "
          f"recovery={shlex.quote(RECOVERY)} remap_fields={shlex.quote(REMAP_FIELDS)}\n"
          + remote.program("health_query"))

# `fleet health`'s only (see above): the PCIe replay counters, and the recovery action where the query has none. (A
# probe of 83fa5ab..e611fe2 read the driver's and CUDA's versions here too: record.smi_versions still reads those.)
# ECC split by where the error was (driver 580's -q -x: <ecc_errors><volatile>/<aggregate> each with SRAM correctable,
# SRAM uncorrectable parity and SEC-DED, DRAM correctable and uncorrectable; the aggregate with sram_threshold_exceeded,
# NVIDIA's SRAM RMA gate): the lent H200's capture, shared/captured/h200-device/health.txt.
ECC_KEYS = ("sram_correctable", "sram_uncorrectable_parity", "sram_uncorrectable_secded", "dram_correctable",
            "dram_uncorrectable")
_XML_KEYS = ("gpu_recovery_action", "replay_counter", "replay_rollover_counter", "volatile", "aggregate",
             *ECC_KEYS, "sram_threshold_exceeded")
HEALTH_XML = f"{_TIMEOUT}\nxml_keys={shlex.quote('|'.join(_XML_KEYS))}\n" + remote.program("health_xml")

# The kernel log since boot, its Xid lines: fleet/remote/health_kernel.sh
XID = f"{_TIMEOUT}\n" + remote.program("health_kernel")

# nvmlClocksEventReasons bits (nvml.h: nvmlClocksEventReasonGpuIdle 0x1 ... DisplayClockSetting 0x100)
EVENT_BITS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
              0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
              0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
_REASON_FIELDS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown",
                  "sw_power_cap")
_BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]"


def _int(text: str | None) -> int | None:
    value = _value(text or "")
    return int(value) if value and re.fullmatch(r"-?\d+", value) else None


def _float(text: str | None) -> float | None:
    value = _value(text or "")
    found = re.fullmatch(r"(-?\d+(?:\.\d+)?)(?: ?[A-Za-z%]+)?", value) if value else None
    return float(found[1]) if found else None


def _yes(text: str | None) -> bool | None:
    value = (_value(text or "") or "").lower()
    return {"yes": True, "no": False, "active": True, "not active": False, "enabled": True,
            "disabled": False}.get(value)


def event_reasons(mask: str | None) -> list[str] | None:
    """`clocks_event_reasons.active` -> the NVML reasons set: "0x0000000000000001" -> ["gpu_idle"]; [] none."""
    value = _value(mask or "")
    if not value or not re.fullmatch(r"0x[0-9A-Fa-f]+", value):
        return None
    bits = int(value, 16)
    return [name for bit, name in EVENT_BITS.items() if bits & bit] + \
        ([f"unknown_0x{bits & ~0x1FF:x}"] if bits & ~0x1FF else [])


def parse_gpu_row(line: str, recovery: bool = False) -> dict:
    """One line of the health query (FIELDS, then RECOVERY where `recovery`: noheader,nounits) -> one GPU's health
    fields; "recovery_action" None where the query did not ask it (a driver that refused it, a probe before it).

        0, NVIDIA H200, GPU-b07a36d3-..., 00000000:00:06.0, Enabled, 5, 5, 16, 16, Enabled, 0, 0, 0, [N/A],
        0x0000000000000001, Not Active, Not Active, Not Active, Not Active, Not Active, 102.47, 700.00, 700.00,
        37, 36, 345, 1980, None
      -> {"index": 0, "name": "NVIDIA H200", "bus": "00000000:00:06.0", "persistence": True,
          "pcie": {"gen": 5, "gen_max": 5, "width": 16, "width_max": 16},
          "ecc": {"mode": True, "uncorrected_volatile": 0, "uncorrected_aggregate": 0, "corrected_volatile": 0},
          "retired_pending": None, "clock_events": ["gpu_idle"], "power": {"draw": 102.47, "limit": 700.0,
          "default": 700.0}, "temperature": {"gpu": 37, "memory": 36}, "clocks": {"sm": 345, "sm_max": 1980},
          "recovery_action": "None"}
    """
    names = FIELDS.split(",") + ([RECOVERY] if recovery else [])
    values = [part.strip() for part in line.split(",")]
    if len(values) != len(names) or not values[0].isdigit():
        raise ValueError(f"not a health line of {len(names)} fields: {line.strip()[:200]!r}")
    row = dict(zip(names, values))
    reasons = event_reasons(row["clocks_event_reasons.active"])
    named = [name for name in _REASON_FIELDS if _yes(row[f"clocks_event_reasons.{name}"])]
    return {
        "index": int(row["index"]), "name": _value(row["name"]), "uuid": _value(row["uuid"]),
        "bus": _value(row["pci.bus_id"]), "persistence": _yes(row["persistence_mode"]),
        "pcie": {"gen": _int(row["pcie.link.gen.current"]), "gen_max": _int(row["pcie.link.gen.max"]),
                 "width": _int(row["pcie.link.width.current"]), "width_max": _int(row["pcie.link.width.max"])},
        "ecc": {"mode": _yes(row["ecc.mode.current"]),
                "uncorrected_volatile": _int(row["ecc.errors.uncorrected.volatile.total"]),
                "uncorrected_aggregate": _int(row["ecc.errors.uncorrected.aggregate.total"]),
                "corrected_volatile": _int(row["ecc.errors.corrected.volatile.total"])},
        "retired_pending": _yes(row["retired_pages.pending"]),
        # the bitmask where the driver gives it, else the reasons asked one by one
        "clock_events": sorted(set(reasons or []) | set(named)) if reasons is not None else named,
        "power": {"draw": _float(row["power.draw"]), "limit": _float(row["enforced.power.limit"]),
                  "default": _float(row["power.default_limit"])},
        "temperature": {"gpu": _int(row["temperature.gpu"]), "memory": _int(row["temperature.memory"])},
        "clocks": {"sm": _int(row["clocks.sm"]), "sm_max": _int(row["clocks.max.sm"])},
        "recovery_action": _value(row[RECOVERY]) if recovery else None,
    }


def parse_remap_row(line: str) -> dict | None:
    """One `--query-remapped-rows` line (REMAP_FIELDS, noheader,nounits) -> {bus: ..., counts and flags}, or None
    for a line that is not one (a GPU without a row remapper answers a message instead).

        00000000:00:06.0, 0, 0, No, No
      -> {"bus": "00000000:00:06.0", "correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    """
    cells = [cell.strip() for cell in line.split(",")]
    if len(cells) != 5 or not re.fullmatch(_BUS, cells[0]):
        return None
    return {"bus": cells[0], "correctable": _int(cells[1]), "uncorrectable": _int(cells[2]),
            "pending": _yes(cells[3]), "failure": _yes(cells[4])}


# nvidia-smi names a GPU it cannot reach (fallen off the bus, lost) in place of its line, e.g.
# "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error" or "... GPU is lost ...".
_LOST = re.compile(r"Unable to determine the device handle for GPU ?(" + _BUS + r")|GPU (" + _BUS + r").*\blost\b")


def parse_health(text: str) -> dict:
    """The health section -> {"gpus": [...], "remapped": [...], "lost": [bus, ...], "spelling": "event" |
    "throttle", "rejected": message | None, "error": message | None, "installed": bool}.

        @@query event 0 gpu_recovery_action
        0, NVIDIA H200, GPU-b07a36d3-..., 00000000:00:06.0, Enabled, 5, 5, 16, 16, Enabled, 0, ..., None
        @@remap
        00000000:00:06.0, 0, 0, No, No
    """
    if text.strip() == "@@missing":
        return {"gpus": [], "remapped": [], "lost": [], "spelling": None, "rejected": None, "error": None,
                "installed": False}
    head = re.search(r"^@@query (\w+) (\d+)(?: (\w+))?$", text, re.M)   # the third word: a probe before it has none
    if not head:
        raise ValueError("no '@@query' line in the health section")
    rejected = re.search(r"^@@rejected (.*)$", text, re.M)
    body, _, remap = text[head.end():].partition("\n@@remap")
    gpus, lost, other = [], [], []
    for line in body.splitlines():
        if not line.strip():
            continue
        gone = _LOST.search(line)
        if gone:
            lost.append(gone[1] or gone[2])
        elif re.match(r"\s*\d+\s*,", line):
            gpus.append(parse_gpu_row(line, recovery=head[3] == RECOVERY))
        else:
            other.append(line.strip())
    remapped = [row for row in map(parse_remap_row, remap.splitlines()) if row]
    error = " ".join(other)[:300] or None
    return {"gpus": gpus, "remapped": remapped, "lost": lost, "spelling": head[1],
            "rejected": rejected[1].strip() if rejected else None, "error": error, "installed": True}


def parse_health_xml(text: str) -> dict:
    """The health_xml section (`nvidia-smi -q -x`, filtered) -> {bus: {"recovery_action": "None",
    "replay": 0, "replay_rollover": 0, "ecc": {"volatile": {...}, "aggregate": {..., "sram_threshold_exceeded"}}}},
    in the GPUs' order.

        <gpu id="00000000:00:06.0">
            <gpu_recovery_action>None</gpu_recovery_action>
            <replay_counter>0</replay_counter>
            <replay_rollover_counter>0</replay_rollover_counter>
                <volatile>
                    <sram_correctable>0</sram_correctable>  ... <dram_uncorrectable>0</dram_uncorrectable>
                <aggregate>
                    <sram_correctable>0</sram_correctable>  ... <sram_threshold_exceeded>No</sram_threshold_exceeded>
    A driver without a recovery action (before 550) leaves it None; one without the SRAM/DRAM split leaves "ecc" {}.
    """
    out: dict[str, dict] = {}
    current, scope = None, None
    for line in text.splitlines():
        gpu = re.search(r'<gpu id="([^"]+)">', line)
        if gpu:
            current = out.setdefault(gpu[1], {"recovery_action": None, "replay": None, "replay_rollover": None,
                                              "ecc": {}})
            scope = None
            continue
        opened = re.fullmatch(r"\s*<(volatile|aggregate)>\s*", line)
        if opened and current is not None:
            scope = opened[1]
            continue
        field = re.search(r"<(\w+)>([^<]*)</\1>", line)
        if not field or current is None:
            continue
        key = {"gpu_recovery_action": "recovery_action", "replay_counter": "replay",
               "replay_rollover_counter": "replay_rollover"}.get(field[1])
        if key == "recovery_action":
            current[key] = _value(field[2])
        elif key:
            current[key] = _int(field[2])
        elif scope and field[1] in ECC_KEYS:
            current["ecc"].setdefault(scope, {})[field[1]] = _int(field[2])
        elif scope == "aggregate" and field[1] == "sram_threshold_exceeded":
            current["ecc"].setdefault(scope, {})[field[1]] = _yes(field[2])
    if not out and text.strip():
        raise ValueError("nvidia-smi -q -x: " + text.strip()[:200])
    return out


_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+),\s*(.*)$")
# Xid 154's text (NVIDIA's catalog): "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
_RECOVERY_CHANGE = re.compile(r"recovery action changed from (0x[0-9A-Fa-f]+) \(([^)]*)\) to (0x[0-9A-Fa-f]+) \(([^)]*)\)")
_OFF_BUS = re.compile(r"NVRM: GPU (?:at PCI:)?([0-9A-Fa-f:.]+):?.*fallen off the bus")


def parse_xid(text: str) -> dict:
    """The xid section -> {"log": "dmesg" | "kmsg" | "journal" | "unreadable", "lines": N,
    "events": [{"bus": "0000:3b:00", "code": 79, "text": "pid=..., GPU has fallen off the bus."}]}.

        @@via dmesg
        @@lines 1260
        [  812.5] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    A log that reads as empty (cleared, or a namespace that shows nothing) is `"empty"`: not proof of no Xid.
    """
    via = re.search(r"^@@via (\w+)$", text, re.M)
    if not via:
        raise ValueError("no '@@via' line in the xid section")
    lines = re.search(r"^@@lines\s+(\d+)$", text, re.M)
    count = int(lines[1]) if lines else 0
    log = via[1] if via[1] == "unreadable" or count else "empty"
    events = []
    for line in text.splitlines():
        found = _XID.search(line)
        if found:
            event = {"bus": found[1].lower(), "code": int(found[2]), "text": found[3].strip()[:200]}
            change = _RECOVERY_CHANGE.search(found[3]) if event["code"] == 154 else None
            if change:   # what the driver now asks for, by its number and its words
                event["recovery"] = {"from": int(change[1], 16), "from_text": change[2].strip(),
                                     "to": int(change[3], 16), "to_text": change[4].strip()}
            events.append(event)
            continue
        off = _OFF_BUS.search(line)
        if off:
            events.append({"bus": off[1].lower().rstrip(":"), "code": 79, "text": "GPU has fallen off the bus"})
    return {"log": log, "lines": count, "events": events}


def same_bus(a: str | None, b: str | None) -> bool:
    """nvidia-smi's "00000000:3B:00.0" and the kernel's "0000:3b:00" (Xid) name the same GPU: bus and device."""
    def key(bus: str) -> tuple[str, str]:
        parts = bus.lower().split(":")
        return (parts[-2], parts[-1].split(".")[0]) if len(parts) >= 2 else (bus.lower(), "")
    return bool(a and b) and key(a) == key(b)


def health_facts(section: dict, xml: dict, xid: dict, kernel_gpus: list[dict]) -> dict:
    """facts.health: one entry per GPU the driver answers for (its query fields, its remapped rows, its recovery
    action, its replay counter where `xml` was read, its Xid events), the GPUs lost (named by nvidia-smi or seen by the kernel driver but
    not by NVML), and the kernel log's state."""
    xid = xid or {"log": "unreadable", "lines": 0, "events": []}
    gpus = []
    for g in section.get("gpus") or []:
        remap = next((r for r in section.get("remapped") or [] if same_bus(r["bus"], g["bus"])), None)
        extra = next((v for bus, v in (xml or {}).items() if same_bus(bus, g["bus"])), {})
        # the recovery action: the query's, else the XML's (`fleet health` on a driver that refused the query field,
        # or a record of a probe before it); the replay counter: the XML's only, so `fleet health`'s only
        action = g.get("recovery_action") if g.get("recovery_action") is not None else extra.get("recovery_action")
        mine = [e for e in xid["events"] if same_bus(e["bus"], g["bus"])]
        changes = [e["recovery"] for e in mine if e.get("recovery")]
        gpus.append({**g, "remapped": {k: v for k, v in remap.items() if k != "bus"} if remap else None,
                     "recovery_action": action, "pcie_replay": extra.get("replay"),
                     "ecc_split": extra.get("ecc") or None,   # SRAM/DRAM (`fleet health`'s XML only)
                     "xid": sorted({e["code"] for e in mine}),
                     "xid_recovery": changes[-1] if changes else None})   # the last Xid 154: what it asks now
    # the kernel driver's GPUs in bus order (its numbering, and nvidia-smi's): a GPU NVML lost keeps its index here
    kernel = sorted(k["bus"] for k in kernel_gpus or [] if k.get("bus"))
    buses = list(section.get("lost") or [])
    if section.get("installed") and not section.get("error"):
        buses += [bus for bus in kernel if not any(same_bus(bus, g["bus"]) for g in gpus)]
    lost: list[dict] = []
    for bus in buses:
        if not any(same_bus(bus, known["bus"]) for known in lost):
            lost.append({"index": next((i for i, k in enumerate(kernel) if same_bus(k, bus)), None), "bus": bus,
                         "xid": sorted({e["code"] for e in xid["events"] if same_bus(e["bus"], bus)})})
    placed = [g["bus"] for g in gpus] + [known["bus"] for known in lost]
    unplaced = sorted({e["code"] for e in xid["events"] if not any(same_bus(e["bus"], bus) for bus in placed)})
    return {"gpus": gpus, "lost": lost, "kernel_log": xid["log"], "kernel_log_lines": xid["lines"],
            "xid_other": unplaced, "xid_events": xid["events"][-20:], "spelling": section.get("spelling"),
            "error": section.get("error"), "installed": section.get("installed", False),
            "kernel_gpus": len(kernel_gpus or [])}
