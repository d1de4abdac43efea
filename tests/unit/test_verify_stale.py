"""A verdict is never stale (issue 23, item 6), without SSH: the reasons a verify is stale, its verdict in the facts
record, how the table, CSV, Markdown and the HTML page show it, the gate never reusing a failed verify (bash, as
the host runs it), the variables verify reads as parts of its fingerprint, and the recap's verify column.
tests/lab/test_verify_stale.py does the same on a real lab host and asks the host."""

from __future__ import annotations

import io
import json
import subprocess
from types import MappingProxyType, SimpleNamespace

import pytest
from rich.console import Console

from fleet.connection.parallel import Outcome
from fleet.engine import HostReport
from fleet.engine.judge import Judged, record_verdict
from fleet.engine.plan import TaskReport
from fleet.env import Environment
from fleet.engine import probe
from fleet.facts import fingerprint
from fleet.report import Reporter, apply as apply_report, compare, export, html
from fleet.resources import verify_gate
from fleet.sections import Section

DRIVER = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {}  Release Build  (dvs-builder@U16)  Thu Jan  1"
PARTS = {"driver": DRIVER.format("580.95.05"), "python": "/usr/bin/python3.12 100 1",
         "torch": "/v/lib/python3.12/site-packages/torch-2.11.0+cu130.dist-info/RECORD 2d2019785ee46df8",
         "hook": "44089522b1860bd4", "ld.noninteractive": "/x", "ld.interactive": "/x", "ld.login": "/x",
         "libcuda.noninteractive": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05 16704 1",
         "libcuda.interactive": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05 16704 1",
         "libcuda.login": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05 16704 1"}
VARS = {"verify_perf": fingerprint.digest(True), "python_env": fingerprint.digest("/v")}
VERIFY = {"passed": True, "summary": "verify passed: torch_imports, cuda_available", "at": "2026-11-24T10:00:00+00:00",
          "checks": [{"name": "torch_imports", "passed": True}, {"name": "cuda_available", "passed": True}],
          "torch": {"version": "2.11.0+cu130"}, "fingerprint": "abcd",
          "fingerprint_parts": {**PARTS, **{f"var.{k}": v for k, v in VARS.items()}}}
TORCH = {"version": "2.11.0+cu130"}


def test_a_verify_that_still_describes_the_host_is_not_stale():
    assert fingerprint.stale_reasons(VERIFY, PARTS, TORCH, VARS) == []
    assert fingerprint.judged(VERIFY, [])["verdict"] == "passed"


@pytest.mark.parametrize("now, torch, variables, why", [
    ({**PARTS, "torch": "none "}, None, None, ["torch changed: 2.11.0+cu130 -> -"]),
    ({**PARTS, "torch": PARTS["torch"].replace("2d20", "ffff")}, TORCH, None,
     ["torch changed: its files differ from those verify imported (2.11.0+cu130)"]),
    ({**PARTS, "torch": "/v/torch-2.12.0.dist-info/RECORD 1"}, {"version": "2.12.0"}, None,
     ["torch changed: 2.11.0+cu130 -> 2.12.0"]),
    ({**PARTS, "driver": DRIVER.format("570.133.20")}, TORCH, None, ["driver changed: 580.95.05 -> 570.133.20"]),
    ({**PARTS, "driver": "none"}, TORCH, None, ["driver changed: 580.95.05 -> -"]),
    ({**PARTS, "libcuda.interactive": "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05 9 2",
      "libcuda.login": "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05 9 2"}, TORCH, None,
     ["libcuda.so.1 changed (interactive shells, login shells): /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05 -> "
      "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"]),
    ({**PARTS, "ld.login": "/usr/local/cuda-13.0/compat:/x", "hook": "0"}, TORCH, None,
     ["fleet's env hook changed", "LD_LIBRARY_PATH of login shells changed"]),
    (PARTS, TORCH, {**VARS, "verify_perf": fingerprint.digest(False)}, ["variable verify_perf changed"]),
])
def test_each_change_says_what_changed(now, torch, variables, why):
    assert fingerprint.stale_reasons(VERIFY, now, torch, variables) == why


def test_what_cannot_be_compared_says_nothing():
    assert fingerprint.stale_reasons({**VERIFY, "fingerprint_parts": None}, PARTS, TORCH) == []   # an older fleet
    assert fingerprint.stale_reasons(VERIFY, {}, TORCH) == []                                   # the probe failed
    assert fingerprint.stale_reasons(None, PARTS, TORCH) == []
    # the variables are compared only where the caller knows them (fleet facts with the inventory, the gate)
    assert fingerprint.stale_reasons(VERIFY, PARTS, TORCH, None) == []


def test_a_stale_verdict_is_not_passed_and_judging_again_is_idempotent():
    stale = fingerprint.judged(VERIFY, ["torch changed: 2.11.0+cu130 -> -"])
    assert stale["verdict"] == "stale" and stale["passed"] is None and stale["was_passed"] is True
    assert stale["stale"] == ["torch changed: 2.11.0+cu130 -> -"] and VERIFY["passed"] is True   # input untouched
    assert fingerprint.judged(stale, ["x"]) == {**stale, "stale": ["x"]}
    current = fingerprint.judged(stale, [])          # a verify the host vouched for again: what it said, current
    assert current["passed"] is True and current["verdict"] == "passed" and "was_passed" not in current
    failed = fingerprint.judged({**VERIFY, "passed": False}, [])
    assert failed["verdict"] == "failed" and fingerprint.judged(failed, ["y"])["was_passed"] is False


def probe_record(verify: dict | None, parts_text: str, torch_line: str) -> dict:
    sections = {"facts.verify": json.dumps(verify) if verify else "", "facts.verify_fingerprint": parts_text,
                "facts.torch": torch_line}
    return probe.parse({k: Section(k, 0, v) for k, v in sections.items()}, "h")


def test_the_facts_record_judges_the_last_verify_on_the_fingerprint_the_same_probe_took():
    now = "\n".join(f"{k} {v}" for k, v in {**PARTS, "torch": "none "}.items())
    record = probe_record(VERIFY, now, '{"installed": false}')
    assert record["torch"] is None and record["verify_fingerprint"]["torch"] == "none "
    assert record["verify"]["verdict"] == "stale" and record["verify"]["passed"] is None
    assert record["verify"]["stale"] == ["torch changed: 2.11.0+cu130 -> -"]
    same = "\n".join(f"{k} {v}" for k, v in PARTS.items())
    torch = json.dumps({"installed": True, "version": "2.11.0+cu130", "path": "/v/torch", "cuda": "13.0"})
    assert probe_record(VERIFY, same, torch)["verify"]["verdict"] == "passed"
    assert probe_record(None, same, torch)["verify"] is None


def stale_record() -> dict:
    verify = fingerprint.judged(VERIFY, ["torch changed: 2.11.0+cu130 -> -", "variable verify_perf changed"])
    return {"host": "a", "torch": None, "verify": verify, "verify_fingerprint": PARTS}


def test_tables_and_exports_say_stale_and_why_never_yes():
    good = {"host": "b", "torch": TORCH, "verify": fingerprint.judged(VERIFY, []), "verify_fingerprint": PARTS}
    rows = compare.flatten(stale_record())
    assert rows["verify.passed"] == "stale"
    assert rows["verify.stale"] == "torch changed: 2.11.0+cu130 -> -; variable verify_perf changed"
    assert rows["verify.summary"] == "stale (was: verify passed: torch_imports, cuda_available)"
    assert not any(path.startswith("verify_fingerprint") or path in ("verify.verdict", "verify.was_passed")
                   for path in rows)
    assert compare.flatten(good)["verify.passed"] == "yes" and compare.flatten(good)["verify.stale"] == "no"
    comparison = compare.compare({"a": stale_record(), "b": good})
    assert "verify.passed,yes,stale,yes" in export.csv_text(comparison, {}).replace('"', "")
    assert "| **verify.passed** | **stale** | **yes** |" in export.markdown(comparison, {})
    out = io.StringIO()
    Reporter(Environment(console=Console(file=out, width=200), err_console=Console(file=io.StringIO()))).print(
        compare.render(comparison))
    line = next(line for line in out.getvalue().splitlines() if line.startswith("verify.passed"))
    assert line.split("\t") == ["verify.passed", "stale", "yes"]


def test_the_html_page_says_stale_with_each_reason_and_no_green_passed():
    records = {"a": stale_record()}
    page = html.render(compare.compare(records), records, {}, generated="now", version="0")
    verify = page[page.index('<table id="verify">'):]
    verify = verify[:verify.index("</table>")]
    assert '<span class="stale">stale</span> (it passed when it ran)' in verify
    assert "<br>torch changed: 2.11.0+cu130 -&gt; -<br>variable verify_perf changed" in verify
    assert 'class="pass"' not in verify


# ---- the gate, as the host runs it --------------------------------------------------------------------------

ENV = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}


