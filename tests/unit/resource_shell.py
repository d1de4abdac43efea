"""Run a resource's real check and apply snippets with bash on this machine, inside a test's tmp_path.

Snippets run the way a probe section runs them (`bash -c`, stderr folded into stdout), so a test sees
exactly the exit status and text the engine would parse.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fleet.resources import TYPES, Resource
from fleet.resources.base import CheckResult
from fleet.programs import prelude
from fleet.shell import define


def make(type_name: str, **params) -> Resource:
    """A resource built the way a rendered role builds it: validated, defaults filled."""
    cls = TYPES[type_name]
    return cls(cls.validate(params, "test.yaml:1"))


def sh(snippet: str, *, path_prefix: Path | None = None, env: dict | None = None,
       timeout: float = 600) -> tuple[int, str]:
    """(exit status, stdout+stderr) of `snippet` in a fresh non-interactive bash."""
    run_env = dict(os.environ)
    run_env.update(env or {})
    if path_prefix is not None:  # stub commands (apt-get, ldconfig, ...) found before the real ones
        run_env["PATH"] = f"{path_prefix}:{run_env['PATH']}"
    proc = subprocess.run(["bash", "-c", snippet], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, text=True, env=run_env, timeout=timeout)
    return proc.returncode, proc.stdout


def check_text(resource: Resource) -> str:
    """The check as a script runs it: after the shared functions it declares (fleet.shell.FUNCTIONS), which the
    probe defines once at its top, and the text of each helper program it runs, run from a private copy as --check
    runs it (installing would write /var/lib/fleet/bin on this machine)."""
    return define(resource.uses()) + prelude(resource.programs(), (), install=False) + resource.check()


def apply_text(resource: Resource) -> str:
    """The apply as the engine runs it: after the shared functions it declares (in its own bash, they go with it)."""
    return define(resource.uses(apply=True)) + resource.apply()


def check(resource: Resource, **kw) -> CheckResult:
    rc, out = sh(check_text(resource), **kw)
    return resource.parse(rc, out)


def apply(resource: Resource, **kw) -> str:
    rc, out = sh(apply_text(resource), **kw)
    assert rc == 0, f"apply failed (exit {rc}):\n{out}"
    return out


def converge(resource: Resource, **kw) -> CheckResult:
    """The engine's cycle on a fresh state: check says 'change', apply, check says 'in state'."""
    before = check(resource, **kw)
    assert not before.in_state and before.error is None, before
    apply(resource, **kw)
    after = check(resource, **kw)
    assert after.in_state, after
    return before


def syntax_ok(snippet: str) -> None:
    """bash -n: the snippet parses (nothing runs). On stdin, as fleet sends scripts: a whole apply script is over
    the kernel's 128 KiB limit for one argument (MAX_ARG_STRLEN)."""
    proc = subprocess.run(["bash", "-n"], input=snippet, capture_output=True, text=True)
    assert proc.returncode == 0, f"bash -n: {proc.stderr}\n{snippet}"


def hostile(marker: str) -> str:
    """A value made of every way text can escape into shell code; running any of it creates the file `marker`
    in the working directory. It holds no '/', so it can be a file name too."""
    m = marker
    return (f"x'y\"z $(touch {m}) `touch {m}`; touch {m} | touch {m} && touch {m}\n"
            f"touch {m} # \\ $HOME ${{IFS}} * '\\''")


def stubs(directory: Path, names: list[str], log: Path) -> Path:
    """Commands that only record their argv (one argument per line, then '--') instead of acting."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        stub = directory / name
        stub.write_text(f"#!/bin/bash\n{{ echo {name}; printf '%s\\n' \"$@\"; echo --; }} >> '{log}'\n")
        stub.chmod(0o755)
    return directory
