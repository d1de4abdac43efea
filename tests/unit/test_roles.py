"""Roles as data: loading (file:line errors before any host), `when`, precedence, native types, templates."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from fleet.decide import decide
from fleet.errors import InputError
from fleet.roles import DEFAULT_ORDER, load_role, load_roles, render_role, roles_dirs

DATA = Path(__file__).resolve().parents[1] / "data"
BAD = DATA / "roles"
ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "roles"      # the built-in roles, at the repository's root
HOST = {"name": "pod-570", "user": "root", "root": True}


@pytest.fixture(scope="module")
def pod570():
    facts = json.loads((DATA / "records" / "h100-pod-570.json").read_text())
    return facts, decide(facts, {}).to_json()


def render(role, pod, variables=None):
    facts, decisions = pod
    return render_role(role, variables or {}, facts, decisions, HOST)


def write_role(root: Path, name: str, text: str, templates: dict | None = None):
    (root / name / "templates").mkdir(parents=True, exist_ok=True)
    (root / name / "role.yaml").write_text(textwrap.dedent(text))
    for tname, body in (templates or {}).items():
        (root / name / "templates" / tname).write_text(body)
    return load_role(root / name / "role.yaml")


# -- the shipped roles ---------------------------------------------------------------------------------

def test_every_shipped_role_loads_in_the_default_order():
    roles = load_roles(None, roles_dirs())
    assert [r.name for r in roles] == list(DEFAULT_ORDER) == [
        "cuda_toolkit", "fabric_manager", "cuda_compat", "nvpl", "cudss", "env_hooks", "cutlass", "torch", "verify"]
    assert all(r.path == SHIPPED / r.name / "role.yaml" and r.tasks and r.description for r in roles)
    kinds = {r.name: [t.type for t in r.tasks] for r in roles}
    assert kinds["env_hooks"] == ["file", "block", "block", "file", "block", "block", "block", "ld_aside", "file"] and kinds["verify"] == ["verify"]
    assert kinds["cutlass"] == ["apt", "git"] and kinds["torch"] == ["apt", "pip"]  # git / python3-venv first
    # fabric manager + NSCQ; on NVSwitch gen 4 NVLSM too, and ib_umad loaded now and at boot (issue 48 item 4)
    assert kinds["fabric_manager"] == ["apt", "apt", "command", "command", "command"]


def test_an_unknown_role_name_suggests_the_closest():
    with pytest.raises(InputError, match=r"no role named 'cutlas'.*did you mean 'cutlass'\?"):
        load_roles(["cuda_toolkit", "cutlas"], roles_dirs())


# -- bad role files: one sentence naming file:line ----------------------------------------------------

LOAD_ERRORS = [
    ("unknown_role_key", 3, "unknown key 'task' in the role; did you mean 'tasks'?"),
    ("unknown_task_key", 7, "unknown key 'whn' in a task; did you mean 'when'?"),
    ("two_types", 5, "a task names exactly one resource type (apt, archive, assert, block, command, compat_gate, "
                     "directory, file, git, ld_aside, ldconfig, pip, verify); this one names 2"),
    ("no_type", 3, "this one names 0"),
    ("unknown_param", 9, "unknown parameter 'dset' for git; did you mean 'dest'?"),
    ("bad_when", 5, "'when' is not a valid expression (unexpected 'end of template'); "
                    "write e.g. when: \"decisions.compat.use\""),
    ("bad_role_when", 2, "'when' is not a valid expression"),
    ("tasks_not_list", 2, "a role needs a non-empty 'tasks:' list"),
    ("unguarded_command", 4, "a command needs 'creates' or 'unless', or it would run on every apply"),
    ("sudo_not_bool", 5, "'sudo' must be true or false"),
    ("duplicate_key", 7, "'path' is defined twice (first on line 5); keep one of them"),
    ("yaml_syntax", "5:9", "YAML syntax error: expected ',' or '}', but got ':'"),
    ("missing_template", 6, "template 'nowhere.j2' not found at"),
]


@pytest.mark.parametrize("case, line, says", LOAD_ERRORS, ids=[c[0] for c in LOAD_ERRORS])
def test_a_bad_role_file_is_refused_at_load_naming_file_and_line(case, line, says):
    with pytest.raises(InputError) as err:
        load_role(BAD / case / "role.yaml")
    assert str(err.value).startswith(f"{BAD / case / 'role.yaml'}:{line}: ")
    assert says in str(err.value)


def test_a_template_that_does_not_parse_is_refused_at_load_naming_its_own_line():
    with pytest.raises(InputError) as err:
        load_role(BAD / "bad_template_syntax" / "role.yaml")
    where = BAD / "bad_template_syntax"
    assert str(err.value) == (f"{where}/templates/env.sh.j2:4: template syntax error: unexpected '}}' "
                              f"(used at {where}/role.yaml:6)")


RENDER_ERRORS = [
    ("undefined_var", "role.yaml:10", "'cutlas_ref' is undefined; define it in the role's defaults or the "
                                      "inventory's vars"),
    ("undefined_in_when", "role.yaml:5", "'when: decisions.compat.use and not skip_compta' uses something "
                                         "undefined ('skip_compta' is undefined)"),
    ("undefined_in_template", "templates/env.sh.j2:4", "'cutlass_dri' is undefined (used at "),
]


@pytest.mark.parametrize("case, where, says", RENDER_ERRORS, ids=[c[0] for c in RENDER_ERRORS])
def test_an_undefined_variable_at_render_time_names_file_and_line(pod570, case, where, says):
    role = load_role(BAD / case / "role.yaml")  # loads: names are fine, values are only known per host
    with pytest.raises(InputError) as err:
        render(role, pod570)
    assert str(err.value).startswith(f"{BAD / case}/{where}: ") and says in str(err.value)


def test_a_condition_that_cannot_be_evaluated_is_an_input_error(tmp_path, pod570):
    role = write_role(tmp_path, "r", """\
        tasks:
          - directory: {path: /opt/x}
            when: "facts.driver.version > 3"
        """)
    with pytest.raises(InputError, match=r"r/role.yaml:3: 'when: facts.driver.version > 3' cannot be evaluated"):
        render(role, pod570)


def test_a_rendered_value_of_the_wrong_type_names_the_task(tmp_path, pod570):
    role = write_role(tmp_path, "r", """\
        defaults: {pkgs: "numpy"}
        tasks:
          - pip: {venv: /opt/v, packages: "{{ pkgs }}"}
        """)
    with pytest.raises(InputError, match=r"r/role.yaml:3: 'packages' of pip must be list, not str"):
        render(role, pod570)


# -- when --------------------------------------------------------------------------------------------------

def test_a_false_when_disables_the_task_without_rendering_it(tmp_path, pod570):
    role = write_role(tmp_path, "r", """\
        tasks:
          - name: only with NVPL
            directory: {path: "{{ nvpl_home_that_nobody_defines }}"}
            when: "decisions.nvpl.needed"
          - name: always
            directory: {path: /opt/x}
        """)
    off, on = render(role, pod570)
    assert (off.enabled, off.skip_reason) == (False, "condition is false: decisions.nvpl.needed")
    assert off.resource.p["path"] == "{{ nvpl_home_that_nobody_defines }}"  # left as written
    assert on.enabled and on.resource.p["path"] == "/opt/x"


def test_a_false_role_condition_disables_every_task(pod570):
    compat, nvpl = (load_role(SHIPPED / n / "role.yaml") for n in ("cuda_compat", "nvpl"))
    # the 570 pod needs compat: package, gate, its check (no systemd there: no unit)
    assert [t.enabled for t in render(compat, pod570)] == [True, True, False, False, True]
    tasks = render(nvpl, pod570)
    assert [t.enabled for t in tasks] == [False, False, False, False]  # pypi, apt, BLAS and LAPACK archives
    assert {t.skip_condition for t in tasks} == {"role condition is false: decisions.nvpl.needed"}
    assert {t.skip_reason for t in tasks} == {"NVPL: not needed, the official torch wheels do not link it"}


def test_when_sees_facts_decisions_variables_and_the_host(tmp_path, pod570):
    role = write_role(tmp_path, "r", """\
        defaults: {want_it: true}
        tasks:
          - directory: {path: /a}
            when: "facts.platform == 'x86_64-dgpu' and decisions.compat.use and want_it and host.root"
          - directory: {path: /b}
            when: "host.name == 'elsewhere'"
          - directory: {path: /c}
            when: false
        """)
    assert [t.enabled for t in render(role, pod570)] == [True, False, False]
    assert [t.enabled for t in render(role, pod570, {"want_it": False})] == [False, False, False]


# -- values: precedence and native types ---------------------------------------------------------------

def test_role_defaults_override_fleet_defaults_and_inventory_vars_override_both(tmp_path, pod570):
    role = write_role(tmp_path, "r", """\
        defaults: {python_env: /role/venv, tool_dir: /role/tool}
        tasks:
          - directory: {path: "{{ python_env }}|{{ tool_dir }}|{{ nvpl_home }}"}
        """)

    def path(variables):
        return render(role, pod570, variables)[0].resource.p["path"]

    assert path({}) == "/role/venv|/role/tool|/opt/nvidia/nvpl"   # nvpl_home: fleet's own default
    assert path({"tool_dir": "/inv/tool", "nvpl_home": "/inv/nvpl"}) == "/role/venv|/inv/tool|/inv/nvpl"


def test_a_lone_expression_keeps_its_type(tmp_path, pod570):
    role = write_role(tmp_path, "r", """\
        defaults:
          pkgs: [nvpl-blas, nvpl-lapack]
          gb: 10
          held: true
          nothing: null
        tasks:
          - pip: {venv: /opt/v, packages: "{{ pkgs }}", min_free_gb: "{{ gb }}", tmpdir: "{{ nothing }}"}
          - apt: {packages: ["{{ pkgs[0] }}", "x-{{ gb }}"], hold: "{{ held }}", lock_timeout: "{{ gb * 60 }}"}
          - directory: {path: "{{ pkgs | join('/') }}"}
        """)
    pip, apt, directory = (t.resource.p for t in render(role, pod570))
    assert pip["packages"] == ["nvpl-blas", "nvpl-lapack"] and pip["min_free_gb"] == 10 and pip["tmpdir"] == ""
    assert apt["packages"] == ["nvpl-blas", "x-10"] and apt["hold"] is True and apt["lock_timeout"] == 600
    assert directory["path"] == "nvpl-blas/nvpl-lapack"


def test_the_shipped_decision_lists_render_as_lists(pod570):
    facts = json.loads((DATA / "records" / "thor.json").read_text())
    decisions = decide(facts, {"torch_source": "jetson"}).to_json()
    role = load_role(SHIPPED / "nvpl" / "role.yaml")
    pip_task = render_role(role, {"torch_source": "jetson"}, facts, decisions, HOST)[0]
    assert pip_task.enabled and pip_task.resource.p["packages"] == ["nvpl-blas", "nvpl-lapack"]


def test_task_names_are_rendered(pod570):
    task = render(load_role(SHIPPED / "cutlass" / "role.yaml"), pod570, {"cutlass_ref": "v4.2.1"})[1]
    assert task.spec.name == "CUTLASS at v4.2.1" and task.resource.p["ref"] == "v4.2.1"
    torch = render(load_role(SHIPPED / "torch" / "role.yaml"), pod570)[1]
    assert torch.spec.name == "torch 2.11.0 (official index)"


def test_a_template_fills_the_resources_content_and_may_quote_for_the_shell(tmp_path, pod570):
    role = write_role(tmp_path, "r", """\
        defaults: {greeting: "it's $(here)"}
        tasks:
          - file: {path: /etc/x.sh, template: x.sh.j2}
          - assert: {template: check.py.j2, interpreter: python}
        """, {"x.sh.j2": "export G={{ greeting | shq }}\nCUDA={{ decisions.cuda.package | dashed }}\n",
              "check.py.j2": "print({{ decisions.compat.use }})\n"})
    file_task, assert_task = render(role, pod570)
    assert file_task.resource.p["content"] == "export G='it'\"'\"'s $(here)'\nCUDA=cuda-toolkit-13-0\n"
    assert "template" not in file_task.resource.p or file_task.resource.p["template"] is None
    assert assert_task.resource.p["script"] == "print(True)\n"


@pytest.mark.parametrize("value, says", [("{{ ref | nosuchfilter }}", "No filter named 'nosuchfilter'"),
                                         ("{{ ref }", "unexpected '}'")])
def test_a_value_that_does_not_compile_is_refused_at_load_naming_its_line(tmp_path, value, says):
    with pytest.raises(InputError) as err:
        write_role(tmp_path, "r", f"""\
            tasks:
              - name: t
                git:
                  repo: https://example.com/r.git
                  dest: /opt/r
                  ref: "{value}"
            """)
    assert str(err.value).startswith(f"{tmp_path}/r/role.yaml:6: template error in ") and says in str(err.value)


def test_roles_load_only_from_the_package_and_the_declared_roles_path(tmp_path, monkeypatch):
    """A roles/ planted beside an inventory or in the working directory never runs (it would run as root)."""
    from fleet.inventory import load_inventory

    planted = tmp_path / "roles" / "cuda_toolkit"
    planted.mkdir(parents=True)
    (planted / "role.yaml").write_text("tasks:\n  - command: {cmd: touch /tmp/pwned, creates: /tmp/pwned}\n")
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n  here: {connection: local}\n")
    monkeypatch.chdir(tmp_path)
    role = load_roles(["cuda_toolkit"], roles_dirs(load_inventory(inv).roles_path))[0]
    assert role.origin == "built-in" and role.tasks[0].type == "apt"
    inv.write_text("roles_path: roles\nhosts:\n  here: {connection: local}\n")
    declared = load_roles(["cuda_toolkit"], roles_dirs(load_inventory(inv).roles_path))[0]
    assert declared.origin == str(planted) and declared.tasks[0].type == "command"


def test_a_missing_roles_path_is_one_sentence_with_its_line(tmp_path):
    from fleet.errors import InputError
    from fleet.inventory import load_inventory

    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n  here: {connection: local}\nroles_path: [my-roles]\n")
    with pytest.raises(InputError) as err:
        load_inventory(inv)
    assert f"{inv}:3" in str(err.value) and "'my-roles' is not a directory" in str(err.value)


def test_compiled_texts_are_shared_but_each_host_renders_its_own_values(tmp_path, pod570):
    """Rendering compiles each distinct text once (fleet/roles/sandbox.py compiled*): the second host must still get its
    own values, conditions and template output, and a render error its file:line every time."""
    role = write_role(tmp_path, "r", """\
        defaults: {greeting: hi, wanted: true}
        tasks:
          - file: {path: "/etc/{{ greeting }}", template: x.j2}
            when: "wanted"
        """, {"x.j2": "say {{ greeting }}\n{{ missing_one if greeting == 'bad' else '' }}\n"})
    first = render(role, pod570)[0]
    second = render(role, pod570, {"greeting": "hello"})[0]
    off = render(role, pod570, {"wanted": False})[0]
    assert (first.resource.p["path"], first.resource.p["content"]) == ("/etc/hi", "say hi\n\n")
    assert (second.resource.p["path"], second.resource.p["content"]) == ("/etc/hello", "say hello\n\n")
    assert first.enabled and second.enabled and not off.enabled
    for _ in range(2):
        with pytest.raises(InputError, match=r"r/templates/x\.j2:2: 'missing_one' is undefined"):
            render(role, pod570, {"greeting": "bad"})


def test_jinjas_globals_reach_a_role_text_and_an_expression():
    """Compiled templates carry the environment's globals as a plain dict (issue 46: a ChainMap was copied key by key
    at every render): range, dict, namespace, lipsum, cycler and joiner still reach a role's text and its `when:`."""
    from fleet.roles.sandbox import JINJA, compiled, render, truth

    assert set(compiled("x").globals) == set(JINJA.globals) == {"range", "dict", "lipsum", "cycler", "joiner",
                                                                 "namespace"}
    assert render("{{ range(3) | list }}", {}, "t") == [0, 1, 2]
    assert render("{% set ns = namespace(n=2) %}{{ ns.n }} {{ dict(a=1).a }}", {}, "t") == "2 1"
    assert truth("range(2) | list == [0, 1] and namespace(a=1).a == 1", {}, "t")
    assert render("{{ range }}", {"range": "a user's variable"}, "t") == "a user's variable"   # a variable first
