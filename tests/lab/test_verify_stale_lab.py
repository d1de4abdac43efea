"""A verdict is never stale (issue 23, item 6), on a real lab host: what fleet prints about the last verify is
checked against the host itself (pip, the host's verify record), never against fleet's own verdict alone.

- torch uninstalled through pip on a converged host: `fleet facts` (record, printed table, --json, HTML) says the
  verify is stale and why ("torch changed: 2.11.0+cu130 -> -"), never "passed";
- a run whose task fails: the recap's verify column says verify did not run and why, the host's verify record
  is left as it was; the next good run re-runs verify and it passes again;
- verify_perf changed: verify runs again and says which variable; a failed verify is run again by the next apply
  (never reused), and `fleet facts` calls a verdict taken under another verify_perf stale."""

from __future__ import annotations

import json

import pytest

from helpers import ok, sh
from test_apply_lab import fleet, fleet_json

HOST = "pod-580"
VENV_PY = "/opt/fleet/venv/bin/python"
# the perf smoke on the lab's stand-in torch fails (its torch.cuda has no mem_get_info): a real failing verify,
# set by the variable the issue names
PERF_ON = "verify_perf: true"


def host_verify(lab) -> dict:
    """The verify record the HOST keeps (/var/lib/fleet/verify.json), read over SSH."""
    return json.loads(ok(lab, HOST, "cat /var/lib/fleet/verify.json"))


def record(lab) -> dict:
    return json.loads((lab.inventory.facts_dir / f"{HOST}.json").read_text())


def apply(inventory, *extra: str, code: int = 0) -> dict:
    got, doc = fleet_json("apply", str(inventory), "--limit", HOST, *extra)
    assert got == code, json.dumps(doc, indent=1)[-3000:]
    return doc["hosts"][HOST]


def verify_task(host_doc: dict) -> dict:
    return next(t for t in host_doc["tasks"] if t["role"] == "verify")


def zero_changes(host_doc: dict) -> None:
    assert host_doc["changed"] == 0 and host_doc["failed"] == 0, host_doc


def perf_inventory(lab):
    """The lab inventory with verify_perf on (the lab's says false), beside it (same facts dir, key, known_hosts)."""
    text = lab.inventory_path.read_text()
    assert "verify_perf: false" in text
    path = lab.inventory_path.with_name("lab-perf-on.yaml")
    path.write_text(text.replace("verify_perf: false", PERF_ON))
    return path


def torch_installed(lab) -> bool:
    """pip on the host, asked directly."""
    return sh(lab, HOST, f"{VENV_PY} -m pip show torch").exit == 0


@pytest.fixture(scope="module")
def converged(lab, converged_fresh):
    code, doc = converged_fresh(HOST)       # a fresh host converged (conftest.py: shared with other modules)
    assert code == 0, json.dumps(doc, indent=1)[-3000:]
    zero_changes(apply(lab.inventory_path))
    assert host_verify(lab)["passed"] is True and torch_installed(lab)
    return lab


def test_uninstalled_torch_makes_the_verdict_stale_in_every_view_then_apply_restores_and_reverifies(converged, tmp_path):
    lab = converged
    version = record(lab)["torch"]["version"]
    assert version and record(lab)["verify"]["verdict"] == "passed"
    ok(lab, HOST, f"{VENV_PY} -m pip uninstall -y torch")
    assert not torch_installed(lab)                                   # the host says: torch is gone
    assert host_verify(lab)["passed"] is True                         # ... and its old record still says passed

    code, out, err = fleet("facts", str(lab.inventory_path), "--limit", HOST)
    assert code == 0, err
    rows = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    why = f"torch changed: {version} -> -"
    assert rows["torch"] == "-"                                       # (no torch: the record's torch is null)
    assert rows["verify.passed"] == "stale" and why in rows["verify.stale"]
    assert rows["verify.summary"].startswith("stale (was: verify passed")
    kept = record(lab)["verify"]
    assert kept["verdict"] == "stale" and kept["passed"] is None and kept["was_passed"] is True
    assert why in kept["stale"]

    code, doc = fleet_json("facts", str(lab.inventory_path), "--limit", HOST)
    assert code == 0 and doc["hosts"][HOST]["verify"]["verdict"] == "stale"
    assert why in doc["hosts"][HOST]["verify"]["stale"] and doc["hosts"][HOST]["verify"]["passed"] is None

    page = tmp_path / "facts.html"
    code, _, err = fleet("facts", str(lab.inventory_path), "--limit", HOST, "--cached", "--format", "html",
                         "-o", str(page))
    assert code == 0, err
    html = page.read_text()
    # the verify row of the Verify table (its GPU health row above says "healthy" in class "pass": not verify's)
    table = html[html.index('<table id="verify">'):html.index("</table>", html.index('<table id="verify">'))]
    start = table.index('<th class="fact" scope="row">verify</th>')
    verify_row = table[start:table.index("</tr>", start)]
    assert '<span class="stale">stale</span> (it passed when it ran)' in verify_row
    assert f"torch changed: {version} -&gt; -" in verify_row and 'class="pass"' not in verify_row

    code, out, _ = fleet("facts", str(lab.inventory_path), "--limit", HOST, "--cached", "--format", "csv")
    assert code == 0 and "verify.passed,no,stale" in out.replace('"', "")

    # apply puts torch back; verify runs again (its fingerprint changed) and passes: no longer stale
    host_doc = apply(lab.inventory_path)
    assert torch_installed(lab)
    assert host_doc["verify"] == "passed"
    assert host_verify(lab)["reason"].startswith("ran: ")
    assert record(lab)["verify"]["verdict"] == "passed" and record(lab)["verify"]["stale"] == []
    zero_changes(apply(lab.inventory_path))
    code, out, _ = fleet("facts", str(lab.inventory_path), "--limit", HOST)
    rows = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    assert rows["verify.passed"] == "yes" and rows["verify.stale"] == "no"


