"""What a person sees: per-host output, progress lines, recap tables and JSON documents.

Everything prints through the injected consoles (fleet.env.Environment) so tests capture exactly what a person
sees. Progress goes to stderr, so `--json` on stdout stays one clean document.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from rich.markup import escape

from .env import Environment
from .parallel import Outcome


class Reporter:
    def __init__(self, env: Environment, *, quiet: bool = False):
        self.env = env
        self.quiet = quiet
        self._lock = threading.Lock()

    def progress(self, host: str, message: str) -> None:
        """One line of progress for a long step; safe from many host threads at once."""
        if self.quiet:
            return
        with self._lock:
            self.env.err_console.print(f"[dim]{escape(host)}[/dim] {escape(message)}")

    def error(self, message: str) -> None:
        self.env.err_console.print(f"[bold red]error:[/bold red] {escape(message)}")

    def warn(self, message: str) -> None:
        self.env.err_console.print(f"[yellow]warning:[/yellow] {escape(message)}")

    def print(self, *objects: Any) -> None:
        self.env.console.print(*objects)

    def host_block(self, name: str, status: str, body: str, style: str = "green") -> None:
        """Output grouped per host, under a rule naming the host and how it ended."""
        self.env.console.rule(f"[bold]{escape(name)}[/bold] [{style}]{escape(status)}[/{style}]", align="left")
        if body:
            self.env.console.print(escape(body.rstrip("\n")))

    def json(self, hosts: dict[str, Any], outcomes: dict[str, Outcome], **extra: Any) -> None:
        self.env.console.print_json(json.dumps(json_document(hosts, outcomes, **extra), default=str))


def json_document(hosts: dict[str, Any], outcomes: dict[str, Outcome], **extra: Any) -> dict:
    """{"hosts": {...}, "stats": {NAME: {"remote_commands", "seconds"}}}: the shape of every --json output."""
    doc = {"hosts": hosts, "stats": {name: o.stats() for name, o in outcomes.items()}}
    doc.update(extra)
    return doc
