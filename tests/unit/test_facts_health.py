"""GPU health facts (issue 36), parsed from the lent H200's real driver-580 output (tests/data/captured/h200-device/
health.txt: the query fields, the remapped rows, `nvidia-smi -q -x`, the kernel log) and judged by
fleet/decide/health.py. The probe's own shell runs against a stand-in nvidia-smi on PATH that prints the captured
rows, or refuses the new spelling as a pre-530 driver does."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from fleet.decide.health import decide_health, parse_expect, ExpectError
from fleet.facts import health
from fleet.facts.record import assemble
from fleet.facts.sources import BY_NAME

CAPTURED = (Path(__file__).parents[1] / "data" / "captured" / "h200-device" / "health.txt").read_text()


def _block(command_start: str) -> str:
    """The output of the first captured command starting with `command_start`, up to its [exit N] line."""
    at = CAPTURED.index("$ " + command_start)
    body = CAPTURED[CAPTURED.index("\n", at) + 1:]
    return body[:body.index("\n[exit ")]


def _captured_row(fields: str) -> str:
    """The captured noheader,nounits H200 line, its values picked for `fields` (the capture asked more fields)."""
    command = next(line for line in CAPTURED.splitlines() if line.startswith("$ nvidia-smi --query-gpu=")
                   and "noheader,nounits" in line)
    asked = re.search(r"--query-gpu=(\S+)", command)[1].split(",")
    values = [v.strip() for v in _block(command[2:]).splitlines()[0].split(",")]
    row = dict(zip(asked, values))
    return ", ".join(row[f] for f in fields.split(","))


def _captured_remap() -> str:
    lines = _block("nvidia-smi --query-remapped-rows=").splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    row = dict(zip(header, [v.strip() for v in lines[1].split(",")]))
    return ", ".join(row[f] for f in health.REMAP_FIELDS.split(","))


def _captured_xml_filtered() -> str:
    """The captured `nvidia-smi -q -x` through the probe's own program (real bash, real grep; nvidia-smi a stand-in
    printing the capture)."""
    import tempfile

    with tempfile.TemporaryDirectory() as bin_dir:
        (Path(bin_dir) / "capture.xml").write_text(_block("nvidia-smi -q -x"))
        smi = Path(bin_dir) / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\ncat {bin_dir}/capture.xml\n")
        smi.chmod(0o755)
        return subprocess.run(["bash", "-c", health.HEALTH_XML], capture_output=True, text=True, check=True,
                              env={"PATH": f"{bin_dir}:/usr/bin:/bin"}).stdout


H200_SECTION = f"@@query event 0\n{_captured_row(health.FIELDS)}\n@@remap\n{_captured_remap()}\n"


def test_h200_query_row_parses_every_field():
    gpu = health.parse_health(H200_SECTION)["gpus"][0]
    assert gpu["name"] == "NVIDIA H200" and gpu["bus"] == "00000000:00:06.0"
    assert gpu["pcie"] == {"gen": 5, "gen_max": 5, "width": 16, "width_max": 16}
    assert gpu["ecc"] == {"mode": True, "uncorrected_volatile": 0, "uncorrected_aggregate": 0, "corrected_volatile": 0}
    assert gpu["retired_pending"] is None                     # "[N/A]": the H200 remaps rows instead
    assert gpu["clock_events"] == ["gpu_idle"]                # 0x...01 at rest
    assert gpu["power"] == {"draw": 102.47, "limit": 700.0, "default": 700.0}
    assert gpu["temperature"] == {"gpu": 37, "memory": 36} and gpu["persistence"] is True
    assert gpu["clocks"] == {"sm": 345, "sm_max": 1980}


def test_h200_remapped_rows_and_xml():
    section = health.parse_health(H200_SECTION)
    assert section["remapped"] == [{"bus": "00000000:00:06.0", "correctable": 0, "uncorrectable": 0,
                                    "pending": False, "failure": False}]
    xml = health.parse_health_xml(_captured_xml_filtered())
    zeros = dict.fromkeys(health.ECC_KEYS, 0)   # the capture's SRAM/DRAM split, every counter 0 (issue 48)
    assert xml == {"00000000:00:06.0": {"recovery_action": "None", "replay": 0, "replay_rollover": 0,
                                        "ecc": {"volatile": zeros, "aggregate": {**zeros,
                                                                                 "sram_threshold_exceeded": False}}}}


# What the lent H200's driver 580.159.04 answered (bench/results/2026-11-26-h200-profile-691d111/costs.txt, asked the
# same day as the capture): `nvidia-smi --version` in 20 ms, and gpu_recovery_action as a query field ("None, 5" for
# gpu_recovery_action,pcie.link.gen.current).
H200_VERSION = ("NVIDIA-SMI version  : 580.159.04\nNVML version        : 580.159\nDRIVER version      : 580.159.04\n"
                "CUDA Version        : 13.0\n")
H200_RECOVERY = "None"
THOR_HEADER = (Path(__file__).parents[1] / "data" / "captured" / "thor" / "nvidia_smi_header.txt").read_text()
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.159\n"

# A stand-in nvidia-smi (python3, started by the section's own bash): the captured H200 row for the fields asked, as
# a driver of `knows` answers them; a field it does not know gets nvidia-smi's refusal of the FIRST such field (exit
# 2). Every start is logged with its arguments.
FAKE_SMI = r"""#!/usr/bin/env python3
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
conf = json.load(open(os.path.join(here, "conf.json")))
args = sys.argv[1:]
open(os.path.join(here, "asked"), "a").write(" ".join(a.split("=")[0] for a in args) + "\n")
if conf.get("fail"):
    sys.stdout.write(conf["fail"]); sys.exit(18)
