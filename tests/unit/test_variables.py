"""Variables with one home (fleet/variables.py and each role's `variables:`): what passes is what renders, for every
spelling a user can write (top-level vars, group vars, host vars, --set), and for EVERY declared variable: the
table below gives each type's accepted spellings (with the value fleet then uses) and rejected ones, and the tests
walk every declaration through it. A rejected value is exit 2 at its own file:line (or its --set)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from fleet import variables
from fleet.cli import main
from fleet.env import Environment
from fleet.errors import InputError
from fleet.inventory import load_inventory
from fleet.engine.session import check_variables as check_hosts
from fleet.roles.declared import variables_of as declared
from fleet.roles import load_roles, roles_dirs
from fleet.inventory import set_vars

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "tests" / "data" / "records" / "h100-pod-570.json"
DECLARED = {name: var for name, var in declared(load_roles(None, roles_dirs())).items() if var.type != "any"}
PIN = "a" * 64

# type -> (accepted: [(spelling, value fleet uses)], rejected: [spelling]), good for every variable of the type
SPELLINGS: dict[str, tuple[list, list]] = {
    "bool": ([("off", False), ("OFF", False), ("no", False), ("false", False), ("0", False), (0, False),
              (False, False), (" on ", True), ("Yes", True), ("1", True), (1, True), (True, True)],
             ["maybe", 2, "", "offf", None, []]),
    "int": ([(10, 10), ("10", 10), (" 7 ", 7), (0, 0)],
            ["lots", True, 1.5, "1.5", -1, "-1", "nan", "", []]),
    "float": ([(0.5, 0.5), ("0.25", 0.25), (1, 1.0), ("0", 0.0)],
              ["nan", "inf", "-inf", 1.5, "-0.1", True, "x", "", []]),
    "seconds": ([(900, 900), ("900", 900), ("60.0", 60), (" 60 ", 60)],
                ["-1", -1, "nan", "inf", 1e12, "1e12", True, "15m", "2.5", 0.5, "", None, []]),
    "duration": ([("24h", "24h"), ("30m", "30m"), ("2d", "2d"), (3600, 3600), ("0", "0")],
                 ["soon", "-1h", "1w", True, "nan", "", None, []]),
    "gpus": ([("8x H200", "8x H200"), (8, "8"), ("H200", "H200"), (" 8 H100 80GB HBM3 ", "8 H100 80GB HBM3"),
              ("", "")],
             ["0", "0x H200", "-1", "H200!", True, None, [8], {"count": 8}]),
    "text": ([], [True, False, None, ["x"], {"a": 1}]),   # + each one's own default and choices (below)
    "url": ([("https://mirror.example/x/", "https://mirror.example/x/"), ("file:///srv/mirror/", "file:///srv/mirror/")],
            ["http://mirror.example/x/", "HTTP://mirror.example/x/", "mirror.example/x", "ftp://m.example/x",
             True, 5, None, ["https://x.example/"]]),
    "git_url": ([("https://github.com/NVIDIA/cutlass.git",) * 2, ("git@github.com:NVIDIA/cutlass.git",) * 2,
                 ("/srv/mirror/cutlass",) * 2, ("ssh://git@example.org/c.git",) * 2],
                ["git://github.com/NVIDIA/cutlass.git", "http://github.com/NVIDIA/cutlass.git",
                 "github.com/NVIDIA/cutlass", True, None, []]),
    "path": ([("/workspace/x", "/workspace/x"), (" /srv/a/ ", "/srv/a/")],
             ["relative/dir", "/a/../b", True, 5, None, []]),
    "list": ([([], []), ([{"match": "H100", "peak": 989}], [{"match": "H100", "peak": 989}])],
             ["H100", {"match": "H100"}, True, None]),
    "mapping": ([({}, {}), ({"https://mirror.example/k.deb": PIN}, {"https://mirror.example/k.deb": PIN})],
                ["x", [], True]),
}
# per variable beyond its type's rows: a bound or a rule of its own
OWN = {"apt_lock_timeout": ([(0, 0), ("0", 0)], []), "verify_timeout": ([], [0, "0"]),
       "python_env": ([], ["/", "/usr/local", "/root/"]), "cutlass_dir": ([], ["/usr"]),
       "nvpl_home": ([], ["/usr/local"]), "cudss_home": ([], ["/opt"]),
       "torch_min_free_gb": ([], []), "verify_perf_memory_share": ([], [2]),
       "torch_source": ([], ["conda"]), "nvpl_source": ([], ["conda"]), "torch_installer": ([], ["conda"])}


def accepted(var) -> list[tuple]:
    rows = list(SPELLINGS[var.type][0]) + OWN.get(var.name, ([], []))[0]
    if var.type == "text":
        rows += [(c, c) for c in var.choices] or [(var.default, var.default)]
    if var.default == "" and var.type in ("url", "git_url", "path", "text"):
        rows.append(("", ""))
    return rows


def rejected(var) -> list:
    rows = list(SPELLINGS[var.type][1]) + OWN.get(var.name, ([], []))[1]
    return [r for r in rows if not (r == "" and var.default == "")]


def yaml_of(value) -> str:
    return json.dumps(value)        # JSON is YAML: a string stays quoted, so "off" is the text off


def test_every_declared_type_has_spellings_and_every_variable_has_a_description():
    assert {v.type for v in DECLARED.values()} <= set(SPELLINGS)
    assert set(SPELLINGS) <= set(variables.TYPES)
    assert len(DECLARED) >= 35
    assert [n for n, v in DECLARED.items() if not v.description] == []


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_each_variable_converts_every_accepted_spelling_and_refuses_every_rejected_one(name):
    var = DECLARED[name]
    for spelling, value in accepted(var):
        got = var.convert(spelling)
        assert got == value and type(got) is type(value), (name, spelling, got)
    for spelling in rejected(var):
        with pytest.raises(variables.Rejected) as caught:
            var.convert(spelling)
        assert str(caught.value).startswith(f"{name}="), caught.value
        assert re.search(r"[:;] (write|set|quote)", str(caught.value)), caught.value   # the fix is in the sentence


def rounds(names: list[str], spellings):
    """{name: one of its spellings} per round, until every variable's every spelling has had its round."""
    lists = {n: spellings(DECLARED[n]) for n in names}
    for i in range(max(len(rows) for rows in lists.values())):
        yield {n: rows[i % len(rows)] for n, rows in lists.items()}


