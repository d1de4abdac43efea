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
    _common.add_set(parser)
    _common.add_connect(parser, forks=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    from fleet.workflows import script_runtime
    from fleet.engine import decide_tasks
    from fleet.engine.probe import gather
    from fleet.errors import ExitStatus
    from fleet.engine import session
    from fleet.inventory import set_vars
    from fleet.workflows.script import render_script

    record = _read_facts(env.cwd / args.from_facts) if args.from_facts else None
    host, roles_path = _host(args, record)
    set_vars([host], _common.overrides(args))   # bad input: exit 2, nothing touched
    roles = session.roles_of([host], roles_path, _common.role_names(args))[host.name]   # bad input: exit 2, nothing touched
    reporter = reporter_for(args, env)

    def decide(facts: dict):                                      # plans only: nothing is recorded
        return decide_tasks(roles, host, facts)

    if record is None:
        from fleet.connection import connect

        reporter.progress(host.name, "gathering facts (one command) to decide from")
        with connect(host, _common.connect_options(args, reporter)) as conn:
            facts = gather(conn, host, None)
        plan = decide(facts)
        made_from = f"{host.name}'s facts gathered {plan.facts.get('gathered_at')}"
    else:
        plan = decide(record)
        made_from = f"{args.from_facts} (gathered {record.get('gathered_at')})"
    plans = script_runtime.variants(decide, plan)
    text = render_script(plan, host, plans=plans, made_from=made_from)
    if args.output:
        _write(env.cwd / args.output, text)
        reporter.progress(host.name, f"script written to {args.output} "
                                     f"(run-time variants: {', '.join(plans)})")
    else:
        env.console.file.write(text)
        env.console.file.flush()
    return ExitStatus.OK


def _host(args, record: dict | None):
    """The host to script and its inventory's roles_path: from the inventory (--limit, or the record's host),
    or, with only --from-facts, the record's host with default variables and the built-in roles."""
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


def _write(path, text: str) -> None:
    from fleet.atomic import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    # owner-only (issue 49): the script holds what its tasks need, a private index's password or a git token
    write_atomic(path, text.encode("utf-8"), mode=0o700)
