"""The shortcuts of decide-and-render (issue 46: a converged host's decide_tasks at half its cost) give exactly what
the long way gives: every task's rendered values, check text, decisions and refusals, on every recorded host's
facts and on perturbed ones; and the sandbox's quicker verdicts are Jinja's own."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from fleet.decide import families as decide_families
from fleet.decide import loader as decide_loader
from fleet.decide.model import as_dict
from fleet.engine import probe
from fleet.engine.decided import check_sections, decide_tasks
from fleet.errors import FleetError
from fleet.inventory import Host
from fleet.knowledge import cuda_table
from fleet.remote import families, loader_rules
from fleet.roles import Role, TaskSpec, declared, load_roles, roles_dirs, sandbox
from fleet.roles.role import template_source

ROOT = Path(__file__).resolve().parents[2]
# every facts record the project keeps: the replayed lab's, the tests' recorded and captured ones, the real H100's
DATA = ROOT / "tests" / "data"
RECORDS = sorted({*(ROOT / "bench" / "data" / "replay-lab-facts").glob("*.json"), *(DATA / "records").rglob("*.json"),
                  *(DATA / "h100-device").rglob("*.json"), *(DATA / "captured").rglob("*.json")})


def _facts() -> list[tuple[str, dict]]:
    out = []
    for path in RECORDS:
        try:
            facts = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(facts, dict) and "gathered_at" in facts and isinstance(facts.get("system"), dict):
            out.append((str(path.relative_to(ROOT)), facts))
    return out


FACTS = _facts()
ROLES = tuple(load_roles(None, roles_dirs()))   # loaded once, as a run loads them for every host


def _perturbed(facts: dict):
    """The record as it is, and changed where the roles' texts branch: another driver, no python, no torch or
    CUDA, systemd flipped, another host name; with variables that take other sources and paths."""
    yield "as recorded", facts, {}
    unjudged = {k: v for k, v in facts.items() if k != "paths"}   # an older record: no path verdicts, none refused
    yield "no path verdicts", unjudged, {}
    older = copy.deepcopy(facts)
    if isinstance(older.get("driver"), dict):
        older["driver"]["version"] = "550.54.15"
    yield "driver 550", older, {}
    bare = copy.deepcopy(facts)
    bare["python"] = None
    bare.pop("torch", None)
    yield "no python", bare, {"nvpl_source": "tarball", "cudss_source": "apt"}
    other = copy.deepcopy(facts)
    other["system"]["hostname"] = "another-host"
    other["system"]["systemd"] = not other["system"].get("systemd")
    other.pop("cuda", None)
    yield "systemd flipped", other, {"nvpl_source": "apt", "cudss_source": "tarball"}
    yield "variables", facts, {"cuda_version": "12.8", "verify_perf": True, "torch_source": "jetson",
                               "cuda_keyring_url": "https://example.com/k.deb", "python_env": "/srv/venv",
                               "cutlass_ref": "v9.9"}


def _rendered(roles, host: Host, facts: dict) -> str:
    """Every byte a host's Decided and its probe's checks carry, or the refusal's sentence."""
    try:
        decided = decide_tasks(roles, host, facts)
        checks = check_sections(decided, 86400.0, have=probe.programs_of(facts))
    except FleetError as exc:
        return f"{type(exc).__name__}: {exc}"
    tasks = [(t.id, repr(t.spec), t.enabled, t.skip_reason, t.skip_condition, t.why, t.deadline,
              type(t.resource).__name__, repr(t.resource.p), repr(getattr(t.resource, "variables", None)),
              t.resource.check() if t.enabled else None) for t in decided.tasks]
    return json.dumps([decided.decisions_json, tasks, repr(checks)], sort_keys=True, default=repr)