def run_gate(tmp_path, variables=None, before: str = "") -> verify_gate.Gate:
    check = "echo '{\"passed\": false}'; exit 1"
    script = before + verify_gate.gated(check, str(tmp_path / "venv"), 86400, str(tmp_path / "verify.json"),
                                        variables=variables)
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600,
                         env={**ENV, "HOME": str(tmp_path)})
    return verify_gate.read(res.stdout)


def keep(tmp_path, gate: verify_gate.Gate, passed: bool) -> None:
    """The host's record as the engine and `fleet script` write it (json indent=1): each check has its own
    "passed" too, one level deeper, which must not count."""
    (tmp_path / "verify.json").write_text(json.dumps({
        "passed": passed, "checks": [{"name": "torch_imports", "passed": True}], "fingerprint": gate.fingerprint,
        "fingerprint_parts": gate.parts}, indent=1) + "\n")


def test_a_failed_verify_is_never_reused_even_when_nothing_changed(tmp_path):
    first = run_gate(tmp_path)
    keep(tmp_path, first, passed=False)
    again = run_gate(tmp_path)
    assert not again.reused and again.fingerprint == first.fingerprint and '"passed": false' in again.output
    last = {**json.loads((tmp_path / "verify.json").read_text()), "at": "2026-11-24T10:00:00+00:00"}
    assert verify_gate.run_reason(last, again, 86400, None, None) == \
        "the last verify failed (a failed verify is never reused)"
    keep(tmp_path, first, passed=True)
    assert run_gate(tmp_path).reused


