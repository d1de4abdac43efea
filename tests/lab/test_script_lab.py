"""`fleet script` on a fresh lab pod: run there with no control machine (a bare environment, as a pod
template's start command gets), twice; then `fleet apply` finds nothing to do and the facts match those of
the same pod converged by `fleet apply` itself."""

from __future__ import annotations

import io
import json
import shutil

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

POD = "pod-570"
BARE = "env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash /root/fleet.sh"


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=240), err_console=Console(file=err, width=240, soft_wrap=True))
    return main(list(argv), env), out.getvalue(), err.getvalue()


def apply(inventory) -> dict:
    code, out, err = fleet("apply", str(inventory), "--limit", POD, "--json")
    assert code == 0, out[-3000:] + err[-3000:]
    return json.loads(out)["hosts"][POD]


def facts_that_matter(inventory_dir) -> dict:
    record = json.loads((inventory_dir / "facts" / f"{POD}.json").read_text())
    # when and why verify ran, and the fingerprint of the files it proved (their mtimes), differ between two
    # installs of the same stack: what it proved must not
    bookkeeping = {"at", "checked_at", "reason", "reused", "fingerprint", "fingerprint_parts"}
    verify = {k: v for k, v in (record["verify"] or {}).items() if k not in bookkeeping}
    torch = {k: v for k, v in (record["torch"] or {}).items() if k != "from_verify_at"}
    return {"torch": torch, "libraries": record["libraries"], "env": record["env"], "verify": verify,
            "cutlass": record["cutlass"], "compat": record["cuda"]["compat"]}


def test_script_converges_then_changes_nothing_and_matches_apply(lab, tmp_path, converged_fresh):
    inventory = tmp_path / "lab.yaml"
    shutil.copy(lab.inventory_path, inventory)         # facts of this test beside its own copy
    # the reference: the pod as `fleet apply` leaves a fresh one (conftest's converged_fresh, shared with other
    # modules), that converge's report, and the facts this test's inventory records of the pod (nothing to change)
    code, doc = converged_fresh(POD)
    assert code == 0, json.dumps(doc["hosts"][POD])[-3000:]
    reference = converged_fresh.fresh[POD][1]["hosts"][POD]
    assert apply(inventory)["changed"] == 0
    wanted = facts_that_matter(tmp_path)
    assert wanted["verify"]["passed"] is True

    lab.reset([POD])
    code, _, err = fleet("script", str(inventory), "--limit", POD, "-o", str(tmp_path / "fleet.sh"))
    assert code == 0, err
    with lab.connect(POD) as conn:
        conn.write_file("/root/fleet.sh", (tmp_path / "fleet.sh").read_text(), mode=0o755)
        first = conn.run(BARE)
        second = conn.run(BARE)
    assert first.exit == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert first.stdout.splitlines()[-1] == f"changed={reference['changed']}"
    assert "verify  verify passed" in first.stdout
    assert second.exit == 0, second.stdout[-3000:] + second.stderr[-2000:]
    assert second.stdout.splitlines()[-1] == "changed=0"

    after = apply(inventory)
    assert after["changed"] == 0 and after["failed"] == 0, after["tasks"]
    assert facts_that_matter(tmp_path) == wanted
