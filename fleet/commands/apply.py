"""`fleet apply INVENTORY`: converge every selected host; a second run changes nothing."""

from __future__ import annotations

import argparse
import time

from fleet.commands import _common

HELP = "converge hosts to their roles (--check to plan only)"
DESCRIPTION = """\
Converge every selected host: one probe (facts and every task's check in one remote command), the GPU-stack
decisions (which CUDA, whether cuda-compat, which torch wheel, which libraries), then apply only what
differs, re-check, verify and record the host's facts. Hosts run in parallel; one failing host never stops
the others. A converged host costs one remote command and shows zero changes.

  fleet apply inventories/lab.yaml --check          plan only: what would change, and why
  fleet apply inventories/lab.yaml --check --detailed-exitcode   exit 2 while changes are pending

Output: one line per host that needs nothing ("pod-a: in state (12 ok, 13 skipped) 0.3 s"), one line per
change, then the recap; -v adds the tasks in state, the skipped ones with why in plain words, and each change's
whole reason. --check ends with each host's plan ("pod-a: 3 to change, 12 in state"), counted as the apply
that follows will count it.
  fleet apply inventories/pods.yaml --limit pod-1 --diff
  fleet apply inventories/fleet.yaml --roles verify
  fleet apply inventories/pods.yaml --set torch_version=2.11.0   a variable for this run only
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("apply", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_inventory(parser)
    parser.add_argument("--roles", action="append", metavar="NAMES",
                        help="only these of each host's roles, in this order (comma-separated; default: the "
                             "inventory's roles:, else the built-in nine)")
    parser.add_argument("--check", action="store_true", help="plan only: change nothing, list what apply would do")
    parser.add_argument("--detailed-exitcode", action="store_true",
                        help="with --check: exit 2 when changes are pending, 0 when every host is in state, 1 when a "
                             "host failed (terraform's convention; without it --check exits 0 with changes pending)")
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
    from fleet.engine import Setup, converge as converge_host, session
    from fleet.errors import ExitStatus, InputError
    from fleet.inventory import load_inventory
    from fleet.connection.parallel import interrupted, on_hosts
    from fleet.report.apply import LiveHosts, pending, print_apply

    if getattr(args, "detailed_exitcode", False) and not args.check:
        raise InputError("--detailed-exitcode only has a meaning with --check (exit 2 when changes are pending): "
                         "add --check, or drop --detailed-exitcode")
    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit)
    _common.set_vars(hosts, _common.overrides(args))   # bad input: exit 2, nobody touched
    by_host = session.roles_of(hosts, inventory.roles_path, role_names(args))   # bad input: exit 2, nobody touched
    reporter = _common.reporter_for(args, env)
    if getattr(args, "verify", False):
        rerun = "asked for (--verify)"
    setups: dict[tuple, Setup] = {}
    for roles in by_host.values():
        setups.setdefault(tuple(r.name for r in roles), Setup(
            roles, facts_dir=inventory.facts_dir, check_mode=args.check, progress=reporter.progress,
            rerun=rerun, on_task=reporter.on_task))

    def converge(conn, host):
        return converge_host(conn, host, setups[tuple(r.name for r in by_host[host.name])])

    if args.check and not args.json:
        print_role_origins(reporter, hosts, by_host)
    started = time.time()
    live = None if args.json else LiveHosts(reporter, show_diff=args.diff, check=args.check)
    with reporter.heartbeat(live=not args.json):   # on a terminal: a live status line per running host
        outcomes = on_hosts(hosts, converge, options=_common.connect_options(args, reporter),
                            forks=args.forks, debug=env.debug, on_done=live)
    failed = print_apply(reporter, outcomes, json_out=args.json, show_diff=args.diff, check=args.check,
                         shown=live.shown if live else frozenset())
    log_run(args, env, reporter, started, outcomes)
    if interrupted(outcomes):
        return ExitStatus.INTERRUPTED
    if any(o.value is not None and (o.value.health or {}).get("verdict") == "return" for o in outcomes.values()):
        return ExitStatus.RETURN_POD   # a GPU fault only the provider can fix (the recap's GPU health column)
    if failed:
        return ExitStatus.HOST_FAILED
    return ExitStatus.CHANGES_PENDING if getattr(args, "detailed_exitcode", False) and pending(outcomes) else ExitStatus.OK


def log_run(args: argparse.Namespace, env, reporter, started: float, outcomes) -> None:
    """Keep what happened on each host (fleet.report.runlog); a log that cannot be written is a warning."""
    from fleet.report import runlog
    from fleet.report.apply import host_json

    command = getattr(args, "command", None) or "apply"
    path = (env.cwd / args.log) if getattr(args, "log", None) else runlog.default_path(command, started)
    hosts = {name: host_json(o, reporter) for name, o in outcomes.items()}
    try:
        runlog.write(path, runlog.lines(["fleet", *getattr(args, "argv", [command])], started, args.check, hosts,
                                        outcomes))
    except OSError as exc:
        reporter.warn(f"could not write the run log {path} ({exc.strerror}): give --log FILE somewhere writable")
        return
    reporter.note(f"run log: {path}")


def role_names(args: argparse.Namespace) -> list[str] | None:
    """--roles a,b --roles c -> ['a', 'b', 'c'] (None: each host's own list)."""
    return [n.strip() for entry in args.roles for n in entry.split(",") if n.strip()] if args.roles else None


def print_role_origins(reporter, hosts, by_host) -> None:
    """One line per distinct role list: which hosts, the roles in order, and where each came from."""
    from rich.markup import escape

    from fleet.inventory import DEFAULT_ROLES_FROM

    groups: dict[tuple, list[str]] = {}
    for host in hosts:
        groups.setdefault((tuple(r.name for r in by_host[host.name]), host.roles_from), []).append(host.name)
    for (_names, named_by), names in groups.items():
        roles = by_host[names[0]]
        parts, run = [], []
        for role in roles:          # consecutive roles of one origin share its label
            if run and run[-1].origin != role.origin:
                parts.append(_origin_part(run))
                run = []
            run.append(role)
        parts.append(_origin_part(run))
        by = "" if named_by == DEFAULT_ROLES_FROM else f" [dim](named by {escape(named_by)})[/dim]"
        reporter.print(f"[bold]roles[/bold] {escape(', '.join(names))}: {escape('; '.join(parts))}{by}")



def _origin_part(roles) -> str:
    return f"{' '.join(r.name for r in roles)} ({roles[0].origin})" if roles else "none"
