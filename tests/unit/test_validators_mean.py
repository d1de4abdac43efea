r"""Validators that mean what they say (issue 49): depth, names and symbolic links.

- 20,000-deep YAML and 100,000-deep JSON are one sentence naming the file and line, exit 2 (was "internal error:
  RecursionError", exit 3), wherever fleet reads them: an inventory, `fleet decide FILE`, `fleet script
  --from-facts`, `fleet facts --cached`.
- A value with a control character is refused at validation: `$` in `^...$` also matches before a final newline,
  so "pod-a\n" passed every `re.match` validator; they end in `\Z` now (host names, variable names, URLs, modes,
  digests, requirements, users), and an address, user or key path holding one is refused.
- `fleet forget` through a symlinked inventory edits the file the link points to, and keeps the link.
"""

from __future__ import annotations

import io
import json
import os

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment


def fleet(tmp_path, *argv):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True), cwd=tmp_path)
    return main(list(argv), env), out.getvalue(), err.getvalue()


def test_a_20000_deep_inventory_is_one_sentence_exit_2(tmp_path):
    path = tmp_path / "inv.yaml"
    path.write_text("hosts:\n  a:\n    address: 10.0.0.1\n    vars:\n      deep: " + "[" * 20_000 + "]" * 20_000 + "\n")
    code, _, err = fleet(tmp_path, "validate", str(path))
    assert code == 2, err
    assert f"{path}:5: nested more than 200 levels deep" in err and "Recursion" not in err


@pytest.mark.parametrize("argv", [["decide", "{f}"], ["script", "--from-facts", "{f}"],
                                  ["facts", "{inv}", "--cached", "--json"]])
def test_a_100000_deep_json_record_is_one_sentence_exit_2(tmp_path, argv):
    (tmp_path / "facts").mkdir()
    record = tmp_path / "facts" / "a.json"
    record.write_text('{"host": "a", "system": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "inv.yaml").write_text("hosts:\n  a: {address: 10.0.0.1}\n")
    code, _, err = fleet(tmp_path, *[a.format(f=record, inv=tmp_path / "inv.yaml") for a in argv])
    assert code == 2, err
    assert "nested more than 200 levels deep" in err and str(record) in err and "Recursion" not in err


@pytest.mark.parametrize("hosts, said", [
    ('  "pod-a\\n": {address: 10.0.0.1}\n', "host name 'pod-a\\n' must be"),
    ('  pod-a: {address: "10.0.0.1\\n"}\n', "address of host 'pod-a' holds a control character"),
    ('  pod-a: {address: 10.0.0.1, user: "root\\r"}\n', "user of host 'pod-a' holds a control character"),
    ('  pod-a: {address: 10.0.0.1, vars: {"cuda_version\\n": "13.0"}}\n', "cuda_version\\n"),
    ('  pod-a: {address: 10.0.0.1, vars: {torch_index_url: "https://example.org/\\nwhl"}}\n', "torch_index_url"),
    ('  pod-a: {address: 10.0.0.1, vars: {python_env: "/opt/a\\nb"}}\n', "is a path holding a control character"),
    ('  pod-a: {address: 10.0.0.1, vars: {cutlass_dir: "/opt/c\\td"}}\n', "is a path holding a control character"),
])
def test_a_control_character_is_refused_at_validation(tmp_path, counting_port, hosts, said):
    path = tmp_path / "inv.yaml"
    path.write_text("hosts:\n" + hosts.replace("10.0.0.1", f"127.0.0.1, port: {counting_port.port}", 1))
    code, _, err = fleet(tmp_path, "validate", str(path))
    assert code == 2 and said in err, err
    if "vars" not in hosts:   # fleet run warns of a role variable it does not use; a connection setting stops it
        code, _, err = fleet(tmp_path, "run", str(path), "--", "true")
        assert code == 2 and not counting_port.contacted(), err


def test_the_anchored_validators_refuse_a_final_newline():
    from fleet import parse
    from fleet.inventory import NAME_RE, VAR_RE
    from fleet.record.store import _HOST_RE
    from fleet.resources.base import _MODE
    from fleet.resources.pip import _REQUIREMENT

    for pattern, good in ((NAME_RE, "pod-a"), (VAR_RE, "cuda_version"), (_HOST_RE, "pod-a"), (_MODE, "0644"),
                          (_REQUIREMENT, "torch==2.11.0"), (parse.URL, "https://example.org/simple"),
                          (parse.GIT_URL, "https://github.com/NVIDIA/cutlass")):
        assert pattern.match(good) and not pattern.match(good + "\n"), pattern.pattern


def test_forget_through_a_symlinked_inventory_edits_the_real_file_and_keeps_the_link(tmp_path):
    real = tmp_path / "real" / "pods.yaml"
    real.parent.mkdir()
    real.write_text("hosts:\n  keep: {address: 10.0.0.1}\n  gone: {address: 10.0.0.2}\n")
    link = tmp_path / "pods.yaml"
    link.symlink_to(os.path.relpath(real, tmp_path))
    code, _, err = fleet(tmp_path, "forget", "gone", "--inventory", str(link), "--known-hosts",
                         str(tmp_path / "known_hosts"))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(real, tmp_path)   # the link, kept
    assert real.read_bytes() == b"hosts:\n  keep: {address: 10.0.0.1}\n"               # the real file, edited
    assert sorted(p.name for p in real.parent.iterdir()) == ["pods.yaml"]               # no temp file left
