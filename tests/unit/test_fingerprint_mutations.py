"""Reuse only when nothing verify proved has changed, proved by mutation: the real fingerprint program (this machine's
bash, a temp HOME and a venv laid out as pip lays it out) is taken, one thing a user or an image changes is changed,
and it is taken again. Every change below must refuse reuse and name what changed; a comment must not."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fleet.facts import fingerprint
from toolkits import lay_toolkit

VERIFIED = {"passed": True, "torch": {"version": "2.11.0+cu130"}}

BASHRC = """\
# ~/.bashrc as Ubuntu ships it, in short
case $- in
    *i*) ;;
      *) return;;
esac
alias ll='ls -l'
"""


def take(home: Path, env: Path) -> dict:
    out = subprocess.run(["bash", "-c", fingerprint.fingerprint_script(str(env))], capture_output=True, text=True,
                         timeout=120, env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL)
    return fingerprint.parse(out.stdout)


def _lay_out(root: Path):
    home, env = root / "home", root / "venv"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC)
    (home / ".profile").write_text('if [ -f "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi\n')
    site = env / "lib" / "python3.12" / "site-packages"
    for d in ("torch-2.11.0.dist-info", "nvidia_cublas-13.1.0.3.dist-info", "nvidia/cublas/lib", "nvidia/cudnn/lib",
              "torch"):
        (site / d).mkdir(parents=True)
    (site / "torch-2.11.0.dist-info" / "RECORD").write_text("torch/__init__.py,,\n")
    (env / "bin").mkdir()
    os.symlink("/usr/bin/python3", env / "bin" / "python")
    toolkit = lay_toolkit(root / "cuda-12.4", "12.4.1")
    return home, env, site, toolkit


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """The host as verify proved it, laid out once at one path, and its fingerprint (taken twice: the same)."""
    root = tmp_path_factory.mktemp("fp") / "host"
    root.mkdir()
    home, env, _, _ = _lay_out(root)
    parts = take(home, env)
    assert take(home, env) == parts
    return root, parts


@pytest.fixture
def host(pristine):
    """The pristine host again, at the same path (so the same fingerprint), for one change."""
    root, parts = pristine
    shutil.rmtree(root)
    root.mkdir()
    return (*_lay_out(root), parts)


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + line + "\n")


def _top(path: Path, line: str) -> None:
    path.write_text(line + "\n" + path.read_text())


MUTATIONS = {
    # the traps
    "CUDA_VISIBLE_DEVICES=1 at the top of ~/.bashrc": (
        lambda h, e, s, t: _top(h / ".bashrc", "export CUDA_VISIBLE_DEVICES=1"),
        ["`ssh host cmd`", "interactive shells", "login shells"]),
    "another toolkit's nvcc first and its CUDA_HOME at the end of ~/.bashrc": (
        lambda h, e, s, t: _append(h / ".bashrc", f"export PATH={t}/bin:$PATH CUDA_HOME={t}"), ["interactive shells"]),
    "pip uninstall nvidia-cublas in the venv": (
        lambda h, e, s, t: [p.rename(p.with_name("x-" + p.name)) for p in (s / "nvidia" / "cublas",)] and
        (s / "nvidia_cublas-13.1.0.3.dist-info").rename(s / ".gone"), ["packages beside torch"]),
    # the same family, which the issue does not name
    "CUDA_VISIBLE_DEVICES emptied in ~/.profile (login only)": (
        lambda h, e, s, t: _append(h / ".profile", "export CUDA_VISIBLE_DEVICES="), ["login shells"]),
    "CUDA_DEVICE_ORDER=PCI_BUS_ID in ~/.profile": (
        lambda h, e, s, t: _append(h / ".profile", "export CUDA_DEVICE_ORDER=PCI_BUS_ID"), ["login shells"]),
    "PYTHONPATH at the top of ~/.bashrc": (
        lambda h, e, s, t: _top(h / ".bashrc", "export PYTHONPATH=/opt/old-site"), ["`ssh host cmd`"]),
    "PYTHONNOUSERSITE in ~/.bashrc (interactive)": (
        lambda h, e, s, t: _append(h / ".bashrc", "export PYTHONNOUSERSITE=1"), ["interactive shells"]),
    "LD_PRELOAD in a new ~/.bash_profile (login reads it, not ~/.profile)": (
        lambda h, e, s, t: (h / ".bash_profile").write_text("export LD_PRELOAD=/opt/x/libfoo.so\n"), ["login shells"]),
    "a PATH entry holding nvcc first in ~/.profile": (
        lambda h, e, s, t: _append(h / ".profile", f"PATH={t}/bin:$PATH"), ["login shells"]),
    "alias python=python3 in ~/.bashrc": (
        lambda h, e, s, t: _append(h / ".bashrc", "alias python=python3"), ["interactive shells"]),
    "a package added beside torch": (
        lambda h, e, s, t: (s / "nvidia_nccl_cu13-2.28.dist-info").mkdir(), ["packages beside torch"]),
    "VIRTUAL_ENV left by an activate in ~/.bashrc": (
        lambda h, e, s, t: _append(h / ".bashrc", "export VIRTUAL_ENV=/opt/other"), ["interactive shells"]),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_each_change_refuses_reuse_and_says_what(host, name):
    home, env, site, toolkit, before = host
    change, named = MUTATIONS[name]
    verified = {**VERIFIED, "fingerprint_parts": before}
    change(home, env, site, toolkit)
    reasons = fingerprint.stale_reasons(verified, take(home, env))
    assert reasons, name
    for words in named:
        assert any(words in r for r in reasons), (name, reasons)


def test_an_upgraded_toolkit_under_the_same_nvcc_refuses_reuse(host):
    home, env, site, toolkit, _ = host
    _append(home / ".bashrc", f"PATH={toolkit}/bin:$PATH")
    verified = {**VERIFIED, "fingerprint_parts": take(home, env)}
    (toolkit / "version.json").write_text('{\n "cuda" : {\n  "version" : "12.8.0"\n }\n}\n')
    assert any("interactive shells" in r for r in fingerprint.stale_reasons(verified, take(home, env)))


def test_a_comment_or_a_moved_line_keeps_the_verdict(host):
    home, env, site, toolkit, before = host
    verified = {**VERIFIED, "fingerprint_parts": before}
    _top(home / ".bashrc", "# a comment moves every line down")
    assert fingerprint.stale_reasons(verified, take(home, env)) == []
    said = fingerprint.compared(verified["fingerprint_parts"])
    for words in ("torch distribution", "the environment of `ssh host cmd`", "CUDA_VISIBLE_DEVICES", "nvcc",
                  "packages beside torch"):
        assert words in said, said
