"""Capture: the bounded sink every connection writes a command's output into.

A hostile or broken host can print without end: keep at most MAX_CAPTURE characters of each stream (its head and
its last TAIL characters, where the section end markers are), with a marker saying what was dropped.
"""

from __future__ import annotations

from typing import Callable

OutputCallback = Callable[[str], None]
MAX_CAPTURE = 16 << 20
TAIL = 1 << 20
TRUNCATED = "\n[fleet: output truncated: {n} characters dropped]\n"


class Capture:
    """A bounded, linear-time sink for one output stream: chunks in, text out (head + marker + tail when over
    MAX_CAPTURE). With `on_line`, each complete line (at most MAX_LINE characters of it) is handed over as it
    arrives; a stream without newlines costs no more than one with them."""

    MAX_LINE = 64 << 10

    def __init__(self, on_line: OutputCallback | None = None, limit: int = MAX_CAPTURE, tail: int = TAIL):
        self.on_line, self.limit, self.tail_size = on_line, limit, tail
        self.head: list[str] = []
        self.head_len = 0
        self.tail: list[str] = []
        self.tail_len = 0
        self.dropped = 0
        self.line: list[str] = []
        self.line_len = 0

    def write(self, data: str) -> None:
        if not data:
            return
        if self.on_line:
            self._lines(data)
        room = self.limit - self.tail_size - self.head_len
        if room > 0 and not self.dropped:
            self.head.append(data[:room])
            self.head_len += min(len(data), room)
            data = data[room:]
        if data:
            self._keep_tail(data)

    def _keep_tail(self, data: str) -> None:
        self.tail.append(data)
        self.tail_len += len(data)
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_size:
            first = self.tail.pop(0)
            self.tail_len -= len(first)
            self.dropped += len(first)
        if self.tail_len > 2 * self.tail_size:   # one huge chunk: cut it
            joined = "".join(self.tail)
            self.dropped += len(joined) - self.tail_size
            self.tail, self.tail_len = [joined[-self.tail_size:]], self.tail_size

    def _lines(self, data: str) -> None:
        *complete, rest = data.split("\n")
        for piece in complete:
            self._add_to_line(piece)
            self.on_line("".join(self.line))
            self.line, self.line_len = [], 0
        self._add_to_line(rest)

    def _add_to_line(self, piece: str) -> None:
        if self.line_len < self.MAX_LINE and piece:
            piece = piece[:self.MAX_LINE - self.line_len]
            self.line.append(piece)
            self.line_len += len(piece)

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        """Hand over a last line that had no newline."""
        if self.on_line and self.line:
            self.on_line("".join(self.line))
        self.line, self.line_len = [], 0

    def text(self) -> str:
        tail = "".join(self.tail)
        if not self.dropped:
            return "".join(self.head) + tail
        cut = max(0, len(tail) - self.tail_size)   # the tail holds up to one chunk more than it keeps
        return "".join(self.head) + TRUNCATED.format(n=self.dropped + cut) + tail[cut:]
