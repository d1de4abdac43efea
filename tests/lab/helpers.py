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


def fleet(*argv: str, width: int = 240, terminal: bool = False, cwd=None) -> tuple[int, str, str]:
    """`fleet ARGV` in this process, as a person at a `width`-column console sees it -> (exit status, stdout, stderr).

    stderr is read for its sentences: it never wraps (soft_wrap), so a message naming a path of the checkout (the
    built-in roles' directory) reads the same from a clone under any path; stdout wraps at `width` as a terminal's
    would (what the output budget tests measure)."""
    from rich.console import Console

    from fleet.cli import main
    from fleet.env import Environment

    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=width, force_terminal=terminal or None, color_system=None),
                      err_console=Console(file=err, width=width, color_system=None, soft_wrap=True),
                      **({"cwd": cwd} if cwd is not None else {}))
    code = main(list(argv), env)
    return code, out.getvalue(), err.getvalue()


def fleet_json(*argv: str) -> tuple[int, dict]:
    """`fleet ARGV --json` in this process -> (exit status, the JSON it printed)."""
    argv = list(argv)
    argv.insert(argv.index("--") if "--" in argv else len(argv), "--json")  # fleet's flags go before --
    code, out, err = fleet(*argv)
    try:
        return code, json.loads(out)
    except ValueError:
        raise AssertionError(f"not JSON (exit {code}):\n{out}\n{err}") from None


def logged_documents(path) -> dict:
    """{"hosts": {NAME: document}, "stats": {NAME: stats}} of the run fleet logged to `path` (`--log FILE`): each
    host's line of the run log, as `--json` would have printed that host (fleet.record.runlog keeps the same
    fields, plus the host's name and status)."""
    from fleet.record import runlog

    hosts, stats = {}, {}
    for line in runlog.read(path)[1:]:
        name = line.pop("host")
        line.pop("status")
        stats[name] = line.pop("stats")
        hosts[name] = line
    return {"hosts": hosts, "stats": stats}


def pods_inventory_text(lab, header: str = "# pods\n", **extra_vars) -> str:
    """A person's inventory of pods with the lab's variables (its mirror, the keyring digests `fleet lab up` writes)
    and its thor, with comments: no pod in it yet."""
    import yaml

    doc = yaml.safe_load(lab.inventory_path.read_text())
    thor = doc["hosts"]["thor"]
    # the lab's keyring digests: the lab answers NVIDIA's keyring URL with its own .deb, which fleet's pin for the
    # real one refuses (test_keyring_pin_lab.py)
    return (header + f"keyring_pins: {doc['keyring_pins']}\n"
            + yaml.safe_dump({"vars": {**doc["vars"], **extra_vars}}, sort_keys=False)
            + f"hosts:\n  thor:            # not touched by the test\n    address: {thor['address']}\n"
              "    lab: {profile: thor}\n\n# groups come after the hosts\ngroups:\n  jetsons: [thor]\n")
