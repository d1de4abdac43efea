"""Shell completion through argcomplete (a well-kept library: bash, zsh and fish from one parser).

`fleet completion bash|zsh|fish` prints the shell's hook; the shell then runs fleet with _ARGCOMPLETE set, and
`complete(parser)` answers from the same argparse parser every command registers: subcommands, flags, choices,
and for --limit the inventory's host and group names (the INVENTORY already on the line, else $FLEET_INVENTORY).
Nothing is contacted and nothing is printed but the candidates.
"""

from __future__ import annotations

import argparse
import os


def hosts(prefix: str, parsed_args: argparse.Namespace, **_) -> list[str]:
    """--limit's candidates: host and group names of the inventory, after the last comma of what is typed."""
    from fleet.errors import FleetError
    from fleet.inventory import load_inventory

    from fleet.inventory.home import default_inventory

    path = getattr(parsed_args, "inventory", None) or default_inventory()
    try:
        inventory = load_inventory(path, keys_must_exist=False)
    except (FleetError, OSError):
        return []
    done, _, last = prefix.rpartition(",")
    head = f"{done}," if done else ""
    bang = "!" if last.startswith("!") else ""
    names = sorted(set(inventory.hosts) | set(inventory.groups))
    return [f"{head}{bang}{name}" for name in names if name.startswith(last.lstrip("!"))]


def _attach(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if "--limit" in action.option_strings:
            action.completer = hosts
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _attach(sub)


def complete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell and exit, when the shell asks (argcomplete's protocol); otherwise return at once."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    _attach(parser)
    argcomplete.autocomplete(parser)


def shellcode(shell: str) -> str:
    import argcomplete

    return argcomplete.shellcode(["fleet"], shell=shell)
