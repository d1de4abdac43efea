"""Where a run's results go: every workflow hands each host's report to its sinks, never to the printer.

A sink is any object with the three methods of `Sink`. A workflow calls `begin` once, `host` once per host
as that host finishes (from worker threads: a sink locks what it shares), and `end` once, whatever happened
(Ctrl-C included). A sink that fails says so in one line on stderr and the run goes on: a destination that
is down never costs the user the run. A new destination is one class here or in its own module, added in
`for_run`.

`report` is the host's result as JSON-able data: `{"status": "ok"|"failed"|"unreachable"|..., "record": the
facts record when one was gathered, "changes": [...], "verdicts": {...}}`, already scrubbed of secrets.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class Run:
    """One command's run: what ran, when, over which inventory."""
    command: str                      # apply, facts, verify, health, bootstrap, script, ...
    inventory: Path | None
    check: bool = False               # --check: nothing was changed
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


class Sink(Protocol):
    def begin(self, run: Run) -> None: ...

    def host(self, run: Run, name: str, report: dict[str, Any]) -> None: ...

    def end(self, run: Run, status: int) -> None: ...
