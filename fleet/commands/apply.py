"""`fleet apply INVENTORY`: converge every selected host; a second run changes nothing."""

from __future__ import annotations

import argparse

from . import _common

HELP = "converge hosts to their roles (--check to plan only)"
DESCRIPTION = """\
Converge every selected host: one probe (facts and every task's check in one remote command), the GPU-stack
decisions (which CUDA, whether cuda-compat, which torch wheel, which libraries), then apply only what
differs, re-check, verify and record the host's facts. Hosts run in parallel; one failing host never stops
the others. A converged host costs one remote command and shows zero changes.

  fleet apply inventories/lab.yaml --check          plan only: what would change, and why
  fleet apply inventories/pods.yaml --limit pod-1 --diff
  fleet apply inventories/fleet.yaml --roles verify
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("apply", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_inventory(parser)
    parser.add_argument("--roles", action="append", metavar="NAMES",
                        help="only these roles, in this order (comma-separated; default: all eight)")
    parser.add_argument("--check", action="store_true", help="plan only: change nothing, list what apply would do")
    parser.add_argument("--diff", action="store_true", help="show the changes to files and managed blocks")
    parser.add_argument("--verify", action="store_true",
                        help="run verify even where nothing it proved has changed (by default it is reused while "
                             "its fingerprint holds and it is younger than verify_max_age, 24h)")
    _common.add_json(parser)
    _common.add_connect(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env, *, force_verify: str | None = None) -> int:
    from ..engine import Engine
    from ..errors import ExitStatus
    from ..inventory import load_inventory
    from ..parallel import interrupted, on_hosts
    from ..roles import load_roles, roles_dirs
    from ..report_apply import print_apply

    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit)
    names = [n.strip() for entry in args.roles for n in entry.split(",") if n.strip()] if args.roles else None
    roles = load_roles(names, roles_dirs(inventory.roles_path))  # bad roles stop here, before any host
    reporter = _common.reporter_for(args, env)
    if getattr(args, "verify", False):
        force_verify = "asked for (--verify)"
    engine = Engine(roles, facts_dir=inventory.facts_dir, check_mode=args.check, progress=reporter.progress,
                    force_verify=force_verify)
    outcomes = on_hosts(hosts, engine.converge, options=_common.connect_options(args, reporter),
                        forks=args.forks, debug=env.debug)
    failed = print_apply(reporter, outcomes, json_out=args.json, show_diff=args.diff, check=args.check)
    if interrupted(outcomes):
        return ExitStatus.INTERRUPTED
    return ExitStatus.HOST_FAILED if failed else ExitStatus.OK
