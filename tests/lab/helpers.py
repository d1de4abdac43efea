"""Small helpers shared by the lab's own tests."""

from __future__ import annotations

import io
import json


def sh(lab, host: str, script: str, sudo: bool = False):
    """Run `script` on a lab host through fleet's own SSH connection; returns the Result."""
    with lab.connect(host) as conn:
        return conn.run(script, sudo=sudo)


def ok(lab, host: str, script: str, sudo: bool = False) -> str:
    res = sh(lab, host, script, sudo=sudo)
    assert res.exit == 0, f"{host}: exit {res.exit}\n{res.stdout}\n{res.stderr}"
    return res.stdout


def fleet_json(*argv: str) -> tuple[int, dict]:
    """`fleet ARGV --json` in this process -> (exit status, the JSON it printed)."""
    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment

    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=240), err_console=Console(file=err, width=240))
    code = main([*argv, "--json"], env)
    try:
        return code, json.loads(out.getvalue())
    except ValueError:
        raise AssertionError(f"not JSON (exit {code}):\n{out.getvalue()}\n{err.getvalue()}") from None
