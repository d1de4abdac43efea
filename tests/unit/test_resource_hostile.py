"""Every value reaches the shell quoted: a parameter made of $(...), backticks, quotes, ';', '|', '&&' and a
newline never runs anything. Each test runs the real check and apply snippets, then looks for the marker file
that any escaped fragment would create, and where it can, for the value arriving intact.

`cmd` and `unless` of command and `script` of assert are shell code by design and are not tested here.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
import venv

import pytest

from fleet.errors import InputError
from resource_shell import apply_text, check, check_text, hostile, make, sh
from test_resource_apt_ldconfig import LocalApt, LocalLdconfig, calls, fake_tools, local


@pytest.fixture
def evil(tmp_path, monkeypatch):
    """(the hostile text, a directory named by it, the marker that must never appear in the working dir)."""
    monkeypatch.chdir(tmp_path)  # the snippets run here: an escaped `touch pwned` lands here
    value = hostile("pwned")
    place = tmp_path / "d" / value
    place.mkdir(parents=True)
    yield value, place, tmp_path / "pwned"
    assert not (tmp_path / "pwned").exists(), "a value escaped its quotes and ran"


def run_both(res, **kw):
    """check, apply, check again: (first rc, apply rc, apply output, last rc)."""
    rc1, _ = sh(check_text(res), **kw)
    rc2, out = sh(apply_text(res), **kw)
    rc3, _ = sh(check_text(res), **kw)
    return rc1, rc2, out, rc3


def test_file(evil):
    value, place, _ = evil
    res = make("file", path=f"{place}/{value}", content=value)
    assert run_both(res)[::3] == (10, 0)
    assert (place / value).read_text() == value
    assert sh(apply_text(make("file", path=str(place / "f"), content="x", owner=value)))[0] != 0  # no such user


def test_directory(evil):
    value, place, _ = evil
    assert run_both(make("directory", path=f"{place}/{value}"))[::3] == (10, 0)
    assert (place / value).is_dir()


def test_block(evil):
    value, place, _ = evil
    target = place / value
    res = make("block", path=str(target), block=value, marker=value.replace("\n", " "))
    assert run_both(res)[::3] == (10, 0)
    assert value in target.read_text()


@pytest.mark.parametrize("key, bad", [("marker", "two\nlines"), ("position", "middle"), ("mode", "$(id)")])
def test_block_refuses_values_it_cannot_honour(key, bad):
    with pytest.raises(InputError, match=re.escape(repr(bad))):
        make("block", path="~/.bashrc", block="x", **{key: bad})


def test_git(evil, tmp_path):
    value, place, _ = evil
    work, bare = tmp_path / "work", place / "repo.git"
    for args in (["init", "-q", str(work)], ["-C", str(work), "commit", "-q", "--allow-empty", "-m", "c"],
                 ["-C", str(work), "tag", "v1"], ["clone", "-q", "--bare", str(work), str(bare)]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], check=True)
    # a checkout whose path holds a newline: its .git/config cannot be judged (fleet_trust fails closed), so git
    # is never told it is safe and the apply refuses it, naming why
    rc1, rc2, out, rc3 = run_both(make("git", repo=str(bare), ref="v1", dest=f"{place}/{value}"))
    assert (rc1, rc2, rc3, "has a newline in its name" in out) == (10, 3, 10, True), out
    rc1, rc2, out, _ = run_both(make("git", repo=str(bare), ref=value, dest=f"{place}/{value}"))
    assert (rc1, rc2 != 0) == (10, True)
    rc1, rc2, out, _ = run_both(make("git", repo=value, ref=value, dest=str(place / "other")))
    assert (rc1, rc2 != 0) == (10, True)


def test_pip(evil):
    value, place, _ = evil
    env = place / "venv"
    venv.create(env, system_site_packages=True, with_pip=False)
    res = make("pip", venv=str(env), packages=["fleet-absent==1.0"], index_url=value, extra_index_url=value,
               find_links=f"{place}/{value}", no_index=True, tmpdir=f"{place}/{value}/t",
               cache_dir=f"{place}/{value}/c", min_free_gb=0.001)
    rc1, rc2, out, _ = run_both(res)
    # the venv's path holds a newline: fleet_trusted refuses to run its python (fails closed, exit 126), naming it
    assert (rc1, rc2, "has a newline in its name" in out) == (126, 126, True), out
    assert (place / value / "t").is_dir()
    missing_env = make("pip", venv=f"{place}/{value}", packages=["x"], python=value)
    assert run_both(missing_env)[:2] == (10, 127)  # the interpreter named by the value does not exist


def test_archive(evil, tmp_path):
    value, place, _ = evil
    src = tmp_path / "top" / value
    src.mkdir(parents=True)
    (src / value).write_text(value)
    tarball = place / f"{value}.tar"
    with tarfile.open(tarball, "w") as tar:
        tar.add(tmp_path / "top", arcname="top")
    dest = f"{place}/{value}-dest"
    res = make("archive", url=f"file://{tarball}", dest=dest, creates=f"{dest}/{value}/{value}")
    assert run_both(res)[::3] == (10, 0)


def test_command_creates(evil):
    value, place, _ = evil
    res = make("command", cmd="true", creates=f"{place}/{value}")
    assert run_both(res)[::3] == (10, 10)  # `true` never makes it
    (place / value).touch()
    assert check(res).in_state


def test_assert(evil):
    value, place, _ = evil
    res = make("assert", script="import sys; sys.exit(0)", interpreter="python", python=f"{place}/{value}",
               msg=value)
    rc1, rc2, out, _ = run_both(res)
    assert (rc1, rc2) == (10, 1) and value in out


def test_apt(evil, tmp_path):
    value, place, _ = evil
    tools = fake_tools(tmp_path / "apt")
    (place / "k.deb").write_text(value)
    res = local(LocalApt, tmp_path / "apt", packages=[value, "plain"], keyring_deb=f"file://{place}/k.deb",
                keyring_package=value, repo=value, hold=True)
    assert run_both(res, **tools)[::3] == (10, 0)
    assert (tmp_path / "apt" / "sources.list.d" / "fleet.list").read_text() == value + "\n"
    installs = [c for c in calls(tmp_path / "apt") if c[:2] == ["apt-get", "-o"] and "install" in c]
    assert installs[-1][-2:] == [value, "plain"]


@pytest.mark.parametrize("cls, params", [
    ("apt", {"packages": ["x"], "repo_name": "../../cron.d/x"}),
    ("ldconfig", {"path": "/opt/x", "name": "a/b"}),
    ("ldconfig", {"path": "/opt/x", "name": "two\nlines"}),
    ("ldconfig", {"path": "/opt/two\nlines", "name": "x"}),
])
def test_names_that_become_system_file_names_must_be_plain(cls, params):
    with pytest.raises(InputError, match="plain file name|one line"):
        make(cls, **params)


def test_ldconfig(evil, tmp_path):
    value, place, _ = evil
    tools = fake_tools(tmp_path / "ld")
    libdir = tmp_path / "lib" / value.replace("\n", " ")  # ld.so.conf holds one directory a line
    libdir.mkdir(parents=True)
    (libdir / "libx.so.0").touch()
    res = local(LocalLdconfig, tmp_path / "ld", path=str(libdir), name="fleet-x")
    assert run_both(res, **tools)[::3] == (10, 0)
