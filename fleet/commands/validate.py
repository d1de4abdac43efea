"""`fleet validate INVENTORY`: every check apply makes before it contacts a host, and nothing else."""

from __future__ import annotations

import argparse

from fleet.commands import _common

HELP = "check an inventory, its roles and variables without contacting any host"
DESCRIPTION = """\
Check an inventory as `fleet apply` checks it before it contacts anyone: the YAML, every host's fields and
variables (names, types, did-you-mean), each host's roles (they load, their templates parse, every name they
read is given), the order of their tasks, and --set values. Exit 0 when all is well, 2 with file:line and a fix
when not. No host is contacted.

  fleet validate inventories/pods.yaml
  fleet validate inventories/pods.yaml --set torch_version=2.11.0
"""


def register(subparsers) -> None:
    _common.command(subparsers, "validate", HELP, DESCRIPTION, _common.add_inventory, _common.add_set, func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    from fleet.errors import ExitStatus
    from fleet.report.inventory import print_valid

    _inventory, hosts, by_host = _common.checked_hosts(args)
    print_valid(reporter_for(env), args.inventory, hosts, by_host)
    return ExitStatus.OK
