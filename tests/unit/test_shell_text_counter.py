"""bench/shell_text.py, the count of shell text left in Python string literals (issue 44): what it counts as shell
and what it leaves out as text for people, each rule held by a literal that would be misjudged without it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import shell_text  # noqa: E402


def counted(source: str) -> list[int]:
    return [first for first, _, _ in shell_text.literals(source)]


def test_shell_programs_are_counted():
    source = ('A = "fleet_x() {\\n  local u=$1\\n}"\n'
              'B = "ls 2>/dev/null"\n'
              'C = f"tr -d x < {p} | awk 1"\n'
              'D = "  local fleet_r"\n')
    assert counted(source) == [1, 2, 3, 4]


def test_text_for_people_is_not_counted():
    source = ('import argparse, re\n'
              'DESCRIPTION = """run `fleet lab up && fleet apply` with $FLEET_INVENTORY"""\n'
              'p = argparse.ArgumentParser(epilog="uses $FLEET_INVENTORY")\n'
              'p.add_argument("--x", help="default: $FLEET_STORE")\n'
              'def f(path):\n'
              '    raise ValueError(f"{path} holds no line; see $FLEET_LAB_ROOT")\n'
              'J = re.compile(r"(?P<v6>[0-9]+)$")\n'
              'H = "<h1>fleet facts</h1>"\n'
              'M = "| variable | type | default |"\n'
              'L = "comes from a local installer, which fleet does not install"\n')
    assert counted(source) == []


def test_a_shell_line_in_a_message_keyword_elsewhere_is_still_counted():
    """Only the keywords named leave a literal out: a body given as another argument is a program."""
    assert counted('run(body="set -e; cd / && make")\n') == [1]
