"""block resource: markers, placement before Ubuntu's early return, in-place replacement, atomic rewrite."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from resource_shell import apply, apply_text, check, check_text, converge, make, sh, stubs

UBUNTU_BASHRC = Path(__file__).resolve().parents[2] / "fleet_lab" / "files" / "bashrc"
HOOK = '[ -r "$HOME/env.sh" ] && . "$HOME/env.sh"'


def ssh_command(home: Path, command: str) -> str:
    """What `ssh host COMMAND` runs: bash -c with SSH_CLIENT set, so bash itself sources ~/.bashrc."""
    env = {k: v for k, v in os.environ.items() if k != "SHLVL"}
    env.update(HOME=str(home), SSH_CLIENT="192.0.2.1 50000 22")
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True).stdout


def block(path, text=HOOK, **params):
    return make("block", path=str(path), block=text, **params)


def wanted(text=HOOK, marker="fleet"):
    return f"# BEGIN {marker}\n{text}\n# END {marker}\n".encode()


@pytest.fixture
def bashrc(isolated_home):
    path = isolated_home / ".bashrc"
    path.write_bytes(UBUNTU_BASHRC.read_bytes())
    path.chmod(0o600)
    (isolated_home / "env.sh").write_text("export FLEET_HOOK=reached\n")
    return path


def test_top_block_goes_before_the_early_return_and_reaches_ssh_commands(bashrc, isolated_home):
    original = bashrc.read_bytes()
    assert b"*) return;;" in original and ssh_command(isolated_home, 'echo "[$FLEET_HOOK]"') == "[]\n"
    res = make("block", path="~/.bashrc", block=HOOK, position="top")
    assert converge(res).reason == "block absent"
    assert bashrc.read_bytes() == wanted() + original
    assert stat.S_IMODE(bashrc.stat().st_mode) == 0o600
    assert ssh_command(isolated_home, 'echo "[$FLEET_HOOK]"') == "[reached]\n"
    apply(res)  # a second apply changes no byte
    assert bashrc.read_bytes() == wanted() + original


def test_a_block_at_the_bottom_never_reaches_ssh_commands(bashrc, isolated_home):
    """Why env_hooks uses position: top (the hook sits after `return` and never runs)."""
    converge(make("block", path="~/.bashrc", block=HOOK, position="bottom"))
    assert bashrc.read_bytes().endswith(wanted())
    assert ssh_command(isolated_home, 'echo "[$FLEET_HOOK]"') == "[]\n"


def test_a_changed_block_is_replaced_in_place_not_duplicated(tmp_path):
    target = tmp_path / "profile"
    target.write_bytes(b"head\n" + wanted("old") + b"tail\n")
    res = block(target, "new line 1\nnew line 2")
    result = check(res)
    assert (result.reason, result.diff) == ("block differs or is misplaced", wanted("old").decode())
    apply(res)
    assert target.read_bytes() == b"head\n" + wanted("new line 1\nnew line 2") + b"tail\n"
    assert check(res).in_state


def test_a_top_block_found_lower_down_moves_back_to_the_top(tmp_path):
    target = tmp_path / "bashrc"
    target.write_bytes(b"a\n" + wanted() + b"b\n")
    res = block(target, position="top")
    assert check(res).reason == "block differs or is misplaced"
    apply(res)
    assert target.read_bytes() == wanted() + b"a\nb\n"


def test_duplicated_blocks_collapse_into_one(tmp_path):
    target = tmp_path / "f"
    target.write_bytes(wanted("one") + b"mid\n" + wanted("two"))
    apply(block(target, "three"))
    assert target.read_bytes() == wanted("three") + b"mid\n"


# Text a block must never disturb: escapes awk and printf would expand, CRLF, tabs, other blocks' markers,
# and a last line without a newline.
AWKWARD = (b"x='a\\tb\\n%s %d'\r\n\ttabbed  \n\n# BEGIN other\nexport OTHER=1\n# END other\n"
           b"echo \"\\\\server\\share\" 100%\nno newline at the end")


@pytest.mark.parametrize("position", ["top", "bottom", "before_return", "last"])
def test_text_outside_the_markers_is_kept_byte_for_byte(tmp_path, position):
    target = tmp_path / "rc"
    target.write_bytes(AWKWARD)
    res = block(target, "v1", position=position)
    converge(res)
    if position in ("top", "before_return"):  # AWKWARD has no early return
        assert target.read_bytes() == wanted("v1") + AWKWARD
    else:  # the block starts on a line of its own
        assert target.read_bytes() == AWKWARD + b"\n" + wanted("v1")
    first = target.read_bytes()
    converge(block(target, "v2", position=position))
    assert target.read_bytes() == first.replace(b"v1", b"v2")


def test_block_text_with_backslashes_and_percents_converges(tmp_path):
    text = "printf '%s\\n' \"a\\tb\" \\\n  100% # \\\\"
    target = tmp_path / "rc"
    res = block(target, text, marker="fleet \\ odd % marker")
    converge(res)
    assert target.read_bytes() == wanted(text, "fleet \\ odd % marker")


def test_a_begin_marker_without_its_end_never_swallows_the_rest(tmp_path):
    mine = b"user line 1\n# BEGIN fleet\nuser line 2\nuser line 3\n"
    target = tmp_path / "rc"
    target.write_bytes(mine)
    res = block(target, position="top")
    converge(res)
    assert target.read_bytes() == wanted() + mine
    apply(res)
    assert target.read_bytes() == wanted() + mine


def test_a_new_file_gets_the_mode_asked_for(tmp_path):
    target = tmp_path / "new" / "profile.sh"
    res = block(target, "x", mode="0640")
    assert converge(res).reason == "file absent"
    assert target.read_bytes() == wanted("x") and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_symlinked_file_is_edited_through_the_link(tmp_path):
    real = tmp_path / "dotfiles" / "bashrc"
    real.parent.mkdir()
    real.write_bytes(b"mine\n")
    link = tmp_path / ".bashrc"
    link.symlink_to(real)
    converge(block(link, position="top"))
    assert link.is_symlink() and real.read_bytes() == wanted() + b"mine\n"


def test_a_write_that_fails_midway_leaves_the_file_as_it_was(tmp_path):
    target = tmp_path / "rc"
    target.write_bytes(AWKWARD)
    # awk dies after writing part of the new file: disk full, a crash.
    (tmp_path / "bin").mkdir()
    awk = tmp_path / "bin" / "awk"
    awk.write_text("#!/bin/bash\n/usr/bin/awk \"$@\" | head -c 10; exit 1\n")
    awk.chmod(0o755)
    rc, out = sh(apply_text(block(target, "new")), path_prefix=tmp_path / "bin")
    assert rc != 0
    assert target.read_bytes() == AWKWARD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "rc"]  # the temp file is cleaned up


def test_an_apply_killed_midway_leaves_the_file_as_it_was(tmp_path):
    target = tmp_path / "rc"
    target.write_bytes(AWKWARD)
    (tmp_path / "bin").mkdir()
    awk = tmp_path / "bin" / "awk"  # the connection drops while the new file is half written
    awk.write_text("#!/bin/bash\n/usr/bin/awk \"$@\" | head -c 10; kill -9 $PPID\n")
    awk.chmod(0o755)
    rc, _ = sh(apply_text(block(target, "new")), path_prefix=tmp_path / "bin")
    assert rc == -9
    assert target.read_bytes() == AWKWARD


def test_check_reads_only(tmp_path):
    target = tmp_path / "rc"
    target.write_bytes(b"x\n")
    stubs(tmp_path / "bin", ["mv", "cp", "tee", "truncate", "chmod", "mktemp"], tmp_path / "calls")
    rc, _ = sh(check_text(block(target, position="top")), path_prefix=tmp_path / "bin")
    assert rc == 10 and target.read_bytes() == b"x\n" and not (tmp_path / "calls").exists()


# -- before_return and last: the two halves of env_hooks' "fleet's hook runs last in every shell" ----------

def interactive_command(home: Path, command: str) -> str:
    """What an interactive shell runs (`bash -i`): all of ~/.bashrc."""
    env = {k: v for k, v in os.environ.items() if k != "SHLVL"}
    env.update(HOME=str(home))
    return subprocess.run(["bash", "-i", "-c", command], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, start_new_session=True).stdout


def test_before_return_sits_just_above_the_early_return_after_lines_above_it(bashrc, isolated_home):
    original = bashrc.read_bytes()
    above = b"export FLEET_HOOK=container-line-above\n"
    bashrc.write_bytes(above + original)
    res = make("block", path="~/.bashrc", block=HOOK, position="before_return")
    assert converge(res).reason == "block absent"
    text = bashrc.read_bytes()
    head, _, rest = text.partition(wanted())
    assert head.startswith(above) and rest.startswith(b"case $- in") and b"# If not running" in head
    assert ssh_command(isolated_home, 'echo "[$FLEET_HOOK]"') == "[reached]\n"   # the hook had the last word
    apply(res)
    assert bashrc.read_bytes() == text


def test_before_return_goes_first_in_a_file_without_early_return(tmp_path):
    target = tmp_path / "rc"
    target.write_text("export A=1\n")
    converge(block(target, position="before_return"))
    assert target.read_bytes() == wanted() + b"export A=1\n"


@pytest.mark.parametrize("guard", ['[ -z "$PS1" ] && return', "[[ $- != *i* ]] && return",
                                   "if [[ $- != *i* ]]; then return; fi"])
def test_before_return_knows_the_usual_early_returns(tmp_path, guard):
    target = tmp_path / "rc"
    target.write_text(f"A=1\n{guard}\nB=2\n")
    converge(block(target, position="before_return"))
    assert target.read_bytes() == b"A=1\n" + wanted() + f"{guard}\nB=2\n".encode()


def test_last_block_moves_back_down_when_a_line_is_appended_below_it(bashrc, isolated_home):
    res = make("block", path="~/.bashrc", block=HOOK, position="last", marker="fleet end")
    converge(res)
    assert bashrc.read_bytes().endswith(wanted(marker="fleet end"))
    with bashrc.open("a") as fh:   # what a pod's setup script does after fleet ran
        fh.write("export FLEET_HOOK=appended-later\n")
    assert interactive_command(isolated_home, 'echo "[$FLEET_HOOK]"').endswith("[appended-later]\n")
    after = check(res)
    assert not after.in_state and after.reason == "block differs or is misplaced"
    apply(res)
    text = bashrc.read_bytes()
    assert text.endswith(b"export FLEET_HOOK=appended-later\n" + wanted(marker="fleet end"))
    assert text.count(b"# BEGIN fleet end") == 1
    assert interactive_command(isolated_home, 'echo "[$FLEET_HOOK]"').endswith("[reached]\n")
    assert check(res).in_state


def test_only_if_exists_leaves_an_absent_file_absent_and_guards_one_that_exists(isolated_home):
    """A login shell's ~/.bash_profile: creating one would hide ~/.profile from bash, so an absent one stays absent."""
    path = isolated_home / ".bash_profile"
    res = block(path, marker="fleet login", position="last", only_if_exists=True)
    result = check(res)
    assert result.in_state and "file absent" in result.reason
    apply(res)
    assert not path.exists()
    path.write_text("export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:$LD_LIBRARY_PATH\n")
    assert not check(res).in_state
    apply(res)
    assert path.read_bytes() == (b"export LD_LIBRARY_PATH=/usr/local/cuda-13.0/compat:$LD_LIBRARY_PATH\n"
                                 + wanted(marker="fleet login"))
    assert check(res).in_state
