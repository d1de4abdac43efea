"""ld_aside's real check and apply snippets against a tree under tmp_path (sysroot) and a stand-in ldconfig that
records its runs and answers `-p` from a file: what moves aside, what is commented out, what stays, and that a
second check finds nothing to do. The lab test (tests/lab/test_loader_lab.py) runs it against real ld.so."""

from __future__ import annotations

import pytest

from fleet.decide.loader import harmful_dirs
from resource_shell import make, sh

COMPAT = "/usr/local/cuda-13.0/compat"
STUBS = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    conf_d = root / "etc/ld.so.conf.d"
    conf_d.mkdir(parents=True)
    (root / "etc/ld.so.conf").write_text(f"include /etc/ld.so.conf.d/*.conf\n{STUBS}\n/opt/keep/lib\n")
    (conf_d / "000-cuda-compat.conf").write_text(f"# from an image built on an old driver\n{COMPAT}\n")
    (conf_d / "000-fleet-cuda-compat.conf").write_text(f"{COMPAT}\n")
    (conf_d / "mixed.conf").write_text(f"/opt/other\n{COMPAT}/   # trailing\n")
    (conf_d / "x86_64-linux-gnu.conf").write_text("/usr/lib/x86_64-linux-gnu\n")
    (root / "etc/ld.so.preload").write_text(f"/usr/lib/libfoo.so\n{STUBS}/libcuda.so.1\n# {COMPAT}/libcuda.so.1\n"
                                            f"/usr/lib/libbar.so {COMPAT}/libcuda.so.1\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ldconfig").write_text(f'#!/bin/bash\nif [ "$1" = -p ]; then cat {tmp_path}/cache 2>/dev/null; '
                                      f'else echo run >> {tmp_path}/ldconfig.log; : > {tmp_path}/cache; fi\n')
    (bin_dir / "ldconfig").chmod(0o755)
    (tmp_path / "cache").write_text(f"\tlibcuda.so.1 (libc6,x86-64) => {COMPAT}/libcuda.so.1\n")
    return tmp_path, root, bin_dir


def resource(root, keep=()):
    return make("ld_aside", dirs=harmful_dirs(compat=True, stubs=True), keep=list(keep), sysroot=str(root))


