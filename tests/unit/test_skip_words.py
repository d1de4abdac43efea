"""Skipped tasks say why in plain words (issue 25): every built-in role and task with a `when:` has a
`why_skipped:`, it renders to a sentence on every recorded platform (no Jinja, no `facts.`/`decisions.`), -v
shows the words and -vv adds the raw condition. A role without `why_skipped:` still shows its condition."""

from __future__ import annotations

import io
import json
import re
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from fleet.decide import decide
from fleet.engine.plan import TaskReport
from fleet.engine.report import HostReport
from fleet.env import Environment
from fleet.errors import InputError
from fleet.report import Reporter
from fleet.report.apply import host_lines
from fleet.connection.parallel import Outcome
from fleet.roles import load_role, load_roles, render_role, roles_dirs

DATA = Path(__file__).resolve().parents[1] / "data"
RECORDS = sorted((DATA / "records").glob("*.json"))
# the sources a user may pick for NVPL and cuDSS, so each `source ==` branch is rendered skipped too
VARIANTS = [{}, {"nvpl_source": "apt", "cudss_source": "apt"}, {"nvpl_source": "tarball", "cudss_source": "tarball"}]
RAW = re.compile(r"\{\{|\{%|\bfacts\.|\bdecisions\.|condition is false|\.get\(")


def shipped():
    return load_roles(None, roles_dirs())


def skipped_tasks():
    """(record, variables, task) for every task a built-in role leaves out on a recorded platform."""
    out = []
    for path in RECORDS:
        facts = json.loads(path.read_text())
        for variables in VARIANTS:
            decisions = decide(facts, variables).to_json()
            host = {"name": path.stem, "user": "root", "root": True}
            for role in shipped():
                for task in render_role(role, variables, facts, decisions, host):
                    if not task.enabled:
                        out.append((path.stem, variables, task))
    return out


def test_every_builtin_when_has_plain_words():
    for role in shipped():
        if role.when:
            assert role.why_skipped, f"{role.path}: a role `when:` needs a `why_skipped:`"
        for spec in role.tasks:
            if spec.when:
                assert spec.why_skipped, f"{spec.where}: a task `when:` needs a `why_skipped:`"


def test_every_skipped_builtin_task_says_why_in_plain_words():
    found = skipped_tasks()
    assert len(found) > 100
    role_when = {r.name: r.when or "" for r in shipped()}   # the roles loaded once, not once per task
    for record, variables, task in found:
        words, condition = task.skip_reason, task.skip_condition
        assert condition and condition.split(": ", 1)[1] in (task.spec.when or "") + role_when.get(
            task.spec.role, ""), (record, task.id)
        assert words and words != condition and not RAW.search(words), (record, variables, task.id, words)
        assert len(words) > 10 and "  " not in words and "\n" not in words, (record, task.id, words)


def test_each_builtin_skip_sentence_is_rendered_on_some_platform():
    """Every `why_skipped:` of a task is reached by at least one recorded platform (none untested)."""
    reached = {(t.spec.role, t.spec.index) for _, _, t in skipped_tasks()
               if t.skip_condition.startswith("condition is false")}
    wanted = {(r.name, s.index) for r in shipped() for s in r.tasks if s.when}
    # a fabric manager's tasks (NVLSM and ib_umad for NVSwitch generation 4, the systemd/no-systemd pair) need an
    # NVSwitch host that manages its own fabric, and the loader task a host with LD_LIBRARY_PATH but no GPU: no record
    # holds one, so those are rendered below with decisions made up for them
    assert wanted - reached <= {("fabric_manager", i) for i in (1, 2, 3, 4)} | {("env_hooks", 7)}, wanted - reached


def test_the_fabric_manager_tasks_say_which_starts_the_daemon():
    role = next(r for r in shipped() if r.name == "fabric_manager")
    facts = json.loads((DATA / "records" / "h100-pod-570.json").read_text())
    decisions = decide(facts, {}).to_json()
    decisions["fabric"] = {**decisions["fabric"], "action": "install", "version": "570.133.20", "generation": 3,
                           "packages": ["nvidia-fabricmanager-570=570.133.20-1", "libnvidia-nscq-570=570.133.20-1"]}
    host = {"name": "h", "user": "root", "root": True}
    for systemd, index, words in ((False, 3, "no systemd on this host"), (True, 4, "systemd runs the service")):
        facts["system"] = {**facts["system"], "systemd": systemd}
        task = render_role(role, {}, facts, decisions, host)[index]
        assert not task.enabled and task.skip_reason.startswith(words), task.skip_reason
    for index, words in ((1, "not an NVSwitch generation 4 board: no NVLink"), (2, "not an NVSwitch generation 4 board")):
        task = render_role(role, {}, facts, decisions, host)[index]   # an H100 board: generation 3 (issue 48)
        assert not task.enabled and task.skip_reason.startswith(words), task.skip_reason


