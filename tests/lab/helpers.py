"""Small helpers shared by the lab's own tests."""

from __future__ import annotations


def sh(lab, host: str, script: str, sudo: bool = False):
    """Run `script` on a lab host through fleet's own SSH connection; returns the Result."""
    with lab.connect(host) as conn:
        return conn.run(script, sudo=sudo)


def ok(lab, host: str, script: str, sudo: bool = False) -> str:
    res = sh(lab, host, script, sudo=sudo)
    assert res.exit == 0, f"{host}: exit {res.exit}\n{res.stdout}\n{res.stderr}"
    return res.stdout
