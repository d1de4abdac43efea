"""The verify program (fleet/remote/verify/) on the startup files' real trace (this machine's bash, a temp HOME):
a hidden GPU fails naming the variable, its value and the file:line, not the loader; a kind that sees fewer GPUs
than the host has fails the same way; each kind's python3/pip/nvcc/CUDA_HOME are checked against what verify proved,
naming what each kind runs instead."""

import subprocess
import types

import pytest

from fleet.facts import shells
from fleet.remote import trace
from fleet.remote.verify import explain, kinds
from toolkits import lay_toolkit
from verify_program import fresh


@pytest.fixture
def traced(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    old, new, venv = tmp_path / "cuda-12.4", tmp_path / "cuda-13.0", tmp_path / "venv"
    lay_toolkit(old, "12.4.1")
    lay_toolkit(new, "13.0.2")
    (home / ".bashrc").write_text(f"export CUDA_VISIBLE_DEVICES=1\ncase $- in *i*) ;; *) return;; esac\n"
                                  f"export PATH={old}/bin:$PATH\nexport CUDA_HOME={old}\n")
    (home / ".profile").write_text(f". ~/.bashrc\nexport PATH={new}/bin:{venv}/bin:$PATH CUDA_HOME={new}\n")
    text = subprocess.run(["bash", "-c", shells.command()], capture_output=True, text=True, timeout=300,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}).stdout
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FLEET_VERIFY_TRACE", "true")
    program = fresh({"toolkit": str(new), "venv_first": True}, run=False)
    program.shells = trace.parse(text)
    program.host_gpus = 8
    return program, old, new, venv


def test_error_100_names_the_variable_its_value_and_line_not_the_loader(traced):
    program, *_ = traced
    said = explain.explain(program, {"kind": "interactive", "code": 100, "name": "CUDA_ERROR_NO_DEVICE",
                                     "libcuda": "/usr/lib/libcuda.so.1", "visible_devices": "1"},
                           {"mechanism": "ld cache", "says": "/etc/ld.so.conf.d/x.conf:3 puts /usr/lib in the ld cache"})
    assert "CUDA_VISIBLE_DEVICES='1' leaves none of the host's 8 GPU(s) visible" in said
    assert "set at ~/.bashrc:1" in said and "ld cache" not in said and "ld.so.conf" not in said
    bare = explain.explain(program, {"kind": "bare", "code": 100, "libcuda": "/usr/lib/libcuda.so.1"}, None)
    assert "CUDA_VISIBLE_DEVICES is not set: the kernel driver lists 8 GPU(s)" in bare


def test_fewer_gpus_than_the_host_has_fails_the_kind_naming_the_line(traced, monkeypatch):
    program, *_ = traced
    entry = kinds.judge_kind(program, "login", {"available": True, "code": 0, "devices": 1, "visible_devices": "1",
                                                "libcuda_real": "/usr/lib/libcuda.so.580"})
    assert entry["passed"] is False
    assert "sees 1 of the host's 8 GPUs: CUDA_VISIBLE_DEVICES='1' set at ~/.bashrc:1 (read from ~/.profile:1)" in \
        entry["explain"]
    assert kinds.judge_kind(program, "bare", {"available": True, "code": 0, "devices": 8})["passed"] is True


def test_each_shell_kinds_commands_are_checked_against_the_proved_toolkit_and_venv(traced):
    program, old, new, venv = traced
    program.torch = types.SimpleNamespace(__file__=str(venv / "torch" / "__init__.py"))
    kinds.user_commands(program)
    checks = {c["name"]: c for c in program.checks}
    inter = checks["user_commands_interactive"]
    assert not inter["passed"] and f"`nvcc` is {old}/bin/nvcc (CUDA 12.4.1), not {new}/bin/nvcc" in inter["detail"]
    assert f"CUDA_HOME='{old}' (set at ~/.bashrc:4)" in inter["detail"] and "~/.bashrc:3" in inter["detail"]
    assert "`python3` is /usr/bin/python3" in inter["detail"]
    login = checks["user_commands_login"]    # the toolkit right, the venv's bin without a python3: named
    assert "nvcc" not in login["detail"].split("; fix")[0] and "`python3` is" in login["detail"]
