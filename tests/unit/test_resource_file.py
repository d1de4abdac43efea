"""file and directory resources, run for real with bash inside tmp_path."""

from __future__ import annotations

import os
import stat

import pytest

from fleet.engine.plan import diff as _diff
from fleet.errors import InputError
from fleet.roles import Task, TaskSpec
from resource_shell import apply, check, converge, make, sh


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_file_converges_and_a_second_apply_changes_no_byte(tmp_path):
    target = tmp_path / "etc" / "fleet" / "env.sh"
    res = make("file", path=str(target), content="export A=1\n", mode="0640")
    before = converge(res)
    assert before.reason == "absent"
    assert target.read_bytes() == b"export A=1\n" and mode_of(target) == 0o640
    first = target.read_bytes()
    apply(res)
    assert target.read_bytes() == first
    assert check(res).reason == "content, mode and owner match"
    assert [p.name for p in target.parent.iterdir()] == ["env.sh"]  # no temp file left behind


def test_changed_content_is_reported_with_the_old_text_for_diff(tmp_path):
    target = tmp_path / "env.sh"
    target.write_text("export A=0\nkeep\n")
    target.chmod(0o644)
    res = make("file", path=str(target), content="export A=1\nkeep\n")
    result = check(res)
    assert (result.in_state, result.reason) == (False, "differs: content")
    assert result.diff == "export A=0\nkeep\n"
    task = Task(TaskSpec("r", 0, "t", "file", {}, None, None, "x:1"), res, True)
    diff = _diff(task, result)
    assert "-export A=0\n" in diff and "+export A=1\n" in diff and " keep\n" in diff


def test_mode_alone_differs_and_apply_fixes_it(tmp_path):
    target = tmp_path / "profile.sh"
    target.write_text("x\n")
    target.chmod(0o600)
    res = make("file", path=str(target), content="x\n", mode="0644")
    assert check(res).reason == "differs: mode"
    apply(res)
    assert mode_of(target) == 0o644 and check(res).in_state


def test_yaml_octal_mode_and_owner(tmp_path):
    target = tmp_path / "owned"
    target.write_text("y")
    target.chmod(0o600)  # YAML reads an unquoted 0600 as the integer 384
    os.chown(target, 65534, 65534)
    res = make("file", path=str(target), content="y", mode=0o600, owner="root")
    assert check(res).reason == "differs: owner"
    apply(res)
    assert os.stat(target).st_uid == 0 and check(res).in_state


def test_binary_old_content_gives_no_diff(tmp_path):
    target = tmp_path / "blob"
    target.write_bytes(b"\x00\x01\x02binary")
    result = check(make("file", path=str(target), content="text\n"))
    assert result.reason.startswith("differs:") and result.diff is None


def test_home_relative_path_lands_in_the_users_home(tmp_path, isolated_home):
    res = make("file", path="~/.config/fleet/hook.sh", content="hook\n")
    converge(res)
    assert (isolated_home / ".config" / "fleet" / "hook.sh").read_text() == "hook\n"
    assert res.root is False


@pytest.mark.parametrize("mode", ["u+x", "999", "0o7777777", "rw-r--r--"])
def test_a_mode_that_is_not_octal_is_an_input_error(mode):
    with pytest.raises(InputError, match="mode"):
        make("file", path="/tmp/x", content="", mode=mode)


def test_directory_converges_and_fixes_its_mode(tmp_path):
    target = tmp_path / "opt" / "fleet"
    res = make("directory", path=str(target), mode="0750")
    assert converge(res).reason == "absent"
    assert target.is_dir() and mode_of(target) == 0o750
    target.chmod(0o777)
    assert check(res).reason == "mode or owner differs"
    apply(res)
    assert mode_of(target) == 0o750 and check(res).in_state


def test_directory_owner(tmp_path):
    target = tmp_path / "d"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    res = make("directory", path=str(target), owner="nobody")
    assert check(res).reason == "mode or owner differs"
    apply(res)
    assert os.stat(target).st_uid == 65534 and check(res).in_state


def test_a_check_never_writes(tmp_path):
    target = tmp_path / "never"
    for res in (make("file", path=str(target / "f"), content="c"), make("directory", path=str(target))):
        rc, _ = sh(res.check())
        assert rc == 10
    assert not target.exists()
