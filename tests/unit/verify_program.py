"""The verify program (fleet/remote/verify_host.py) for the unit tests: a fresh copy of the module each time (its
results are module state, as on the host, where each run is its own process), configured as a role renders it."""

from __future__ import annotations

import importlib.util
import json

from fleet.remote import verify_host


def fresh(config: dict | None = None, run: bool = True) -> dict:
    """A new instance of the program's module, its namespace as a dict; `run`: main's steps ran with `config` (here
    no torch, so they stop at torch_installed), else only configured."""
    spec = importlib.util.spec_from_file_location("fleet_verify_program", verify_host.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if run:
        module.run(config or {})
    else:
        module.configure(config or {})
    return vars(module)


def config_of(task) -> dict:
    """The CONFIG_JSON a rendered verify task hands the program."""
    return json.loads(task.resource.p["config"])
