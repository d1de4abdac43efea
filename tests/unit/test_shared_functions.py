"""The shared shell functions (fleet/shell.py FUNCTIONS) are declared by what calls them (`needs`) and written once by
whoever builds the script (issue 44): every probe source, every check and apply of the built-in roles rendered for the
lab's hosts, and the probe and apply scripts as built, call only functions their declarations define. Without the
declaration a body's call is `command not found` on the host: these tests find it before a host does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fleet.engine import decide_tasks, probe
from fleet.facts.sources import SOURCES
from fleet.inventory import Host
from fleet.roles import load_roles, roles_dirs
from fleet.shell import FUNCTIONS, define

ROOT = Path(__file__).resolve().parents[2]
FACTS = sorted((ROOT / "bench" / "data" / "replay-lab-facts").glob("*.json"))
_DEFINED = re.compile(r"(?m)^[ \t]*(fleet_[A-Za-z0-9_]+)[ \t]*\(\)")


def defined(text: str) -> set[str]:
    return set(_DEFINED.findall(text))


SHARED = defined(define(FUNCTIONS))     # every shared function's name


def called(text: str) -> set[str]:
    """The shared functions `text` calls (its own definitions of the same names aside)."""
    return (set(re.findall(r"\bfleet_[A-Za-z0-9_]+\b", text)) & SHARED) - defined(text)


def test_every_shared_function_is_found_in_its_programs():
    assert {"fleet_trust", "fleet_judged", "fleet_trusted_python", "fleet_retry", "fleet_fetch", "fleet_bin_ok",
            "fleet_bin_trusted", "fleet_program"} <= SHARED


@pytest.mark.parametrize("installed", [False, True], ids=["texts inline", "programs installed"])
def test_each_probe_source_declares_the_functions_it_calls(installed):
    needs = probe.Needs.of()
    if installed:
        needs = probe.Needs.of(have=[p.file for p in needs.programs.values()])
    declared = probe.functions(needs)
    for name, body in probe.bodies(needs).items():
        missing = called(body) - defined(define(declared[name]))
        assert not missing, f"facts.{name} calls {sorted(missing)} without declaring them"
    assert {source.name for source in SOURCES} == set(declared)


def _tasks():
    """Every task of the built-in roles as the engine renders them for each lab host's record, as root and not."""
    roles = load_roles(None, roles_dirs())
    for record in FACTS:
        facts = json.loads(record.read_text())
        for user in ("root", "ubuntu"):
            yield from (t for t in decide_tasks(roles, Host(record.stem, address="192.0.2.1", user=user), facts).tasks
                        if t.enabled)


def test_each_check_and_apply_of_the_built_in_roles_declares_the_functions_it_calls():
    seen = set()
    for task in _tasks():
        resource = task.resource
        for what, text in (("check", resource.check()), ("apply", resource.apply() if not resource.judged else "")):
            missing = called(text) - defined(define(resource.uses(apply=what == "apply")))
            assert not missing, f"{task.spec.role}: {task.spec.name} ({resource.type_name}) {what} calls " \
                                f"{sorted(missing)} without declaring them (needs = {resource.needs}, apply_needs = {resource.apply_needs})"
        seen.add(resource.type_name)
    assert {"pip", "git", "apt", "verify", "compat_gate"} <= seen, seen


def test_the_probe_script_defines_each_function_once_and_before_any_section():
    needs = probe.Needs.of()
    needs = probe.Needs.of(have=[p.file for p in needs.programs.values()])
    text = probe.script(needs)
    first = text.index("@@fleet:begin")
    for name in SHARED & called(text.replace("() {", "")):
        assert text.count(f"\n{name}() {{") + text.startswith(f"{name}() {{") == 1, name
        assert text.index(f"{name}() {{") < first, name
