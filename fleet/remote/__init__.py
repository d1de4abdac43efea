"""The programs that run on the host, as files: fleet/remote/*.py, fleet/remote/*.sh and the verify package.

The Python modules are valid standalone Python using only the standard library, so their own text can be shipped
into a script (read with importlib.resources, never inspect.getsource) and run there by any python3. A module is
shipped alone (source) or, with the modules it imports, as one program (bundle: fleet/remote/boot.py starts it on the
host); pip_check.py and pip_index.py are scripts installed as helper programs (fleet/resources/pip.py), never imported.
The bash programs (`program(name)`, fleet/remote/<name>.sh) keep their comments in the file; they are stripped on
load (fleet/remote/strip.py), so the wire carries none. Values reach them as arguments or exported variables, quoted
by fleet.shell, never by formatting their text."""

from __future__ import annotations

# Files here that are programs run on the host, never modules imported here: each runs its work at its top level
# (boot.py starts the bundled verify program; pip_check.py and pip_index.py are pip's helper programs;
# shells_python.py is run through `python -c` by shells_commands.sh)
SCRIPTS = ("boot", "pip_check", "pip_index", "shells_python")

import functools
import threading
from importlib import resources


@functools.cache   # fleet's own files: the same for every host of a run
def source(module: str) -> str:
    """The text of fleet/remote/<module>.py ("verify.kinds": verify/kinds.py; a package: its __init__.py), as it is
    shipped to a host."""
    *parents, last = module.split(".")
    folder = resources.files(__name__)
    for parent in parents:
        folder = folder.joinpath(parent)
    found = folder.joinpath(last)
    return (found.joinpath("__init__.py") if found.is_dir() else folder.joinpath(last + ".py")).read_text(
        encoding="utf-8")


def package(name: str) -> tuple[str, ...]:
    """The package fleet/remote/<name>/ and its modules, dotted ("verify", "verify.config", ...), sorted."""
    files = resources.files(__name__).joinpath(name).iterdir()
    return (name, *sorted(f"{name}.{f.name[:-3]}" for f in files if f.name.endswith(".py") and f.name != "__init__.py"))


def bundle(main: str, modules: tuple[str, ...], written: dict[str, str] | None = None) -> str:
    """One Python program of several modules of fleet/remote: their text (sorted by name, so the text, and the
    digest it is installed by, changes only when one of theirs does), then fleet/remote/boot.py, which serves them
    as modules on the host and runs `main`'s main(argv, program). `written`: modules fleet writes for it, {name:
    text} (the verify program's `tables`, fleet/resources/verify.py), served as the others are."""
    sources = {name: text for name, text in sorted({**{m: source(m) for m in modules}, **(written or {})}.items())}
    return f"_MAIN = {main!r}\n_BUNDLED = {sources!r}\n" + source("boot")


def program(name: str) -> str:
    """fleet/remote/<name>.sh as it is shipped: its comments and blank lines stripped, without a final newline.
    Stripped once per run: without the lock, hosts' threads asking at once each stripped it again."""
    with _STRIPPING:
        return _program(name)


_STRIPPING = threading.RLock()


@functools.cache
def _program(name: str) -> str:
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
