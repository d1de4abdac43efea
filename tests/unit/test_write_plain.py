"""Reporter lines to a pipe or a file skip rich's rendering (fleet.report.write_plain, issue 46): what they write
must be byte for byte what rich's console.print writes there, and rich must still print what only it can."""

import io

import pytest
from rich.console import Console

from fleet.report import markup_safe, write_plain

LINES = [
    "[dim]h0001[/dim] probe: facts and checks",
    "[bold]h\\[x][/bold]: ok=3 changed=0 :thumbs_up: done",
    "  [yellow]changed[/] role: task [dim]— why: a \\[b] c[/dim]",
    "plain ünïcode → ✓ 中文 e\u0301",
    "trailing spaces   ",
    markup_safe("[red]not markup[/red] :smile: 100% [/] \\ [link=x]y[/link]"),
    markup_safe("a line " * 60),                      # longer than any terminal: soft wrap keeps it one line
    "",
]


def _rich(line: str) -> str:
    out = io.StringIO()
    Console(file=out, highlight=False, soft_wrap=True).print(line, soft_wrap=True)
    return out.getvalue()


@pytest.mark.parametrize("line", LINES)
def test_a_line_to_a_pipe_is_what_rich_writes_there(line):
    out = io.StringIO()
    assert write_plain(Console(file=out, highlight=False, soft_wrap=True), line)
    assert out.getvalue() == _rich(line)


def test_rich_prints_what_only_it_can(monkeypatch):
    out = io.StringIO()
    tabbed = "name\tvalue"                               # rich expands a tab into spaces
    assert not write_plain(Console(file=out, highlight=False, soft_wrap=True), tabbed)
    coloured = Console(file=out, highlight=False, soft_wrap=True, force_terminal=True, color_system="standard")
    assert not write_plain(coloured, "[bold]x[/bold]")
    assert not write_plain(Console(file=out, highlight=False, record=True), "x")
    assert out.getvalue() == ""                           # nothing written where it declined
    quiet = Console(file=out, highlight=False, quiet=True)
    assert write_plain(quiet, "x") and out.getvalue() == ""
