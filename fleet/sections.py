"""One remote command made of many named sections, and the parser of its output.

Round trips are the cost, so a probe (facts and every task's check) is a single script. Each section runs in
its own subshell, so one failing section never stops the others, and frames its output with markers that
carry its exit status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BEGIN = "@@fleet:begin {name}@@"
_END_RE = re.compile(r"^@@fleet:end (?P<name>\S+) (?P<rc>-?\d+)@@$")
_BEGIN_RE = re.compile(r"^@@fleet:begin (?P<name>\S+)@@$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")


@dataclass(frozen=True)
class Section:
    name: str
    rc: int
    output: str


def section(name: str, body: str, *, stop_on_failure: bool = False) -> str:
    """Shell that runs `body` in a subshell with stderr folded into stdout, framed by markers.

    With stop_on_failure the whole script ends after a failing section (later tasks depend on earlier ones).
    """
    if not _NAME_RE.match(name):
        raise ValueError(f"section name {name!r} must be letters, digits and . _ : -")
    stop = "[ \"$fleet_rc\" -eq 0 ] || exit \"$fleet_rc\"\n" if stop_on_failure else ""
    return (
        f"printf '\\n{_BEGIN.format(name=name)}\\n'\n"
        # ':' first: an empty body (or one of only comments) would be a syntax error ending the whole script.
        f"( :; {body}\n) 2>&1 </dev/null\n"
        "fleet_rc=$?\n"
        f"printf '\\n@@fleet:end {name} %d@@\\n' \"$fleet_rc\"\n"
        f"{stop}"
    )


def script(sections: list[str], preamble: str = "") -> str:
    # A preamble without a final newline would run into the first section's printf.
    return (preamble.rstrip("\n") + "\n" if preamble else "") + "\n".join(sections)


def split_sections(stdout: str) -> dict[str, Section]:
    """Parse framed output; a section whose end marker is missing (a dropped connection) gets rc -1."""
    found: dict[str, Section] = {}
    current: str | None = None
    lines: list[str] = []
    for line in stdout.split("\n"):
        begin = _BEGIN_RE.match(line)
        end = _END_RE.match(line)
        if begin:
            if current is not None:
                found[current] = Section(current, -1, _join(lines))
            current, lines = begin["name"], []
        elif end and end["name"] == current:
            found[current] = Section(current, int(end["rc"]), _join(lines))
            current, lines = None, []
        elif current is not None:
            lines.append(line)
    if current is not None:
        found[current] = Section(current, -1, _join(lines))
    return found


def _join(lines: list[str]) -> str:
    # The begin marker is preceded by a newline and the end marker too: drop the one we added.
    text = "\n".join(lines)
    return text[:-1] if text.endswith("\n") else text
