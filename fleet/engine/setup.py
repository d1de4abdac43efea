"""The settings of one converge: what used to be the Engine's attributes, as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

Progress = Callable[[str, str], None]


def _quiet(host: str, message: str) -> None:
    pass


@dataclass(frozen=True)
class Setup:
    roles: tuple                          # the host's roles, in order
    facts_dir: Path
    check_mode: bool = False
    rerun: str | None = None              # why the checks behind a gate must run whatever it says (None: they may not)
    write_records: bool = True            # write the records judged resources keep, where they ran
    record_facts: bool = True             # write the host's facts record at the end (False: the caller's sinks
    #                                       keep HostReport.record: fleet/record/sinks.py)
    progress: Progress = field(default=_quiet, compare=False)
    # (host, "begin" | "end", the task's progress line): which tasks are in flight on the host (the live display)
    on_task: Callable[[str, str, str], None] | None = field(default=None, compare=False)
    record_path: str | None = None        # where the host keeps a kept record (None: the resource's own record_path)

    def __post_init__(self):
        object.__setattr__(self, "roles", tuple(self.roles))
        object.__setattr__(self, "facts_dir", Path(self.facts_dir))

    @cached_property
    def reads_readings(self) -> bool:
        """Whether a role reads what a probe reads off the moment (fleet/engine/decided.py, READINGS)."""
        from fleet.engine.decided import reads_readings

        return reads_readings(self.roles)
