"""pip resource: real pip, offline, from wheels `pip wheel` builds here out of a tiny project."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import venv

import pytest

from fleet.errors import InputError
from resource_shell import apply, check, converge, make, sh

# A PEP 517 backend of a few lines, in the project itself: no setuptools/wheel needed, nothing downloaded.
BACKEND = '''
import base64, hashlib, zipfile
VERSION = "{version}"
DIST = f"fleet_tiny-{{VERSION}}.dist-info"

def _b64(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {{"fleet_tiny/__init__.py": f"VERSION = {{VERSION!r}}\\n",
             f"{{DIST}}/METADATA": f"Metadata-Version: 2.1\\nName: fleet-tiny\\nVersion: {{VERSION}}\\n",
             f"{{DIST}}/WHEEL": "Wheel-Version: 1.0\\nGenerator: tiny\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}}
    record = [f"{{p}},sha256={{_b64(t.encode())}},{{len(t.encode())}}" for p, t in files.items()]
    files[f"{{DIST}}/RECORD"] = "\\n".join(record + [f"{{DIST}}/RECORD,,"]) + "\\n"
    name = f"fleet_tiny-{{VERSION}}-py3-none-any.whl"
    with zipfile.ZipFile(f"{{wheel_directory}}/{{name}}", "w") as whl:
        for path, text in files.items():
            whl.writestr(path, text)
    return name
'''
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "tinybackend"\nbackend-path = ["."]\n'


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """fleet-tiny 1.0 and 2.0 wheels in one find-links directory, built by `pip wheel` side by side."""
    root = tmp_path_factory.mktemp("wheels")
    builds = []
    for version in ("1.0", "2.0"):
        project = root / f"src-{version}"
        project.mkdir()
        (project / "pyproject.toml").write_text(PYPROJECT)
        (project / "tinybackend.py").write_text(textwrap.dedent(BACKEND.format(version=version)))
        builds.append(subprocess.Popen(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-index", "--no-deps", "--no-build-isolation",
             "--disable-pip-version-check", "-w", str(root / "dist"), str(project)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for build in builds:
        out, _ = build.communicate(timeout=600)
        assert build.returncode == 0, out
    assert sorted(p.name for p in (root / "dist").iterdir()) == [
        "fleet_tiny-1.0-py3-none-any.whl", "fleet_tiny-2.0-py3-none-any.whl"]
    return root / "dist"


@pytest.fixture
def quick_venv(tmp_path):
    """A venv that borrows the system pip (creating one with its own pip costs seconds)."""
    path = tmp_path / "venv"
    venv.create(path, system_site_packages=True, with_pip=False)
    return path


def offline(venv_path, wheels, *packages, **params):
    return make("pip", venv=str(venv_path), packages=list(packages), find_links=str(wheels), no_index=True,
                **params)


def version_in(venv_path) -> str:
    rc, out = sh(f"'{venv_path}/bin/python' -c 'import fleet_tiny; print(fleet_tiny.VERSION)'")
    return out.strip() if rc == 0 else f"import failed: {out}"


def test_fresh_venv_is_created_and_the_package_installed(tmp_path, wheels):
    env = tmp_path / "opt" / "fleet" / "venv"
    res = offline(env, wheels, "fleet-tiny==1.0")
    assert converge(res).reason == f"no virtual environment at {env}"
    assert version_in(env) == "1.0"
    assert check(res).reason == "all installed"
    installed = next((env / "lib").glob("python3*/site-packages/fleet_tiny/__init__.py"))
    stamp = installed.stat().st_mtime_ns
    out = apply(res)  # again: pip finds it satisfied and touches nothing
    assert "already satisfied" in out and installed.stat().st_mtime_ns == stamp


def test_a_pinned_version_upgrades(quick_venv, wheels):
    converge(offline(quick_venv, wheels, "fleet-tiny==1.0"))
    res = offline(quick_venv, wheels, "fleet-tiny==2.0")
    assert check(res).reason == "fleet-tiny==2.0 (have 1.0)"
    apply(res)
    assert version_in(quick_venv) == "2.0" and check(res).in_state


def test_a_local_version_satisfies_its_public_pin(quick_venv):
    """torch 2.11.0+cu130 from the cu130 index satisfies torch==2.11.0, as in PEP 440."""
    site = next((quick_venv / "lib").glob("python3*/site-packages"))
    meta = site / "fleet_torchlike-2.11.0+cu130.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: fleet-torchlike\nVersion: 2.11.0+cu130\n")
    assert check(make("pip", venv=str(quick_venv), packages=["fleet-torchlike==2.11.0"])).in_state
    assert check(make("pip", venv=str(quick_venv), packages=["fleet-torchlike==2.11.0+cu130"])).in_state
    for other in ("2.11.0+cu126", "2.10.0"):
        result = check(make("pip", venv=str(quick_venv), packages=[f"fleet-torchlike=={other}"]))
        assert result.reason == f"fleet-torchlike=={other} (have 2.11.0+cu130)"


def test_not_enough_free_disk_refuses_before_downloading(quick_venv, wheels):
    rc, out = sh(offline(quick_venv, wheels, "fleet-tiny", min_free_gb=10 ** 6).apply())
    assert rc == 28 and "1e+06 GB needed" in out and "point python_env at a bigger volume" in out
    assert version_in(quick_venv).startswith("import failed")


def test_names_match_however_spelled_and_a_missing_staging_dir_is_made(tmp_path, quick_venv, wheels):
    res = offline(quick_venv, wheels, "Fleet_Tiny", tmpdir=str(tmp_path / "volume" / "tmp"),
                  cache_dir=str(tmp_path / "volume" / "cache"))
    converge(res)
    assert (tmp_path / "volume" / "tmp").is_dir() and version_in(quick_venv) == "2.0"  # the newest found
    assert check(offline(quick_venv, wheels, "fleet.tiny")).in_state
    result = check(offline(quick_venv, wheels, "fleet-tiny", "fleet-absent"))
    assert (result.in_state, result.reason) == (False, "fleet-absent (absent)")


@pytest.mark.parametrize("spec", ["torch>=2.0", "--index-url=http://example.com", "torch==", "a b", "torch[cuda]"])
def test_a_requirement_the_check_cannot_judge_is_an_input_error(spec):
    with pytest.raises(InputError, match="NAME or NAME==VERSION"):
        make("pip", venv="/opt/fleet/venv", packages=["numpy", spec])


def _venv_without_python(tmp_path, *dist_infos):
    """A venv whose python only records that it was started: the check's fast path must answer without it."""
    env = tmp_path / "v"
    (env / "bin").mkdir(parents=True)
    python = env / "bin" / "python"
    python.write_text(f"#!/bin/bash\necho started >> {tmp_path}/python-ran\necho 'python answered'; exit 10\n")
    python.chmod(0o755)
    (env / "bin" / "activate").write_text("")           # a complete venv: made to the end, pip included
    site = env / "lib" / "python3.12" / "site-packages"
    (site / "pip-24.0.dist-info").mkdir(parents=True)
    (site / "pip-24.0.dist-info" / "RECORD").write_text("pip/__init__.py,,\n")
    (env / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    for name, version in dist_infos:
        (site / f"{name}-{version}.dist-info").mkdir()
        (site / f"{name}-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nVersion: not-this-one\n")
        (site / name.lower()).mkdir()    # its package, beside its dist-info
    return env, site


def test_the_check_answers_from_dist_info_without_starting_python(tmp_path):
    env, _ = _venv_without_python(tmp_path, ("Torch_Like", "2.11.0+cu130"), ("numpy", "2.1.0"))
    for pins in (["torch-like==2.11.0"], ["torch.like==2.11.0+cu130", "NumPy"], ["torch_like"]):
        result = check(make("pip", venv=str(env), packages=pins))
        assert (result.in_state, result.reason) == (True, "all installed"), pins
    assert not (tmp_path / "python-ran").exists()


@pytest.mark.parametrize("case", ["other version", "absent", "two matches", "PYTHONPATH", "egg-info", "files gone",
                                  "top level gone"])
def test_anything_the_fast_path_cannot_vouch_for_goes_to_python(tmp_path, case):
    env, site = _venv_without_python(tmp_path, ("torch_like", "2.11.0+cu130"))
    pins, kw = ["torch-like==2.11.0"], {}
    if case == "files gone":             # rm -rf .../site-packages/torch_like: its dist-info left behind
        (site / "torch_like").rmdir()
    elif case == "top level gone":       # top_level.txt names what it put there, and one of them is gone
        (site / "torch_like-2.11.0+cu130.dist-info" / "top_level.txt").write_text("torch_like\nfunctorch_like\n")
    elif case == "other version":
        pins = ["torch-like==2.10.0"]
    elif case == "absent":
        pins = ["torch-like==2.11.0", "numpy"]
    elif case == "two matches":
        (site / "Torch.Like-2.10.0.dist-info").mkdir()
    elif case == "PYTHONPATH":
        kw = {"env": {"PYTHONPATH": str(tmp_path)}}
    else:
        (site / "torch_like-2.9.0.egg-info").mkdir()
    result = check(make("pip", venv=str(env), packages=pins), **kw)
    assert (result.in_state, result.reason) == (False, "python answered")
    assert (tmp_path / "python-ran").read_text() == "started\n"


def _site_with(tmp_path, package: bool):
    """A site directory a real python reads through PYTHONPATH: torch_like 2.11.0's dist-info (its RECORD naming
    its package), the package itself only where `package`."""
    site = tmp_path / "site"
    info = site / "torch_like-2.11.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_like\nVersion: 2.11.0\n")
    (info / "RECORD").write_text("torch_like/__init__.py,,\ntorch_like-2.11.0.dist-info/METADATA,,\n")
    if package:
        (site / "torch_like").mkdir()
        (site / "torch_like" / "__init__.py").write_text("")
    return site, info


