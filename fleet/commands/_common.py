"""Arguments and helpers shared by the commands that reach hosts."""

from __future__ import annotations

import argparse

from fleet import parse
from fleet.connection import DEAD_AFTER, ConnectOptions
from fleet.report import Reporter


def command(subparsers, name: str, help: str, description: str, *options, func=None) -> argparse.ArgumentParser:
    """The subcommand's parser, its description printed as written, each of `options` (add_inventory, add_json, ...)
    added in order, and `func` what it runs."""
    parser = subparsers.add_parser(name, help=help, description=description,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    for add in options:
        add(parser)
    if func is not None:
        parser.set_defaults(func=func)
    return parser


def add_inventory(parser: argparse.ArgumentParser, *, default: str | None = None) -> None:
    if default:
        parser.add_argument("inventory", nargs="?", default=default, metavar="INVENTORY",
                            help=f"inventory YAML file (default: {default})")
    else:
        parser.add_argument("inventory", nargs="?", default=None, metavar="INVENTORY",
                            help="inventory YAML file (default: $FLEET_INVENTORY, else ~/.config/fleet/pods.yaml, "
                                 "where fleet bootstrap adds pods)")
        parser.set_defaults(needs_inventory=True)   # fleet.cli fills it from FLEET_INVENTORY
    parser.add_argument("--limit", "-l", action="append", metavar="PATTERNS",
                        help="only these hosts or groups: names or globs, '!' excludes "
                             "(e.g. 'pod-*,!pod-570'; comma-separated; may repeat)")


def add_connect(parser: argparse.ArgumentParser, *, forks: bool = True) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument("--accept-new-host-keys", action="store_true",
                       help="trust hosts whose key is not yet known, record the key and print its fingerprint "
                            "(a CHANGED key is always refused)")
    group.add_argument("--connect-timeout", type=parse.flag(parse.seconds), default=10.0, metavar="SECONDS",
                       help="give up one connection attempt after this long (default: 10)")
    group.add_argument("--wait", type=parse.flag(parse.seconds, zero=True), default=0.0, metavar="SECONDS",
                       help="keep retrying hosts that refuse connections (still booting) for this long (default: 0)")
    group.add_argument("--dead-after", type=parse.flag(parse.seconds, least=1), default=None, metavar="SECONDS",
                       help="give a host up when it has answered neither output nor an SSH keep-alive for this "
                            "long (a pod that vanished, a frozen machine); a long quiet command such as pip "
                            "installing torch is not cut off, since a live host answers keep-alives "
                            f"(default: $FLEET_DEAD_AFTER or {DEAD_AFTER:g})")
    if forks:
        group.add_argument("--forks", type=parse.flag(parse.count), default=None, metavar="N",
                           help="hosts to work on at once (default: all of them, or as many as this user's "
                                "process limit (ulimit -u), the cgroup's pids.max and the open-files limit leave "
                                "room for: about 6 threads and 4 files a host; the others wait their turn)")


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of tables")


def connect_options(args: argparse.Namespace, reporter: Reporter) -> ConnectOptions:
    return ConnectOptions(accept_new_host_keys=args.accept_new_host_keys, connect_timeout=args.connect_timeout,
                          wait=args.wait, on_new_host_key=reporter.host_key,
                          dead_after=getattr(args, "dead_after", None) or 0.0,
                          on_command=reporter.progress if reporter.verbose else None,
                          on_warning=reporter.warn)


def role_names(args: argparse.Namespace) -> list[str] | None:
    """--roles a,b --roles c -> ['a', 'b', 'c'] (None: each host's own list)."""
    roles = getattr(args, "roles", None)
    return [n.strip() for entry in roles for n in entry.split(",") if n.strip()] if roles else None


def checked_hosts(args: argparse.Namespace):
    """(inventory, selected hosts with --set over their variables, each host's roles): every check apply makes
    before it contacts anyone. Bad input is an InputError (exit 2) and nobody is contacted."""
    from fleet.engine import session
    from fleet.inventory import load_inventory, set_values, set_vars

    only = role_names(args)
    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit)
    set_vars(hosts, set_values(getattr(args, "assignments", None) or []))
    return inventory, hosts, session.roles_of(hosts, inventory.roles_path, only)


def selected_hosts(args: argparse.Namespace):
    """(inventory, the hosts --limit selects, with --set over their variables); the variables are checked where
    they are used, before any host is contacted."""
    from fleet.inventory import load_inventory, set_values, set_vars

    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit)
    set_vars(hosts, set_values(getattr(args, "assignments", None) or []))
    return inventory, hosts


def add_set(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="assignments",
                        help="a variable for this run, over the inventory's (e.g. --set torch_version=2.11.0); "
                             "checked as `fleet decide --set` checks it (may repeat)")


def overrides(args: argparse.Namespace) -> dict:
    """--set NAME=VALUE words as {NAME: text}; the names and values are checked and converted with the
    inventory's own (fleet.engine.session.check_variables, before any host): one declaration, one check."""
    from fleet.inventory import set_values

    return set_values(getattr(args, "assignments", None) or [])
