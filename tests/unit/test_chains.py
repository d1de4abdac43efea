"""engine/chains.py: which of the built-in roles' tasks wait for which, table by table, and the script's shape.
What the host does with it is tested on the lab (tests/lab/test_chains_lab.py)."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from fleet.engine import chains
from fleet.errors import InputError
from fleet.roles import load_role, load_roles, roles_dirs

from test_engine import CASES, enabled, plan_of


@pytest.fixture(scope="module")
def shipped():
    return load_roles(None, roles_dirs())


def laid(shipped, case):
    tasks = tuple(t for t in enabled(plan_of(shipped, case)).values() if not t.resource.judged)
    return chains.layout(tasks)


def view(layout):
    """{chain name: [(task id, ids it waits for in other chains)]}"""
    return {layout.chain_name(i): [(s.task.id, s.orders) for s in layout.steps if s.chain == i]
            for i in range(len(layout.chains))}


EXPECTED = {
    # driver 570 pod: apt (toolkit, then compat, then its gate) is one chain; the hooks' files need nothing, and
    # the ld cache cleanup waits for everything that runs ldconfig; CUTLASS's clone and torch's pip start at once
    "pod-570": {
        "cuda_toolkit+cuda_compat": [("cuda_toolkit.0", ()), ("cuda_compat.0", ()), ("cuda_compat.1", ()),
                                     ("cuda_compat.4", ())],
        "env_hooks": [(f"env_hooks.{i}", ()) for i in range(7)]
                     + [("env_hooks.7", ("cuda_toolkit.0", "cuda_compat.0", "cuda_compat.4"))],
        "cutlass": [("cutlass.1", ())],
        "torch": [("torch.1", ())],
    },
    # a Jetson with JetPack's torch: NVPL's and cuDSS's wheels go into torch's venv after torch (after: [torch]),
    # though the plan lists them first
    "thor-jetson": {
        "env_hooks": [(f"env_hooks.{i}", ()) for i in range(8)],
        "cutlass": [("cutlass.1", ())],
        "torch+nvpl+cudss": [("torch.1", ()), ("nvpl.0", ()), ("cudss.0", ())],
    },
    "cpu-only": {"torch": [("torch.1", ())]},
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_the_built_in_roles_chains(shipped, case):
    assert view(laid(shipped, case)) == EXPECTED[case]


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_two_tasks_holding_a_lock_can_run_at_once(shipped, case):
    """For every pair of tasks whose locks conflict, one waits for the other: same chain, or an order/result
    dependency (apt never runs beside apt, ldconfig never beside dpkg's triggers, one venv one pip)."""
    layout = laid(shipped, case)
    steps = layout.steps
    for i, a in enumerate(steps):
        for b in steps[i + 1:]:
            if any(chains.locks_conflict(x, y) for x in chains.task_locks(a.task) for y in chains.task_locks(b.task)):
                assert a.chain == b.chain or a.task.id in b.orders + b.results, (a.task.id, b.task.id)


@pytest.mark.parametrize("a, b, conflict", [
    ("dpkg", "dpkg", True), ("dpkg", "ldcache", False), ("*", "venv:/opt/v", True),
    ("path:/opt/cutlass", "path:/opt/cutlass/include", True), ("path:/opt/cutlass", "path:/opt/cutlass2", False),
    ("path:/etc/fleet/", "path:/etc/fleet/env.sh", True), ("venv:/opt/v", "path:/opt/v", False),
])
def test_locks_conflict(a, b, conflict):
    assert chains.locks_conflict(a, b) is conflict and chains.locks_conflict(b, a) is conflict


def role_file(tmp_path, name, text):
    (tmp_path / name).mkdir()
    (tmp_path / name / "role.yaml").write_text(textwrap.dedent(text))
    return load_role(tmp_path / name / "role.yaml")


def test_after_naming_each_other_is_refused_and_a_bad_after_names_its_line(tmp_path):
    from fleet.roles import Task
    from fleet.resources import TYPES
    a = role_file(tmp_path, "a", "after: [b]\ntasks:\n  - {name: x, directory: {path: /x}}\n")
    b = role_file(tmp_path, "b", "after: [a]\ntasks:\n  - {name: y, directory: {path: /y}}\n")
    tasks = tuple(Task(spec, TYPES["directory"]({"path": spec.params["path"]}), True) for spec in a.tasks + b.tasks)
    with pytest.raises(InputError, match="the roles a, b wait for each other through 'after:'"):
        chains.layout(tasks)
    with pytest.raises(InputError, match=r"the roles a, b wait for each other through 'after:' \(.*a/role.yaml\)"):
        chains.check_roles([a, b])          # the pre-flight: before any host is contacted
    with pytest.raises(InputError, match=r"role.yaml:3: 'locks' is a list of names"):
        role_file(tmp_path, "c", "tasks:\n  - name: z\n    locks: {a: 1}\n    directory: {path: /z}\n")


def test_the_script_is_bash_and_its_markers_read_back(shipped):
    layout = laid(shipped, "pod-570")
    text = chains.script(layout, {s.task.id: "echo hi" for s in layout.steps})
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)
    reader = chains.read("\n".join([
        "@@fleet:t0 100.000@@", "@@fleet:begin apply.torch.1 100.5@@", "@@fleet:o torch.1@@ Collecting torch",
        "@@fleet:begin apply.cutlass.1 100.25@@", "@@fleet:end apply.cutlass.1 0 101.0@@",
        "@@fleet:o torch.1@@ done", "@@fleet:end apply.torch.1 1 104.5@@",
        "@@fleet:skip apply.nvpl.0 torch.1@@"]))
    torch = reader.runs["torch.1"]
    assert (torch.started, torch.ended, torch.rc, torch.output) == (0.5, 4.5, 1, "Collecting torch\ndone")
    assert reader.runs["cutlass.1"].rc == 0 and reader.runs["nvpl.0"].skipped_by == "torch.1"
