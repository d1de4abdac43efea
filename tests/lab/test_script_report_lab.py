"""Pull mode reports back (issue 46): a lab pod runs `fleet script --report URL` as its start command, with the
fleet's token only in its environment, and appears in `fleet facts` on the controller with its verdict, its
driver (as the pod itself reads it) and its history, through a real `fleet serve`; taken down, it shows expired.
The pod is a converged one (conftest's converged_fresh, shared with other modules): what is proven here is the report
of each start, not a fresh pod's first converge by its script (test_script_lab.py and test_template_script_lab.py
prove that on fresh pods)."""

from __future__ import annotations

import io
import json
import re
import time

from datetime import datetime, timezone

import yaml
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.inventory import load_inventory
from fleet.store import open_store, settings
from fleet_lab.host import LabHost
from fleet_lab.report_server import ServeProcess

POD = "pod-570"
TOKEN = "lab-fleet-report-token-5f0c1e2d3b4a"
# as a pod template's start command: a bare environment, the token in it from the template's secret (a file
# here), never on the script's command line nor in its text
START = ("env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "
         "bash -c 'FLEET_REPORT_TOKEN=$(cat /run/fleet-template-secret) exec bash /root/fleet.sh'")


def fleet(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=240, color_system=None, force_terminal=True),
                      err_console=Console(file=err, width=240, color_system=None, soft_wrap=True))
    return main([str(a) for a in argv], env), out.getvalue(), err.getvalue()


def facts_json(inventory, *argv) -> dict:
    code, out, err = fleet("facts", inventory, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def sh_fails(pod, lab) -> bool:
    """The pod is gone as an SSH client finds it: a connection to it fails."""
    try:
        with lab.connect(pod) as conn:
            conn.run("true")
    except Exception:   # noqa: BLE001 - refused, reset or timed out: gone
        return True
    return False


def test_a_pod_reports_each_start_and_shows_in_fleet_facts_then_expires(lab, tmp_path, monkeypatch, converged_fresh):
    monkeypatch.delenv("FLEET_STORE", raising=False)
    doc = yaml.safe_load(lab.inventory_path.read_text())
    doc["store"] = {"url": "sqlite:///history.sqlite3", "expire_after": "2h"}
    inventory = tmp_path / "lab.yaml"
    inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
    store_url = settings(load_inventory(inventory)).url
    server = ServeProcess(store_url, TOKEN, cwd=tmp_path).start()
    try:
        code, report = converged_fresh(POD)
        assert code == 0, json.dumps(report["hosts"][POD])[-3000:]
        code, _, err = fleet("script", inventory, "--limit", POD, "--report", server.url, "-o", tmp_path / "fleet.sh")
        assert code == 0, err
        text = (tmp_path / "fleet.sh").read_text()
        assert TOKEN not in text
        with lab.connect(POD) as conn:
            conn.write_file("/root/fleet.sh", text, mode=0o755)
            conn.write_file("/run/fleet-template-secret", TOKEN + "\n", mode=0o600)
            first = conn.run(START)
            second = conn.run(START)
            # what the pod itself says: its kernel driver, and the verify record its start script left
            driver = re.search(r"Kernel Module(?: for \S+)?\s+(\d+(?:\.\d+)+)",
                               conn.run("cat /proc/driver/nvidia/version").stdout)[1]
            verify = json.loads(conn.run("cat /var/lib/fleet/verify.json").stdout)
            listed = conn.run("nvidia-smi -L").stdout.count("GPU ")         # the GPUs the pod's nvidia-smi lists
            spool = conn.run("ls -A /var/lib/fleet/reports").stdout.split()
        for run in (first, second):
            assert run.exit == 0, run.stdout[-3000:] + run.stderr[-2000:]
            assert "report: 1 sent, 0 kept to send next time, 0 refused" in run.stdout
            assert run.stdout.splitlines()[-1].startswith("changed=")     # still the last line
        assert second.stdout.splitlines()[-1] == "changed=0"
        assert spool == [] and verify["passed"] is True

        found = facts_json(inventory, "--where", "verify.passed == true", "--where", f"driver.version == {driver}")
        (host,) = found["hosts"]
        assert (host["host"], host["status"], host["kind"], host["driver"]) == (POD, "ok", "script", driver)
        assert host["expired"] is False
        pod_said = host["health"]                  # the pod's own report carries its GPU health (issue 46)
        with open_store(store_url) as store:
            (document,) = store.rows("SELECT document FROM reports WHERE host = ? ORDER BY at_s DESC LIMIT 1", (POD,))[0]
        kept = document if isinstance(document, dict) else json.loads(document)
        assert len(kept["health"]["gpus"]) == listed >= 1 and "health_sections" not in kept
        history = facts_json(inventory, "--history", POD)["history"]
        assert [(row["kind"], row["status"], row["verify"]) for row in history][0] == ("script", "ok", True)
        with open_store(store_url) as store:        # each start's report once, each change a row
            assert store.rows("SELECT COUNT(*) FROM receipts WHERE host = ?", (POD,))[0][0] == 2
            assert store.rows("SELECT COUNT(*) FROM reports WHERE host = ?", (POD,))[0][0] == len(history)
        code, shown, _ = fleet("facts", inventory, "--history", POD)
        assert code == 0 and POD in shown and "script" in shown
        assert facts_json(inventory, "--failed")["hosts"] == []

        # a controller's `fleet health` lands in the same store, over what the pod reported
        code, out, err = fleet("health", inventory, "--limit", POD, "--json")
        verdict = json.loads(out)["hosts"][POD]["verdict"]
        assert pod_said == verdict                 # what the pod reported is what `fleet health` says of it
        assert kept["health"]["findings"] == json.loads(out)["hosts"][POD]["findings"]
        found = facts_json(inventory, "--where", f"health.verdict == {verdict}", "--where", f"driver.version == {driver}")
        (host,) = found["hosts"]
        assert (host["host"], host["kind"], host["health"]) == (POD, "health", verdict)

        LabHost(POD, lab.root).stop()               # the pod goes away and reports no more
        assert sh_fails(POD, lab)
        assert facts_json(inventory, "--stale", "1h")["hosts"] == []         # not yet: seen within the hour
        later = datetime.fromtimestamp(time.time() + 3 * 3600, timezone.utc).isoformat()   # the clock, not a sleep
        (gone,) = facts_json(inventory, "--stale", "1h", "--now", later)["hosts"]
        assert (gone["host"], gone["expired"]) == (POD, True)
        code, shown, _ = fleet("facts", inventory, "--stale", "1h", "--now", later)
        assert "expired" in shown
    finally:
        server.kill()
        lab.reset([POD])