@pytest.mark.parametrize("package", [True, False])
def test_pythons_check_sees_a_package_whose_files_are_gone_and_the_apply_drops_its_dist_info(tmp_path, package):
    """What `rm -rf .../site-packages/torch` leaves: importlib.metadata (and pip) still find the distribution, the
    import fails. The check says so, by a real python; the apply's --drop-broken removes that dist-info so that pip
    or uv install the package again instead of answering "already satisfied"."""
    import subprocess
    import sys

    from fleet.resources.pip import _CHECK_PY

    site, info = _site_with(tmp_path, package)
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    checked = subprocess.run([sys.executable, "-c", _CHECK_PY, "torch_like==2.11.0"], env=env, capture_output=True,
                             text=True)
    imported = subprocess.run([sys.executable, "-c", "import torch_like"], env=env, capture_output=True)
    assert (imported.returncode == 0) is package
    if package:
        assert (checked.returncode, checked.stdout.strip()) == (0, "all installed")
    else:
        assert checked.returncode == 10, checked.stdout + checked.stderr
        assert checked.stdout.strip() == ("torch_like==2.11.0 (its files are gone: no torch_like beside its "
                                          "torch_like-2.11.0.dist-info)")
    dropped = subprocess.run([sys.executable, "-c", _CHECK_PY, "--drop-broken", "torch_like==2.11.0"], env=env,
                             capture_output=True, text=True)
    assert dropped.returncode == 0, dropped.stderr
    assert info.is_dir() is package                 # only a dist-info left without its files is removed
