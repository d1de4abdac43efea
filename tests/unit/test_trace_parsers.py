"""The shells' trace is read by one parser (fleet/remote/trace.py) on both sides: the facts (fleet/facts/shells.py
parse) and the verify program on the host (which names the startup file:line behind a failed kind). Held against
what the two parsers it replaced made of the same traces (tests/data/trace/expected.json, recorded by tests/data/trace/record.py before
they became one): a real H100's (tests/data/h100-device/issue11), the lab's pod-580 (tests/data/verify_kinds),
this machine's bash on the startup files of tests/data/trace/record.py, and a hand-written one with every odd
line the parsers must survive."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fleet.facts import shells
from fleet.remote import trace
from fleet.remote.verify import loader

import verify_program

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = {
    "h100-issue11": (DATA / "h100-device/issue11/probe-framed.txt", "facts.shells"),
    "pod-580-bash-profile": (DATA / "verify_kinds/pod-580-bash-profile.trace.txt", None),
    "pod-setup": (DATA / "trace/pod-setup.trace.txt", None),
    "visibility": (DATA / "trace/visibility.trace.txt", None),
    "edges": (DATA / "trace/edges.trace.txt", None),
}
EXPECTED = DATA / "trace" / "expected.json"
VERIFY_KINDS = ("ssh", "interactive", "login", "bare")


def trace_text(name: str) -> str:
    path, section = TRACES[name]
    text = path.read_text()
    if section:   # the section of a framed probe's output
        found = re.search(rf"^@@fleet:begin {re.escape(section)}@@\n(.*?)^@@fleet:end {re.escape(section)} ", text,
                          re.S | re.M)
        text = found.group(1)
    return text


def directories(text: str) -> list[str]:
    """Every directory an LD_LIBRARY_PATH of the trace held: what a failed kind's libcuda may have come from."""
    found = set()
    for line in text.splitlines():
        if line.startswith("@@change\t"):
            found.update(d for part in line.split("\t")[4:6] for d in part.split(":") if d and d not in ("@unset", "@unset@"))
        elif line.startswith("@@etcenv "):
            found.update(d for d in line.split("\t")[-1].split(":") if d)
    return sorted(found)


def facts_view(text: str):
    try:
        return shells.parse(text)
    except ValueError as exc:
        return f"ValueError: {exc}"


def verify_view(text: str, monkeypatch) -> dict:
    """What the verify program names from this trace: each directory's startup line per kind of process, each
    tracked variable's file:line per kind (the HOME the trace says, as on its host)."""
    home = re.search(r"^@@home (.*)$", text, re.M)
    monkeypatch.setenv("HOME", home.group(1) if home else "/root")
    run = verify_program.fresh(run=False)
    run.shells = trace.parse(text)     # as Run.shell_trace reads what FLEET_VERIFY_TRACE's command prints
    return {"startup_line": {kind: {d: loader.startup_line(run, kind, d) for d in directories(text)}
                             for kind in VERIFY_KINDS},
            "variable_line": {kind: {name: loader.variable_line(run, kind, name) for name in shells.TRACKED}
                              for kind in VERIFY_KINDS}}


def views(monkeypatch) -> dict:
    return {name: {"facts": facts_view(trace_text(name)), "verify": verify_view(trace_text(name), monkeypatch)}
            for name in TRACES}


@pytest.mark.parametrize("name", sorted(TRACES))
def test_both_sides_read_each_trace_as_the_parsers_it_replaced_did(name, monkeypatch):
    expected = json.loads(EXPECTED.read_text())[name]
    text = trace_text(name)
    assert json.loads(json.dumps(facts_view(text))) == expected["facts"]
    assert verify_view(text, monkeypatch) == expected["verify"]


def test_the_traces_hold_what_is_compared():
    """Each kind of line the parsers read is in at least one trace, and the verify side names something."""
    texts = "\n".join(trace_text(name) for name in TRACES)
    for mark in ("@@home ", "@@etcenv ", "@@shell ", "@@change\t", "@@set\t", "@@value ", "@@unset ", "@@cmd ", "@@py ",
                 "@@rc ", "@@ldvar ", "@@ldfind "):
        assert mark in texts, mark
    expected = json.loads(EXPECTED.read_text())
    named = [line for e in expected.values() for kinds in e["verify"].values() for by in kinds.values()
             for line in by.values() if line and not line.startswith("no startup file")]
    assert any("(via " in line for line in named) and any("/etc/environment:" in line for line in named)
    assert any("(read from " in line for line in named) and any(line.startswith("~/") for line in named)
