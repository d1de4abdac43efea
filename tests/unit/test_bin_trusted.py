"""fleet_bin_trusted (fleet/programs.py) asks bash's own -O whether root owns a helper program, where e611fe2
started `stat -L -c %u` for it: the same answer for every case, as root and as an unprivileged user (setpriv), on
real files: root's, another user's, missing, a symlink to either, a dangling one."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

from fleet import shell
from fleet.shell import define

TRUSTED = define(("bin",))   # fleet_bin_trusted as the probe defines it (with fleet_bin_ok)

# e611fe2's judgement, word for word
STAT = shell.TRUST_FN + "\n" + r"""fleet_bin_trusted() {
  [ -z "$(fleet_trust "$1" 2>&1)" ] && [ "$(stat -L -c %u -- "$1" 2>/dev/null)" = 0 ]
}
"""
NOBODY = 65534


@pytest.fixture
def bin_dir():
    top = tempfile.mkdtemp(dir="/tmp")       # root's, 0755, under the sticky /tmp (an entry that exists)
    os.chmod(top, 0o755)
    for name, owner, target in (("root", 0, None), ("users", NOBODY, None), ("to-root", 0, "root"),
                                ("to-users", 0, "users"), ("dangling", 0, "gone")):
        path = os.path.join(top, name)
        if target:
            os.symlink(os.path.join(top, target), path)
        else:
            with open(path, "w") as out:
                out.write("echo hi\n")
            os.chmod(path, 0o755)
            os.chown(path, owner, owner)
    yield top
    shutil.rmtree(top)


def judged(functions: str, path: str, as_nobody: bool) -> bool:
    argv = ["bash", "-c", functions + '\nfleet_bin_trusted "$1"', "judge", path]
    if as_nobody:
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0


def test_the_same_answer_as_stat_as_root_and_as_another_user(bin_dir):
    expected = {(False, "root"): True, (True, "root"): True, (False, "to-root"): True, (True, "to-root"): True}
    for as_nobody in (False, True):
        for name in ("root", "users", "to-root", "to-users", "dangling", "missing"):
            path = os.path.join(bin_dir, name)
            old, new = judged(STAT, path, as_nobody), judged(TRUSTED, path, as_nobody)
            assert new == old == expected.get((as_nobody, name), False), (name, as_nobody, old, new)