if args == ["--version"]:
    if conf.get("version") is None:
        sys.stdout.write("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n"); sys.exit(2)
    sys.stdout.write(conf["version"]); sys.exit(0)
if not args:
    sys.stdout.write(conf["header"]); sys.exit(0)
if args[0].startswith("--query-remapped-rows="):
    print(conf["remap"]); sys.exit(0)
if args[0].startswith("--query-gpu="):
    fields = args[0].split("=", 1)[1].split(",")
    for field in fields:
        if field not in conf["knows"]:
            print('Field "%s" is not a valid field to query.\n' % field); sys.exit(2)
    print(", ".join(conf["knows"][f] for f in fields)); sys.exit(0)
sys.exit(2)
"""


def _driver_fields(kind: str, recovery: str = H200_RECOVERY) -> dict:
    """The query fields a driver of `kind` knows, with the captured H200's values: "580" every one (both clock-event
    spellings and gpu_recovery_action, as the lent H200's does), "545" no recovery action, "525" not the
    clocks_event_reasons spelling either (renamed in 530)."""
    row = dict(zip(health.FIELDS.split(","), [v.strip() for v in _captured_row(health.FIELDS).split(",")]))
    knows = {**row, **{k.replace("clocks_event_reasons.", "clocks_throttle_reasons."): v for k, v in row.items()}}
    if kind == "580":
        knows[health.RECOVERY] = recovery
    if kind == "525":
        knows = {k: v for k, v in knows.items() if not k.startswith("clocks_event_reasons.")}
    return knows


def _run(tmp_path, source: str, **conf) -> tuple[str, list[str]]:
    """`source`'s command (fleet/facts/sources.py BY_NAME) in real bash against FAKE_SMI -> (output, the starts)."""
    (tmp_path / "conf.json").write_text(json.dumps({"remap": _captured_remap(), "header": THOR_HEADER, **conf}))
    smi = tmp_path / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    out = subprocess.run(["bash", "-c", BY_NAME[source].command({})], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}).stdout
    asked = (tmp_path / "asked").read_text().splitlines()
    (tmp_path / "asked").unlink()
    return out, asked


def smi_versions(outputs: dict) -> dict:
    from fleet.facts import record
    return record.smi_versions(record._Reader(outputs, []), outputs)


def test_the_versions_come_from_nvidia_smi_version_in_one_start(tmp_path):
    """The H200's `--version` answer: its driver and CUDA versions, which the table's header said on the real H100
    (h100-device/probe.txt: 580.159.04, 13.0), without the table (105 ms on the H200) or `-q -x` (115 ms)."""
    from fleet.facts import gpu

    out, asked = _run(tmp_path, "smi_version", version=H200_VERSION)
    assert asked == ["--version"]
    assert gpu.parse_smi_versions(out) == {"driver_version": "580.159.04", "cuda_version": "13.0"}
    assert smi_versions({"smi_version": out}) == {"driver_version": "580.159.04", "cuda_version": "13.0"}


@pytest.mark.parametrize("version", [None, "NVIDIA-SMI version  : 580.00\nNVML version        : 580.00\n"
                                           "DRIVER version      : 580.00\n"])