@pytest.fixture
def jinja_only(monkeypatch):
    """Switch every shortcut off: each text rendered by Jinja, each verdict Jinja's own sandbox's, each template
    file read and the names a role reads found again on every call, a left-out task's values validated again, and
    decide's version comparisons, loader path rules and AcceptEnv patterns judged afresh."""
    def long_way():
        found = declared.names_read

        def afresh(role):
            role.names = None
            return found(role)
        monkeypatch.setattr(declared, "names_read", afresh)
        monkeypatch.setattr(Role, "template", lambda self, name, where="": template_source(
            self.template_path(name), where or str(self.path)))
        monkeypatch.setattr(TaskSpec, "unrendered", property(lambda self: None, lambda self, value: None))
        monkeypatch.setattr(sandbox, "FAST", False)
        # decide's answers kept per whole input: asked afresh
        monkeypatch.setattr(cuda_table, "_compared", cuda_table._compare)
        monkeypatch.setattr(decide_loader, "is_stub", loader_rules.is_stub)
        monkeypatch.setattr(decide_loader, "is_compat", loader_rules.is_compat)
        monkeypatch.setattr(decide_families, "_accepted", families.accepted)
        monkeypatch.setattr(sandbox.Sandbox, "getattr", SandboxedEnvironment.getattr)
        monkeypatch.setattr(sandbox.Sandbox, "is_safe_attribute", ImmutableSandboxedEnvironment.is_safe_attribute)
        monkeypatch.setattr(sandbox.Sandbox, "call", SandboxedEnvironment.call)
    return long_way


def test_the_corpus_holds_every_lab_profile_and_the_real_hosts():
    names = {name for name, _ in FACTS}
    assert {f"bench/data/replay-lab-facts/{n}.json" for n in ("thor", "spark", "pod-570", "pod-580")} <= names
    assert any("h100-device" in n for n in names) and len(FACTS) >= 20, names


@pytest.mark.parametrize("name,facts", FACTS, ids=[n for n, _ in FACTS])
def test_decide_and_render_are_the_same_with_and_without_the_shortcuts(name, facts, jinja_only):
    roles = ROLES
    cases = [(label, f, Host(Path(name).stem, address="192.0.2.1", user=user, vars=dict(v)))
             for label, f, v in _perturbed(facts) for user in ("root", "ubuntu")]
    fast = [_rendered(roles, host, f) for _, f, host in cases]
    jinja_only()
    slow = [_rendered(roles, host, f) for _, f, host in cases]
    for (label, _, host), a, b in zip(cases, fast, slow):
        assert a == b, f"{name} ({label}, {host.user}): the shortcut renders otherwise"
    assert any(not a.startswith(("HostError", "InputError")) for a in fast), f"{name}: nothing rendered at all"


CTX = {"decisions": {"compat": {"use": True, "path": "/usr/local/cuda-13.0/compat", "reason": "r"}, "gpu": False,
                     "packages": ["a", "b"], "n": 3, "none": None, "items": "a key named like a dict method"},
       "python_env": "/opt/fleet/venv", "padded": " two\nlines ",
       "count": 7, "flag": False, "nothing": None, "listed": [1, 2],
       "facts": {"system": {"systemd": True, "hostname": "h"}}, "host": {"roles": ["env_hooks"]}}
TEXTS = ["{{ python_env }}", "[{{ padded }}]\n", "{{ padded }}",
         "{{ python_env }}/bin/python", "{{python_env}}", "  {{ python_env }}", "{{ count }}",
         "{{ flag }}", "{{ nothing }}", "{{ listed }}", "{{ decisions.compat.use }}", "{{ decisions.compat }}",
         "{{ decisions.packages }}", "a {{ decisions.compat.path }} b {{ count }} c", "{{ decisions.items }}",
         "{{ decisions.keys }}", "{{ decisions.none }}", "{{ facts.system.get('systemd') }}", "x\r\n{{ count }}",
         "{{ true }}", "{{ none }}", "{{ self }}", "{{- count }}", "{{ count -}}", "{# c #}{{ count }}",
         "{{ count }}{% if flag %}x{% endif %}", "{{ decisions.compat.use.real }}", "{{ listed.append }}",
         "{{ python_env.__class__ }}", "{{ decisions.get('compat').use }}", "{{ python_env.upper() }}"]
WRONG = ["{{ missing }}", "{{ decisions.missing }}", "{{ decisions.compat.missing.deeper }}", "{{ missing.x }}",
         "pre {{ decisions.missing }} post", "{{ listed.append(3) }}", "{{ python_env.__class__.__mro__ }}",
         "{{ decisions.update({}) }}"]