def test_a_run_whose_task_fails_never_shows_verify_passed_and_leaves_the_host_record(converged):
    lab = converged
    before = host_verify(lab)
    # the index and PyPI unreachable, and no installer cache to install torch from without them (uv reuses its
    # cached index answers and wheels: with them, the pinned torch comes back and nothing fails)
    ok(lab, HOST, f"{VENV_PY} -m pip uninstall -y torch; rm -rf /root/.cache/uv /root/.cache/pip; "
                  "cp /etc/hosts /tmp/hosts.bak; "
                  "sed -i -E 's/^[0-9.]+([[:space:]].*(download\\.pytorch\\.org|pypi\\.org|files\\.pythonhosted\\.org))/"
                  "127.0.0.9\\1/' /etc/hosts")
    try:
        code, out, err = fleet("apply", str(lab.inventory_path), "--limit", HOST, "-v")
        assert code != 0, out[-4000:] + err[-4000:]
        recap = next(line for line in out.splitlines() if line.startswith(f"{HOST}\t"))
        assert "skipped: host failed earlier (torch:" in recap and "passed" not in recap
        host_doc = apply(lab.inventory_path, code=1)
        assert host_doc["verify"].startswith("skipped: host failed earlier (torch:")
        assert verify_task(host_doc)["status"] == "skipped"
        assert not torch_installed(lab)
        after = host_verify(lab)                                     # not run, so not rewritten
        assert after["at"] == before["at"] and after["fingerprint"] == before["fingerprint"]
        assert record(lab)["verify"]["verdict"] == "stale"
    finally:
        ok(lab, HOST, "cp /tmp/hosts.bak /etc/hosts")
    host_doc = apply(lab.inventory_path)
    assert host_doc["verify"] == "passed" and torch_installed(lab)
    assert host_verify(lab)["at"] != before["at"]
    zero_changes(apply(lab.inventory_path))


def test_verify_perf_changed_reruns_verify_a_failed_one_is_never_reused_and_facts_call_it_stale(converged):
    lab = converged
    perf_on = perf_inventory(lab)
    assert host_verify(lab)["passed"] is True

    host_doc = apply(perf_on, code=1)                 # the variable changed: verify runs, and its perf smoke fails
    assert host_doc["verify"] == "failed" and verify_task(host_doc)["status"] == "failed"
    first = host_verify(lab)
    assert first["passed"] is False and "variable verify_perf" in first["reason"]
    code, out, _ = fleet("apply", str(perf_on), "--limit", HOST)
    assert code != 0
    recap = next(line for line in out.splitlines() if line.startswith(f"{HOST}\t"))
    assert recap.split("\t")[5] == "failed"
    again = host_verify(lab)                          # nothing changed, but a failed verify is run again
    assert again["at"] >= first["at"] and again["reused"] is False
    assert again["reason"] == "ran: the last verify failed (a failed verify is never reused)"

    # `fleet facts` under the lab's own inventory (verify_perf false): that failure was for another verify_perf
    code, out, _ = fleet("facts", str(lab.inventory_path), "--limit", HOST)
    rows = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
    assert rows["verify.passed"] == "stale" and rows["verify.stale"] == "variable verify_perf changed"

    host_doc = apply(lab.inventory_path)              # back: verify runs again, names the variable, and passes
    assert host_doc["verify"] == "passed"
    back = host_verify(lab)
    assert back["passed"] is True and "variable verify_perf" in back["reason"]
    host_doc = apply(lab.inventory_path)
    zero_changes(host_doc)
    assert host_doc["verify"] == "passed (reused)" and host_verify(lab)["at"] == back["at"]