def test_an_nvidia_smi_without_version_or_its_cuda_line_asks_the_table_header(tmp_path, version):
    """An nvidia-smi that refuses --version (an older one), or answers it without the CUDA line: the table's header
    (Thor's captured one) is asked after it, as the probe did before 83fa5ab."""
    from fleet.facts import gpu

    out, asked = _run(tmp_path, "smi_version", version=version)
    assert asked == ["--version", ""]
    assert gpu.parse_smi_versions(out) == {"driver_version": "580.00", "cuda_version": "13.0"}


def test_a_failing_nvml_gives_no_versions(tmp_path):
    from fleet.facts import gpu

    out, asked = _run(tmp_path, "smi_version", fail=MISMATCH, version=H200_VERSION)
    assert asked == ["--version", ""]            # the header asked too, as the brief's fallback: it fails the same
    assert gpu.parse_smi_versions(out) == {"driver_version": None, "cuda_version": None}
    assert gpu.parse_smi_versions(MISMATCH + H200_VERSION) == {"driver_version": None, "cuda_version": None}


def test_records_of_earlier_probes_keep_their_versions():
    """A record assembled again from a probe of 83fa5ab..e611fe2 (versions in health_xml's `-q -x`, the captured H200's
    through that probe's grep) or of before (the table's header in a section of its own)."""
    old_grep = "<gpu id=|<(gpu_recovery_action|replay_counter|replay_rollover_counter|driver_version|cuda_version)>"
    old = subprocess.run(["grep", "-E", old_grep], input=_block("nvidia-smi -q -x"), capture_output=True, text=True,
                         check=True).stdout
    assert smi_versions({"health_xml": old}) == {"driver_version": "580.159.04", "cuda_version": "13.0"}
    assert smi_versions({"nvidia_smi_header": THOR_HEADER}) == {"driver_version": "580.00", "cuda_version": "13.0"}


def test_the_routine_probe_has_no_q_x_and_fleet_health_keeps_it():
    from fleet.facts.sources import SOURCES, settings_of
    from fleet.workflows import health as health_check

    probe = "\n".join(source.command(settings_of({})) for source in SOURCES)
    assert "nvidia-smi -q -x" not in probe and "health_xml" not in [source.name for source in SOURCES]
    assert "nvidia-smi -q -x" in health_check.script() and "health_xml" in health_check.SOURCES


@pytest.mark.parametrize("kind, spelling, starts", [("580", "event", 1), ("545", "event", 2), ("525", "throttle", 2)])
def test_the_health_query_asks_the_recovery_action_where_the_driver_knows_it(tmp_path, kind, spelling, starts):
    """The section's own bash: driver 580 answers gpu_recovery_action in the one query; a driver that refuses it is asked
    again without it (None, as -q -x leaves it before 550); a pre-530 one refuses clocks_event_reasons first."""
    out, asked = _run(tmp_path, "health", knows=_driver_fields(kind))
    queries = [a for a in asked if a.startswith("--query-gpu")]
    assert len(queries) == starts, asked
    parsed = health.parse_health(out)
    assert parsed["spelling"] == spelling and parsed["error"] is None
    assert parsed["gpus"][0]["recovery_action"] == ("None" if kind == "580" else None)
    assert (parsed["rejected"] is None) == (kind == "580")
    if kind == "545":
        assert parsed["rejected"] == 'Field "gpu_recovery_action" is not a valid field to query.'


def _routine(tmp_path, recovery: str) -> dict:
    """apply's record now: the health section (the recovery action by query) and the kernel log, no `-q -x`."""
    out, _ = _run(tmp_path, "health", knows=_driver_fields("580", recovery))
    return assemble({"health": out, "xid": "@@via dmesg\n@@lines 812\n"}, expected=[])


def _before(recovery: str) -> dict:
    """apply's record before (e611fe2): the query without the recovery action, and `-q -x` filtered (captured H200)."""
    xml = _captured_xml_filtered().replace("<gpu_recovery_action>None<", f"<gpu_recovery_action>{recovery}<")
    return assemble({"health": H200_SECTION, "health_xml": xml, "xid": "@@via dmesg\n@@lines 812\n"}, expected=[])


@pytest.mark.parametrize("recovery, verdict", [("None", "healthy"), ("Reset", "return"), ("Reboot", "return"),
                                               ("Drain P2P", "degraded")])
