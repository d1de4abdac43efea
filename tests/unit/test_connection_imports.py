"""fleet/connection/ is a package without an import cycle, and fabric/paramiko load only for an SSH connection.

Each check runs in a fresh interpreter (a subprocess): in this one, other tests have imported everything already.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import fleet

PACKAGE = Path(fleet.__file__).parent / "connection"
MODULES = ["fleet.connection", "fleet.connection.base", "fleet.connection.capture", "fleet.connection.local",
           "fleet.connection.hostkeys", "fleet.connection.ssh", "fleet.shell"]
HEAVY = ("fabric", "paramiko", "invoke")


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)


def _loaded_heavy(code: str) -> list[str]:
    done = _fresh(code + f"\nimport sys\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", MODULES)
def test_each_connection_module_imports_alone(module):
    done = _fresh(f"import {module}")
    assert done.returncode == 0, done.stderr


def _imports(path: Path) -> set[str]:
    """Every module `path` imports at its top level (relative ones as written: '.local', '..shell')."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


def test_the_base_imports_neither_kind_and_the_kinds_import_not_the_package():
    """base/capture know no kind; local and ssh import the base module, never the package that imports them."""
    for name in ("base.py", "capture.py"):
        assert not _imports(PACKAGE / name) & {".local", ".ssh", ".hostkeys", ".", "fabric", "paramiko"}, name
    for name in ("local.py", "ssh.py", "hostkeys.py"):
        assert "." not in _imports(PACKAGE / name) and "fleet.connection" not in _imports(PACKAGE / name), name
    assert not _imports(PACKAGE / "local.py") & {".ssh", ".hostkeys", "fabric", "paramiko"}
    assert not _imports(PACKAGE / "__init__.py") & {".ssh", ".hostkeys", "fabric", "paramiko"}


def test_fleet_cli_and_local_connections_never_load_fabric():
    assert _loaded_heavy("import fleet.cli") == []
    assert _loaded_heavy("import fleet.connection, fleet.shell, fleet.engine") == []
    run_local = ("from fleet.connection import connect\nfrom fleet.inventory import Host\n"
                 "assert connect(Host('here', connection='local')).run('true').ok")
    assert _loaded_heavy(run_local) == []


def test_fleet_help_never_loads_fabric():
    code = ("import sys\nfrom fleet import cli\n"
            "try:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n")
    assert _loaded_heavy(code) == []


def test_an_ssh_connection_module_does_load_fabric():
    """The check above can fail: importing the SSH kind loads fabric and paramiko."""
    assert _loaded_heavy("import fleet.connection.ssh") == ["fabric", "invoke", "paramiko"]
