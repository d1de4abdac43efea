"""The environment a command runs in, injected so tests can capture exactly what a person sees."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console


@dataclass
class Environment:
    console: Console = field(default_factory=lambda: Console(highlight=False, soft_wrap=True))
    err_console: Console = field(default_factory=lambda: Console(stderr=True, highlight=False, soft_wrap=True))
    cwd: Path = field(default_factory=Path.cwd)
    debug: bool = False
    quiet: bool = False                   # -q: no progress lines on stderr (set by fleet.cli, as debug is)
    verbose: int = 0                      # -v/-vv: more detail

    def home(self) -> Path:
        return Path(os.path.expanduser("~"))