def test_every_decisive_rule_sees_what_it_saw_before(tmp_path, recovery, verdict):
    """The captured H200: the record without `-q -x` holds every field the record with it held, but the replay counter
    (a note only: decide/health.py) and the SRAM/DRAM split (all zero in the capture), and decide_health finds the same."""
    now, before = _routine(tmp_path, recovery), _before(recovery)
    assert before["health"]["gpus"][0]["pcie_replay"] == 0 and now["health"]["gpus"][0]["pcie_replay"] is None
    strip = lambda record: [{k: v for k, v in g.items() if k not in ("pcie_replay", "ecc_split")}
                            for g in record["health"]["gpus"]]
    assert strip(now) == strip(before) and now["health"]["gpus"][0]["recovery_action"] == recovery
    assert {k: v for k, v in now["health"].items() if k != "gpus"} == \
        {k: v for k, v in before["health"].items() if k != "gpus"}
    found = [decide_health(r, {"count": 1, "model": "H200"}) for r in (now, before)]
    assert found[0].verdict == found[1].verdict == verdict, found[0].reason
    assert found[0].findings == found[1].findings and found[0].reason == found[1].reason


def test_fleet_health_takes_the_recovery_action_from_the_xml_where_the_query_has_none(tmp_path):
    out, _ = _run(tmp_path, "health", knows=_driver_fields("545"))
    xml = _captured_xml_filtered().replace("<gpu_recovery_action>None<", "<gpu_recovery_action>Reset<")
    record = assemble({"health": out, "health_xml": xml, "xid": "@@via dmesg\n@@lines 812\n"}, expected=[])
    assert record["health"]["gpus"][0]["recovery_action"] == "Reset"
    assert record["health"]["gpus"][0]["pcie_replay"] == 0
    assert decide_health(record).verdict == "return"


def test_event_reason_bits_are_nvmls():
    assert health.event_reasons("0x0000000000000001") == ["gpu_idle"]
    assert health.event_reasons("0x0000000000000044") == ["sw_power_cap", "hw_thermal_slowdown"]
    assert health.event_reasons("[N/A]") is None


def test_kernel_log_xid_lines_are_read_per_gpu():
    text = ("@@via dmesg\n@@lines 1260\n"
            "[  812.518463] NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
            "[  901.100000] NVRM: Xid (PCI:0000:9a:00): 94, pid=4411, name=python, Ch 00000008\n")
    xid = health.parse_xid(text)
    assert xid["log"] == "dmesg" and xid["lines"] == 1260
    assert [(e["bus"], e["code"]) for e in xid["events"]] == [("0000:00:06", 79), ("0000:9a:00", 94)]
    assert health.same_bus("00000000:00:06.0", "0000:00:06") and not health.same_bus("00000000:9A:00.0", "0000:00:06")


def test_a_closed_or_empty_kernel_log_is_never_clean():
    assert health.parse_xid("@@via unreadable\n") == {"log": "unreadable", "lines": 0, "events": []}
    assert health.parse_xid("@@via dmesg\n@@lines 0\n")["log"] == "empty"


def _record(section: str, xml: str, xid: str, kernel: str = "") -> dict:
    return assemble({"health": section, "health_xml": xml, "xid": xid, "kernel_gpus": kernel},
                    expected=[])


def test_the_real_healthy_h200_is_healthy():
    record = _record(H200_SECTION, _captured_xml_filtered(), "@@via dmesg\n@@lines 812\n")
    verdict = decide_health(record, {"count": 1, "model": "H200"})
    assert verdict.verdict == "healthy", verdict.reason
    assert record["health"]["gpus"][0]["recovery_action"] == "None"
    assert record["health"]["kernel_log"] == "dmesg"


def test_one_gpu_fewer_than_ordered_is_returned():
    record = _record(H200_SECTION, _captured_xml_filtered(), "@@via dmesg\n@@lines 812\n")
    verdict = decide_health(record, parse_expect("8x H200"))
    assert verdict.verdict == "return" and "count=1 of 8 expected" in verdict.reason
    assert verdict.way_out


def test_a_gpu_the_kernel_sees_but_nvml_lost_is_returned():
    kernel = ("@@gpu /proc/driver/nvidia/gpus/0000:00:06.0/information\nModel: NVIDIA H200\n"
              "@@gpu /proc/driver/nvidia/gpus/0000:00:07.0/information\nModel: NVIDIA H200\n")
    record = _record(H200_SECTION, _captured_xml_filtered(), "@@via dmesg\n@@lines 812\n", kernel)
    assert record["health"]["lost"] == [{"index": 1, "bus": "0000:00:07.0", "xid": []}]
    assert decide_health(record).verdict == "return"


