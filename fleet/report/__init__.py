"""What a person sees: per-host output, progress lines, recap tables and JSON documents.

Everything prints through the injected consoles (fleet.env.Environment) so tests capture exactly what a person
sees. Progress goes to stderr, so `--json` on stdout stays one clean document.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from fleet import parse
from fleet.env import Environment
from fleet.facts.scrub import scrub, scrub_text
from fleet.jsontext import finite
from fleet.connection.parallel import Outcome

# What a hostile host could make the operator's terminal do: retitle the window, hide a HOST KEY CHANGED
# line, write the clipboard (OSC 52). ECMA-48: CSI (ESC [ ... final byte), OSC/DCS/PM/APC/SOS strings (ESC ]
# P ^ _ X ... ended by BEL or ESC \), single ESC sequences, the 8-bit C1 forms (U+0080-U+009F), and the other
# C0 controls (CR overwrites a line, BS rubs characters out), and the bidirectional and invisible format characters
# (U+202A-U+202E, U+2066-U+2069, U+200B-U+200F, U+061C, ...). Newlines and tabs are text and stay.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?"                    # CSI
                      r"|\x1b[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS, SOS, PM, APC
                      r"|\x1b[ -/]*[0-~]?"                             # other ESC sequences (and a lone ESC)
                      r"|\x9b[0-?]*[ -/]*[@-~]?"                      # 8-bit CSI
                      r"|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x9c)?"  # 8-bit OSC, DCS, ...
                      r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"                # any other control but \t and \n
                      # what reorders or hides text without a control byte (Unicode's Bidi_Control and Default_
                      # Ignorable format characters, as CVE-2021-42574 "Trojan Source" lists them): U+202E makes
                      # "verify failed" read backwards; zero-width ones hide or join words
                      r"|[\u061c\u00ad\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]")


def terminal_safe(text: Any) -> str:
    """Remote text made fit for a terminal: secrets masked, escape sequences, control characters and bidirectional or
    invisible format characters dropped.

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
    def __init__(self, env: Environment, *, quiet: bool | None = None, verbose: int | None = None):
        """-q and -v as the environment has them (fleet.cli sets them once), unless given here."""
        self.env = env
        self.quiet = env.quiet if quiet is None else quiet
        self.verbose = 0 if self.quiet else (env.verbose if verbose is None else verbose)
        self._lock = threading.Lock()
        self.steps: dict[str, list[str]] = {}   # per host, the steps announced so far (the partial recap)
        self.running: dict[str, list] = {}      # per host in a step: [the step, when it began, when last heard]
        self.latest: dict[str, str] = {}        # per host in a step: the step's latest output line (live display)
        self.tasks: dict[str, dict[str, float]] = {}   # per host, the apply tasks in flight: line -> when begun
        self.ledger: dict[str, dict[str, str]] = {}    # per host, each apply task -> what the host last said of it
        self._live = None                       # the live display's console while it runs (fleet/report/live.py)

    @property
    def _err(self):
        """Where stderr lines go: the live display's console while it runs (printed above its status lines),
        else the stderr console."""
        return self._live or self.env.err_console

    def progress(self, host: str, message: str) -> None:
        """One line of progress for a long step; safe from many host threads at once."""
        now = time.monotonic()
        safe = terminal_safe(message)   # once: each is a scrub and a filter of the text
        with self._lock:
            if not message.startswith(" "):   # indented lines are a step's own output, not a step
                if safe not in self.tasks.get(host, {}):
                    self.tasks.pop(host, None)   # a step of another kind: the apply's tasks are over
                self.steps.setdefault(host, []).append(safe)
                self.running[host] = [safe, now, now]
                self.latest.pop(host, None)
            elif host in self.running:
                self.running[host][2] = now
                if self._live is not None:     # the live status line shows it: not a line of its own
                    self.latest[host] = terminal_safe(last_frame(message)).strip()
                    return
            if not self.quiet:
                line = f"[dim]{markup_safe(host)}[/dim] {escape(safe)}"
                if not write_plain(self._err, line):
                    self._err.print(line)

    def host_key(self, message: str) -> None:
        """A host key trusted for the first time (--accept-new-host-keys): its fingerprint, as progress."""
        self.progress("host key", message)

    def on_task(self, host: str, event: str, line: str) -> None:
        """What the host said of an apply task (engine.apply's on_task: planned, begin, done, in state, failed,
        not run). The live display names the ones in flight, since independent chains run at once (the last step
        announced is not the only one running); an interrupted run's summary says which had ended."""
        line = terminal_safe(line)
        with self._lock:
            self.ledger.setdefault(host, {})[line] = event
            if event == "begin":
                self.tasks.setdefault(host, {})[line] = time.monotonic()
            elif event != "planned":
                self.tasks.get(host, {}).pop(line, None)

    def finished(self, host: str) -> None:
        """The host's run ended: no more heartbeats for it."""
        with self._lock:
            self.running.pop(host, None)
            self.latest.pop(host, None)
            self.tasks.pop(host, None)

    def heartbeat(self, every: float | None = None, *, live: bool = False):
        """While the block runs, a host whose step has printed nothing for `every` seconds gets a line saying
        the step still runs and for how long (the torch download, apt), again every `every` seconds of quiet.
        With `live` where stdout and stderr are both a terminal: Rich's live display instead, one status line
        per running host with its step and elapsed time (fleet/report/live.py)."""
        every = every or parse.from_env("FLEET_HEARTBEAT", parse.seconds, HEARTBEAT, least=1)
        if live and self.live_ok:
            from fleet.report.live import LiveStatus
            return LiveStatus(self, every)
        return _Heartbeat(self, every)

    @property
    def live_ok(self) -> bool:
        """A person watches: stdout and stderr are one interactive terminal (not a pipe, a file, TERM=dumb)."""
        return not self.quiet and self.env.console.is_interactive and self.env.err_console.is_terminal

    def _beat(self, every: float) -> None:
        now = time.monotonic()
        with self._lock:
            if self._live is not None:   # the live status line says it
                return
            due = [(host, state) for host, state in self.running.items() if now - state[2] >= every]
            for host, state in due:
                state[2] = now
                if not self.quiet:   # one line, never wrapped into two: the step cut to fit
                    step = state[0] if len(state[0]) <= 72 else state[0][:71] + "…"
                    self._err.print(f"[dim]{markup_safe(host)}[/dim] {markup_safe(step)}: still "
                                    f"running, {_elapsed(now - state[1])}", soft_wrap=True)

    def partial(self, outcome: Outcome) -> str:
        """What an interrupted host had done: 'not started', or the step it was in (steps come one after the other:
        the ones before it had ended)."""
        if not outcome.started:
            return "not started: the run was interrupted while it was queued"
        steps = list(self.steps.get(outcome.host, []))
        if not steps:
            n = outcome.remote_commands
            return f"interrupted during remote command {n}" if n else "interrupted while connecting"
        before = f"after {'; '.join(steps[:-1])}; " if len(steps) > 1 else ""
        return f"interrupted; {before}cut short: {steps[-1]}"

    def error(self, message: str) -> None:
        self._err.print(f"[bold red]error:[/bold red] {markup_safe(message)}")

    def note(self, message: str) -> None:
        """Commentary about the output (what was written, what was folded): stderr, so a pipe gets data only."""
        self._err.print(f"[dim]{message}[/dim]", soft_wrap=True)

    def warn(self, message: str) -> None:
        self._err.print(f"[yellow]warning:[/yellow] {markup_safe(message)}")

    @property
    def plain(self) -> bool:
        """stdout is a pipe or a file: no tables drawn to a width, no rules, no padding (see plain_table)."""
        return not self.env.console.is_terminal

    def print(self, *objects: Any) -> None:
        if not self.plain:
            self.env.console.print(*objects)
            return
        for obj in objects:
            if isinstance(obj, Table):   # raw: rich would expand the tabs into padding
                self.env.console.file.write(plain_table(obj) + "\n")
                self.env.console.file.flush()
                if obj.caption:          # commentary ("72 identical facts folded"), not data: not in the pipe
                    self.note(str(obj.caption))
            else:
                self.env.console.print(obj, soft_wrap=True)

    def rule(self, title: str) -> None:
        """A heading line: a full-width rule on a terminal, '== title' elsewhere."""
        if self.plain:
            self.env.console.print(f"== {title}", soft_wrap=True)
        else:
            self.env.console.rule(title, align="left")

    def stream_line(self, host: str, line: str, *, stderr: bool = False) -> None:
        """One line of a host's output as it arrives (`fleet run`): `host: line` on stdout, `host stderr: line` on
        stderr; a line redrawn with carriage returns (a progress bar) shows its last state."""
        text = markup_safe(last_frame(line))
        with self._lock:
            if stderr:
                self._err.print(f"[dim]{markup_safe(host)} stderr:[/dim] {text}", soft_wrap=True)
            else:
                self.env.console.print(f"[dim]{markup_safe(host)}:[/dim] {text}", soft_wrap=True)

    def host_status(self, host: str, status: str, style: str = "green") -> None:
        """How a host's command ended, one line on stderr (commentary: the data went to stdout)."""
        self._err.print(f"[bold]{markup_safe(host)}[/bold] [{style}]{markup_safe(status)}[/{style}]",
                                   soft_wrap=True)

    def host_block(self, name: str, status: str, body: str, style: str = "green") -> None:
        """Output grouped per host, under a rule naming the host and how it ended."""
        self.rule(f"[bold]{markup_safe(name)}[/bold] [{style}]{markup_safe(status)}[/{style}]")
        if body:
            self.env.console.print(markup_safe(body.rstrip("\n")), soft_wrap=True)

    def draw(self, block: list[tuple]) -> None:
        """Print a block a printer made (fleet/report/apply.py: host_lines, apply_block), entry by entry:
        ("line", markup) a line, wrapped where the terminal is narrower; ("cut", markup) one line cut to fit the
        terminal; ("diff", remote text) made terminal-safe, highlighted on a terminal; ("block", name, status, body,
        style) a host_block; ("table", table) as print prints it; ("note", text) and ("warn", text) on stderr."""
        console = self.env.console
        for kind, *what in block:
            if kind == "line":
                if not write_plain(console, what[0]):
                    console.print(what[0], soft_wrap=True)
            elif kind == "cut":
                console.print(what[0], no_wrap=True, overflow="ellipsis", soft_wrap=False)
            elif kind == "diff" and self.plain:
                console.print(terminal_safe(what[0]).rstrip("\n"), markup=False, soft_wrap=True)
            elif kind == "diff":
                from rich.syntax import Syntax

                console.print(Syntax(terminal_safe(what[0]), "diff", theme="ansi_dark", background_color="default"))
            elif kind == "block":
                self.host_block(*what)
            elif kind == "table":
                self.print(*what)
            elif kind == "note":
                self.note(*what)
            elif kind == "warn":
                self.warn(*what)
            else:
                raise ValueError(f"unknown kind of printed entry {kind!r}")

    def json(self, hosts: dict[str, Any], outcomes: dict[str, Outcome], **extra: Any) -> None:
        """One document, secrets masked (the records on disk are; what is printed must be too). JSON escapes
        C0 controls itself; ensure_ascii escapes the C1 ones (U+009B is a CSI to many terminals)."""
        doc = json_document(hosts, outcomes, **extra)
        # one host's NaN never makes the fleet's document invalid JSON (issue 49): null, and allow_nan=False
        doc = finite(json.loads(json.dumps(doc, default=str)))
        self.env.console.print_json(data=scrub(doc), ensure_ascii=True, allow_nan=False)


