"""`--check` is the plan (issue 25): on fresh hosts, task by task, it counts what the apply that follows counts
(to change, in state, skipped), verify included: apply judges verify after the changes and counts it "ok" when
it passes, so the plan counts it "ok" too, saying it is judged after the changes. The apply's verdict is then
asked of the host itself (its verify record, written by the host's own verify run), not read back from fleet."""

from __future__ import annotations

import pytest

HOSTS = ("thor", "spark", "pod-570", "pod-580")
COUNTS = ("ok", "changed", "skipped", "failed")


@pytest.fixture(scope="module")
def plan_and_apply(fresh_apply):
    """Fresh hosts, `fleet apply --check`, `fleet apply`, each run's documents as its run log keeps them (the fields
    of --json), each host's verify record after it (conftest.py's fresh_apply, shared with test_apply_lab.py and
    test_output_budget_lab.py, which reads the same runs' text)."""
    return fresh_apply["check"], fresh_apply["first"], fresh_apply["records"]


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
