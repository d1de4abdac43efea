"""Python that runs on the host as well as here: each module is valid standalone Python using only the
standard library, so its own text can be shipped into a script (read with importlib.resources, never
inspect.getsource) and run there by any python3."""

from __future__ import annotations

from importlib import resources


def source(module: str) -> str:
    """The text of fleet/remote/<module>.py, as it is shipped to a host."""
    return resources.files(__name__).joinpath(f"{module}.py").read_text(encoding="utf-8")
