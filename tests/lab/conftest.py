"""Lab tests: real sshd hosts (Thor, Spark, two H100 pods) in their own namespaces, reached through
fleet's own SSH connection. Needs root and openssh-server (CI runs as root).

The `lab` fixture (session scope) starts a TEST lab once per test session and stops it at the end:

    def test_something(lab):
        lab.inventory_path      # the test inventory: inventories/lab.yaml moved to 127.0.2.x (see below)
        lab.inventory           # that inventory, loaded (fleet.inventory.Inventory)
        lab.root                # the test lab's FLEET_LAB_ROOT (also set in os.environ for the session)
        lab.reset(["thor"])     # fresh hosts: forget everything they wrote (do this before applying roles)
        with lab.connect("thor") as conn:   # fleet.connection to one host
            conn.run("uname -m")

Set FLEET_TEST_LAB_NET=127.0.8 (any 127.a.b) to run a second test session at the same time on another
subnet with its own root; sessions on the same subnet take turns (a lock; the second one waits). Under pytest-xdist
(`-n 2`, the README's command) worker gwN moves the net's second part up by N (127.0.2, 127.1.2): a lab each.

Hosts start fresh for the session, not per test: a test that writes on a host and needs a clean one
calls `lab.reset([...])` first (about 0.2 s a host). The test lab never touches a demo lab (127.0.1.x,
/var/lib/fleet-lab), and a run that was killed is cleaned up by the next one (its root is fixed:
/tmp/fleet-lab-test-<uid>). Implementation: fleet_lab/testing.py.
"""

from __future__ import annotations

import pytest

from fleet_lab import testing


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    started = testing.start_test_lab(tmp_path_factory.mktemp("lab-inventory"))
    try:
        yield started
    finally:
        testing.stop_test_lab(started)


@pytest.fixture(scope="session")
def fresh_apply(lab, converged_fresh, tmp_path_factory):
    """The four lab hosts fresh, then `fleet apply --check`, `fleet apply --check --detailed-exitcode`, `fleet apply`
    and `fleet apply --json` again: {run: (exit status, document, stderr)}, "records": each host's own verify record
    (/var/lib/fleet/verify.json, as its verify run wrote it) read right after the first apply, and "text": {run:
    (exit status, stdout, stderr)} of the first three as a person sees them at a 100-column terminal, and "bin":
    {"before"|"after check"|"after apply": {host: what /var/lib/fleet/bin holds}}, each host's own ls and sha256sum
    (and any check's temporary copy) before the checks, after them and after the first apply. A fresh
    converge of the four hosts is the costliest step of the suite, so it is made once: test_apply_lab.py,
    test_check_plan_lab.py, test_output_budget_lab.py and test_compat_gate_lab.py ask their questions of these
    same runs. The first three
    print text; their documents are what each run's log keeps of each host (fleet.record.runlog: the same fields as
    --json, and the second apply shows the two agree). Then the four converged hosts are kept for converged_fresh:
    a module that needs one converged borrows it instead of converging it again."""
    import json
    import shutil

    from fleet.facts.software import VERIFY_PATH
    from helpers import fleet, fleet_json, logged_documents

    hosts = ("thor", "spark", "pod-570", "pod-580")
    lab.reset(list(hosts))
    shutil.rmtree(lab.inventory.facts_dir, ignore_errors=True)
    inv = str(lab.inventory_path)
    logs = tmp_path_factory.mktemp("fresh-apply-logs")
    ls_bin = "ls -la /var/lib/fleet/bin 2>&1; sha256sum /var/lib/fleet/bin/* 2>&1; ls -d /tmp/fleet-check.* 2>&1"
    runs, text, bins = {}, {}, {}
    for name, flags in (("check", ["--check"]), ("check_exit", ["--check", "--detailed-exitcode"]), ("first", [])):
        if name != "check_exit":   # as `docker exec` starts a process: no SSH, no fleet
            bins["before" if name == "check" else "after check"] = {
                host: lab.exec(host, ["sh", "-c", ls_bin]).stdout for host in hosts}
        log = logs / f"{name}.jsonl"
        text[name] = fleet("apply", inv, *flags, "--log", str(log), width=100, terminal=True)
        runs[name] = (text[name][0], logged_documents(log), text[name][2])
    bins["after apply"] = {host: lab.exec(host, ["sh", "-c", ls_bin]).stdout for host in hosts}
    runs["text"], runs["bin"] = text, bins
    runs["records"] = {}
    for name in hosts:
        with lab.connect(name) as conn:
            result = conn.run(f"cat {VERIFY_PATH}")
            runs["records"][name] = json.loads(result.stdout) if result.exit == 0 else None
    log = logs / "second.jsonl"
    code, doc = fleet_json("apply", inv, "--log", str(log))
    logged = logged_documents(log)
    assert logged == {"hosts": doc["hosts"], "stats": doc["stats"]}, "the run log and --json disagree"
    runs["second"] = (code, doc, "")
    if runs["first"][0] == 0:
        converged_fresh.keep(hosts, runs["first"][1])
    return runs


