"""Role texts compiled once per machine (fleet/roles/template_cache.py): what a later process takes from the cache, and
what it never takes (a damaged entry, an error, a directory others can write to). Each case runs `fleet` code in
a fresh Python process, as every command is one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Loads the built-in roles and reads their variables, then says how many texts Jinja compiled and parsed.
PROBE = """
import json, jinja2
from fleet import roles
from fleet.roles import declared, sandbox
compiled = parsed = 0
compile_, parse_ = jinja2.Environment.compile, jinja2.Environment.parse
def counting_compile(self, *a, **k):
    global compiled; compiled += 1; return compile_(self, *a, **k)
def counting_parse(self, *a, **k):
    global parsed; parsed += 1; return parse_(self, *a, **k)
jinja2.Environment.compile, jinja2.Environment.parse = counting_compile, counting_parse
loaded = roles.load_roles(None, [roles.BUILTIN_DIR])
known = declared.variables_of(loaded)
when = next(r for r in loaded if r.name == "cuda_compat").when
print(json.dumps({"compiled": compiled, "parsed": parsed, "known": sorted(known), "when": when,
                  "when_value": bool(sandbox.expression(when)(decisions={"compat": {"use": True}}))}))
"""


def load(cache: Path, extra_env: dict | None = None) -> dict:
    env = {**os.environ, "FLEET_CACHE_DIR": str(cache), **(extra_env or {})}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_second_process_compiles_and_parses_nothing_and_gets_the_same_answers(tmp_path):
    first, second = load(tmp_path), load(tmp_path)
    assert first["compiled"] > 50 and first["parsed"] > 50          # the eight roles: ~160 texts
    assert second["compiled"] == 0 and second["parsed"] == 0
    assert second["known"] == first["known"] and "cutlass_ref" in second["known"]
    assert second["when"] == "decisions.compat.use or decisions.compat.installed" and second["when_value"] is True
    assert (tmp_path / "jinja").stat().st_mode & 0o777 == 0o700


def test_a_damaged_entry_is_compiled_again_never_used(tmp_path):
    first = load(tmp_path)
    for entry in (tmp_path / "jinja").iterdir():
        entry.write_bytes(entry.read_bytes()[:20])                   # torn: header only, or half a JSON list
    again = load(tmp_path)
    assert again["compiled"] == first["compiled"] and again["parsed"] == first["parsed"]
    assert again["known"] == first["known"]
    assert load(tmp_path)["compiled"] == 0                           # and rewritten whole


def test_a_directory_others_can_write_to_is_not_used(tmp_path):
    (tmp_path / "jinja").mkdir(mode=0o777)
    (tmp_path / "jinja").chmod(0o777)
    first, second = load(tmp_path), load(tmp_path)
    assert second["compiled"] == first["compiled"] > 0               # compiled every time, as before the cache
    assert list((tmp_path / "jinja").iterdir()) == []


def test_a_role_with_a_syntax_error_fails_at_load_on_every_run(tmp_path):
    role = tmp_path / "roles" / "broken" / "role.yaml"
    role.parent.mkdir(parents=True)
    role.write_text("tasks:\n  - name: x\n    command: {run: 'echo {{ oops(', creates: /tmp/x}\n")
    code = ("from fleet import roles, errors\n"
            f"try:\n    roles.load_roles(['broken'], [roles.Path({str(role.parent.parent)!r})])\n"
            "except errors.InputError as e:\n    print(e)\n")
    env = {**os.environ, "FLEET_CACHE_DIR": str(tmp_path / "cache")}
    said = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           timeout=600).stdout for _ in range(2)]
    assert said[0] == said[1] and f"{role}:3" in said[0]


@pytest.mark.parametrize("expr", ["a b", "x) %}{% set result = 1"])
def test_an_expression_jinja_refuses_is_refused_with_a_cache_too(tmp_path, monkeypatch, expr):
    """The cached form is a template setting `result`; Jinja's own expression check still runs first."""
    import jinja2

    from fleet.roles import sandbox
    from fleet.roles import template_cache
    monkeypatch.setenv("FLEET_CACHE_DIR", str(tmp_path))
    template_cache._bytecode.cache_clear()
    sandbox.expression.cache_clear()
    with pytest.raises(jinja2.TemplateSyntaxError):
        sandbox.expression(expr)
    template_cache._bytecode.cache_clear()
    assert json.dumps(sorted(p.name for p in (tmp_path / "jinja").iterdir())) == "[]"
