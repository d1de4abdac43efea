"""archive, command and assert resources, run for real with bash inside tmp_path."""

from __future__ import annotations

import json
import tarfile

import pytest

from fleet.errors import InputError
from resource_shell import apply, check, converge, make, sh


@pytest.fixture
def tarball(tmp_path):
    """An NVIDIA-style redist tarball: one top directory holding lib/ and include/."""
    top = tmp_path / "src" / "libcudss-linux-sbsa-0.7.1.4_cuda13-archive"
    (top / "lib").mkdir(parents=True)
    (top / "include").mkdir()
    (top / "lib" / "libcudss.so.0").write_bytes(b"\x7fELF stand-in")
    (top / "include" / "cudss.h").write_text("/* header */\n")
    path = tmp_path / "cudss.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        tar.add(top, arcname=top.name)
    return path


@pytest.mark.parametrize("scheme", ["file://", ""])
def test_archive_unpacks_under_the_prefix_once(tmp_path, tarball, scheme):
    dest = tmp_path / "opt" / "nvidia" / "cudss"
    res = make("archive", url=f"{scheme}{tarball}", dest=str(dest), creates=f"{dest}/lib/libcudss.so.0")
    assert converge(res).reason == f"absent: {dest}/lib/libcudss.so.0"
    assert (dest / "lib" / "libcudss.so.0").read_bytes() == b"\x7fELF stand-in"
    assert (dest / "include" / "cudss.h").is_file()
    assert check(res).reason == f"present: {dest}/lib/libcudss.so.0"


def test_archive_that_cannot_be_fetched_leaves_no_prefix(tmp_path):
    dest = tmp_path / "opt" / "nvpl"
    res = make("archive", url=f"file://{tmp_path}/missing.tar.xz", dest=str(dest), creates=f"{dest}/lib/x")
    rc, out = sh(res.apply())
    assert rc != 0 and "missing.tar.xz" in out
    assert not dest.exists() and list(tmp_path.iterdir()) == []


def test_command_guarded_by_creates(tmp_path):
    made = tmp_path / "built" / "stamp"
    res = make("command", cmd=f"mkdir -p '{made.parent}' && date > '{made}'", creates=str(made))
    assert converge(res).reason == "needs to run"
    assert check(res).reason == f"exists: {made}"


def test_command_guarded_by_unless(tmp_path):
    log = tmp_path / "log"
    res = make("command", cmd=f"echo ran >> '{log}'", unless=f"grep -qx ran '{log}'")
    converge(res)
    assert check(res).reason == "unless-condition holds" and log.read_text() == "ran\n"


def test_a_command_without_a_guard_is_an_input_error():
    with pytest.raises(InputError, match="needs 'creates' or 'unless'"):
        make("command", cmd="echo hi")


def test_assert_in_bash(tmp_path):
    (tmp_path / "ok").touch()
    assert check(make("assert", script=f"test -e '{tmp_path}/ok'", msg="ok file")).in_state
    failed = check(make("assert", script="echo 'libcudss.so.0: not found'; exit 3", msg="libs"))
    assert (failed.in_state, failed.error, failed.reason) == (False, None, "libcudss.so.0: not found")


def test_assert_in_python_with_a_json_result(tmp_path):
    doc = {"passed": False, "checks": [{"name": "torch_imports", "passed": True, "detail": "torch 2.11"},
                                       {"name": "cuda_available", "passed": False, "detail": "no GPU"}]}
    script = f"import json, sys\nprint('noise first')\nprint(json.dumps({doc!r}))\nsys.exit(1)\n"
    result = check(make("assert", script=script, interpreter="python", json=True))
    assert (result.in_state, result.reason, result.data) == (False, "cuda_available: no GPU", doc)
    good = {"passed": True, "checks": [{"name": "torch_imports", "passed": True}]}
    ok = check(make("assert", script=f"print({json.dumps(json.dumps(good))})", interpreter="python", json=True))
    assert (ok.in_state, ok.reason, ok.data) == (True, "all checks passed", good)


def test_assert_that_prints_no_json_says_so():
    result = check(make("assert", script="raise SystemExit('torch missing')", interpreter="python", json=True,
                        msg="verify"))
    assert not result.in_state and result.reason == "verify: no result (torch missing)"


def test_assert_times_out(tmp_path):
    result = check(make("assert", script="sleep 5", timeout=1, msg="slow"))
    assert not result.in_state


def test_assert_has_nothing_to_apply():
    rc, out = sh(make("assert", script="true", msg="verify the stack").apply())
    assert rc == 1 and "nothing to apply: verify the stack" in out


def test_assert_interpreter_must_be_known():
    with pytest.raises(InputError, match="'interpreter' of assert must be one of bash, python"):
        make("assert", script="true", interpreter="perl")


def test_assert_needs_a_script_or_a_template():
    with pytest.raises(InputError, match="needs 'script' or 'template'"):
        make("assert", msg="nothing to run")
