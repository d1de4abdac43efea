"""`fleet run INVENTORY -- COMMAND`: one ad-hoc command on every selected host, in parallel."""

from __future__ import annotations

import argparse

from fleet import parse
from fleet.commands import _common
from fleet import shell

HELP = "run an ad-hoc command on every selected host"
DESCRIPTION = """\
Run COMMAND on every selected host at once; each line of its output is printed as it comes, named by its host
("pod-a: ..." on stdout, "pod-a stderr: ..." on stderr), then one line per host says how it ended (on stderr;
--json: one document at the end instead). The command runs in bash as `ssh host cmd` would run it (your
.bashrc hooks apply); it ends when fleet's connection does (Ctrl-C, SIGTERM, a dropped connection), so nothing
of it runs on after fleet has gone (start what must outlive it with setsid or systemd-run). Exit status is 1 if any host failed or was unreachable; the others always finish.

  fleet run inventories/fleet.yaml -- nvidia-smi
  fleet run inventories/lab.yaml --limit pods --json -- uname -m
"""


def register(subparsers) -> None:
    parser = _common.command(subparsers, "run", HELP, DESCRIPTION)
    _common.add_inventory(parser)
    _common.add_json(parser)
    parser.add_argument("--sudo", action="store_true", help="run the command with sudo on non-root hosts")
    parser.add_argument("--timeout", type=parse.flag(parse.seconds), default=None, metavar="SECONDS",
                        help="stop the command on a host after this long (exit 124)")
    _common.add_connect(parser)
    parser.add_argument("command", nargs="*", metavar="-- COMMAND",
                        help="the command and its arguments, after --")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
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
    reporter = reporter_for(env)
    _warn_bad_variables(reporter, hosts, inventory.roles_path)
    options = _common.connect_options(args, reporter)

    def one(conn, host):
        from fleet.connection import LocalConnection

        if isinstance(conn, LocalConnection):       # a child of this process: fleet ends it itself
            script, sudo = command, args.sudo
        else:
            script, sudo = remote_script(command, sudo=args.sudo, user_is_root=conn.is_root), False
        if args.json:      # one document at the end
            return conn.run(script, sudo=sudo, timeout=args.timeout)
        return conn.run(script, sudo=sudo, timeout=args.timeout,   # each line as it comes, named by its host
                        on_output=lambda line: reporter.stream_line(host.name, line),
                        on_error=lambda line: reporter.stream_line(host.name, line, stderr=True))

    outcomes = on_hosts(hosts, one, options=options, forks=args.forks, debug=env.debug)
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
        _summary(reporter, results, outcomes)
    if interrupted(outcomes):
        return ExitStatus.INTERRUPTED
    return ExitStatus.HOST_FAILED if failed else ExitStatus.OK


def remote_script(command: str, *, sudo: bool, user_is_root: bool) -> str:
    """What `fleet run` sends an SSH host (as conn.run's script, sudo=False): the command ends with the connection
    (Ctrl-C, SIGTERM, a dropped connection; shell.STOP_WITH_CONNECTION), its watchdog outside sudo: it watches the
    user's sshd, and sudo relays its TERM to what it started."""
    return shell.ends_with_connection(shell.as_root(command, wants_root=sudo, user_is_root=user_is_root), local=False)


def _warn_bad_variables(reporter, hosts, roles_path) -> None:
    """`fleet run` renders nothing from the variables: the command is sent as the user wrote it. So a bad
    variable cannot make its result wrong and does not block it (run is what one reaches for to look at a host
    while fixing an inventory); each problem is a warning, so the typo is seen now rather than at the next
    apply or facts, which refuse it (exit 2)."""
    from fleet.errors import InputError
    from fleet.engine.session import check_variables

    try:
        check_variables(hosts, roles_path)
    except InputError as exc:
        for problem in str(exc).splitlines():
            reporter.warn(f"{problem} (not used by fleet run; apply and facts refuse it)")


def _summary(reporter, results, outcomes) -> None:
    """How each host ended, one line each on stderr (its output went to stdout as it came, line by line)."""
    for name, res in results.items():
        outcome = outcomes[name]
        if outcome.interrupted:
            state = "INTERRUPTED" if outcome.started else "NOT STARTED"
            reporter.host_status(name, f"{state}: {reporter.partial(outcome)}", "yellow")
        elif res["error"]:
            state = "REFUSED" if outcome.refused else "UNREACHABLE" if outcome.unreachable else "FAILED"
            reporter.host_status(name, f"{state}: {res['error']}", "red")
        else:
            reporter.host_status(name, f"exit {res['exit']} ({outcome.seconds:.2f}s)",
                                 "green" if res["exit"] == 0 else "red")
