"""How `fleet script` shows its result (a ScriptRun, fleet/workflows/script.py): the script on stdout, or written
to a file (mode 0755, atomically) with one line saying where and which run-time variants it carries."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fleet.report import Reporter


@dataclass(frozen=True)
class ScriptPrinter:
    reporter: Reporter
    output: Path | None = None            # -o FILE (None: stdout)
    shown_as: str | None = None           # the path as the user gave it

    def finish(self, run) -> None:
        from fleet.atomic import write_atomic

        if self.output is None:
            self.reporter.env.console.file.write(run.text)
            self.reporter.env.console.file.flush()
            return
        self.output.parent.mkdir(parents=True, exist_ok=True)
        # owner-only (issue 49): the script holds what its tasks need, a private index's password or a git token
        write_atomic(self.output, run.text.encode("utf-8"), mode=0o700)
        self.reporter.progress(run.host, f"script written to {self.shown_as or self.output} "
                                         f"(run-time variants: {', '.join(run.plans)})")