def test_check_names_each_file_and_apply_moves_or_comments_then_converges(tree):
    tmp, root, bin_dir = tree
    res = resource(root, keep=["/etc/ld.so.conf.d/000-fleet-cuda-compat.conf"])
    rc, out = sh(res.check(), path_prefix=bin_dir)
    assert rc == 10, out
    result = res.parse(rc, out)
    assert "moves /etc/ld.so.conf.d/000-cuda-compat.conf aside to /var/lib/fleet/aside/etc/ld.so.conf.d/" \
           "000-cuda-compat.conf" in result.reason
    assert f"comments out /etc/ld.so.conf:2 ({STUBS})" in result.reason
    assert f"comments out /etc/ld.so.conf.d/mixed.conf:2 ({COMPAT}/   # trailing)" in result.reason
    kept = "kept in /var/lib/fleet/aside/etc/ld.so.preload"
    assert f"takes /etc/ld.so.preload:2 ({STUBS}/libcuda.so.1) out, {kept}" in result.reason
    assert f"takes /etc/ld.so.preload:4 (/usr/lib/libbar.so {COMPAT}/libcuda.so.1) out, {kept}" in result.reason
    assert "/etc/ld.so.preload:3" not in result.reason                   # a comment is no entry
    assert "000-fleet-cuda-compat" not in result.reason and "x86_64-linux-gnu" not in result.reason
    assert ("--- /etc/ld.so.conf.d/000-cuda-compat.conf (now)\n+++ /var/lib/fleet/aside/etc/ld.so.conf.d/"
            f"000-cuda-compat.conf (moved aside)\n-# from an image built on an old driver\n-{COMPAT}\n") in result.diff
    assert f"--- /etc/ld.so.preload (now)\n+++ /etc/ld.so.preload (after)\n@@ -2 @@\n-{STUBS}/libcuda.so.1\n" in result.diff
    assert not (tmp / "ldconfig.log").exists()          # the check changes nothing

    rc, out = sh(res.apply(), path_prefix=bin_dir)
    assert rc == 0, out
    moved = root / "var/lib/fleet/aside/etc/ld.so.conf.d/000-cuda-compat.conf"
    assert moved.read_text().endswith(f"{COMPAT}\n") and not (root / "etc/ld.so.conf.d/000-cuda-compat.conf").exists()
    assert (root / "etc/ld.so.conf").read_text() == \
        f"include /etc/ld.so.conf.d/*.conf\n# fleet ld_aside: {STUBS}\n/opt/keep/lib\n"
    assert (root / "etc/ld.so.conf.d/mixed.conf").read_text() == f"/opt/other\n# fleet ld_aside: {COMPAT}/   # trailing\n"
    # no comment added to ld.so.preload (glibc blanks a second comment there only in part): the lines go out, kept
    # aside in the order taken, and a line's other library stays in effect
    assert (root / "etc/ld.so.preload").read_text() == (f"/usr/lib/libfoo.so\n# {COMPAT}/libcuda.so.1\n"
                                                        "/usr/lib/libbar.so\n")
    assert (root / "var/lib/fleet/aside/etc/ld.so.preload").read_text() == (
        f"/usr/lib/libbar.so {COMPAT}/libcuda.so.1\n{STUBS}/libcuda.so.1\n")
    assert (root / "etc/ld.so.conf.d/000-fleet-cuda-compat.conf").read_text() == f"{COMPAT}\n"   # kept
    assert (tmp / "ldconfig.log").read_text() == "run\n"
    assert "moved /etc/ld.so.conf.d/000-cuda-compat.conf aside to /var/lib/fleet/aside/etc/ld.so.conf.d/" in out

    rc, out = sh(res.check(), path_prefix=bin_dir)
    assert rc == 0 and "no harmful loader entry" in out, out


def test_without_keep_fleets_own_drop_in_goes_aside_too_and_a_second_move_never_overwrites(tree):
    tmp, root, bin_dir = tree
    earlier = root / "var/lib/fleet/aside/etc/ld.so.conf.d/000-cuda-compat.conf"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("an earlier one\n")
    res = resource(root)
    rc, out = sh(res.apply(), path_prefix=bin_dir)
    assert rc == 0, out
    assert not (root / "etc/ld.so.conf.d/000-fleet-cuda-compat.conf").exists()
    assert earlier.read_text() == "an earlier one\n"
    assert (earlier.parent / "000-cuda-compat.conf.~1~").read_text().endswith(f"{COMPAT}\n")


def test_a_stale_cache_alone_is_rebuilt(tree):
    tmp, root, bin_dir = tree
    for f in (root / "etc/ld.so.conf.d").glob("*compat*"):
        f.unlink()
    (root / "etc/ld.so.conf.d/mixed.conf").write_text("/opt/other\n")
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (root / "etc/ld.so.preload").unlink()
    res = resource(root)
    rc, out = sh(res.check(), path_prefix=bin_dir)
    assert rc == 10 and f"rebuilds the ld cache: it still lists {COMPAT}" in out, out
    rc, out = sh(res.apply(), path_prefix=bin_dir)
    assert rc == 0 and (tmp / "ldconfig.log").read_text() == "run\n"
    assert sh(res.check(), path_prefix=bin_dir)[0] == 0


def test_only_stubs_when_compat_is_decided(tree):
    tmp, root, bin_dir = tree
    res = make("ld_aside", dirs=harmful_dirs(compat=False, stubs=True), keep=[], sysroot=str(root))
    (tmp / "cache").write_text("")
    rc, out = sh(res.check(), path_prefix=bin_dir)
    assert rc == 10 and "compat" not in out.split("@@diff@@")[0], out
    assert f"comments out /etc/ld.so.conf:2 ({STUBS})" in out