def test_the_health_shell_asks_the_old_spelling_where_the_new_one_is_refused(tmp_path):
    """The section's own bash against a stand-in nvidia-smi that refuses clocks_event_reasons (a pre-530 driver's
    message) and answers the throttle spelling with the captured row."""
    row = _captured_row(health.FIELDS)
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncase \"$*\" in\n"
                   "  *clocks_event_reasons*) echo 'Field \"clocks_event_reasons.active\" is not a valid field to "
                   "query.'; echo; exit 2;;\n"
                   f"  *clocks_throttle_reasons*) echo '{row}';;\n"
                   f"  *remapped*) echo '{_captured_remap()}';;\nesac\n")
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", BY_NAME["health"].command({})], capture_output=True, text=True, env=env).stdout
    parsed = health.parse_health(out)
    assert parsed["spelling"] == "throttle" and "not a valid field" in parsed["rejected"]
    assert parsed["gpus"][0]["clock_events"] == ["gpu_idle"] and parsed["remapped"][0]["pending"] is False


def test_expect_gpus_forms():
    assert parse_expect("8x H200") == {"count": 8, "model": "H200"}
    assert parse_expect(8) == {"count": 8} and parse_expect("H100 80GB") == {"model": "H100 80GB"}
    assert parse_expect("") == {}
    with pytest.raises(ExpectError, match="write e.g. 8"):
        parse_expect("0x")


def test_fleet_facts_compares_the_verdict_across_hosts():
    from fleet.decide.health import judged
    from fleet.report import compare

    healthy = _record(H200_SECTION, _captured_xml_filtered(), "@@via dmesg\n@@lines 812\n")
    capped = H200_SECTION.replace("102.47, 700.00, 700.00", "102.47, 400.00, 700.00")
    degraded = _record(capped, _captured_xml_filtered(), "@@via dmesg\n@@lines 812\n")
    records = {name: {**r, "health": judged(r, {"expect_gpus": "1x H200"})}
               for name, r in (("pod-a", healthy), ("pod-b", degraded))}
    rows = {row.path: row for row in compare.compare(records).rows}
    assert rows["health.verdict"].differs and rows["health.verdict"].values == {"pod-a": "healthy", "pod-b": "degraded"}
    assert rows["health.gpus.0.power.limit"].values == {"pod-a": "700.0", "pod-b": "400.0"}
    # the GPU a provider asks about, by UUID and bus id (as nvidia-smi printed them), and no command a pod cannot run
    assert ("GPU 0 (GPU-b07a36d3-7282-1504-cfd0-b1522df2a917, bus 00000000:00:06.0): enforced.power.limit=400 W of "
            "700 W default") in rows["health.reason"].values["pod-b"]
    assert "nvidia-smi -pl" not in rows["health.reason"].values["pod-b"]
    assert "health.gpus.0.power.draw" not in rows and "health.gpus.0.uuid" not in rows   # moving readings, ids


def test_the_html_report_shows_each_hosts_gpu_verdict_and_bandwidths():
    from fleet.decide.health import judged
    from fleet.report import compare, html

    healthy = _record(H200_SECTION, _captured_xml_filtered(), "@@via dmesg\n@@lines 812\n")
    returned = _record(H200_SECTION.replace(", No, No", ", Yes, Yes"), _captured_xml_filtered(), "@@via unreadable\n")
    records = {"pod-a": {**healthy, "health": judged(healthy, {}),
                         "verify": {"passed": True, "bandwidth": {"h2d_gbs": 55.5, "host_floor_gbs": 38.4}}},
               "pod-b": {**returned, "health": judged(returned, {})}}
    page = html.render(compare.compare(records), records, {"pod-a": None, "pod-b": None}, generated="now", version="t")
    assert '<span class="pass">healthy</span>' in page and '<span class="fail">return this pod</span>' in page
    assert ("GPU 0 (GPU-b07a36d3-7282-1504-cfd0-b1522df2a917, bus 00000000:00:06.0): remapped_rows.failure=Yes: "
            "a row remap failed") in page
    assert "<td>55.5</td>" in page and "host floor GB/s" in page


def test_fleet_health_exit_status_orders_return_unreachable_degraded():
    from types import SimpleNamespace as NS

    from fleet.workflows.health import exit_status
    from fleet.decide.health import HealthVerdict

    def run(*verdicts, unreachable=False):
        outcomes = {f"h{i}": NS(interrupted=False, error=None) for i in range(len(verdicts))}
        if unreachable:
            outcomes["down"] = NS(interrupted=False, error="down: unreachable")
        return exit_status(outcomes, {f"h{i}": HealthVerdict(v, "") for i, v in enumerate(verdicts)})

    assert run("healthy", "none") == 0
    assert run("healthy", "degraded") == 6 and run("unknown") == 6
    assert run("degraded", unreachable=True) == 1
    assert run("degraded", "return", unreachable=True) == 5
