"""`fleet facts` run as a person at a terminal runs it, its output captured."""

import io

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment


def fleet_facts(tmp_path, *argv, width=200):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=width, color_system=None, soft_wrap=True,
                                      force_terminal=True),
                      err_console=Console(file=err, width=200, color_system=None, soft_wrap=True), cwd=tmp_path)
    code = main(["facts", *map(str, argv)], env)
    return code, out.getvalue(), err.getvalue()
