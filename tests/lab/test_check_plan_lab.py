"""`--check` is the plan (issue 25): on fresh hosts, task by task, it counts what the apply that follows counts
(to change, in state, skipped), verify included: apply judges verify after the changes and counts it "ok" when
it passes, so the plan counts it "ok" too, saying it is judged after the changes. The apply's verdict is then
asked of the host itself (its verify record, written by the host's own verify run), not read back from fleet."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.facts.software import VERIFY_PATH

HOSTS = ("thor", "spark", "pod-570", "pod-580")
COUNTS = ("ok", "changed", "skipped", "failed")


def fleet_json(*argv: str) -> tuple[int, dict, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200))
    code = main(list(argv), env)
    return code, json.loads(out.getvalue()), err.getvalue()


@pytest.fixture(scope="module")
def plan_and_apply(lab):
    lab.reset(list(HOSTS))
    shutil.rmtree(lab.inventory.facts_dir, ignore_errors=True)
    inv = str(lab.inventory_path)
    check = fleet_json("apply", inv, "--check", "--json")
    applied = fleet_json("apply", inv, "--json")
    records = {}
    for name in HOSTS:
        with lab.connect(name) as conn:   # the host's own verify record, as its verify run wrote it
            result = conn.run(f"cat {VERIFY_PATH}")
            records[name] = json.loads(result.stdout) if result.exit == 0 else None
    return check, applied, records


def test_check_counts_every_task_as_the_apply_that_follows(plan_and_apply):
    (code, check, err), (acode, applied, aerr), _ = plan_and_apply
    assert code == 0 and acode == 0, err[-2000:] + aerr[-2000:]
    for name in HOSTS:
        planned, done = check["hosts"][name], applied["hosts"][name]
        assert planned["check"] is True and done["check"] is False
        assert [(t["role"], t["task"], t["status"]) for t in planned["tasks"]] == \
            [(t["role"], t["task"], t["status"]) for t in done["tasks"]], name
        assert {k: planned[k] for k in COUNTS} == {k: done[k] for k in COUNTS}, name
        assert planned["changed"] > 0 and planned["failed"] == 0


def test_verify_is_planned_as_judged_after_the_changes_and_then_passes_on_the_host(plan_and_apply):
    (_, check, _), (_, applied, _), records = plan_and_apply
    for name in HOSTS:
        planned = next(t for t in check["hosts"][name]["tasks"] if t["role"] == "verify")
        done = next(t for t in applied["hosts"][name]["tasks"] if t["role"] == "verify")
        assert planned["status"] == done["status"] == "ok"
        assert planned["reason"].startswith("judged after the planned changes ("), planned["reason"]
        assert check["hosts"][name]["verify"] == "after the changes"
        # what the host's own verify run recorded, not fleet's verdict read back
        assert records[name] is not None and records[name]["passed"] is True, (name, records[name])
