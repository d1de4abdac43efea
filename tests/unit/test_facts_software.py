"""Env, python, torch, CUTLASS and verify: parsers on captured text, commands run for real here."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fleet.facts import software

CAPTURED = Path(__file__).parents[1] / "data" / "captured"


def run(script: str, env: dict | None = None, cwd=None) -> str:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=cwd).stdout


def test_env_real_h100_reframed():
    env = software.parse_env((CAPTURED / "h100" / "env.txt").read_text())
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64:/usr/local/nvidia/lib"
    assert env["CUDA_HOME"] == "/usr/local/cuda"
    assert env["CUTLASS_HOME"] is None
    assert env["hook_installed"] is False


def test_env_command_records_only_listed_variables_and_the_hook(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# BEGIN fleet env_hooks\nexport CUDA_HOME=/usr/local/cuda-13.0\n# END fleet env_hooks\n")
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LD_LIBRARY_PATH": "/opt/a:/opt/b",
           "HF_TOKEN": "hf_secretsecretsecretsecret", "CUDA_HOME": ""}
    parsed = software.parse_env(run(software.ENV, env))
    assert parsed["LD_LIBRARY_PATH"] == "/opt/a:/opt/b"
    assert parsed["CUDA_HOME"] == ""         # set but empty is not unset
    assert parsed["CUTLASS_HOME"] is None
    assert parsed["hook_installed"] is True and parsed["hook_files"] == [f"{home}/.bashrc"]
    assert "hf_secret" not in json.dumps(parsed)


def test_env_garbage_raises():
    with pytest.raises(ValueError):
        software.parse_env("bash: printenv: command not found\n")


def test_python_real_h100_reframed():
    parsed = software.parse_python((CAPTURED / "h100" / "python.txt").read_text())
    assert parsed == {"version": "3.12.3", "executable": "/opt/torch/.venv/bin/python3",
                      "env": "/opt/torch/.venv", "env_exists": True,
                      "venv_module": None}  # captured before fleet asked for ensurepip


def test_python_command_prefers_the_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    parsed = software.parse_python(run(software.python_command(str(venv))))
    assert parsed["env_exists"] is True
    assert parsed["executable"] == f"{venv}/bin/python"
    assert parsed["version"] == ".".join(map(str, sys.version_info[:3]))


def test_python_command_without_venv_falls_back_to_python3(tmp_path):
    parsed = software.parse_python(run(software.python_command(str(tmp_path / "none"))))
    assert parsed["env_exists"] is False
    assert parsed["executable"] == shutil.which("python3")
    # Whether `python3 -m venv` can work here (minimal images lack ensurepip), as python3 itself answers.
    real = subprocess.run(["python3", "-c", "import ensurepip, venv"], capture_output=True).returncode == 0
    assert parsed["venv_module"] is real


def test_torch_real_h100_reframed():
    torch = software.parse_torch((CAPTURED / "h100" / "torch.txt").read_text())
    assert torch["version"] == "2.11.0+cu130"
    assert torch["capability"] == "9.0" and torch["cuda_available"] is True
    assert "sm_90" in torch["arch_list"]


def test_torch_absent_here_is_none(tmp_path):
    assert software.parse_torch(run(software.torch_command(str(tmp_path / "none")))) is None


def cc() -> str:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.fail("a C compiler is needed (apt-get install gcc)")
    return compiler


def broken_torch(tmp_path: Path) -> Path:
    """A torch package whose native extension needs two libraries that are not there (as Jetson wheels do)."""
    site = tmp_path / "site"
    pkg = site / "torch"
    (pkg / "lib").mkdir(parents=True)
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for soname in ("libnvpl_lapack_lp64_gomp.so.0", "libcudss.so.0"):
        src = stubs / "s.c"
        src.write_text(f"int f_{soname.split('.')[0]}(void) {{ return 0; }}\n")
        subprocess.run([cc(), "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", stubs / soname, src], check=True)
    # the probe runs python3 from PATH: build the extension for that interpreter
    suffix = subprocess.run(["python3", "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    ext = pkg / f"_C{suffix}"
    src = tmp_path / "c.c"
    src.write_text("int PyInit__C(void) { return 0; }\n")
    subprocess.run([cc(), "-shared", "-fPIC", "-o", ext, src, "-Wl,--no-as-needed",
                    stubs / "libnvpl_lapack_lp64_gomp.so.0", stubs / "libcudss.so.0"], check=True)
    shutil.rmtree(stubs)  # now the loader cannot find either, as on a fresh Thor
    (pkg / "__init__.py").write_text("from torch import _C\n__version__ = '2.11.0'\n")
    return site


def test_torch_program_names_every_missing_library(tmp_path):
    site = broken_torch(tmp_path)
    out = run(software.torch_command(str(tmp_path / "none")), {**os.environ, "PYTHONPATH": str(site)})
    torch = software.parse_torch(out)
    assert torch["version"] is None
    assert "libnvpl_lapack_lp64_gomp.so.0: cannot open shared object file" in torch["error"]
    assert torch["missing_libraries"] == ["libnvpl_lapack_lp64_gomp.so.0", "libcudss.so.0"]


def test_torch_program_reads_a_working_torch(tmp_path):
    pkg = tmp_path / "site" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import types, warnings\n__version__ = '2.11.0+cu130'\nversion = types.SimpleNamespace(cuda='13.0')\n"
        "class _C:\n    @staticmethod\n    def _cuda_getArchFlags(): return 'sm_90 sm_100'\n"
        "def _avail():\n    warnings.warn('The NVIDIA driver on your system is too old (found version 12080)')\n"
        "    return False\ncuda = types.SimpleNamespace(is_available=_avail)\n")
    out = run(software.torch_command(str(tmp_path / "none")), {**os.environ, "PYTHONPATH": str(tmp_path / "site")})
    torch = software.parse_torch(out)
    assert (torch["version"], torch["cuda"], torch["cuda_available"]) == ("2.11.0+cu130", "13.0", False)
    assert torch["arch_list"] == ["sm_90", "sm_100"]
    assert "found version 12080" in torch["warnings"][0]
    assert not (pkg / "__pycache__").exists()  # the probe is read-only: importing torch wrote nothing


def test_torch_timeout_is_recorded_not_hung(tmp_path):
    pkg = tmp_path / "site" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import time\ntime.sleep(30)\n")
    out = run(software.torch_command(str(tmp_path / "none"), timeout_s=1), {**os.environ, "PYTHONPATH": str(tmp_path / "site")})
    with pytest.raises(ValueError, match="did not answer within 1 s"):
        software.parse_torch(out)


def test_torch_garbage_raises():
    with pytest.raises(ValueError):
        software.parse_torch("Segmentation fault (core dumped)\n")


def test_cutlass_checkout_read_for_real(tmp_path):
    repo = tmp_path / "cutlass"
    (repo / "include/cutlass").mkdir(parents=True)
    (repo / "include/cute").mkdir(parents=True)
    (repo / "include/cutlass/version.h").write_text(
        "#pragma once\n#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 3\n#define CUTLASS_PATCH 0\n")
    (repo / "include/cute/tensor.hpp").write_text("#pragma once\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "v4.3.0"], check=True)
    subprocess.run(git + ["tag", "v4.3.0"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    parsed = software.parse_cutlass(run(software.cutlass_command(str(repo))))
    assert parsed == {"path": str(repo), "version": "4.3.0", "describe": "v4.3.0", "commit": head, "cute": True}


def test_cutlass_absent(tmp_path):
    assert software.parse_cutlass(run(software.cutlass_command(str(tmp_path / "x")))) is None


def test_verify_result():
    record = {"passed": False, "at": "2026-11-21T10:00:00Z",
              "checks": [{"name": "import torch", "passed": False, "detail": "libcudss.so.0 missing (role cudss)"}]}
    assert software.parse_verify(json.dumps(record)) == record
    assert software.parse_verify("") is None
    with pytest.raises(ValueError):
        software.parse_verify("{not json")
    with pytest.raises(ValueError):
        software.parse_verify("unreadable /var/lib/fleet/verify.json\n")
