"""`fleet decide FACTS.json... [--set NAME=VALUE]... [--json]`: what fleet would decide, offline.

Reads facts records written by `fleet facts` (or by hand), runs the pure decisions
(fleet/decide/) and prints each decision with its reason. Contacts no host.
"""

from __future__ import annotations

import argparse

HELP = "show what fleet would decide for hosts with these facts, and why (offline)"
DESCRIPTION = """\
Read one or more facts records (facts/<host>.json, written by `fleet facts`) and print what fleet would
decide for each host: the CUDA toolkit and where it comes from, whether cuda-compat is used, which torch
wheel and whether it runs this GPU, NVPL and cuDSS, the LD_LIBRARY_PATH, and which roles act, each with
its reason. Nothing is contacted. Exit status is 1 when a host is refused (the reason says what it needs).

  fleet decide facts/pod-570.json
  fleet decide facts/thor.json --set torch_source=jetson --set cudss_source=apt
  fleet decide facts/*.json --json
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("decide", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("facts", nargs="+", metavar="FACTS.json", help="facts record(s) of the host(s)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="assignments",
                        help="a variable, e.g. cuda_version=13.0 or torch_source=jetson (may repeat)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of tables")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import Reporter
    from fleet.report.decide import DecidePrinter
    from fleet.roles import load_roles, roles_dirs
    from fleet.workflows.decide import decide_files

    roles = load_roles(None, roles_dirs())
    values = parse_assignments(args.assignments, roles)
    printer = DecidePrinter(Reporter(env), json_out=args.json)
    result = decide_files(args.facts, values, roles)
    printer.finish(result)
    return result.status


def parse_assignments(assignments: list[str], roles) -> dict[str, str]:
    """['cuda_version=13.0'] -> {'cuda_version': '13.0'}; names and values checked as the inventory's are."""
    from fleet.inventory.validate import parse_assignments as checked
    from fleet.roles.declared import variables_of

    return checked(assignments, variables_of(roles))