@pytest.fixture(scope="session")
def converged_fresh(lab, tmp_path_factory):
    """converged_fresh(name) -> (exit status, JSON document) of `fleet apply --limit NAME` of the lab inventory that
    leaves lab host NAME as a fresh host converged, its facts record written by that run. The session's first call
    for a host resets it and applies (the real converge), then keeps its writes (fleet_lab.control.snapshot); a
    later call puts those writes back (control.restore: the host as that converge left it, restarted) and applies,
    which must change nothing. Modules that need a converged host to work on, not a converge to look at, share one
    converge this way instead of each making its own. converged_fresh.fresh[NAME]: (exit status, document) of that
    real converge. converged_fresh.keep(NAMES, document): hosts another real converge of the lab inventory just left
    converged (fresh_apply's, whose `document` has a host's "hosts" and "stats"), kept as if this had converged
    them. converged_fresh.restore(NAMES): each host put back as its converge left it (converged first where none
    was kept), restarted, nothing applied: the caller's own apply must then change nothing."""
    import json

    from fleet_lab import control
    from fleet_lab.host import LabHost
    from helpers import fleet_json

    kept = tmp_path_factory.mktemp("converged-hosts")
    inv = str(lab.inventory_path)

    def converge(name: str) -> tuple[int, dict]:
        again = (kept / name).is_dir() and LabHost(name, lab.root).running()   # (a host taken down: converge anew)
        if again:
            control.restore(lab.inventory_path, [name], kept, lab.root)
        else:
            lab.reset([name])
        (lab.inventory.facts_dir / f"{name}.json").unlink(missing_ok=True)
        code, doc = fleet_json("apply", inv, "--limit", name)
        if again:   # the kept writes are a converged host: the apply finds nothing to change
            host = doc["hosts"][name]
            assert host["changed"] == 0, json.dumps(host, indent=1)[-3000:]
        elif code == 0:
            control.snapshot(lab.inventory_path, [name], kept, lab.root)
            converge.fresh[name] = (code, doc)
        return code, doc

    def keep(names, doc: dict) -> None:
        control.snapshot(lab.inventory_path, list(names), kept, lab.root)
        for name in names:
            converge.fresh[name] = (0, {"hosts": {name: doc["hosts"][name]}, "stats": {name: doc["stats"][name]}})

    def restore(names) -> None:
        for name in names:
            if (kept / name).is_dir() and LabHost(name, lab.root).running():
                control.restore(lab.inventory_path, [name], kept, lab.root)
            else:
                code, doc = converge(name)
                assert code == 0, json.dumps(doc["hosts"][name], indent=1)[-3000:]

    converge.fresh = {}
    converge.keep = keep
    converge.restore = restore
    return converge
