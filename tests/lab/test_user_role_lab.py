"""The example inventory (examples/inventory.yaml) with its own role (examples/roles/hf_cache) on a lab pod:
the role's `when:` keeps it off a pod with no /workspace; on one with /workspace it converges after the
built-in roles, `ssh host cmd` sees HF_HOME, and a second apply changes nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import yaml
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

from helpers import ok

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
POD = "pod-580"


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True))
    return main(list(argv), env), out.getvalue(), err.getvalue()


def example_on_the_lab(lab, tmp_path: Path) -> Path:
    """examples/inventory.yaml as it stands (its roles_path, roles and vars), its hosts swapped for a lab pod
    and the lab's mirrors."""
    example = yaml.safe_load((EXAMPLES / "inventory.yaml").read_text())
    lab_doc = yaml.safe_load(lab.inventory_path.read_text())
    doc = {"facts_dir": "facts", "roles_path": [str(EXAMPLES / p) for p in example["roles_path"]],
           "roles": example["roles"], "vars": {**lab_doc["vars"], **example["vars"]},
           "hosts": {POD: lab_doc["hosts"][POD]},
           # what the lab wrote into the inventory it serves: its key, the host keys and keyring digests it vouches for
           **{name: lab_doc[name] for name in ("key", "known_hosts", "keyring_pins") if name in lab_doc}}
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def tasks_of(host: dict, role: str) -> list[dict]:
    return [t for t in host["tasks"] if t["role"] == role]


def test_the_example_user_role_is_gated_by_when_then_converges_and_changes_nothing(lab, tmp_path):
    inventory = example_on_the_lab(lab, tmp_path)
    lab.reset([POD])
    code, out, err = fleet("apply", str(inventory), "--check", "-v")   # -v: skipped tasks and their conditions
    assert code == 0, out[-3000:] + err[-3000:]
    assert f"roles {POD}: cuda_toolkit cuda_compat nvpl cudss env_hooks cutlass torch (built-in); hf_cache " \
           f"({EXAMPLES / 'roles' / 'hf_cache'}); verify (built-in) (named by the inventory (" in out
    assert "condition is false: facts.system.workspace" in out          # no /workspace on this pod yet

    ok(lab, POD, "mkdir -p /workspace")                                 # the pod gets its volume
    code, out, err = fleet("apply", str(inventory), "--json")
    first = json.loads(out)["hosts"][POD]
    assert code == 0, [t for t in first["tasks"] if t["status"] not in ("ok", "changed", "skipped")] or first
    assert [t["status"] for t in tasks_of(first, "hf_cache")] == ["changed"] * 3, first["tasks"]
    assert first["failed"] == 0 and "verify passed" in tasks_of(first, "verify")[0]["reason"]
    assert ok(lab, POD, "echo $HF_HOME; test -d \"$HF_HOME\" && echo dir").split() == [
        "/workspace/.cache/huggingface", "dir"]                          # `ssh host cmd` gets it

    code, out, err = fleet("apply", str(inventory), "--json")
    assert code == 0, out[-3000:] + err[-3000:]
    second = json.loads(out)["hosts"][POD]
    assert second["changed"] == 0 and second["failed"] == 0, second["tasks"]
    assert json.loads(out)["stats"][POD]["remote_commands"] == 1       # a converged host costs one command
