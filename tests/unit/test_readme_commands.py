"""The README's two first commands stay true: the test command is what CI runs (.ci/run), and both run in a root
shell as written: no `sudo`, which fresh containers and CI images lack (sudo also drops FLEET_LAB_ROOT)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def commands_after(marker: str) -> str:
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(marker))
    return next(line.strip() for line in lines[start:] if line.startswith("    ") and line.strip())


def test_the_readme_test_command_is_what_ci_runs():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd ", "exec "))]
    assert ci == [commands_after("Set up and run the tests")]


def test_the_first_commands_need_no_sudo():
    for marker in ("Rehearse on the lab", "Set up and run the tests"):
        command = commands_after(marker)
        assert command.startswith("./scripts/setup.sh && .venv/bin/") and "sudo" not in command, command
    assert commands_after("Rehearse on the lab").endswith("fleet lab up && .venv/bin/fleet apply inventories/lab.yaml")
