"""What the reliability tests share: a CLI run with captured consoles, and the hostile strings."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

# A hostile pod's text: retitle the window (OSC 0), write the clipboard (OSC 52), erase and move up to hide a
# line (CSI 2K, CSI 1A), an 8-bit CSI, a DCS string, a carriage return that overwrites what came before.
HOSTILE = ("NVIDIA H100\x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x1b\\\x1b[2K\x1b[1A\x9b31m\x1bP1$r\x1b\\\rrover"
           "\u202edeliaf\u202c\u2066\u200b\u061c")
# C0/C1 controls, and the bidirectional and invisible format characters (U+202E reads "failed" backwards)
CONTROLS = ("\x1b", "\x07", "\x9b", "\x9c", "\x9d", "\r", "\x08", "\u202e", "\u202c", "\u2066", "\u200b", "\u061c")
TOKEN = "hf_abcdefghijklmnopqrstuvwxyz0123"


def run(argv: list[str], cwd: Path | None = None, *, terminal: bool = False) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `fleet ARGV`; with terminal=True rich writes styles as a terminal."""
    out, err = io.StringIO(), io.StringIO()
    kw = {"force_terminal": True, "color_system": "standard"} if terminal else {"color_system": None}
    env = Environment(console=Console(file=out, width=200, soft_wrap=True, **kw),
                      err_console=Console(file=err, width=200, **kw), cwd=cwd or Path.cwd())
    code = main(argv, env)
    return code, out.getvalue(), err.getvalue()


def assert_clean(text: str) -> None:
    """No control character from remote text (rich writes none itself unless it is a terminal)."""
    found = [c for c in CONTROLS if c in text]
    assert not found, f"control characters {found!r} reached the output:\n{text!r}"
    assert "pwned" not in text and "ZXZpbA==" not in text and TOKEN not in text
