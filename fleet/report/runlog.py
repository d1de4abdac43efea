"""A log of each apply: what happened on each host, kept after the pod is gone (issue 25).

JSON lines: first the run (when, the command line, check mode), then one line per host with the same fields as
its `--json` document (counts, tasks with status and reason, verify, error) and its stats. Secrets are masked as
in every printed document. Default place: $XDG_STATE_HOME/fleet/runs (else ~/.local/state/fleet/runs), one file
per run named by its UTC start, the newest KEEP (200, or $FLEET_RUN_LOGS_KEEP) kept and older ones removed;
`--log FILE` writes (appends to) that file instead, and is never pruned.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from fleet.connection.parallel import Outcome
from fleet.facts.scrub import scrub
from fleet.jsontext import dumps, finite

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


def lines(argv: list[str], started: float, check: bool, hosts: dict[str, Any], outcomes: dict[str, Outcome]) -> list[str]:
    head = {"format": 1, "run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), "argv": argv, "check": check,
            "seconds": round(time.time() - started, 3)}
    out = [head] + [{"host": name, **doc, "stats": outcomes[name].stats()} for name, doc in hosts.items()]
    return [dumps(finite(scrub(json.loads(json.dumps(doc, default=str)))), ensure_ascii=True) for doc in out]


def write(path: Path, text_lines: list[str]) -> Path:
    """Append the run's lines to `path` (0600: reasons can name paths and hosts), its folder made 0700."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in text_lines))
    if path.parent == runs_dir():
        prune(path.parent)
    return path
