"""Installed as a user installs it: the wheel built from this checkout, installed into a fresh virtual
environment, runs `fleet apply --check` on a lab host from a directory outside the checkout. The built-in roles
(roles/ at the repository's root) come from the installed package fleet.builtin_roles (package data), not from
the checkout.

Fast: the wheel is built with pip's isolated build (tests/wheel_build.py: setuptools and wheel from the
configured index), and the fresh venv has no pip of its own (this venv's pip installs into it with --python), and
it reaches the runtime dependencies (fabric, PyYAML, Jinja2, rich) through one .pth line naming this venv's
site-packages. A .pth inside that directory is not processed from there, so this checkout's editable install
stays out, and the new venv's own site-packages comes first on sys.path: the test proves which fleet ran."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import yaml
from wheel_build import build_wheel


def run(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=900, **kw)


def build_and_install(tmp_path: Path) -> Path:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    # roles/ at the repository's root ships as fleet/builtin_roles/ (tests/unit/test_packaging.py checks every file)
    assert "fleet/builtin_roles/verify/role.yaml" in names and "fleet/builtin_roles/env_hooks/templates/env.sh.j2" \
        in names
    assert not any(n.startswith(("roles/", "tests/", "examples/", "inventories/")) for n in names)
    venv = tmp_path / "venv"
    made = run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    installed = run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    (Path(site) / "fleet-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def test_the_installed_wheel_runs_apply_check_on_a_lab_host_from_outside_the_checkout(lab, tmp_path):
    venv = build_and_install(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    doc = yaml.safe_load(lab.inventory_path.read_text())
    doc["hosts"] = {"pod-580": doc["hosts"]["pod-580"]}
    doc["groups"] = {}
    (elsewhere / "pods.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    where = run(venv / "bin" / "python", "-c", "import fleet.roles as r; print(r.__file__); print(r.BUILTIN_DIR)",
                cwd=elsewhere, env=env)
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(venv)) for line in where.stdout.split()), where.stdout
    builtin = Path(where.stdout.split()[1])
    assert builtin.parts[-2:] == ("fleet", "builtin_roles") and sorted(p.parent.name for p in builtin.glob(
        "*/role.yaml")) == sorted(["cuda_toolkit", "fabric_manager", "cuda_compat", "nvpl", "cudss", "env_hooks",
                                   "cutlass", "torch", "verify"]), where.stdout

    lab.reset(["pod-580"])
    result = run(venv / "bin" / "fleet", "apply", "pods.yaml", "--check", cwd=elsewhere, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert ("roles pod-580: cuda_toolkit fabric_manager cuda_compat nvpl cudss env_hooks cutlass torch verify (built-in)"
            in result.stdout)
    assert re.search(r"^pod-580: \d+ to change, \d+ in state", result.stdout, re.M), result.stdout   # the plan
    assert "torch: torch 2.11.0" in result.stdout                    # the built-in roles rendered for this pod
    assert (elsewhere / "facts" / "pod-580.json").is_file()          # facts beside the inventory, not the checkout
