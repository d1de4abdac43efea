"""fleet/remote/pip_check.py on a distribution whose files were removed by hand (rm -rf of its package), read by the
real importlib.metadata of this python: named as gone, and with --drop-broken its dist-info removed so the installer
puts it back. Its RECORD need not list the dist-info's own files (a hand-made or trimmed RECORD): the check still
finds the directory, where it once stopped with StopIteration."""

import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).resolve().parents[2] / "fleet" / "remote" / "pip_check.py"


@pytest.mark.parametrize("record", ["foo/__init__.py,,\nfoo-1.0.dist-info/METADATA,,\n", "foo/__init__.py,,\n"])
def test_a_package_whose_files_are_gone_is_named_and_its_dist_info_dropped(tmp_path, record):
    info = tmp_path / "foo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: foo\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("foo\n")
    (info / "RECORD").write_text(record)
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def check(*argv):
        return subprocess.run([sys.executable, str(CHECK), *argv], capture_output=True, text=True, env=env, timeout=60)

    asked = check("foo==1.0")
    assert asked.returncode == 10, asked.stderr
    assert asked.stdout.strip() == "foo==1.0 (its files are gone: no foo beside its foo-1.0.dist-info)"
    dropped = check("--drop-broken", "foo==1.0")
    assert dropped.returncode == 0 and f"removed {info}" in dropped.stdout, dropped.stderr
    assert not info.exists()
    assert check("foo==1.0").stdout.strip() == "foo==1.0 (absent)"
