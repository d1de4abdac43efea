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
def fresh_apply(lab):
    """The four lab hosts fresh, then `fleet apply --check`, `fleet apply` and `fleet apply` again, each --json:
    {run: (exit status, document, stderr)}, and "records": each host's own verify record (/var/lib/fleet/verify.json,
    as its verify run wrote it) read right after the first apply. test_apply_lab.py and test_check_plan_lab.py ask
    their questions of these same runs: a fresh converge of the four hosts is the costliest step of the suite."""
    import io
    import json
    import shutil

    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment
    from fleet.facts.software import VERIFY_PATH

    def fleet_json(*argv):
        out, err = io.StringIO(), io.StringIO()
        env = Environment(console=Console(file=out, width=240),
                          err_console=Console(file=err, width=240, soft_wrap=True))   # whole sentences
        code = main([*argv, "--json"], env)
        try:
            return code, json.loads(out.getvalue()), err.getvalue()
        except ValueError:
            raise AssertionError(f"not JSON (exit {code}):\n{out.getvalue()}\n{err.getvalue()}") from None

    hosts = ("thor", "spark", "pod-570", "pod-580")
    lab.reset(list(hosts))
    shutil.rmtree(lab.inventory.facts_dir, ignore_errors=True)
    inv = str(lab.inventory_path)
    runs = {"check": fleet_json("apply", inv, "--check"), "first": fleet_json("apply", inv)}
    runs["records"] = {}
    for name in hosts:
        with lab.connect(name) as conn:
            result = conn.run(f"cat {VERIFY_PATH}")
            runs["records"][name] = json.loads(result.stdout) if result.exit == 0 else None
    runs["second"] = fleet_json("apply", inv)
    return runs


@pytest.fixture(scope="session")
def converged_fresh(lab, tmp_path_factory):
    """converged_fresh(name) -> (exit status, JSON document) of `fleet apply --limit NAME` of the lab inventory that
    leaves lab host NAME as a fresh host converged, its facts record written by that run. The session's first call
    for a host resets it and applies (the real converge), then keeps its writes (fleet_lab.control.snapshot); a
    later call puts those writes back (control.restore: the host as that converge left it, restarted) and applies,
    which must change nothing. Modules that need a converged host to work on, not a converge to look at, share one
    converge this way instead of each making its own. converged_fresh.fresh[NAME]: (exit status, document) of that
    real converge."""
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

    converge.fresh = {}
    return converge
