"""--color auto|always|never (and NO_COLOR) on every command, before or after the subcommand."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

ESC = "\x1b["


def run(argv, *, terminal: bool, monkeypatch=None, no_color: bool = False):
    out, err = io.StringIO(), io.StringIO()
    if monkeypatch is not None:
        (monkeypatch.setenv if no_color else monkeypatch.delenv)("NO_COLOR", *(["1"] if no_color else []),
                                                                **({} if no_color else {"raising": False}))
    env = Environment(console=Console(file=out, force_terminal=terminal, width=120),
                      err_console=Console(file=err, force_terminal=terminal, width=120))
    code = main(argv, env)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("mode, terminal, colored", [
    ("never", True, False), ("always", False, True), ("auto", True, True), ("auto", False, False)])
def test_color_modes_on_an_error(tmp_path, monkeypatch, where, mode, terminal, colored):
    missing = str(tmp_path / "nowhere.yaml")
    argv = ["--color", mode, "apply", missing] if where == "before" else ["apply", missing, "--color", mode]
    code, out, err = run(argv, terminal=terminal, monkeypatch=monkeypatch)
    assert code == 2 and "nowhere.yaml" in err
    assert (ESC in err) is colored, repr(err)


def test_no_color_is_honoured_and_always_wins_over_it(tmp_path, monkeypatch):
    missing = str(tmp_path / "nowhere.yaml")
    code, _, err = run(["apply", missing], terminal=True, monkeypatch=monkeypatch, no_color=True)
    assert code == 2 and "31m" not in err and "\x1b[1merror:" in err            # no red, bold kept: NO_COLOR
    code, _, err = run(["--color", "always", "apply", missing], terminal=False, monkeypatch=monkeypatch, no_color=True)
    assert code == 2 and "\x1b[1;31merror:" in err


def test_a_bad_color_is_bad_input(tmp_path):
    code, _, _ = run(["--color", "sometimes", "facts"], terminal=False)
    assert code == 2
