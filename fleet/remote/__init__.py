"""Python that runs on the host as well as here: stdlib only, so its own text can be shipped into a script (read with
importlib.resources, never inspect.getsource) and run there by any python3. A module is shipped alone (source) or,
with the modules it imports, as one program (bundle: fleet/remote/boot.py starts it on the host)."""

from __future__ import annotations

from importlib import resources


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


def bundle(main: str, modules: tuple[str, ...]) -> str:
    """One Python program of several modules of fleet/remote: their text (sorted by name, so the text, and the
    digest it is installed by, changes only when one of theirs does), then fleet/remote/boot.py, which serves them
    as modules on the host and runs `main`'s main(argv, program)."""
    sources = {name: source(name) for name in sorted(set(modules))}
    return f"_MAIN = {main!r}\n_BUNDLED = {sources!r}\n" + source("boot")