def reporter_for(env: Environment) -> Reporter:
    """The Reporter of this run: -q (no progress lines) and -v/-vv (more detail) as fleet.cli set them on the
    environment, once for every command."""
    return Reporter(env)


# Seconds of quiet before a step's heartbeat line: long enough that a pipe (a CI log) is not flooded, short
# enough that a person watching a 3 GB download knows it is alive. FLEET_HEARTBEAT overrides it.
HEARTBEAT = 30.0


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class _Heartbeat:
    def __init__(self, reporter: "Reporter", every: float):
        self.reporter = reporter
        self.every = every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="fleet-heartbeat", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(min(1.0, self.every / 2)):
            self.reporter._beat(self.every)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def last_frame(line: str) -> str:
    """What a terminal would show of a line redrawn with carriage returns (apt's and pip's progress): the text
    after the last one (a trailing one, as in CRLF, ignored)."""
    body = line.rstrip("\r")
    return body.rsplit("\r", 1)[-1] if "\r" in body else body


def write_plain(console, markup: str) -> bool:
    """One line of markup written as rich writes it to a pipe or a file without colour (the markup taken out, emoji
    codes replaced, then a newline), without rich's rendering: a line a host at 1,000 hosts costs ~0.3 ms less of the
    controller's CPU that way (issue 46). False, nothing written, where rich must print it: a terminal, colour
    forced, a live display, a tab (rich expands it into spaces)."""
    if console.is_terminal or console.color_system is not None or console.record or console.is_dumb_terminal:
        return False
    text = Text.from_markup(markup).plain
    if "\t" in text:
        return False
    if not console.quiet:
        console.file.write(text + "\n")
        console.file.flush()
    return True