def test_the_variables_verify_reads_are_parts_of_its_fingerprint(tmp_path):
    on = run_gate(tmp_path, VARS)
    assert on.parts["var.verify_perf"] == VARS["verify_perf"] and on.parts["driver"]
    keep(tmp_path, on, passed=True)
    assert run_gate(tmp_path, VARS).reused
    off = run_gate(tmp_path, {**VARS, "verify_perf": fingerprint.digest(False)})
    assert not off.reused and off.fingerprint != on.fingerprint
    assert verify_gate.changed_parts(on.parts, off.parts) == ["variable verify_perf"]


def test_inside_the_probe_the_gate_takes_the_fingerprint_the_facts_took_for_the_same_venv(tmp_path):
    venv = str(tmp_path / "venv")
    taken = f"fleet_fp_host='driver taken by the facts'\nfleet_fp_host_env={venv}\n"
    assert run_gate(tmp_path, before=taken).parts == {"driver": "taken by the facts"}
    other = "fleet_fp_host='driver taken by the facts'\nfleet_fp_host_env=/another/venv\n"
    assert run_gate(tmp_path, before=other).parts["driver"] != "taken by the facts"   # another venv: its own


def test_the_facts_probe_and_the_gate_alone_take_the_same_parts(tmp_path):
    (tmp_path / ".bashrc").write_text("export LD_LIBRARY_PATH=/opt/extra\n")
    vars_ = {"python_env": str(tmp_path / "venv")}
    res = subprocess.run(["bash", "-c", probe.script(probe.Needs.of(vars_))], capture_output=True, text=True, timeout=600,
                         env={**ENV, "HOME": str(tmp_path)})
    from fleet.sections import split_sections

    record = probe.parse(split_sections(res.stdout), "h")
    assert not [e for e in record["probe"]["errors"] if "verify_fingerprint" in e]
    assert record["verify_fingerprint"] == run_gate(tmp_path).parts
    assert record["verify_fingerprint"]["ld.interactive"] == "/opt/extra"


