"""Issue 48 item 3: every threshold and Xid action from the real formats (the lent H200's captured -q -x, the kernel's
Xid 154 line as NVIDIA's catalog prints it), each finding mapped to what the renter does."""

from __future__ import annotations

import re
import pytest

from fleet.decide.health import decide_health
from fleet.facts import health
from fleet.knowledge import gpu_faults as faults

from test_facts_health import _captured_xml_filtered   # the captured -q -x through the real health_xml.sh

XML = _captured_xml_filtered()


def _xml(**counts) -> str:
    """The captured H200's <ecc_errors> lines (as health_xml.sh's grep keeps them) with some counters changed:
    volatile__sram_correctable=5 sets the volatile SRAM correctable count."""
    text = XML
    for key, value in counts.items():
        scope, element = key.split("__")
        block = re.search(rf"<{scope}>\n(.*?)(?=\n\s*<(?:volatile|aggregate)>|\Z)", text, re.S)
        changed = re.sub(rf"<{element}>[^<]*</{element}>", f"<{element}>{value}</{element}>", block[1])
        text = text[:block.start(1)] + changed + text[block.end(1):]
    return text


def _record(xml: str = "", xid: str = "", remap: str = "0, 0, No, No") -> dict:
    section = health.parse_health(
        "@@query event 0 gpu_recovery_action\n0, NVIDIA H200, GPU-b07a36d3-7282-1504-cfd0-b1522df2a917, "
        "00000000:00:06.0, Enabled, 5, 5, 16, 16, Enabled, 0, 0, 0, [N/A], 0x0000000000000001, Not Active, Not Active, "
        "Not Active, Not Active, Not Active, 102.47, 700.00, 700.00, 37, 36, 345, 1980, None\n@@remap\n"
        f"00000000:00:06.0, {remap}\n")
    facts = {"health": health.health_facts(section, health.parse_health_xml(xml) if xml else {},
                                           health.parse_xid(f"@@via dmesg\n@@lines 900\n{xid}"), [])}
    return facts


def test_the_captured_xml_reads_all_zero():
    """What health_xml.sh keeps of the lent H200's -q -x holds the SRAM/DRAM split, every counter 0: healthy."""
    assert XML.count("<sram_uncorrectable_parity>0</sram_uncorrectable_parity>") == 2
    verdict = decide_health(_record(XML))
    assert verdict.verdict == "healthy" and not [f for f in verdict.findings if f.field.startswith("ecc")]


# counter -> (verdict, the finding's field, what the renter does)
ECC = {
    "volatile__sram_uncorrectable_parity=1": ("return", "ecc.volatile.sram_uncorrectable_parity", "return the pod"),
    "aggregate__sram_uncorrectable_secded=1": ("return", "ecc.aggregate.sram_uncorrectable_secded", "return the pod"),
    "aggregate__sram_threshold_exceeded=Yes": ("return", "ecc.sram_threshold_exceeded", "return the pod"),
    "aggregate__sram_correctable=10001": ("return", "ecc.aggregate.sram_correctable", "return the pod"),
    "aggregate__dram_correctable=20000001": ("return", "ecc.aggregate.dram_correctable", "return the pod"),
    "volatile__dram_uncorrectable=20000001": ("return", "ecc.volatile.dram_uncorrectable", "return the pod"),
    "aggregate__dram_uncorrectable=4": ("healthy", "ecc.aggregate.dram_uncorrectable", "watch it"),
}


@pytest.mark.parametrize("change", sorted(ECC))
def test_ecc_split_graded_as_azure_grades_it(change):
    key, value = change.split("=")
    verdict_class, field, renter = ECC[change]
    verdict = decide_health(_record(_xml(**{key: value})))
    assert verdict.verdict == verdict_class, verdict.reason
    named = [f for f in verdict.findings if f.field == field]
    assert named and named[0].renter.startswith(renter) and named[0].value in (value, "Yes", f"{int(value):,}" if
                                                                              value.isdigit() else value)


@pytest.mark.parametrize("edge", ["aggregate__sram_correctable=10000", "aggregate__dram_correctable=20000000"])
def test_at_the_threshold_is_not_over_it(edge):
    key, value = edge.split("=")
    assert decide_health(_record(_xml(**{key: value}))).verdict == "healthy"


@pytest.mark.parametrize("rows, verdict_class, renter", [(512, "healthy", "watch it"), (513, "return", "return the pod")])
def test_more_than_512_uncorrectable_remapped_rows_fail(rows, verdict_class, renter):
    verdict = decide_health(_record(remap=f"0, {rows}, No, No"))
    assert verdict.verdict == verdict_class
    named = [f for f in verdict.findings if f.field == "remapped_rows.uncorrectable"]
    assert named[0].value == str(rows) and named[0].renter.startswith(renter)


XID_LINE = "[  812.60] NVRM: Xid (PCI:0000:00:06): {code}, {text}\n"


@pytest.mark.parametrize("code", sorted(faults.XID))
def test_every_catalog_code_has_an_action_and_a_renters_action(code):
    meaning, bucket, renter = faults.XID[code]
    verdict = decide_health(_record(xid=XID_LINE.format(code=code, text="pid=1, name=python3, stand-in text")))
    named = [f for f in verdict.findings if f.field == "xid" and f.value == str(code)]
    assert named and named[0].gpu == 0 and named[0].renter == faults.RENTER[renter]
    assert bucket in named[0].action and meaning in named[0].meaning
    expected = {"note": "healthy", "degraded": "degraded", "return": "return"}[faults.SEVERITY[renter]]
    assert verdict.verdict == (expected if code != 154 else "healthy")


def test_the_catalog_maps_forty_codes_or_more():
    assert len(faults.XID) >= 40 and set(faults.SEVERITY) == set(faults.RENTER)


# Xid 154 lines as kernels print them (NVIDIA's catalog; the PF FLR / OS Reboot wordings as seen in the wild)
XID154 = {
    "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)": ("return", "reboot the host"),
    "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)": ("return", "GPU reset"),
    "GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)": ("return", "GPU reset"),
    "GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)": ("return", "reboot the host"),
    "GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)": ("return", "GPU reset"),
    "GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)": ("degraded", "GPU reset"),
    "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)": ("healthy", None),
}


@pytest.mark.parametrize("text", sorted(XID154))
def test_xid154_recovery_action_parsed_from_the_kernel_line(text):
    verdict_class, renter = XID154[text]
    record = _record(xid=XID_LINE.format(code=154, text=text))
    change = record["health"]["gpus"][0]["xid_recovery"]
    words = re.search(r"to (0x\d) \(([^)]*)\)", text)
    assert change["to"] == int(words[1], 16) and change["to_text"] == words[2]
    verdict = decide_health(record)
    assert verdict.verdict == verdict_class, verdict.reason
    asked = [f for f in verdict.findings if f.field == "xid 154"]
    assert (asked[0].renter if asked else None) is None if renter is None else renter in asked[0].renter


def test_the_last_xid154_wins():
    record = _record(xid=XID_LINE.format(code=154, text=list(XID154)[0]) +
                     XID_LINE.format(code=154, text="GPU recovery action changed from 0x2 (Node Reboot Required) to "
                                                    "0x0 (None)"))
    assert record["health"]["gpus"][0]["xid_recovery"]["to"] == 0
