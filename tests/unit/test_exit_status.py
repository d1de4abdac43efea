"""Exit statuses: one meaning per number (issue 38), documented where a user looks (--help, the README)."""

from __future__ import annotations

from pathlib import Path

from fleet.cli import EPILOG
from fleet.errors import ExitStatus

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_exit_status_has_its_own_number():
    values = [member.value for member in ExitStatus.__members__.values()]
    assert len(values) == len(set(values)), ExitStatus.__members__    # no alias: CHANGES_PENDING was BAD_INPUT's
    assert ExitStatus.CHANGES_PENDING != ExitStatus.BAD_INPUT


def test_help_and_readme_say_what_each_number_means():
    readme = README.read_text()
    for status in ExitStatus:
        if status in (ExitStatus.OK, ExitStatus.INTERRUPTED):
            continue
        assert f"{int(status)} " in EPILOG, status
    assert "4 changes pending" in EPILOG and "2 bad input" in EPILOG
    assert "exits 4 when changes are pending" in readme and "2 bad input" in readme
