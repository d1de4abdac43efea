"""Resources under hostile or unlucky conditions, run for real with bash (stand-in apt commands on PATH, since
apt here would change this machine; the lab tests run real apt and dpkg): a busy apt, an interrupted dpkg,
a block holding its own marker, a CRLF .bashrc, tarballs that lie, partial copies."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile

import pytest

from fleet.errors import InputError
from fleet.resources.archive import INCOMPLETE
from resource_shell import apply, apply_text, check, check_text, converge, make, sh

APT_STUB = """#!/bin/bash
echo "$(basename "$0") $*" >> "$FAKE/log"
n=$(cat "$FAKE/busy" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then echo $((n - 1)) > "$FAKE/busy"
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)"
  echo "E: Unable to lock directory /var/lib/apt/lists/"; exit 100; fi
if [ "$3" != update ] && [ -e "$FAKE/interrupted" ]; then
  echo "E: dpkg was interrupted, you must manually run 'dpkg --configure -a' to correct the problem."; exit 100; fi
exit 0
"""
DPKG_STUB = """#!/bin/bash
echo "dpkg $*" >> "$FAKE/log"; rm -f "$FAKE/interrupted"
"""


@pytest.fixture
def fake_apt(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {"apt-get": APT_STUB, "dpkg": DPKG_STUB, "dpkg-query": "#!/bin/bash\nexit 1\n"}.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return {"path_prefix": bin_dir, "env": {"FAKE": str(tmp_path)}}, tmp_path


def log(root) -> list[str]:
    return (root / "log").read_text().splitlines()


def test_apt_update_waits_while_the_lists_lock_is_held(fake_apt):
    kw, root = fake_apt
    (root / "busy").write_text("2")   # apt-daily holds the lists lock for the first two tries
    rc, out = sh(apply_text(make("apt", packages=["pkg"])), **kw)
    assert rc == 0, out
    assert out.count("apt/dpkg is busy") == 2
    assert [line.split()[3] for line in log(root)] == ["update", "update", "update", "install"]


def test_apt_gives_up_on_a_lock_that_is_never_released_within_its_bound(fake_apt):
    kw, root = fake_apt
    (root / "busy").write_text("1000")
    rc, out = sh(apply_text(make("apt", packages=["pkg"], lock_timeout=1)), **kw)
    assert rc == 100 and "gave up waiting for the apt/dpkg lock" in out
    assert len(log(root)) <= 2


def test_an_interrupted_dpkg_is_repaired_once_then_the_install_runs(fake_apt):
    kw, root = fake_apt
    (root / "interrupted").touch()
    rc, out = sh(apply_text(make("apt", packages=["pkg"])), **kw)
    assert rc == 0, out
    assert "dpkg was interrupted earlier; running dpkg --configure -a" in out
    assert [line.split()[0] + " " + line.split()[3 if line.startswith("apt") else 1] for line in log(root)] == [
        "apt-get update", "apt-get install", "dpkg --force-confold", "apt-get install"]


@pytest.mark.parametrize("text", ["a\n# END fleet\nb", "# BEGIN fleet", "x\n  # END fleet  \r\n"])
def test_a_block_holding_its_own_marker_is_refused(tmp_path, text):
    with pytest.raises(InputError, match="contains its own marker line"):
        make("block", path=str(tmp_path / "f"), block=text)


def test_a_crlf_bashrc_gets_one_block_and_converges(tmp_path):
    rc_file = tmp_path / ".bashrc"
    rc_file.write_bytes(b"alias ll='ls -l'\r\n# BEGIN fleet\r\n. /etc/fleet/env.sh\r\n# END fleet\r\nexport X=1\r\n")
    res = make("block", path=str(rc_file), block=". /etc/fleet/env.sh")
    assert check(res).in_state   # the block it wrote, seen through Windows line ends
    top = make("block", path=str(rc_file), block=". /etc/fleet/env.sh", position="top")
    converge(top)
    apply(top)
    text = rc_file.read_bytes()
    assert text.count(b"# BEGIN fleet") == 1 and text.startswith(b"# BEGIN fleet\n")
    assert b"alias ll='ls -l'\r\n" in text and b"export X=1\r\n" in text


def tarball(tmp_path, *, setuid=True, owner=4242) -> tuple:
    path = tmp_path / "redist.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, mode in (("top/lib/libx.so.0", b"\x7fELF", 0o755), ("top/bin/tool", b"#!/bin/sh\n", 0o4755)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), (mode if setuid else mode & 0o777)
            info.uid = info.gid = owner
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return path, hashlib.sha256(buf.getvalue()).hexdigest()


def test_a_tarball_whose_digest_differs_is_refused_before_anything_is_unpacked(tmp_path):
    path, _ = tarball(tmp_path)
    dest = tmp_path / "opt" / "x"
    res = make("archive", url=f"file://{path}", dest=str(dest), creates=f"{dest}/lib/libx.so.0", sha256="0" * 64)
    rc, out = sh(apply_text(res))
    assert rc != 0 and "expected " + "0" * 64 in out and "refusing it" in out
    assert not (tmp_path / "opt").exists()


def test_unpacked_without_the_tarballs_owners_or_setuid_bits(tmp_path):
    path, digest = tarball(tmp_path)
    dest = tmp_path / "opt" / "x"
    res = make("archive", url=f"file://{path}", dest=str(dest), creates=f"{dest}/lib/libx.so.0", sha256=digest)
    converge(res)
    tool = (dest / "bin" / "tool").stat()
    assert not tool.st_mode & (stat.S_ISUID | stat.S_ISGID) and tool.st_mode & stat.S_IXUSR
    assert tool.st_uid == os.geteuid() and tool.st_uid != 4242
    assert sorted(p.name for p in (tmp_path / "opt").iterdir()) == ["x"]   # no temp dir left beside it


def test_a_copy_cut_short_is_not_taken_for_done(tmp_path):
    path, _ = tarball(tmp_path)
    dest = tmp_path / "opt" / "x"
    (dest / "lib").mkdir(parents=True)
    (dest / "lib" / "libx.so.0").write_bytes(b"\x7fE")     # the marker file arrived, the rest did not
    (dest / INCOMPLETE).touch()                               # ... and the copy never finished
    res = make("archive", url=f"file://{path}", dest=str(dest), creates=f"{dest}/lib/libx.so.0")
    assert converge(res).reason == f"an earlier unpack into {dest} did not finish"
    assert (dest / "lib" / "libx.so.0").read_bytes() == b"\x7fELF" and not (dest / INCOMPLETE).exists()
    assert (dest / "bin" / "tool").is_file()


def test_a_block_bigger_than_one_environment_string_converges(tmp_path):
    """The engine sends long scripts on stdin; the wanted text must not travel in the environment either
    (one string there is capped at 128 KiB: every command of the snippet would fail with E2BIG)."""
    import subprocess

    target = tmp_path / "rc"
    target.write_text("user line\n")
    for letter in "zy":
        res = make("block", path=str(target), block=letter * 300_000)
        runs = [subprocess.run(["bash", "-s"], input=s, capture_output=True, text=True) for s in
                (check_text(res), apply_text(res), check_text(res))]
        assert [r.returncode for r in runs] == [10, 0, 0], runs[1].stderr[-500:]
    assert target.read_text() == "user line\n# BEGIN fleet\n" + "y" * 300_000 + "\n# END fleet\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rc"]