# ---- the recap's verify column: this run's verdict, or why verify did not run -----------------------------------

def observed(tasks, checks=(), verify=None):
    return SimpleNamespace(tasks=tuple(tasks), checks=MappingProxyType({t: None for t in checks}),
                           facts={"verify": verify} if verify else {})


def task(id_, *, enabled=True, writes=True, skip=None):
    from fleet.resources.verify import Verify

    return SimpleNamespace(id=id_, enabled=enabled, skip_reason=skip,   # verify's own answer to "was it reused"
                           resource=SimpleNamespace(writes_record=writes, reused=lambda facts: Verify.reused(None, facts)))


def judged(status, reason="r"):
    return Judged((TaskReport("verify", "torch works", status, reason, id="verify.0"),))


@pytest.mark.parametrize("obs, result, check_mode, skipped, verdict", [
    (observed([task("torch.0", writes=False)]), None, False, None, "skipped: role not in this run"),
    (observed([task("verify.0", enabled=False, skip="role condition is false: x")]), None, False, None,
     "skipped: role condition is false: x"),
    (observed([task("verify.0")]), judged("skipped", "not run: host failed earlier (torch: t)"), False,
     "host failed earlier (torch: t)", "skipped: host failed earlier (torch: t)"),
    (observed([task("verify.0")], checks=["verify.0"]), judged("ok"), False, "host failed earlier (torch: t)",
     "not counted: host failed earlier (torch: t)"),
    (observed([task("verify.0")], checks=["verify.0"]), judged("ok"), False, None, "passed"),
    (observed([task("verify.0")], checks=["verify.0"], verify={"reused": True}), judged("ok"), False, None,
     "passed (reused)"),
    (observed([task("verify.0")], checks=["verify.0"]), judged("failed"), False, None, "failed"),
    (observed([task("verify.0")], checks=["verify.0"]), judged("changed"), True, None, "would fail"),
    (observed([task("verify.0")], checks=["verify.0"]), judged("ok"), True, None,
     "passed (check mode: no perf smoke)"),
])
def test_the_recap_verdict_is_this_run_s(obs, result, check_mode, skipped, verdict):
    assert record_verdict(obs, result, check_mode, skipped=skipped) == verdict


def test_the_recap_column_prints_the_run_s_verdict_never_the_facts_last_one():
    out = io.StringIO()
    reporter = Reporter(Environment(console=Console(file=out, width=200), err_console=Console(file=io.StringIO())))
    facts = {"verify": {"passed": True}}        # the facts' last verify passed; this run's task failed
    failed = HostReport("h", False, (TaskReport("torch", "t", "failed", "x", id="torch.0"),), facts=facts,
                        verify="skipped: host failed earlier (torch: t)")
    fine = HostReport("g", False, (), facts=facts, verify="passed (reused)")
    apply_report.print_apply(reporter, {"h": Outcome("h", value=failed), "g": Outcome("g", value=fine)},
                             json_out=False, show_diff=False, check=False)
    rows = {line.split("\t")[0]: line.split("\t") for line in out.getvalue().splitlines() if "\t" in line}
    assert rows["h"][5] == "skipped: host failed earlier (torch: t)" and rows["g"][5] == "passed (reused)"
    assert failed.to_json()["verify"] == "skipped: host failed earlier (torch: t)"
