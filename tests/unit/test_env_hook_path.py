"""fleet's env hook (roles/env_hooks/templates/env.sh.j2), rendered and sourced by real bash and dash: the toolkit's
bin and fleet's venv go FIRST on PATH wherever anything else put them (another toolkit's nvcc earlier on PATH wins
otherwise, whatever CUDA_HOME says), CUDA_PATH/CUDACXX follow CUDA_HOME where set, the rest keeps its order, and
sourcing it again changes nothing."""

import subprocess
from pathlib import Path

import pytest

from fleet.roles import sandbox

TEMPLATE = Path(__file__).parents[2] / "roles" / "env_hooks" / "templates" / "env.sh.j2"
DECISIONS = {"cuda": {"path": "/usr/local/cuda-13.0"}, "compat": {"use": False, "path": None},
             "ld_library_path": ["/usr/local/cuda-13.0/lib64"], "reasons": {"env": "test"}}
OLD = "/usr/local/cuda-12.4/bin:/opt/fleet/venv/bin:/usr/local/bin:/usr/bin:/bin"


def hook(tmp_path, venv_on_path) -> Path:
    text = sandbox.compiled_file(TEMPLATE.read_text(), "env.sh.j2", str(TEMPLATE)).render(
        decisions=DECISIONS, env_hooks_venv_on_path=venv_on_path, python_env="/opt/fleet/venv",
        cutlass_dir="/opt/cutlass")
    out = tmp_path / "env.sh"
    out.write_text(text)
    return out


def sourced(shell: str, env_sh: Path, times: int = 1, **env) -> dict:
    script = f". {env_sh}; " * times + 'printf "%s\\n" "$PATH" "${CUDA_HOME-@}" "${CUDA_PATH-@}" "${CUDACXX-@}"'
    out = subprocess.run([shell, "-c", script], capture_output=True, text=True, check=True,
                         env={"PATH": OLD, **env}).stdout.splitlines()
    return dict(zip(("PATH", "CUDA_HOME", "CUDA_PATH", "CUDACXX"), out))


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_toolkit_and_venv_first_and_idempotent(tmp_path, shell):
    env_sh = hook(tmp_path, "first")
    got = sourced(shell, env_sh, CUDA_PATH="/usr/local/cuda-12.4", CUDACXX="/usr/local/cuda-12.4/bin/nvcc")
    assert got["PATH"] == "/opt/fleet/venv/bin:/usr/local/cuda-13.0/bin:/usr/local/cuda-12.4/bin:/usr/local/bin:/usr/bin:/bin"
    assert got["CUDA_HOME"] == got["CUDA_PATH"] == "/usr/local/cuda-13.0"
    assert got["CUDACXX"] == "/usr/local/cuda-13.0/bin/nvcc"
    assert sourced(shell, env_sh, times=3, CUDA_PATH="x", CUDACXX="y") == got


def test_unset_cuda_path_stays_unset_and_true_means_first(tmp_path):
    got = sourced("bash", hook(tmp_path, True))
    assert got["CUDA_PATH"] == "@" and got["CUDACXX"] == "@"
    assert got["PATH"].startswith("/opt/fleet/venv/bin:/usr/local/cuda-13.0/bin:")


def test_last_and_off_leave_the_systems_python_first(tmp_path):
    assert sourced("bash", hook(tmp_path, "last"))["PATH"] == \
        "/usr/local/cuda-13.0/bin:/usr/local/cuda-12.4/bin:/usr/local/bin:/usr/bin:/bin:/opt/fleet/venv/bin"
    assert sourced("bash", hook(tmp_path, False))["PATH"] == \
        "/usr/local/cuda-13.0/bin:/usr/local/cuda-12.4/bin:/opt/fleet/venv/bin:/usr/local/bin:/usr/bin:/bin"
