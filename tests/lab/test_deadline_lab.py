"""A deadline on every apply task, on the host (issue 26): a task that runs past its `timeout:` is stopped there
with everything it started, its host reported failed in that task, while the other host finishes. Proven by
asking the hosts afterwards (pgrep, the file the fast host's task wrote)."""

from __future__ import annotations

import json
from pathlib import Path


from helpers import ok, sh
from test_user_role_lab import fleet

SLOW, FAST = "pod-570", "pod-580"
ROLE = """description: a step that takes `nap` seconds, bounded at 3
tasks:
  - name: a long step
    command: {cmd: "sleep {{ nap }} & sleep {{ nap }}; touch /var/tmp/fleet-deadline-done", creates: /var/tmp/fleet-deadline-done}
    timeout: "{{ 1 + 2 }}"
"""


def inventory(lab, tmp_path: Path, naps: dict[str, str]) -> Path:
    (tmp_path / "roles" / "napper").mkdir(parents=True)
    (tmp_path / "roles" / "napper" / "role.yaml").write_text(ROLE)
    return lab.write_inventory(tmp_path / "pods.yaml", {name: {"nap": nap} for name, nap in naps.items()},
                               roles_path=["roles"], roles=["napper"])


def test_a_task_past_its_deadline_is_stopped_on_its_host_and_the_other_host_finishes(lab, tmp_path):
    lab.reset([SLOW, FAST])
    nap = "417.25"                                             # a sleep nothing else on the hosts runs
    code, out, err = fleet("apply", str(inventory(lab, tmp_path, {SLOW: nap, FAST: "0"})), "--json")
    doc = json.loads(out)
    assert code == 1, out + err
    slow = [t for t in doc["hosts"][SLOW]["tasks"] if t["role"] == "napper"][0]
    assert slow["status"] == "failed", slow
    assert "exit 124" in slow["reason"] and "stopped after 3s, its deadline" in slow["reason"], slow
    assert [t["status"] for t in doc["hosts"][FAST]["tasks"] if t["role"] == "napper"] == ["changed"]
    # the hosts themselves: nothing of the slow step is left running; the fast one did its work
    assert sh(lab, SLOW, f"pgrep -f 'sleep {nap}'").stdout == ""
    assert ok(lab, SLOW, "[ -e /var/tmp/fleet-deadline-done ] && echo done || echo absent").split() == ["absent"]
    assert ok(lab, FAST, "[ -e /var/tmp/fleet-deadline-done ] && echo done || echo absent").split() == ["done"]
