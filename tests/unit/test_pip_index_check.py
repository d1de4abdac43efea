"""The torch task's check asks the index whether the pinned version exists for the host's Python and CPU
(issue 12), so `fleet apply --check` says "torch 2.99.0 is not on <index> for cp312 aarch64" instead of pip
failing halfway through an apply. Real PEP 503 pages in download.pytorch.org's form (a `+` spelled %2B),
read over file:// as the lab's mirror serves them, through the real check snippet in bash."""
from __future__ import annotations

import platform
import sys

from resource_shell import check, make

TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
MACHINE = platform.machine()
OTHER = "aarch64" if MACHINE == "x86_64" else "x86_64"


def index(tmp_path, *wheels: str) -> str:
    project = tmp_path / "index" / "torch"
    project.mkdir(parents=True)
    links = "\n".join(f'<a href="/whl/cu130/{w}#sha256=00">{w.replace("%2B", "+")}</a><br/>' for w in wheels)
    (project / "index.html").write_text(f"<!DOCTYPE html><html><body><h1>Links for torch</h1>\n{links}\n</body></html>\n")
    return (tmp_path / "index").as_uri()


def torch_task(tmp_path, url: str, version: str):
    return make("pip", venv=str(tmp_path / "venv"), packages=[f"torch=={version}"], index_url=url,
                index_check=True, python=sys.executable)


def test_a_version_on_the_index_is_simply_missing_here(tmp_path):
    url = index(tmp_path, f"torch-2.11.0%2Bcu130-{TAG}-{TAG}-manylinux_2_28_{MACHINE}.whl")
    result = check(torch_task(tmp_path, url, "2.11.0"))
    assert not result.in_state and result.error is None and "no virtual environment" in result.reason


def test_a_version_not_on_the_index_fails_the_check_naming_index_python_and_cpu(tmp_path):
    url = index(tmp_path, f"torch-2.11.0%2Bcu130-{TAG}-{TAG}-manylinux_2_28_{MACHINE}.whl")
    result = check(torch_task(tmp_path, url, "2.99.0"))
    assert result.error is not None
    assert f"torch 2.99.0 is not on {url} for {TAG} {MACHINE}" in (result.error + result.reason)


def test_a_wheel_for_another_cpu_or_python_does_not_count(tmp_path):
    url = index(tmp_path, f"torch-2.11.0%2Bcu130-{TAG}-{TAG}-manylinux_2_28_{OTHER}.whl",
                f"torch-2.11.0%2Bcu130-cp39-cp39-manylinux_2_28_{MACHINE}.whl")
    result = check(torch_task(tmp_path, url, "2.11.0"))
    assert result.error is not None and f"for {TAG} {MACHINE}" in (result.error + result.reason)


def test_an_index_that_cannot_be_read_leaves_it_to_the_apply(tmp_path):
    result = check(torch_task(tmp_path, "http://127.0.0.1:9/whl/cu130", "2.11.0"))
    assert not result.in_state and result.error is None and "could not ask" in result.reason


def test_an_installed_pin_never_asks_the_index(tmp_path):
    # fleet-less proof: a venv with pip as the "package" pinned at its own version is in state offline. The venv
    # borrows the system's pip (as test_resource_pip's quick_venv: ensurepip costs half a minute on a loaded machine)
    import venv
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(tmp_path / "venv")
    from subprocess import run
    pip_version = run([str(tmp_path / "venv" / "bin" / "python"), "-c", "import pip; print(pip.__version__)"],
                      capture_output=True, text=True).stdout.strip()
    task = make("pip", venv=str(tmp_path / "venv"), packages=[f"pip=={pip_version}"],
                index_url="http://127.0.0.1:9/never", index_check=True)
    result = check(task)
    assert result.in_state and "could not ask" not in result.reason
