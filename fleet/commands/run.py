"""`fleet run INVENTORY -- COMMAND`: one ad-hoc command on every selected host, in parallel."""

from __future__ import annotations

import argparse

from fleet.commands import _common
from fleet import shell

HELP = "run an ad-hoc command on every selected host"
DESCRIPTION = """\
Run COMMAND on every selected host at once and print its output grouped per host. The command runs in
bash as `ssh host cmd` would run it (your .bashrc hooks apply). Exit status is 1 if any host failed or was
unreachable; the others always finish.

  fleet run inventories/fleet.yaml -- nvidia-smi
  fleet run inventories/lab.yaml --limit pods --json -- uname -m
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("run", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_inventory(parser)
    _common.add_json(parser)
    parser.add_argument("--sudo", action="store_true", help="run the command with sudo on non-root hosts")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="stop the command on a host after this long (exit 124)")
    _common.add_connect(parser)
    parser.add_argument("command", nargs="*", metavar="-- COMMAND",
                        help="the command and its arguments, after --")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.errors import ExitStatus, InputError
    from fleet.inventory import load_inventory
    from fleet.connection.parallel import interrupted, on_hosts

    words = list(args.command) + list(args.rest)
    if not words:
        raise InputError("no command given; write it after --, e.g. fleet run inventories/lab.yaml -- uname -m")
    # One word is taken as a shell line ("nvidia-smi | head"); several are quoted word by word.
    command = words[0] if len(words) == 1 else shell.join(words)
    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit)
    reporter = _common.reporter_for(args, env)
    _warn_bad_variables(reporter, hosts, inventory.roles_path)
    options = _common.connect_options(args, reporter)
    outcomes = on_hosts(hosts, lambda conn, host: conn.run(command, sudo=args.sudo, timeout=args.timeout),
                        options=options, forks=args.forks, debug=env.debug)
    failed = False
    results = {}
    for name, outcome in outcomes.items():
        res = outcome.value
        failed |= outcome.error is not None or res.exit != 0
        results[name] = {"exit": res.exit if res else None, "stdout": res.stdout if res else "",
                         "stderr": res.stderr if res else "", "error": outcome.error}
        if outcome.interrupted:
            results[name].update(interrupted=True, started=outcome.started)
    if args.json:
        reporter.json(results, outcomes)
    else:
        _print_grouped(reporter, results, outcomes)
    if interrupted(outcomes):
        return ExitStatus.INTERRUPTED
    return ExitStatus.HOST_FAILED if failed else ExitStatus.OK


def _warn_bad_variables(reporter, hosts, roles_path) -> None:
    """`fleet run` renders nothing from the variables: the command is sent as the user wrote it. So a bad
    variable cannot make its result wrong and does not block it (run is what one reaches for to look at a host
    while fixing an inventory); each problem is a warning, so the typo is seen now rather than at the next
    apply or facts, which refuse it (exit 2)."""
    from fleet.errors import InputError
    from fleet.inventory.validate import check_hosts

    try:
        check_hosts(hosts, roles_path)
    except InputError as exc:
        for problem in str(exc).splitlines():
            reporter.warn(f"{problem} (not used by fleet run; apply and facts refuse it)")


def _print_grouped(reporter, results, outcomes) -> None:
    for name, res in results.items():
        seconds = outcomes[name].seconds
        if outcomes[name].interrupted:
            reporter.host_block(name, "INTERRUPTED" if outcomes[name].started else "NOT STARTED",
                                reporter.partial(outcomes[name]), "yellow")
            continue
        if res["error"]:
            reporter.host_block(name, "UNREACHABLE" if outcomes[name].unreachable else "FAILED", res["error"], "red")
            continue
        status = f"exit {res['exit']} ({seconds:.2f}s)"
        reporter.host_block(name, status, res["stdout"], "green" if res["exit"] == 0 else "red")
        for line in res["stderr"].rstrip("\n").split("\n") if res["stderr"] else ():   # a pipe gets stdout only
            reporter.stderr_line(name, line)
