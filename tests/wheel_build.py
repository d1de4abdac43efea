"""The wheel as `pip install .` builds it from a checkout: pip's isolated build (setuptools and wheel from the
configured index), from a copy of what the wheel is made of. setuptools leaves build/ in the tree it builds, and
a stale build/lib there could carry files the checkout no longer has, so the checkout itself is never built in.

Shared by tests/unit/test_packaging.py (what the wheel holds) and tests/lab/test_install_lab.py (the installed
wheel runs); both import it as `wheel_build` (tests/ is on sys.path through its conftest.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# setup.py finds the packages of fleet/ and fleet_lab/, and roles/ (the built-in roles) as fleet.builtin_roles
SOURCES = ("fleet", "fleet_lab", "roles", "setup.py", "pyproject.toml", "README.md")


def build_wheel(tmp_path: Path) -> Path:
    src, wheels = tmp_path / "src", tmp_path / "wheels"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(ROOT / name, src / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), str(src)],
                           capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = wheels.glob("fleet-*.whl")
    return wheel
