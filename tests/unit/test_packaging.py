"""The built-in roles live at the repository's root (roles/<name>/role.yaml + templates/) and ship as the package
fleet.builtin_roles (pyproject.toml's package-dir, setup.py's packages): the wheel holds every role file under
fleet/builtin_roles/, the editable install this checkout runs from maps that name to roles/, and fleet.roles finds
the roles through that import alone. tests/lab/test_install_lab.py runs the installed wheel from elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from wheel_build import ROOT, build_wheel

import fleet.builtin_roles
from fleet import roles

ROLES = ROOT / "roles"


def role_files() -> dict[str, Path]:
    """What the wheel must hold of roles/: every role.yaml and template, and the package's __init__.py."""
    files = [ROLES / "__init__.py", *ROLES.glob("*/role.yaml"), *ROLES.glob("*/templates/*")]
    return {"fleet/builtin_roles/" + p.relative_to(ROLES).as_posix(): p for p in files if p.is_file()}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    with zipfile.ZipFile(build_wheel(tmp_path_factory.mktemp("wheel"))) as whl:
        yield {name: whl.read(name) for name in whl.namelist() if not name.endswith("/")}


def test_the_wheel_holds_every_built_in_role_and_template_as_the_checkout_has_it(wheel):
    expected = role_files()
    assert len([n for n in expected if n.endswith("/role.yaml")]) == len(roles.DEFAULT_ORDER) == 9
    assert {n for n in expected if "/templates/" in n} == {
        "fleet/builtin_roles/env_hooks/templates/env.sh.j2",
        "fleet/builtin_roles/cuda_compat/templates/fleet-cuda-compat-gate.sh.j2",
        "fleet/builtin_roles/cuda_compat/templates/fleet-cuda-compat.service"}
    missing = sorted(set(expected) - set(wheel))
    assert not missing, f"the wheel lacks {missing}"
    assert all(wheel[name] == path.read_bytes() for name, path in expected.items())
    # and nothing else under that name: no role the checkout no longer has, no roles/ at the wheel's top
    assert sorted(n for n in wheel if n.startswith("fleet/builtin_roles/")) == sorted(expected)
    assert {n.split("/")[0] for n in wheel if ".dist-info/" not in n} == {"fleet", "fleet_lab"}
    assert wheel["fleet-0.1.0.dist-info/top_level.txt"].decode().split() == ["fleet", "fleet_lab"]


def test_the_wheel_still_holds_every_file_of_fleet_and_fleet_lab(wheel):
    """setup.py lists the packages (pyproject.toml's find cannot name roles/ fleet.builtin_roles): every module and
    data file of the two packages still ships, the lab's C sources and shell files included."""
    ours = {p.relative_to(ROOT).as_posix() for d in ("fleet", "fleet_lab") for p in (ROOT / d).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")}
    assert {"fleet/cli.py", "fleet/remote/verify_record.py", "fleet/remote/trust.sh", "fleet/remote/shells_trace.awk",
            "fleet/remote/pip_check.py", "fleet_lab/native/libcuda.c", "fleet_lab/files/bashrc",
            "fleet_lab/standin_torch/cuda/__init__.py"} <= ours
    assert sorted(ours - set(wheel)) == []


def test_this_checkout_finds_its_built_in_roles_at_the_repository_root_through_its_editable_install():
    """The tests run from scripts/setup.sh's editable install: the import maps fleet.builtin_roles to roles/."""
    assert Path(fleet.builtin_roles.__file__) == ROLES / "__init__.py"
    assert roles.BUILTIN_DIR == ROLES
    assert not (ROOT / "fleet" / "builtin_roles").exists()   # a leftover would shadow the mapping
    assert roles.available_roles() == {name: "built-in" for name in sorted(roles.DEFAULT_ORDER)}
    assert all(r.path == ROLES / r.name / "role.yaml" and r.origin == "built-in"
               for r in roles.load_roles(None, roles.roles_dirs()))


def _import_roles_without_install(source: Path, cwd: Path) -> subprocess.CompletedProcess:
    code = ("import sys\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '')]\n"
            f"sys.path.insert(0, {str(source)!r})\n"
            "import fleet.roles\n"
            "print(fleet.roles.BUILTIN_DIR)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def test_a_checkout_run_without_an_install_finds_roles_beside_its_package(tmp_path):
    """PYTHONPATH=checkout python -m fleet (how the lent GPU machine runs this checkout) takes roles/ from the
    checkout's root."""
    result = _import_roles_without_install(ROOT, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(ROOT / "roles")


def test_a_fleet_without_its_built_in_roles_installed_says_how_to_install_it(tmp_path):
    """A fleet package with neither fleet.builtin_roles nor a checkout's roles/ beside it (an editable install made
    before the roles moved): the error names the fix, not only the missing name."""
    shutil.copytree(ROOT / "fleet", tmp_path / "src" / "fleet", ignore=shutil.ignore_patterns("__pycache__"))
    result = _import_roles_without_install(tmp_path / "src", tmp_path)
    assert result.returncode == 1
    assert ("ImportError: fleet's built-in roles (the package fleet.builtin_roles: roles/ in a checkout) are not "
            "installed with this fleet; install it (in a checkout: pip install -e . or ./scripts/setup.sh)"
            in result.stderr), result.stderr
