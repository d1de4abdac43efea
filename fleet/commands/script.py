"""`fleet script INVENTORY --limit NAME`: one host's `fleet apply` as a standalone bash script."""

from __future__ import annotations

import argparse

from . import _common

HELP = "write a standalone, idempotent bash script doing what apply would do to one host"
DESCRIPTION = """\
Gather one host's facts (one remote command), decide, and write a bash script that converges that host with
no control machine: each task's check, then its apply only where needed, the decisions frozen in and stated
in comments, verify at the end (its result recorded in /var/lib/fleet/verify.json), and `changed=N` as the
last line. Meant for a pod template's start command. A second run prints changed=0.

  fleet script inventories/pods.yaml --limit pod-a -o pod-a.sh
  fleet script inventories/lab.yaml --limit pod-570 | ssh root@127.0.1.13 bash
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("script", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_inventory(parser)
    parser.add_argument("-o", "--output", default=None, metavar="FILE",
                        help="write the script here (mode 0755) instead of printing it")
    parser.add_argument("--roles", action="append", metavar="NAMES",
                        help="only these roles, in this order (comma-separated; default: all eight)")
    _common.add_connect(parser, forks=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from ..connection import connect
    from ..errors import ExitStatus, InputError
    from ..inventory import load_inventory
    from ..roles import load_roles, roles_dirs
    from ..scriptgen import gather_plan, render_script

    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit) if args.limit else []
    if len(hosts) != 1:
        names = ", ".join(h.name for h in hosts) or "none"
        raise InputError(f"fleet script writes one host's script: name exactly one host with --limit NAME "
                         f"(selected: {names})")
    host = hosts[0]
    names = [n.strip() for entry in args.roles for n in entry.split(",") if n.strip()] if args.roles else None
    roles = load_roles(names, roles_dirs(inventory.roles_path))
    reporter = _common.reporter_for(args, env)
    reporter.progress(host.name, "gathering facts (one command) to freeze the decisions")
    with connect(host, _common.connect_options(args, reporter)) as conn:
        plan = gather_plan(conn, host, roles)
    text = render_script(plan, host)
    if args.output:
        _write(env.cwd / args.output, text)
        reporter.progress(host.name, f"script written to {args.output} "
                                     f"({sum(1 for t in plan.tasks if t.enabled)} tasks)")
    else:
        env.console.file.write(text)
        env.console.file.flush()
    return ExitStatus.OK


def _write(path, text: str) -> None:
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o755)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise
