"""What a person sees: per-host output, progress lines, recap tables and JSON documents.

Everything prints through the injected consoles (fleet.env.Environment) so tests capture exactly what a person
sees. Progress goes to stderr, so `--json` on stdout stays one clean document.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from rich.markup import escape

from .env import Environment
from .facts.scrub import scrub, scrub_text
from .parallel import Outcome

# What a hostile host could make the operator's terminal do: retitle the window, hide a HOST KEY CHANGED
# line, write the clipboard (OSC 52). ECMA-48: CSI (ESC [ ... final byte), OSC/DCS/PM/APC/SOS strings (ESC ]
# P ^ _ X ... ended by BEL or ESC \), single ESC sequences, the 8-bit C1 forms (U+0080-U+009F), and the other
# C0 controls (CR overwrites a line, BS rubs characters out). Newlines and tabs are text and stay.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?"                    # CSI
                      r"|\x1b[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS, SOS, PM, APC
                      r"|\x1b[ -/]*[0-~]?"                             # other ESC sequences (and a lone ESC)
                      r"|\x9b[0-?]*[ -/]*[@-~]?"                      # 8-bit CSI
                      r"|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x9c)?"  # 8-bit OSC, DCS, ...
                      r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]")               # any other control but \t and \n


def terminal_safe(text: Any) -> str:
    """Remote text made fit for a terminal: secrets masked, escape sequences and control characters dropped.

    Every printer of remote text (progress, task reasons, --diff, host blocks, the facts table) goes through
    this one function; newlines and tabs stay, a CRLF line end becomes a newline.
    """
    return _ESCAPES.sub("", scrub_text(str(text).replace("\r\n", "\n")))


def safe_value(value: Any) -> Any:
    """terminal_safe on every string inside a JSON-like value (a facts record for the table); keys too."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {terminal_safe(k) if isinstance(k, str) else k: safe_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [safe_value(item) for item in value]
    return value


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
            self.env.err_console.print(f"[dim]{markup_safe(host)}[/dim] {markup_safe(message)}")

    def error(self, message: str) -> None:
        self.env.err_console.print(f"[bold red]error:[/bold red] {markup_safe(message)}")

    def warn(self, message: str) -> None:
        self.env.err_console.print(f"[yellow]warning:[/yellow] {markup_safe(message)}")

    def print(self, *objects: Any) -> None:
        self.env.console.print(*objects)

    def host_block(self, name: str, status: str, body: str, style: str = "green") -> None:
        """Output grouped per host, under a rule naming the host and how it ended."""
        self.env.console.rule(f"[bold]{markup_safe(name)}[/bold] [{style}]{markup_safe(status)}[/{style}]", align="left")
        if body:
            self.env.console.print(markup_safe(body.rstrip("\n")))

    def json(self, hosts: dict[str, Any], outcomes: dict[str, Outcome], **extra: Any) -> None:
        """One document, secrets masked (the records on disk are; what is printed must be too). JSON escapes
        C0 controls itself; ensure_ascii escapes the C1 ones (U+009B is a CSI to many terminals)."""
        doc = json.loads(json.dumps(json_document(hosts, outcomes, **extra), default=str))
        self.env.console.print_json(data=scrub(doc), ensure_ascii=True)


def markup_safe(text: Any) -> str:
    """terminal_safe, then rich markup escaped: what every Reporter line prints."""
    return escape(terminal_safe(text))


def json_document(hosts: dict[str, Any], outcomes: dict[str, Outcome], **extra: Any) -> dict:
    """{"hosts": {...}, "stats": {NAME: {"remote_commands", "seconds"}}}: the shape of every --json output."""
    doc = {"hosts": hosts, "stats": {name: o.stats() for name, o in outcomes.items()}}
    doc.update(extra)
    return doc
