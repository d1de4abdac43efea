"""`fleet forget NAME...`: a pod that is gone, out of the inventory, its facts and fleet's known_hosts."""

from __future__ import annotations

import argparse

HELP = "forget hosts that are gone (a pod bootstrap added): inventory entry, facts, host key"
DESCRIPTION = """\
Take each NAME out of the inventory (its entry only: every other line and comment is kept), delete its facts
record and the previous one, and drop its host key from fleet's own known_hosts file (never ~/.ssh/known_hosts;
kept where another host of this inventory or of another known one uses the same address and port). The
inventory is the one bootstrap adds pods to unless --inventory names another ($FLEET_INVENTORY, else
~/.config/fleet/pods.yaml). Nothing is contacted: the pod may be gone. --dry-run says what would go.

  fleet forget pod-10-17322
  fleet forget pod-a pod-b --inventory team-pods.yaml --dry-run
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("forget", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="+", metavar="NAME", help="host names in the inventory")
    parser.add_argument("--inventory", default=None, metavar="FILE",
                        help="the inventory (default: $FLEET_INVENTORY, else ~/.config/fleet/pods.yaml, where "
                             "fleet bootstrap adds pods)")
    parser.add_argument("--known-hosts", default=None, metavar="FILE",
                        help="fleet's known_hosts file (default: ~/.config/fleet/known_hosts)")
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed; change nothing")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    import os
    from pathlib import Path

    from fleet.connection import ConnectOptions
    from fleet.errors import InputError
    from fleet.workflows.forget import forget

    from fleet.inventory.home import default_inventory

    path = Path(os.path.expanduser(args.inventory)) if args.inventory else default_inventory(env.cwd)
    if not path.is_file():
        raise InputError(f"inventory {path} not found; name it with --inventory FILE")
    known = Path(args.known_hosts) if args.known_hosts else ConnectOptions().fleet_known_hosts()
    if len(set(args.names)) != len(args.names):
        raise InputError("a NAME is given twice; name each host once")
    for name in args.names:   # every name checked first: a bad one stops the command before anything changes
        forget(path, name, known, dry_run=True)
    for name in args.names:
        done = forget(path, name, known, dry_run=args.dry_run)
        verb = "would remove" if args.dry_run else "removed"
        env.console.print(f"{name}: {verb} " + "; ".join(done.removed))
        for note in done.kept:
            env.err_console.print(f"{name}: kept {note}")
    return 0
