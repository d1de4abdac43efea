"""The programs that run on the host, as files: fleet/remote/*.py and fleet/remote/*.sh.

The Python modules are valid standalone Python using only the standard library, so their own text can be shipped
into a script (read with importlib.resources, never inspect.getsource) and run there by any python3; pip_check.py and
pip_index.py are scripts run through `python -c` (fleet/resources/pip.py), never imported. The bash programs
(`program(name)`, fleet/remote/<name>.sh) keep their comments in the file; they are stripped on load
(fleet/remote/strip.py), so the wire carries none. Values reach them as arguments or exported variables, quoted by
fleet.shell, never by formatting their text."""

from __future__ import annotations

import functools
from importlib import resources


def source(module: str) -> str:
    """The text of fleet/remote/<module>.py, as it is shipped to a host."""
    return resources.files(__name__).joinpath(f"{module}.py").read_text(encoding="utf-8")


@functools.cache
def program(name: str) -> str:
    """fleet/remote/<name>.sh as it is shipped: its comments and blank lines stripped, without a final newline."""
    from fleet.remote.strip import strip_comments

    text = resources.files(__name__).joinpath(f"{name}.sh").read_text(encoding="utf-8")
    return strip_comments(text, f"fleet/remote/{name}.sh").rstrip("\n")


def programs() -> list[str]:
    """The names of every fleet/remote/*.sh (for the lint)."""
    return sorted(p.name[:-3] for p in resources.files(__name__).iterdir() if p.name.endswith(".sh"))


@functools.cache
def text(filename: str) -> str:
    """fleet/remote/<filename> as written (an awk program: nothing stripped, it ships as it reads)."""
    return resources.files(__name__).joinpath(filename).read_text(encoding="utf-8")
