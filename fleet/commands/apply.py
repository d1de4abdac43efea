"""`fleet apply INVENTORY`: converge every selected host; a second run changes nothing."""

from __future__ import annotations

import argparse

from fleet.commands import _common

HELP = "converge hosts to their roles (--check to plan only)"
DESCRIPTION = """\
Converge every selected host: one probe (facts and every task's check in one remote command), the GPU-stack
decisions (which CUDA, whether cuda-compat, which torch wheel, which libraries), then apply only what
differs, re-check, verify and record the host's facts. Hosts run in parallel; one failing host never stops
the others. A converged host costs one remote command and shows zero changes.

  fleet apply inventories/lab.yaml --check          plan only: what would change, and why
  fleet apply inventories/lab.yaml --check --detailed-exitcode   exit 4 while changes are pending

Output: one line per host that needs nothing ("pod-a: in state (12 ok, 13 skipped) 0.3 s"), one line per
change, then the recap; -v adds the tasks in state, the skipped ones with why in plain words, and each change's
whole reason. --check ends with each host's plan ("pod-a: 3 to change, 12 in state"), counted as the apply
that follows will count it.
  fleet apply inventories/pods.yaml --limit pod-1 --diff
  fleet apply inventories/fleet.yaml --roles verify
  fleet apply inventories/pods.yaml --set torch_version=2.11.0   a variable for this run only
"""


def register(subparsers) -> None:
    parser = _common.command(subparsers, "apply", HELP, DESCRIPTION)
    _common.add_inventory(parser)
    parser.add_argument("--roles", action="append", metavar="NAMES",
                        help="only these of each host's roles, in this order (comma-separated; default: the "
                             "inventory's roles:, else the built-in nine)")
    parser.add_argument("--check", action="store_true", help="plan only: change nothing, list what apply would do")
    parser.add_argument("--detailed-exitcode", action="store_true",
                        help="with --check: exit 4 when changes are pending, 0 when every host is in state, 1 when a "
                             "host failed, 2 for bad input (terraform's -detailed-exitcode, but 4 where terraform "
                             "says 2: fleet's 2 is bad input; without it --check exits 0 with changes pending)")
    parser.add_argument("--diff", action="store_true", help="show the changes to files and managed blocks")
    parser.add_argument("--verify", action="store_true",
                        help="run verify even where nothing it proved has changed (by default it is reused while "
                             "its fingerprint holds and it is younger than verify_max_age, 24h)")
    _common.add_set(parser)
    parser.add_argument("--log", default=None, metavar="FILE",
                        help="append this run's log (JSON lines: what happened on each host) to FILE (default: a "
                             "new file under $XDG_STATE_HOME/fleet/runs or ~/.local/state/fleet/runs; its path is "
                             "printed at the end)")
    _common.add_json(parser)
    _common.add_connect(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env, *, rerun: str | None = None) -> int:
    from fleet.report import reporter_for
    from fleet.errors import InputError
    from fleet.report.apply import ApplyPrinter
    from fleet.workflows.apply import ApplyRequest, converge_hosts

    if getattr(args, "detailed_exitcode", False) and not args.check:
        raise InputError("--detailed-exitcode only has a meaning with --check (exit 4 when changes are pending): "
                         "add --check, or drop --detailed-exitcode")
    reporter = reporter_for(env)
    connect = _common.connect_options(args, reporter)
    inventory, hosts, by_host = _common.checked_hosts(args)   # bad input: exit 2, nobody touched
    request = ApplyRequest(check=args.check,
                           rerun="asked for (--verify)" if getattr(args, "verify", False) else rerun,
                           connect=connect, forks=args.forks, debug=env.debug, live=not args.json,
                           detailed=getattr(args, "detailed_exitcode", False), command=args.command,
                           argv=("fleet", *getattr(args, "argv", [args.command])),
                           log=env.cwd / args.log if getattr(args, "log", None) else None)
    printer = ApplyPrinter(reporter, check=args.check, show_diff=args.diff, json_out=args.json,
                           inventory=args.inventory)
    result = converge_hosts(inventory, by_host, hosts, request, reporter, on_start=printer.start,
                            on_done=printer, describe=printer.document)
    printer.finish(result)
    return result.status
