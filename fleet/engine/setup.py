"""The settings of one converge: what used to be the Engine's attributes, as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from fleet.facts.software import VERIFY_PATH

Progress = Callable[[str, str], None]


def _quiet(host: str, message: str) -> None:
    pass


@dataclass(frozen=True)
class Setup:
    roles: tuple                          # the host's roles, in order
    facts_dir: Path
    check_mode: bool = False
    force_verify: str | None = None       # why verify must run whatever its fingerprint says (None: it may not)
    verify_write: bool = True             # write the host's verify record where verify ran
    progress: Progress = field(default=_quiet, compare=False)
    # (host, "begin" | "end", the task's progress line): which tasks are in flight on the host (the live display)
    on_task: Callable[[str, str, str], None] | None = field(default=None, compare=False)
    verify_path: str = VERIFY_PATH        # where the host keeps its verify record

    def __post_init__(self):
        object.__setattr__(self, "roles", tuple(self.roles))
        object.__setattr__(self, "facts_dir", Path(self.facts_dir))

    @cached_property
    def reads_readings(self) -> bool:
        """Whether a role reads what a probe reads off the moment (fleet/engine/decided.py, READINGS)."""
        from fleet.engine.decided import reads_readings

        return reads_readings(self.roles)