WHENS = ["decisions.compat.use", "decisions.gpu", "nothing", "listed", "count", "decisions.compat", "flag",
         "facts.system.get('systemd')", "decisions.missing", "missing", "decisions.compat.missing.x", "python_env.x",
         "true", "not decisions.gpu", "decisions.none", "decisions.compat.use or flag", "flag or nothing or count",
         "count == '7'", "python_env == '/opt/fleet/venv' and decisions.compat.use", "python_env != 'x' or missing",
         "decisions.gpu and missing", "missing and decisions.gpu", "decisions.compat.use == 'True'",
         "nothing == 'None'", "flag or decisions.gpu and count", "python_env == 'a and b'", "listed and decisions",
         "decisions.compat.path != '/usr/local/cuda-13.0/compat'", "python_env=='/opt/fleet/venv'"]


def _answer(call):
    try:
        value = call()
        return ("ok", type(value).__name__, value)
    except FleetError as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize("whole", [False, True])
def test_each_text_renders_and_fails_as_jinja_renders_it(whole, jinja_only):
    texts = TEXTS + WRONG
    fast = [_answer(lambda: sandbox.render(t, CTX, "role.yaml:3", whole=whole)) for t in texts]
    jinja_only()
    slow = [_answer(lambda: sandbox.render(t, CTX, "role.yaml:3", whole=whole)) for t in texts]
    assert fast == slow
    assert all(a[0] == "refused" for a in fast[len(TEXTS):]), fast[len(TEXTS):]


def test_each_when_is_judged_as_jinja_judges_it(jinja_only):
    fast = [_answer(lambda: sandbox.truth(w, CTX, "role.yaml:9")) for w in WHENS]
    jinja_only()
    assert fast == [_answer(lambda: sandbox.truth(w, CTX, "role.yaml:9")) for w in WHENS]


def test_the_sandbox_verdicts_are_jinjas_for_every_attribute_of_every_plain_type():
    stock = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined)
    for value in ({"a": 1}, [1], (1,), "text", 3, 2.5, True, None, {1}, frozenset({1})):
        for name in [*dir(value), "mro", "append", "clear", "update", "pop", "setdefault", "add", "__globals__"]:
            attribute = getattr(value, name, None)
            assert sandbox.JINJA.is_safe_attribute(value, name, attribute) == \
                stock.is_safe_attribute(value, name, attribute), (type(value), name)
            mine, theirs = sandbox.JINJA.getattr(value, name), stock.getattr(value, name)
            assert type(mine) is type(theirs), (type(value), name)
            if isinstance(mine, jinja2.Undefined):   # the same error when used: the same hint, name and class
                assert (mine._undefined_hint, mine._undefined_name, mine._undefined_exception) == \
                    (theirs._undefined_hint, theirs._undefined_name, theirs._undefined_exception), (type(value), name)
            else:
                assert mine == theirs or callable(mine), (type(value), name)
    data = {"compat": 1}
    assert sandbox.JINJA.getattr(data, "compat") == 1 and sandbox.JINJA.getattr(data, "get") == data.get
    assert isinstance(sandbox.JINJA.getattr(data, "missing"), jinja2.Undefined)
    with pytest.raises(jinja2.exceptions.SecurityError):
        sandbox.compiled("{{ listed.append(3) }}").render(CTX)
    with pytest.raises(jinja2.exceptions.SecurityError):
        sandbox.compiled("{{ decisions.update({}) }}").render(CTX)


@dataclasses.dataclass
class _Leaf:
    name: str
    values: list
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Tree:
    leaf: _Leaf
    leaves: list
    pair: tuple
    mapping: dict
    number: float = 1.5
    nothing: None = None


def test_as_dict_is_dataclasses_asdict():
    import collections

    Point = collections.namedtuple("Point", "x y")
    tree = _Tree(_Leaf("a", [1, {"k": [2, 3]}], {"e": (4, 5)}), [_Leaf("b", [])], (Point(1, 2), [3]),
                 {"x": _Leaf("c", [True, None, 2.5]), 1: "one"})
    mine, theirs = as_dict(tree), dataclasses.asdict(tree)
    assert mine == theirs and repr(mine) == repr(theirs)
    assert type(mine["pair"][0]) is Point
    assert mine["leaf"]["values"][1] is not tree.leaf.values[1]   # copied, as asdict copies
