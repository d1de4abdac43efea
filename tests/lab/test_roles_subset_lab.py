"""`fleet apply --roles SUBSET` on a fresh lab host: it applies, then the host itself is asked, then a second
apply makes no change in one command.

The bug this pins: `--roles cuda_toolkit` on a fresh pod-570 installed the toolkit and then failed its probe after
changes with "the checks produced no output (exit 0)". Once the toolkit is there the role's `when:` is false, so
the probe after changes wants no check at all, and an empty checks script was sent (engine/observe.py). Now the
change is confirmed by the task's own check, which ran in that probe (Observed.left_out).
"""

from __future__ import annotations

import json

import pytest

from helpers import fleet_json, sh


# host, --roles, what the host says once the roles are applied (a plain shell: dpkg, the venv's python)
CASES = [
    ("pod-570", "cuda_toolkit",
     "dpkg-query -W -f='${db:Status-Abbrev}${Version}\\n' cuda-toolkit-13-0", "hi 13.0.2-1"),
    ("pod-580", "torch", "/opt/fleet/venv/bin/python -c 'import torch; print(torch.__version__)'", "2.11.0+cu130"),
]


@pytest.mark.parametrize("host,roles,ask,answer", CASES, ids=[f"{h}-{r}" for h, r, _, _ in CASES])
def test_a_role_subset_on_a_fresh_host_applies_and_then_changes_nothing(lab, host, roles, ask, answer):
    lab.reset([host])
    (lab.inventory.facts_dir / f"{host}.json").unlink(missing_ok=True)
    before = sh(lab, host, ask)
    assert before.stdout.strip() != answer, before.stdout      # fresh: not there yet

    inv = str(lab.inventory_path)
    code, first = fleet_json("apply", inv, "--limit", host, "--roles", roles)
    assert code == 0, json.dumps(first, indent=1)[-4000:]
    tasks = first["hosts"][host]["tasks"]
    assert {t["role"] for t in tasks} <= set(roles.split(",")) | {"verify"}, tasks
    assert first["hosts"][host]["failed"] == 0 and first["hosts"][host]["changed"] >= 1, tasks

    after = sh(lab, host, ask)                                 # the host itself, not fleet's verdict
    assert after.exit == 0 and after.stdout.strip() == answer, (after.stdout, after.stderr)

    code, second = fleet_json("apply", inv, "--limit", host, "--roles", roles)
    assert code == 0, json.dumps(second, indent=1)[-4000:]
    assert second["hosts"][host]["changed"] == 0 and second["hosts"][host]["failed"] == 0, \
        second["hosts"][host]["tasks"]
    assert second["stats"][host]["remote_commands"] == 1, second["stats"][host]
