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
                      "venv_module": None, "untrusted": None}  # captured before fleet asked for ensurepip


def test_python_command_prefers_the_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    parsed = software.parse_python(run(software.python_command(str(venv))))
    assert parsed["env_exists"] is True
    assert parsed["executable"] == f"{venv}/bin/python"
    assert parsed["version"] == ".".join(map(str, sys.version_info[:3]))


def _venv_with_cfg(tmp_path, line: str) -> Path:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\ninclude-system-site-packages = false\n{line}\n")
    return venv


@pytest.mark.parametrize("line", ["version = {xy}.97", "version_info = {xy}.97.final.0"])
def test_an_existing_venv_answers_its_version_from_pyvenv_cfg_without_starting_python(tmp_path, line):
    """A no-op probe starts no Python: X.Y.97 is no Python here, so the answer came from the file (venv writes
    `version`, virtualenv and uv `version_info`)."""
    xy = "{}.{}".format(*sys.version_info[:2])
    venv = _venv_with_cfg(tmp_path, line.format(xy=xy))
    if not os.path.realpath(venv / "bin" / "python").endswith(f"python{xy}"):
        venv_python = os.path.realpath(venv / "bin" / "python")
        pytest.fail(f"this test needs a venv whose interpreter is named python{xy}, not {venv_python}")
    out = run(software.python_command(str(venv)))
    assert software.parse_python(out)["version"] == f"{xy}.97" and "source pyvenv.cfg" in out


def test_a_venv_whose_cfg_names_another_python_is_asked_itself(tmp_path):
    """A cfg whose X.Y is not its interpreter's (copied or rebuilt by hand): the interpreter answers."""
    venv = _venv_with_cfg(tmp_path, "version = 2.7.18")
    parsed = software.parse_python(run(software.python_command(str(venv))))
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


def installed_torch(tmp_path: Path, init: str, version_py: str | None) -> Path:
    """A torch distribution as pip leaves it: the package and its .dist-info with METADATA."""
    site = tmp_path / "site"
    pkg = site / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(init)
    if version_py is not None:
        (pkg / "version.py").write_text(version_py)
    info = site / "torch-2.11.0+cu130.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0+cu130\n")
    (info / "RECORD").write_text("torch/__init__.py,,\n")
    return site


def test_torch_facts_come_from_files_never_from_an_import(tmp_path):
    """An import would initialise CUDA (seconds on a real GPU, and GPU memory taken from a training job)."""
    sentinel = tmp_path / "imported"
    site = installed_torch(tmp_path, f"open({str(sentinel)!r}, 'w').close()\nimport time\ntime.sleep(30)\n",
                           "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n")
    out = run(software.torch_command(str(tmp_path / "none")), {**os.environ, "PYTHONPATH": str(site)})
    torch = software.parse_torch(out)
    assert (torch["version"], torch["cuda"], torch["path"]) == ("2.11.0+cu130", "13.0", str(site / "torch"))
    assert torch["cuda_available"] is None and torch["error"] is None
    assert not sentinel.exists() and not (site / "torch" / "__pycache__").exists()


def test_a_cpu_torch_has_no_cuda_and_a_broken_one_still_reports_its_version(tmp_path):
    site = installed_torch(tmp_path, "from torch import _C\n", "__version__ = '2.11.0+cpu'\ncuda = None\n")
    torch = software.parse_torch(run(software.torch_command(str(tmp_path / "none")),
                                     {**os.environ, "PYTHONPATH": str(site)}))
    assert torch["version"] == "2.11.0+cpu" and torch["cuda"] is None
    (site / "torch" / "version.py").unlink()
    torch = software.parse_torch(run(software.torch_command(str(tmp_path / "none")),
                                     {**os.environ, "PYTHONPATH": str(site)}))
    assert torch["version"] == "2.11.0+cu130"   # the dist-info's, when version.py cannot be read
    assert torch["cuda"] is None and "cannot read torch/version.py" in torch["error"]


def test_torch_facts_read_by_bash_builtins_keep_quotes_backslashes_and_a_last_line_without_newline(tmp_path):
    """The section reads METADATA and version.py with `read` and [[ =~ ]] (no sed/head): the first Version line
    (its leading blanks dropped), JSON-escaped; the first cuda / __version__ assignment, even on a last line."""
    site = installed_torch(tmp_path, "", None)
    (site / "torch-2.11.0+cu130.dist-info" / "METADATA").write_text(
        'Name: torch\nVersion:   2.9.1"local\\x\n\nVersion: 9.9 (the description)\n')
    env = {**os.environ, "PYTHONPATH": str(site)}
    torch = software.parse_torch(run(software.torch_command(str(tmp_path / "none")), env))
    assert torch["version"] == '2.9.1"local\\x' and "cannot read torch/version.py" in torch["error"]
    (site / "torch" / "version.py").write_text("__all__ = ['x']\ncuda = \"12.8\"  # c\n__version__ = '2.9.1+cu128'")
    torch = software.parse_torch(run(software.torch_command(str(tmp_path / "none")), env))
    assert (torch["version"], torch["cuda"], torch["error"]) == ("2.9.1+cu128", "12.8", None)


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


def test_torch_facts_survive_a_path_that_needs_json_escaping(tmp_path):
    odd = tmp_path / 'we"ird\\dir'
    odd.mkdir()
    site = installed_torch(odd, "", "cuda = '12.8'\n")
    torch = software.parse_torch(run(software.torch_command(str(tmp_path / "none")),
                                     {**os.environ, "PYTHONPATH": str(site)}))
    assert torch["path"] == str(site / "torch") and torch["cuda"] == "12.8"


def test_torch_version_is_the_one_an_import_reports_not_the_dist_info_one(tmp_path):
    """On the real H100 the dist-info said 2.11.0 and torch.__version__ 2.11.0+cu130 (tests/data/h100-device/
    issue14): the facts must say what the last verify saw, or what only an import tells is never matched."""
    site = installed_torch(tmp_path, "", "__version__ = '2.11.0+cu130'\ncuda = '13.0'\n")
    meta = site / "torch-2.11.0+cu130.dist-info" / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 2.11.0+cu130", "Version: 2.11.0"))
    torch = software.parse_torch(run(software.torch_command(str(tmp_path / "none")),
                                     {**os.environ, "PYTHONPATH": str(site)}))
    assert torch["version"] == "2.11.0+cu130"
