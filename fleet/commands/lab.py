"""`fleet lab up|down|status`: simulated Thor, Spark and H100 hosts over real SSH, to rehearse on."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "start, stop or list simulated hosts (the lab) to rehearse on"
DEFAULT_INVENTORY = "inventories/lab.yaml"
DESCRIPTION = """\
The lab starts one real sshd per inventory host that has a `lab: {profile: ...}` mapping (thor, spark,
h100-pod, runpod-pytorch, no-smi, orin-jp6, geforce-pod, minimal, fresh-vm), each on its own loopback address,
in its own mount and UTS namespace, over an overlay of this machine's / (writes stay on that host). Inside
each host the real source hostnames (developer.download.nvidia.com, download.pytorch.org, pypi.org, github.com,
...) reach the lab's stand-in mirror over HTTPS. `up` writes the lab's key and known-hosts file into the
inventory. Needs root, openssh-server and the lab package (fleet_lab: pip install -e '.[test]').

  fleet lab up                        start every lab host of inventories/lab.yaml (already running: kept)
  fleet lab status                    what runs, where
  fleet run inventories/lab.yaml -- uname -m
  fleet lab restart pod-570 --driver 580.159.04
                                      the same host, what it wrote kept, on another kernel driver
  fleet lab down                      stop them; nothing of theirs stays behind (--purge: the build cache too)

The lab keeps its state in $FLEET_LAB_ROOT (default /var/lib/fleet-lab).
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("lab", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = parser.add_subparsers(dest="lab_action", metavar="ACTION", required=True)
    up = actions.add_parser("up", help="start the inventory's lab hosts (idempotent)")
    up.add_argument("inventory", nargs="?", default=DEFAULT_INVENTORY, metavar="INVENTORY",
                    help=f"inventory YAML file (default: {DEFAULT_INVENTORY})")
    up.add_argument("--limit", "-l", action="append", metavar="NAMES", help="only these hosts or groups")
    up.add_argument("--reset", action="store_true", help="start the hosts fresh, forgetting what they wrote")
    down = actions.add_parser("down", help="stop the inventory's lab hosts and remove their files")
    down.add_argument("inventory", nargs="?", default=DEFAULT_INVENTORY, metavar="INVENTORY",
                      help=f"inventory YAML file (default: {DEFAULT_INVENTORY})")
    down.add_argument("--purge", action="store_true", help="also remove the built mirror and profile layers")
    restart = actions.add_parser("restart", help="restart hosts keeping what they wrote, optionally on another "
                                                 "kernel driver (nothing re-applied)")
    restart.add_argument("hosts", nargs="+", metavar="HOST", help="lab hosts (or groups) to restart")
    restart.add_argument("--driver", metavar="VERSION",
                         help="the kernel driver the host comes back on, e.g. 580.159.04 (a pod restarted on "
                              "another machine, a driver upgraded and rebooted)")
    restart.add_argument("--inventory", "-i", default=DEFAULT_INVENTORY, metavar="INVENTORY",
                         help=f"inventory YAML file (default: {DEFAULT_INVENTORY})")
    status = actions.add_parser("status", help="list the lab hosts and whether each answers")
    status.add_argument("inventory", nargs="?", metavar="INVENTORY",
                        help="only this inventory's lab hosts (those not started are listed as such)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    import time

    lab = _lab_package()
    from fleet_lab import paths

    started = time.monotonic()
    inventory = getattr(args, "inventory", None)
    if args.lab_action in ("up", "restart"):
        from fleet_lab.control import check_machine
        check_machine()          # what this machine lacks (root, sshd) first: no inventory fixes that
    if inventory is not None and not Path(inventory).is_file():
        from fleet.errors import InputError
        where = "" if Path(inventory).is_absolute() else f" (relative to {Path.cwd()})"
        raise InputError(f"inventory {inventory} not found{where}; run fleet lab from fleet's source tree, where "
                         f"{DEFAULT_INVENTORY} is, or name an inventory whose hosts have lab: settings: "
                         f"fleet lab {args.lab_action} PATH")
    if args.lab_action == "up":
        if args.reset:
            from fleet_lab.control import lab_specs
            names = [s.name for s in lab_specs(args.inventory, args.limit)]
            states = lab.reset(args.inventory, names)
        else:
            states = lab.up(args.inventory, args.limit)
        _table(env, f"lab up ({time.monotonic() - started:.2f} s, root {paths.lab_root()})", states)
        env.console.print(f"next: fleet run {args.inventory} -- uname -m")
    elif args.lab_action == "restart":
        from fleet_lab.control import restart
        states = restart(args.inventory, args.hosts, driver=args.driver)
        _table(env, f"lab restart ({time.monotonic() - started:.2f} s)", states)
    elif args.lab_action == "down":
        states = lab.down(args.inventory, purge=args.purge)
        _table(env, f"lab down ({time.monotonic() - started:.2f} s)", states)
        cache = paths.mirror_cache()
        if cache.exists() and not args.purge:
            env.console.print(f"kept the build cache in {paths.lab_root()} (mirror, layers); --purge removes it")
    else:
        states = lab.status()
        if inventory is not None:
            from fleet_lab.control import HostState, lab_specs
            have = {(s.name, s.address, s.port): s for s in states}   # a host of that name elsewhere is not it
            states = [have.get((spec.name, spec.address, spec.port)) or HostState(spec.name, spec.address, spec.port, spec.profile,
                                                       spec.driver, "not started")
                      for spec in lab_specs(inventory, None)]
        if not states:
            env.console.print(f"no lab host in {paths.lab_root()}; start them with: fleet lab up")
            return 0
        _table(env, f"lab status (root {paths.lab_root()})", states)
    return 0


def _lab_package():
    """fleet_lab, the lab's own package: fleet ships without it and imports it only here."""
    import importlib

    from fleet.errors import LabError

    try:
        return importlib.import_module("fleet_lab")
    except ImportError as exc:
        if getattr(exc, "name", None) != "fleet_lab":
            raise
        raise LabError("the lab is its own package (fleet_lab), which is not installed here; install it from "
                       "fleet's source tree with: pip install -e '.[test]'") from None


def _table(env, title: str, states) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in ("host", "address", "profile", "driver", "state", "seconds"):
        table.add_column(col)
    for s in states:
        port = "" if s.port == 22 else f":{s.port}"
        table.add_row(s.name, f"{s.address}{port}", s.profile, s.driver, s.state, f"{s.seconds:.2f}" if s.seconds else "")
    from fleet.report import Reporter

    Reporter(env).print(table)   # drawn on a terminal, tab-separated in a pipe