def _inventory(tmp_path: Path, values: dict) -> Path:
    """All of `values` at the top level (host top), in a group's vars (host grp) and in a host's own (host own)."""
    block = lambda indent: "".join(f"{indent}{n}: {yaml_of(v)}\n" for n, v in values.items())  # noqa: E731
    path = tmp_path / "inv.yaml"
    path.write_text("vars:\n" + block("  ") +
                    "hosts:\n  top: {address: 192.0.2.1}\n  grp: {address: 192.0.2.2}\n  cli: {address: 192.0.2.4}\n"
                    "  own:\n    address: 192.0.2.3\n    vars:\n" + block("      ") +
                    "groups:\n  g:\n    hosts: [grp]\n    vars:\n" + block("      "))
    return path


@pytest.mark.parametrize("kind", sorted(SPELLINGS))
def test_what_passes_is_what_is_used_from_every_place_a_value_is_written(kind, tmp_path):
    names = [n for n, v in DECLARED.items() if v.type == kind]
    for chosen in rounds(names, accepted):
        inv = load_inventory(_inventory(tmp_path, {n: s for n, (s, _) in chosen.items()}))
        hosts = list(inv.hosts.values())
        set_vars([inv.hosts["cli"]], {n: str(s) for n, (s, _) in chosen.items() if isinstance(s, str)})  # --set
        check_hosts(hosts, inv.roles_path)
        for host in hosts:
            for name, (spelling, value) in chosen.items():
                if host.name == "cli" and not isinstance(spelling, str):
                    continue                                   # --set writes text only
                assert host.vars[name] == value and type(host.vars[name]) is type(value), \
                    (host.name, name, spelling, host.vars[name])
        where = inv.hosts["grp"].var_where
        assert all(re.search(r"inv\.yaml:\d+$", where[n]) for n in names)
        assert all(inv.hosts["cli"].var_where[n] == f"--set {n}"
                   for n, (s, _) in chosen.items() if isinstance(s, str))


@pytest.mark.parametrize("kind", sorted(SPELLINGS))
def test_a_rejected_spelling_is_named_at_its_own_line_and_in_its_set(kind, tmp_path):
    names = [n for n, v in DECLARED.items() if v.type == kind]
    for chosen in rounds(names, rejected):
        path = tmp_path / "inv.yaml"
        path.write_text("hosts:\n  h:\n    address: 192.0.2.1\n    vars:\n" +
                        "".join(f"      {n}: {yaml_of(v)}\n" for n, v in chosen.items()))
        lines = {n: 5 + k for k, n in enumerate(chosen)}
        inv = load_inventory(path)
        with pytest.raises(InputError) as caught:
            check_hosts(list(inv.hosts.values()), inv.roles_path)
        problems = str(caught.value).splitlines()
        for name, value in chosen.items():
            assert any(p.startswith(f"{path}:{lines[name]}: {name}=") for p in problems), (name, value, problems)
        texts = {n: v for n, v in chosen.items() if isinstance(v, str)}
        if texts:
            plain = tmp_path / "plain.yaml"
            plain.write_text("hosts:\n  h: {address: 192.0.2.1}\n")
            host = load_inventory(plain).hosts["h"]
            set_vars([host], texts)
            with pytest.raises(InputError) as caught:
                check_hosts([host], ())
            for name in texts:
                assert f"--set {name}: {name}=" in str(caught.value), (name, str(caught.value))


def _fleet(tmp_path, *argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=400, soft_wrap=True),
                      err_console=Console(file=err, width=400, soft_wrap=True), cwd=tmp_path)
    return main(list(argv), env), out.getvalue(), err.getvalue()