def markup_safe(text: Any) -> str:
    """terminal_safe, then rich markup escaped: what every Reporter line prints."""
    return escape(terminal_safe(text))


def plain_table(table: Table) -> str:
    """A table for a pipe or a file: title, then one line per row with cells separated by a tab; no
    padding, no borders, no wrapping (a URL, a path or a fact name stays whole, and awk/cut read it). Its caption
    is commentary: Reporter.print sends it to stderr."""
    lines = [_plain(table.title)] if table.title else []
    header = "\t".join(_plain(column.header) for column in table.columns)
    if table.show_header and header.strip():   # a grid (no header, or only empty ones) has no header row
        lines.append(header)
    for row in zip(*(list(column.cells) for column in table.columns)):
        lines.append("\t".join(_plain(cell) for cell in row))
    return "\n".join(line.rstrip(" ") for line in lines)   # an empty last cell keeps its tab


def _plain(cell: Any) -> str:
    if isinstance(cell, str) and "[" not in cell and ":" not in cell:
        text = cell   # what Text.from_markup gives for it (no tag, no :emoji: code), without its ~80 µs a cell
    else:
        text = cell.plain if isinstance(cell, Text) else Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)
    return " ".join(text.replace("\t", " ").split("\n")).strip()


# The --json document's shape, raised when a key changes meaning or goes (new keys do not raise it): a script
# checks it before it reads the rest.
JSON_FORMAT = 1


def json_document(hosts: dict[str, Any], outcomes: dict[str, Outcome], **extra: Any) -> dict:
    """{"format": 1, "hosts": {...}, "stats": {NAME: {"remote_commands", "seconds"}}}: the shape of every --json
    output."""
    doc = {"format": JSON_FORMAT, "hosts": hosts, "stats": {name: o.stats() for name, o in outcomes.items()}}
    doc.update(extra)
    return doc