def test_the_recap_says_verify_was_not_in_this_run(converged):
    host_doc = apply(converged.inventory_path, "--roles", "torch")
    assert host_doc["verify"] == "skipped: role not in this run"
    assert not any(t["role"] == "verify" for t in host_doc["tasks"])


def test_a_changed_kernel_driver_makes_the_verdict_stale_until_it_is_back(converged):
    """The kernel driver the host shows changes under a converged host (the file the lab binds on /proc/driver,
    rewritten in place: what a pod restarted on another host shows): the verdict is stale, 'driver changed'."""
    from fleet_lab.paths import host_dir

    lab = converged
    zero_changes(apply(lab.inventory_path))
    version = host_dir(HOST, lab.root) / "proc-driver" / "nvidia" / "version"
    original = version.read_text()
    assert "580.159.04" in ok(lab, HOST, "head -n 1 /proc/driver/nvidia/version")
    with open(version, "r+") as fh:                   # same file, new text: the bind shows it at once
        fh.write(original.replace("580.159.04", "580.165.02"))
    try:
        assert "580.165.02" in ok(lab, HOST, "head -n 1 /proc/driver/nvidia/version")   # the host says so
        code, out, _ = fleet("facts", str(lab.inventory_path), "--limit", HOST)
        assert code == 0
        rows = dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)
        assert rows["driver.version"] == "580.165.02"
        assert rows["verify.passed"] == "stale" and rows["verify.stale"] == "driver changed: 580.159.04 -> 580.165.02"
        # the user-space driver no longer matches the kernel module (the stand-in's NVML says so, as a real one
        # does): apply refuses, and its recap says verify did not run, and why; the record stays stale
        host_doc = apply(lab.inventory_path, code=1)
        assert host_doc["refuse"] and host_doc["verify"] == "skipped: refused"
        assert record(lab)["verify"]["verdict"] == "stale"
    finally:
        with open(version, "r+") as fh:
            fh.write(original)
    assert "580.159.04" in ok(lab, HOST, "head -n 1 /proc/driver/nvidia/version")
    host_doc = apply(lab.inventory_path)              # the driver verify ran on is back: its verdict holds again
    zero_changes(host_doc)
    assert host_doc["verify"] == "passed (reused)" and record(lab)["verify"]["verdict"] == "passed"


def test_the_same_bootstrap_again_runs_a_failed_verify_again(lab, tmp_path, isolated_home, converged_fresh):
    """bootstrap's advice after a failure is "run the same bootstrap again": that must not replay the failed
    verify from the host's record. verify_perf on fails the stand-in's perf smoke; the second bootstrap runs
    verify again (the host's record says so: a new time, not reused, why). The pod starts as a converge left it
    (converged_fresh.restore: no second fresh converge for the suite); verify_perf on is a change verify's
    fingerprint holds, so the first bootstrap runs verify too, and it fails."""
    from test_bootstrap_lab import POD, fleet as fleet_in, pods_inventory, ssh_line

    converged_fresh.restore([POD])
    pods_inventory(lab, isolated_home, verify_perf=True)     # the default inventory of the test's HOME
    runs = []
    for _ in range(2):
        code, out, err = fleet_in(tmp_path, "bootstrap", ssh_line(lab, POD), "--json")
        assert code != 0, out[-2000:] + err[-2000:]
        host = next(iter(json.loads(out)["hosts"].values()))
        assert host["bootstrap"]["verify"]["passed"] is False and host["verify"] == "failed"
        assert "run the same bootstrap again" in json.dumps(host)
        runs.append(json.loads(ok(lab, POD, "cat /var/lib/fleet/verify.json")))   # the host's own record
    assert runs[0]["passed"] is False and runs[1]["passed"] is False
    assert runs[1]["reused"] is False and runs[1]["at"] >= runs[0]["at"]
    assert runs[1]["reason"] == "ran: the last verify failed (a failed verify is never reused)"
