"""`fleet script INVENTORY --limit NAME`: one host's `fleet apply` as a standalone bash script."""

from __future__ import annotations

import argparse

from fleet.commands import _common

HELP = "write a standalone, idempotent bash script doing what apply would do to one host"
DESCRIPTION = """\
Decide from one host's facts (gathered in one remote command, or read from a facts record with --from-facts,
offline) and write a bash script that converges such a host with no control machine: each task's check, then
its apply only where needed, the decisions stated in comments, verify at the end (its result recorded in
/var/lib/fleet/verify.json), and `changed=N` as the last line. Meant for a pod template's start command. A
second run prints changed=0.

The script decides at RUN time what depends on the kernel driver it finds there: cuda-compat, and its place
first on LD_LIBRARY_PATH, only where that driver is older than the CUDA release needs (a newer pod keeps compat
off the path: error 803 otherwise). It refuses, saying why, on a host whose CPU architecture or GPUs differ from
the facts'.

  fleet script inventories/pods.yaml --limit pod-a -o pod-a.sh
  fleet script inventories/lab.yaml --limit pod-570 | ssh root@127.0.1.13 bash
  fleet script --from-facts facts/pod-a.json -o template.sh          offline: built-in roles, default variables
  fleet script inventories/pods.yaml --limit pod-a --from-facts facts/pod-a.json
"""


def register(subparsers) -> None:
    parser = _common.command(subparsers, "script", HELP, DESCRIPTION)
    parser.add_argument("inventory", nargs="?", default=None, metavar="INVENTORY",
                        help="inventory YAML file (optional with --from-facts: its roles and variables apply)")
    parser.add_argument("--limit", "-l", action="append", metavar="NAME", help="the one host to script")
    parser.add_argument("--from-facts", default=None, metavar="FILE",
                        help="decide from this facts record (written by fleet facts/apply) instead of "
                             "connecting: works offline")
    parser.add_argument("-o", "--output", default=None, metavar="FILE",
                        help="write the script here (mode 0700: it can hold an index password) instead of printing it")
    parser.add_argument("--roles", action="append", metavar="NAMES",
                        help="only these of the host's roles, in this order (comma-separated)")
    parser.add_argument("--report", metavar="URL|dir:PATH", default=None,
                        help="after every run, send the run's report to `fleet serve` at URL (https://, or http:// "
                             "to a loopback address; the token from FLEET_REPORT_TOKEN in the pod's environment) or "
                             "write it into the directory PATH (for `fleet collect`); kept and sent next time "
                             "when the target cannot be reached")
    _common.add_set(parser)
    _common.add_connect(parser, forks=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.engine import session
    from fleet.errors import ExitStatus
    from fleet.report import reporter_for
    from fleet.report.script import ScriptPrinter
    from fleet.workflows.script import ScriptRequest, make_script

    report = _report_target(args.report)
    record = _read_facts(env.cwd / args.from_facts) if args.from_facts else None
    host, roles_path = _named(args, record)
    reporter = reporter_for(env)
    only, connect = _common.role_names(args), _common.connect_options(args, reporter)
    roles = session.roles_of([host], roles_path, only)[host.name]   # bad input: exit 2, nothing touched
    request = ScriptRequest(record=record, from_facts=args.from_facts, connect=connect, report=report)
    printer = ScriptPrinter(reporter, output=env.cwd / args.output if args.output else None, shown_as=args.output)
    result = make_script(host, roles, request, progress=reporter.progress)
    printer.finish(result)
    return ExitStatus.OK


def _report_target(target: str | None) -> str | None:
    """--report's URL|dir:PATH, checked before anything runs."""
    from fleet.errors import InputError
    from fleet.store.serve import is_loopback
    from urllib.parse import urlsplit

    if target is None:
        return None
    parts = urlsplit(target)
    if parts.username or parts.password:
        raise InputError(f"--report: the URL carries a user or password, which would be written into the script; "
                         "the pod's token comes from FLEET_REPORT_TOKEN in its environment")
    if target.startswith("dir:/") or parts.scheme == "https" and parts.hostname:
        return target
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return target
    raise InputError(f"--report {target!r}: give an https:// URL of `fleet serve`, http:// to a loopback address, "
                     "or dir:/ABSOLUTE/PATH (a directory `fleet collect` reads)")


def _named(args, record: dict | None):
    """The host to script, with --set over its variables (checked with its roles), and its inventory's roles_path:
    from the inventory (--limit, or the record's host), or, with only --from-facts, the record's host with default
    variables and the built-in roles."""
    from fleet.inventory import set_values, set_vars

    host, roles_path = _chosen(args, record)
    set_vars([host], set_values(getattr(args, "assignments", None) or []))
    return host, roles_path


def _chosen(args, record: dict | None):
    from fleet.errors import InputError
    from fleet.inventory import Host, load_inventory

    if args.inventory is None:
        if record is None:
            raise InputError("fleet script needs an INVENTORY with --limit NAME, or --from-facts FILE")
        if args.limit:
            raise InputError("--limit picks a host of an inventory: give the INVENTORY too, or drop --limit")
        name = str(record.get("host") or "host")
        user = (record.get("system") or {}).get("user") or "root"
        address = (record.get("system") or {}).get("hostname") or name
        return Host(name=name, address=str(address), user=user), []
    inventory = load_inventory(args.inventory)
    limit = args.limit or ([str(record["host"])] if record and record.get("host") in inventory.hosts else None)
    hosts = inventory.select(limit) if limit else []
    if len(hosts) != 1:
        names = ", ".join(h.name for h in hosts) or "none"
        raise InputError(f"fleet script writes one host's script: name exactly one host with --limit NAME "
                         f"(selected: {names})")
    return hosts[0], inventory.roles_path


def _read_facts(path) -> dict:
    import json

    from fleet.errors import InputError
    from fleet.jsontext import document

    try:
        record = document(path.read_text(encoding="utf-8"))   # too deep: a JSONDecodeError
    except OSError as exc:
        raise InputError(f"cannot read the facts record ({exc.strerror}): give a file written by "
                         "`fleet facts` or `fleet apply` (facts/<host>.json)", path=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a JSON facts record ({getattr(exc, 'msg', 'not UTF-8 text')}): re-gather it with "
                         "`fleet facts`", path=str(path), line=getattr(exc, "lineno", None)) from None
    if not isinstance(record, dict) or not isinstance(record.get("system"), dict):
        raise InputError("not a facts record (no 'system'): give a file written by `fleet facts`", path=str(path))
    return record