@pytest.mark.parametrize("where", ["top", "group", "host", "set", "unquoted"])
def test_verify_perf_off_renders_false_however_it_is_written(where, tmp_path):
    """The report's case: `verify_perf: "off"` (quoted) passed validation and rendered PERF = True (now: the verify
    program's CONFIG_JSON, fleet/remote/verify/config.py, says "perf": false)."""
    line = {"top": 'vars: {verify_perf: "off"}\n', "unquoted": "vars: {verify_perf: off}\n"}.get(where, "")
    host_vars = ', vars: {verify_perf: "off"}' if where == "host" else ""
    group = 'groups:\n  pods: {hosts: [pod], vars: {verify_perf: "off"}}\n' if where == "group" else ""
    (tmp_path / "inv.yaml").write_text(f"{line}hosts:\n  pod: {{address: 192.0.2.1{host_vars}}}\n{group}")
    extra = ["--set", "verify_perf=off"] if where == "set" else []
    status, out, err = _fleet(tmp_path, "script", str(tmp_path / "inv.yaml"), "--limit", "pod", "--from-facts", str(RECORD), *extra)
    assert status == 0, err
    assert re.findall(r'"perf": (true|false)\b', out) == ["false"], re.findall(r'"perf": \w+', out)
    status, out, err = _fleet(tmp_path, "script", str(tmp_path / "inv.yaml"), "--limit", "pod", "--from-facts", str(RECORD),
                              "--set", "verify_perf=on")
    assert status == 0, err
    assert re.findall(r'"perf": (true|false)\b', out) == ["true"]


def test_a_bad_set_value_is_exit_2_naming_the_set(tmp_path):
    (tmp_path / "inv.yaml").write_text("hosts:\n  pod: {address: 192.0.2.1}\n")
    status, out, err = _fleet(tmp_path, "script", str(tmp_path / "inv.yaml"), "--limit", "pod", "--from-facts", str(RECORD),
                              "--set", "verify_timeout=nan")
    assert status == 2 and out == ""
    assert " ".join(err.split()).startswith("error: --set verify_timeout: verify_timeout='nan' is not a number of "
                                            "seconds: write a finite number"), err


def test_a_role_default_its_declaration_refuses_is_named_at_the_role_line(tmp_path):
    role = tmp_path / "roles" / "mine"
    role.mkdir(parents=True)
    (role / "role.yaml").write_text("variables:\n  mine_timeout: {type: seconds, default: -5, description: x}\n"
                                    "tasks:\n  - name: t\n    command: {cmd: \"true\"}\n")
    with pytest.raises(InputError, match=rf"{role}/role.yaml:2: mine_timeout=-5 seconds is not more than 0"):
        load_roles(["mine"], [tmp_path / "roles"])
    (role / "role.yaml").write_text("defaults: {apt_lock_timeout: soon}\ntasks:\n  - name: t\n    command: {cmd: \"true\"}\n")
    with pytest.raises(InputError, match=rf"{role}/role.yaml:1: apt_lock_timeout='soon' is not a number of seconds"):
        load_roles(["mine"], [tmp_path / "roles"])


def test_the_readme_table_is_the_declarations():
    """README.md shows every variable from the declarations themselves (fleet.variables.table); regenerate it with
    python -c 'from tests.unit.test_variables import readme_table; print(readme_table())'."""
    text = (ROOT / "README.md").read_text()
    found = re.search(r"<!-- variables:begin -->\n(.*?)<!-- variables:end -->", text, re.S)
    assert found, "README.md has no <!-- variables:begin --> ... <!-- variables:end --> section"
    assert found[1] == readme_table(), "README's variables table differs from the declarations:\n" + readme_table()


def readme_table() -> str:
    return variables.table(v for v in declared(load_roles(None, roles_dirs())).values() if v.type != "any")


@pytest.mark.parametrize("spec, says", [
    ("{type: secs, default: 5}", "has type 'secs'; write one of bool, int"),
    ("{type: int}", "is declared as a mapping with type and default"),
    ("5", "is declared as a mapping with type and default"),
    ("{type: int, default: 5, min: low}", "min and max of 'mine_x' are numbers"),
    ("{type: text, default: a, choices: a}", "choices of 'mine_x' are a list of words"),
    ("{type: int, default: 5, descripton: x}", "unknown key 'descripton' in the declaration of 'mine_x'; did you "
                                               "mean 'description'?"),
    ("{type: int, default: 50, max: 10}", "mine_x=50 is out of range: write a whole number at most 10"),
])
def test_a_declaration_that_cannot_be_right_is_named_at_its_line(spec, says, tmp_path):
    role = tmp_path / "roles" / "mine"
    role.mkdir(parents=True)
    (role / "role.yaml").write_text(f"description: x\nvariables:\n  mine_x: {spec}\n"
                                    "tasks:\n  - name: t\n    command: {cmd: \"true\", creates: /x}\n")
    with pytest.raises(InputError) as caught:
        load_roles(["mine"], [tmp_path / "roles"])
    assert str(caught.value).startswith(f"{role}/role.yaml:3: ") and says in str(caught.value), caught.value
