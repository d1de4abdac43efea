"""A log of each run (apply, verify, facts, health, ...): what happened on each host, kept after the pod is gone
(issue 25). A sink (fleet/record/sinks.py): `RunLog`.

JSON lines: first the run (when, the command line, check mode), then one line per host, as each ends, with its
status, the same fields as its `--json` document (apply: counts, tasks with status and reason, verify, error) and
its stats. Secrets are masked as
in every printed document. A record says each thing once (format 2, issue 46): a text of SHARED_OVER characters or
more that the run's host lines say more than once (the same 3 KB reason of every env_hooks task, of every host)
is written once, in the head's `said` ({"1": text, ...}), and each place that said it holds {"said": "1"};
`read(path)` gives the lines with every text back in its place (format 1 lines are read as they are). Default place: $XDG_STATE_HOME/fleet/runs (else ~/.local/state/fleet/runs), one file
per run named by its UTC start, the newest KEEP (200, or $FLEET_RUN_LOGS_KEEP) kept and older ones removed;
`--log FILE` writes (appends to) that file instead, and is never pruned.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

from fleet.facts.scrub import Scrubbed, scrub_text, scrubbed
from fleet.jsontext import dumps

_OURS = re.compile(r"^\d{8}T\d{6}Z-\d+-[a-z]+\.jsonl\Z")


def runs_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "fleet" / "runs"


KEEP = 200


def prune(folder: Path, keep: int | None = None) -> list[Path]:
    """Remove all but the newest `keep` run logs of the default folder (their names sort by start time); returns
    what was removed. Only fleet's own names (YYYYmmddTHHMMSSZ-PID-COMMAND.jsonl) are touched."""
    keep = keep if keep is not None else int(os.environ.get("FLEET_RUN_LOGS_KEEP") or KEEP)
    logs = sorted(p for p in folder.glob("*.jsonl") if _OURS.match(p.name))
    gone = logs[:max(0, len(logs) - max(keep, 1))]
    for path in gone:
        try:
            path.unlink()
        except OSError:
            pass
    return gone


def default_path(command: str, started: float) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    return runs_dir() / f"{stamp}-{os.getpid()}-{command}.jsonl"


def line(doc: dict[str, Any]) -> str:
    """One JSON line, secrets masked, ASCII only."""
    return dumps(scrubbed(doc), ensure_ascii=True)   # as JSON writes it, no secret, no NaN, no Infinity


def write(path: Path, text_lines: list[str]) -> Path:
    """Append the run's lines to `path` (0600: reasons can name paths and hosts), its folder made 0700."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in text_lines))
    if path.parent == runs_dir():
        prune(path.parent)
    return path


class RunLog:
    """The run log as a sink: each host's line kept as it ends, the whole run written at its end (the head first:
    when, the command line, check mode, how long). `path` None: a new file under runs_dir(), named when the run
    begins. `written`: where it went, once it did."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self.written: Path | None = None
        self._docs: list[dict] = []
        self._lock = threading.Lock()

    def begin(self, run) -> None:
        self.path = self.path or default_path(run.command, run.started.timestamp())

    def host(self, run, name: str, report: dict[str, Any]) -> None:
        report = scrubbed(report)
        doc = Scrubbed({"host": scrub_text(name), **{k: v for k, v in report.items() if k != "record"}})
        with self._lock:
            self._docs.append(doc)

    def end(self, run, status: int) -> None:
        started = run.started.timestamp()
        head = {"format": 2, "run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
                "argv": list(run.argv or ("fleet", run.command)),
                "check": run.check, "seconds": round(time.time() - started, 3)}
        with self._lock:
            docs = list(self._docs)
        said = _said_again(docs)
        if said:
            head["said"] = {ref: text for text, ref in said.items()}
        text_lines = [line(head), *(line(Scrubbed(_refer(doc, said))) for doc in docs)]
        try:
            self.written = write(self.path or default_path(run.command, started), text_lines)
        except OSError as exc:
            raise OSError(f"could not write the run log {self.path} ({exc.strerror or exc}): give --log FILE "
                            "somewhere writable") from None


SHARED_OVER = 40   # characters: a text this long said twice in a run is said once, in the head


def _said_again(docs: list[dict]) -> dict[str, str]:
    """{text: reference} of the long texts the host lines say more than once, numbered as first said."""
    times: dict[str, int] = {}     # in the order first said

    def walk(value) -> None:
        if isinstance(value, str):
            if len(value) >= SHARED_OVER:
                times[value] = times.get(value, 0) + 1
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for doc in docs:
        walk(doc)
    again = [text for text, count in times.items() if count > 1]
    return {text: str(number) for number, text in enumerate(again, 1)}


def _refer(value, said: dict[str, str]):
    """The value with each text of `said` replaced by {"said": its reference}."""
    if not said:
        return value
    if isinstance(value, str):
        return {"said": said[value]} if value in said else value
    if isinstance(value, dict):
        return {key: _refer(item, said) for key, item in value.items()}
    if isinstance(value, list):
        return [_refer(item, said) for item in value]
    return value


def read(path: Path) -> list[dict]:
    """A run log's lines (one run after the other where --log FILE was appended to), each text said by reference
    given back in its place from its run's head."""
    lines, said = [], {}
    for text in Path(path).read_text(encoding="utf-8").splitlines():
        if not text.strip():
            continue
        doc = json.loads(text)
        if isinstance(doc, dict) and "format" in doc and "argv" in doc:     # a run's head: its own texts
            said = doc.pop("said", None) or {}
            lines.append(doc)
        else:
            lines.append(_resolve(doc, said))
    return lines


def _resolve(value, said: dict[str, str]):
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("said"), str) and value["said"] in said:
            return said[value["said"]]
        return {key: _resolve(item, said) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve(item, said) for item in value]
    return value
