"""A program of several modules of fleet/remote shipped as one file (fleet.remote.bundle): its text, and so the digest
it is installed by (fleet/programs.py Program), is the modules' own text in one order, whatever order they are
named in; it changes when one of their texts does and only then; and on the host its modules import each other as
they do in fleet's source."""

import subprocess
import sys

from fleet import remote
from fleet.programs import Program
from fleet.resources.verify import verify_program

VERIFY = ("families", "loader_rules", "resolve_rules", "trace", *remote.package("verify"))


def test_the_same_modules_in_any_order_are_the_same_text_and_digest():
    from fleet.resources.verify import tables_module

    text = remote.bundle("verify.runner", VERIFY, {"tables": tables_module()})
    assert remote.bundle("verify.runner", tuple(reversed(VERIFY)) + VERIFY[:2], {"tables": tables_module()}) == text
    assert verify_program().text == text and verify_program().digest == Program("verify", text).digest
    for name in VERIFY:   # each module's own text, as it is in fleet's source (repr: one string literal each)
        assert repr(remote.source(name)) in text
    assert repr(tables_module()) in text   # fleet's tables, written as the module `tables`
    assert text.endswith(remote.source("boot"))


def test_a_changed_module_changes_the_digest(monkeypatch):
    before = Program("verify", remote.bundle("verify.runner", VERIFY)).digest
    source = remote.source

    def edited(name):
        return source(name) + ("# one more line\n" if name == "verify.perf" else "")

    monkeypatch.setattr(remote, "source", edited)
    assert Program("verify", remote.bundle("verify.runner", VERIFY)).digest != before


def test_the_package_is_every_module_of_its_folder():
    assert remote.package("verify") == ("verify", "verify.allreduce", "verify.config", "verify.copies", "verify.cuda",
                                        "verify.explain", "verify.gpus", "verify.jobenv", "verify.kinds", "verify.links",
                                        "verify.loader", "verify.perf", "verify.runner")


def test_on_the_host_the_modules_are_one_package_and_a_bad_config_is_said_so(tmp_path):
    path = tmp_path / "verify"
    path.write_text(verify_program().text)
    code = (f"import runpy, sys; runpy.run_path({str(path)!r}); from fleet_remote.verify import kinds, loader; "
            "import fleet_remote.verify.runner as r; "
            "print(kinds.loader is loader, r.__spec__.origin, 'fleet' in sys.modules)")
    asked = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=120)
    assert asked.stdout.split() == ["True", "<fleet", "verify.runner>", "False"], asked
    bad = subprocess.run([sys.executable, "-I", "-S", str(path), "[1]"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "bad config '[1]': not a JSON object" in bad.stdout


def _pod_570_config() -> dict:
    """The CONFIG_JSON the verify role renders for the H100 pod, as it travels."""
    import json
    from pathlib import Path

    from fleet.decide import decide
    from fleet.roles import load_roles, render_role, roles_dirs

    facts = json.loads((Path(__file__).parents[1] / "data" / "records" / "h100-pod-570.json").read_text())
    (role,) = load_roles(["verify"], roles_dirs())
    (task,) = render_role(role, {}, facts, decide(facts).to_json(), {"name": "pod", "user": "root", "root": True})
    return json.loads(task.resource.p["config"])


def test_the_config_names_the_tables_and_the_installed_program_carries_them(tmp_path):
    import json

    from fleet.knowledge import allreduce, copy_floors, platforms

    config = _pod_570_config()   # per host only: which tables apply, never their rows
    assert (config["allreduce"], config["copy_table"], config["perf_table"], config["platform"]) == (
        True, True, [], "x86_64-dgpu")
    path = tmp_path / "verify"
    path.write_text(verify_program().text)
    code = (f"import json, runpy, sys; runpy.run_path({str(path)!r}); from fleet_remote.verify.config import Config; "
            "c = Config(json.loads(sys.argv[1])); "
            "print(json.dumps({'allreduce': c.allreduce, 'copy': c.copy_table, 'perf': c.perf_table, "
            "'h200': c.perf_row('NVIDIA H200'), 'h200_copy': c.copy_row('NVIDIA H200')}))")
    asked = subprocess.run([sys.executable, "-I", "-S", "-c", code, json.dumps(config)], capture_output=True,
                           text=True, timeout=120)
    got = json.loads(asked.stdout)   # what the program on the host judges by: fleet's knowledge, every GPU's rows
    assert got["allreduce"] == json.loads(json.dumps(allreduce.config()))
    assert got["copy"] == copy_floors.rows()
    assert got["perf"] == [p.as_dict() for p in platforms.platform("x86_64-dgpu").perf]
    assert got["h200"]["match"] == "H200" and got["h200"]["memory_tbs"] == 4.8
    assert got["h200_copy"]["host_floor_gbs"] == 48.0 and got["h200_copy"]["pair_read_floor_gbs"] == 335.0
    cpu = {**config, "allreduce": False, "copy_table": False, "platform": "cpu-only"}
    asked = subprocess.run([sys.executable, "-I", "-S", "-c", code, json.dumps(cpu)], capture_output=True,
                           text=True, timeout=120)
    assert json.loads(asked.stdout) == {"allreduce": {}, "copy": [], "perf": [], "h200": None, "h200_copy": None}
    own = {**config, "perf_table": [{"match": "H200", "peak": 1.0, "matmul_floor": 0.5, "attention_floor": 0.5}]}
    asked = subprocess.run([sys.executable, "-I", "-S", "-c", code, json.dumps(own)], capture_output=True,
                           text=True, timeout=120)
    assert json.loads(asked.stdout)["perf"] == own["perf_table"]   # the user's verify_perf_table wins


def test_a_changed_table_changes_the_digest_so_the_host_installs_it_again(monkeypatch):
    from fleet.knowledge import copy_floors
    from fleet.resources import verify

    before = Program("verify", remote.bundle("verify.runner", VERIFY, {"tables": verify.tables_module()})).digest
    assert before == verify_program().digest
    h200 = {**copy_floors.COPY_FLOORS[2], "host_floor_gbs": 50.0}
    monkeypatch.setattr(copy_floors, "COPY_FLOORS", (*copy_floors.COPY_FLOORS[:2], h200))
    assert "'host_floor_gbs': 50.0" in verify.tables_module()
    assert Program("verify", remote.bundle("verify.runner", VERIFY, {"tables": verify.tables_module()})).digest != before