def test_the_loader_task_of_a_host_without_a_gpu_says_so():
    role = next(r for r in shipped() if r.name == "env_hooks")
    facts = json.loads((DATA / "records" / "cpu-only.json").read_text())
    decisions = {**decide(facts, {}).to_json(), "ld_library_path": ["/opt/lib"], "gpu": False}
    task = render_role(role, {}, facts, decisions, {"name": "h", "user": "root", "root": True})[7]
    assert not task.enabled and task.skip_reason == "no NVIDIA GPU on this host: no libcuda for the loader to find"


def test_a_user_role_without_words_shows_its_condition(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "role.yaml").write_text(textwrap.dedent("""\
        tasks:
          - name: only with a workspace
            directory: {path: /workspace/x}
            when: "facts.system.workspace"
          - name: with words
            directory: {path: /workspace/y}
            when: "facts.system.workspace"
            why_skipped: "no /workspace volume on {{ host.name }}"
        """))
    role = load_role(tmp_path / "r" / "role.yaml")
    bare, said = render_role(role, {}, {"system": {"workspace": None}}, {}, {"name": "pod-a", "user": "root"})
    assert (bare.skip_reason, bare.skip_condition) == ("condition is false: facts.system.workspace",) * 2
    assert (said.skip_reason, said.skip_condition) == ("no /workspace volume on pod-a",
                                                       "condition is false: facts.system.workspace")


def test_a_why_skipped_that_is_not_text_is_refused_with_its_line(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "role.yaml").write_text("tasks:\n  - name: t\n    directory: {path: /x}\n"
                                              "    when: \"false\"\n    why_skipped: [a, b]\n")
    with pytest.raises(InputError, match=r"r/role.yaml:5: 'why_skipped' is the plain words"):
        load_role(tmp_path / "r" / "role.yaml")


def shown(verbose: int) -> str:
    out = io.StringIO()
    env = Environment(console=Console(file=out, width=200, color_system=None),
                      err_console=Console(file=io.StringIO()))
    reporter = Reporter(env, verbose=verbose)
    tasks = (TaskReport("cutlass", "git, which the clone needs", "skipped", "git is installed already", id="cutlass.0",
                        condition="condition is false: (facts.system or {}).get('git') == false"),
             TaskReport("nvpl", "NVPL wheels", "skipped", "NVPL: not needed, the official torch wheels do not link it",
                        id="nvpl.0", condition="role condition is false: decisions.nvpl.needed"),
             TaskReport("nvpl", "NVPL apt", "skipped", "NVPL: not needed, the official torch wheels do not link it",
                        id="nvpl.1", condition="role condition is false: decisions.nvpl.needed"),
             TaskReport("torch", "torch", "ok", "all installed", id="torch.1"))
    report = HostReport("pod-a", False, tasks)
    reporter.draw(host_lines(reporter, "pod-a", Outcome("pod-a", value=report, seconds=0.4), False, False))
    return out.getvalue()


def test_v_shows_the_plain_words_and_vv_adds_the_condition():
    quiet, v, vv = shown(0), shown(1), shown(2)
    assert quiet.strip() == "pod-a: in state (1 ok, 3 skipped) 0.4 s"
    assert "skipped cutlass: git, which the clone needs — git is installed already\n" in v
    assert "skipped nvpl: (whole role) — NVPL: not needed, the official torch wheels do not link it\n" in v
    assert v.count("nvpl:") == 1 and "condition" not in v and "facts." not in v
    assert ("— git is installed already [condition is false: (facts.system or {}).get('git') == false]" in vv)
    assert "— NVPL: not needed, the official torch wheels do not link it [role condition is false: " \
           "decisions.nvpl.needed]" in vv
