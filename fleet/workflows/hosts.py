"""What every workflow that reaches hosts shares: the hosts worked on in parallel (connection.parallel.on_hosts), and
each host's report handed to the run's sinks (fleet/record/sinks.py) as that host ends, from its thread; the hosts
that never ended (cut short by Ctrl-C, never started) are told at the end, then the run ends.

    told = Told(run, sinks, describe, keep)          # describe(outcome) -> the host's JSON document (the printer's)
    outcomes = on_hosts(hosts, work, ..., on_done=told.then(printer))   # keep(outcome) -> the facts record, or None
    told.end(outcomes, status)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from fleet.connection.parallel import Outcome
from fleet.record.sinks import Run, Sinks, report_of


def _nothing(outcome: Outcome) -> dict | None:
    return None


@dataclass
class Told:
    run: Run
    sinks: Sinks
    describe: Callable[[Outcome], dict[str, Any]]
    keep: Callable[[Outcome], dict | None] = _nothing

    def __post_init__(self):
        self.sinks.begin(self.run)

    def host(self, outcome: Outcome) -> None:
        record = self.keep(outcome) if outcome.value is not None and not outcome.interrupted else None
        self.sinks.host(self.run, outcome.host, report_of(outcome, self.describe(outcome), record))

    def then(self, on_done: Callable[[Outcome], None] | None = None) -> Callable[[Outcome], None]:
        """on_hosts' on_done: the sinks first (the record is kept before the host is shown), then `on_done`."""
        def done(outcome: Outcome) -> None:
            self.host(outcome)
            if on_done is not None:
                on_done(outcome)
        return done

    def end(self, outcomes: dict[str, Outcome], status: int) -> None:
        for name, outcome in outcomes.items():
            if name not in self.sinks.told:
                self.host(outcome)
        self.sinks.end(self.run, int(status))

    @property
    def logged(self):
        """Where the run log went (None: it could not be written)."""
        return next((sink.written for sink in self.sinks.sinks if getattr(sink, "written", None)), None)

    @property
    def failed(self) -> bool:
        """A sink could not keep what the next run reads (a facts record): the run failed."""
        return bool(self.sinks.failed)
