"""git resource against a local bare repository with tags, made in tmp_path."""

from __future__ import annotations

import subprocess

import pytest

from resource_shell import apply, apply_text, check, converge, make, sh


def git(*args, cwd=None) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def remote(tmp_path):
    """A bare repository with tags v1 and v2 (and a work tree to add more)."""
    work, bare = tmp_path / "work", tmp_path / "cutlass.git"
    git("init", "-q", "-b", "main", str(work))
    shas = {}
    for tag in ("v1", "v2"):
        (work / "VERSION").write_text(tag + "\n")
        git("add", "VERSION", cwd=work)
        git("commit", "-q", "-m", tag, cwd=work)
        git("tag", tag, cwd=work)
        shas[tag] = git("rev-parse", "HEAD", cwd=work)
    git("clone", "-q", "--bare", str(work), str(bare))
    return {"work": work, "url": str(bare), "sha": shas}


def head(dest) -> str:
    return git("rev-parse", "HEAD", cwd=dest)


def test_clone_at_a_tag_then_move_to_another(tmp_path, remote):
    dest = tmp_path / "opt" / "cutlass"
    res = make("git", repo=remote["url"], ref="v1", dest=str(dest))
    assert converge(res).reason == "not cloned"
    assert head(dest) == remote["sha"]["v1"] and (dest / "VERSION").read_text() == "v1\n"
    assert check(res).reason == f"at v1 ({remote['sha']['v1']})"
    apply(res)  # again: still v1, nothing else
    assert head(dest) == remote["sha"]["v1"]

    res2 = make("git", repo=remote["url"], ref="v2", dest=str(dest))
    assert check(res2).reason == f"at {remote['sha']['v1']}, want v2"
    apply(res2)
    assert head(dest) == remote["sha"]["v2"] and check(res2).in_state


def test_a_tag_published_after_the_clone_is_fetched(tmp_path, remote):
    dest = tmp_path / "cutlass"
    converge(make("git", repo=remote["url"], ref="v1", dest=str(dest)))
    (remote["work"] / "VERSION").write_text("v3\n")
    git("commit", "-q", "-am", "v3", cwd=remote["work"])
    git("tag", "v3", cwd=remote["work"])
    git("push", "-q", remote["url"], "v3", cwd=remote["work"])
    res = make("git", repo=remote["url"], ref="v3", dest=str(dest))
    assert check(res).reason == f"at {remote['sha']['v1']}, want v3"
    apply(res)
    assert (dest / "VERSION").read_text() == "v3\n" and check(res).in_state


def test_a_checkout_of_another_origin_is_refused_not_replaced(tmp_path, remote):
    dest = tmp_path / "cutlass"
    git("clone", "-q", str(remote["work"]), str(dest))  # same commits, other URL
    (dest / "mine.txt").write_text("a person's work\n")
    res = make("git", repo=remote["url"], ref="v2", dest=str(dest))
    assert check(res).reason == f"origin is {remote['work']}"
    rc, out = sh(apply_text(res))
    assert rc != 0 and f"refusing to replace {dest}: it is a checkout of {remote['work']}" in out
    assert f"mv {dest} {dest}.old" in out
    assert git("config", "--get", "remote.origin.url", cwd=dest) == str(remote["work"])
    assert (dest / "mine.txt").read_text() == "a person's work\n"


def test_a_ref_that_does_not_exist_fails_and_leaves_the_old_checkout(tmp_path, remote):
    dest = tmp_path / "cutlass"
    git("clone", "-q", remote["url"], str(dest))
    rc, out = sh(apply_text(make("git", repo=remote["url"], ref="v9", dest=str(dest))))
    assert rc != 0 and "v9" in out
    assert git("config", "--get", "remote.origin.url", cwd=dest) == remote["url"]
    assert head(dest) == remote["sha"]["v2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cutlass", "cutlass.git", "work"]  # no temp clone


def test_a_repo_url_starting_with_a_dash_is_not_an_option(tmp_path, remote):
    marker = tmp_path / "pwned"
    res = make("git", repo=f"--upload-pack=touch {marker}", ref="v1", dest=str(tmp_path / "d"))
    rc, _ = sh(apply_text(res))
    assert rc != 0 and not marker.exists()


def test_a_home_relative_destination(isolated_home, remote):
    res = make("git", repo=remote["url"], ref="v2", dest="~/src/cutlass")
    converge(res)
    assert head(isolated_home / "src" / "cutlass") == remote["sha"]["v2"] and res.root is False


def test_local_changes_are_refused_not_overwritten(tmp_path, remote):
    dest = tmp_path / "cutlass"
    converge(make("git", repo=remote["url"], ref="v1", dest=str(dest)))
    (dest / "VERSION").write_text("patched by hand\n")
    res = make("git", repo=remote["url"], ref="v2", dest=str(dest))
    rc, out = sh(apply_text(res))
    assert rc != 0 and f"refusing to check out v2 in {dest}: it has local changes" in out
    assert (dest / "VERSION").read_text() == "patched by hand\n" and head(dest) == remote["sha"]["v1"]


def test_a_directory_that_is_not_a_checkout_is_refused(tmp_path, remote):
    dest = tmp_path / "cutlass"
    dest.mkdir()
    (dest / "notes").write_text("keep\n")
    rc, out = sh(apply_text(make("git", repo=remote["url"], ref="v1", dest=str(dest))))
    assert rc != 0 and "is not a git checkout" in out and (dest / "notes").read_text() == "keep\n"


@pytest.mark.parametrize("repo, public", [
    ("https://user:tok@github.com/NVIDIA/cutlass.git", "https://github.com/NVIDIA/cutlass.git"),
    ("https://tok@mirror.example:8443/cutlass.git", "https://mirror.example:8443/cutlass.git"),
    ("https://github.com/NVIDIA/cutlass.git", "https://github.com/NVIDIA/cutlass.git"),
    ("git@github.com:NVIDIA/cutlass.git", "git@github.com:NVIDIA/cutlass.git"),
])
def test_the_clone_keeps_the_url_without_credentials(repo, public):
    from fleet.resources.git import public_url
    assert public_url(repo) == public


def test_a_checkout_another_user_owns_is_refused_and_its_fsmonitor_never_runs(tmp_path, remote):
    """Run here as root (as CI runs): nobody's clone of the right origin, with core.fsmonitor set to a command,
    is refused by check and apply naming its owner, and the command never runs (git's ownership check stays on)."""
    import os
    dest, mark = tmp_path / "opt" / "cutlass", tmp_path / "fsmonitor-ran"
    git("clone", "-q", remote["url"], str(dest))
    hook = tmp_path / "fsmonitor"
    hook.write_text(f"#!/bin/sh\nid -u >> {mark}\n")
    hook.chmod(0o755)
    git("config", "core.fsmonitor", str(hook), cwd=dest)
    subprocess.run(["chown", "-R", "65534:65534", str(dest)], check=True)
    res = make("git", repo=remote["url"], ref="v2", dest=str(dest))
    assert check(res).reason == "owned by nobody, not root or this user"
    rc, out = sh(apply_text(res))
    assert rc == 3 and f"refusing to use {dest}: it is owned by nobody" in out, out
    assert not mark.exists() and os.stat(dest).st_uid == 65534
    assert git("-c", f"safe.directory={dest}", "rev-parse", "HEAD", cwd=dest) == remote["sha"]["v2"]   # untouched
