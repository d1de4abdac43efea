"""The verify program (fleet/remote/verify/) for the unit tests: a fresh Run each time (its results are the run's, as
on the host, where each run is its own process), configured as a role renders it."""

from __future__ import annotations

import json

from fleet.remote.verify import runner
from fleet.remote.verify.config import Run


def fresh(config: dict | None = None, run: bool = True, program: str | None = None) -> Run:
    """A new run of the program; `run`: its steps ran with `config` (here no torch, so they stop at torch_installed),
    else only configured. `program`: the file it starts again in other kinds of process (shipped(): the one the host
    gets)."""
    state = Run(config or {}, program)
    if run:
        runner.run_steps(state)
    return state


def shipped(directory) -> str:
    """The file the host gets (fleet/resources/verify.py verify_program), written into `directory`: its path."""
    from fleet.resources.verify import verify_program

    program = verify_program()
    path = directory / program.file
    path.write_text(program.text)
    return str(path)


def config_of(task) -> dict:
    """The CONFIG_JSON a rendered verify task hands the program, as the program reads it: the rows it names taken
    from fleet's tables (fleet/resources/verify.py tables, which the shipped program carries as its module `tables`;
    tests/unit/test_remote_bundle.py runs the shipped file on a rendered config and finds the same)."""
    from fleet.remote.verify.config import with_tables
    from fleet.resources.verify import tables

    return with_tables(json.loads(task.resource.p["config"]), tables)


def rendered(task) -> dict:
    """The CONFIG_JSON a rendered verify task hands the program, as it travels."""
    return json.loads(task.resource.p["config"])
