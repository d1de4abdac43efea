"""`fleet hosts INVENTORY`: the inventory's hosts, where they are reached and their roles; nothing contacted."""

from __future__ import annotations

import argparse

from fleet.commands import _common

HELP = "list the inventory's hosts, how each is reached and its roles (offline)"
DESCRIPTION = """\
List the selected hosts of an inventory: name, how fleet reaches it (user@address:port, or local), its groups
and its roles in order. The inventory is checked as `fleet validate` checks it; no host is contacted.

  fleet hosts inventories/pods.yaml
  fleet hosts inventories/fleet.yaml --limit 'pod-*'
"""


def register(subparsers) -> None:
    _common.command(subparsers, "hosts", HELP, DESCRIPTION, _common.add_inventory, _common.add_json, func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    from fleet.errors import ExitStatus
    from fleet.report.inventory import print_hosts

    _inventory, hosts, by_host = _common.checked_hosts(args)
    print_hosts(reporter_for(env), hosts, by_host, json_out=args.json)
    return ExitStatus.OK
