"""`fleet collect PATH`: a directory of pods' reports (a shared volume) into the history store."""

from __future__ import annotations

import argparse

HELP = "take a directory of pods' reports (fleet script --report dir:PATH) into the history store"
DESCRIPTION = """\
Read every report file (*.json) that pods' start scripts left in PATH (`fleet script --report dir:PATH`) into
the history store: each checked as `fleet serve` checks one (format, size, its own host), a report already
stored counted once. A file taken in is removed (--keep leaves it); a refused one is renamed NAME.refused, and
the reason printed. Exit status 1 if any was refused.

  fleet collect /mnt/shared/fleet-reports --inventory inventories/pods.yaml
  FLEET_STORE=postgresql://fleet@db/fleet fleet collect /mnt/shared/fleet-reports
"""


def register(subparsers) -> None:
    from fleet.commands import _common

    parser = _common.command(subparsers, "collect", HELP, DESCRIPTION)
    parser.add_argument("path", metavar="PATH", help="the directory the pods write their reports into")
    parser.add_argument("--inventory", dest="inventory_file", metavar="INVENTORY", default=None,
                        help="the inventory whose store: (or default store beside its facts) takes them")
    parser.add_argument("--store", metavar="URL", default=None, help="the store (default: $FLEET_STORE)")
    parser.add_argument("--keep", action="store_true", help="leave the files taken in where they are")
    _common.add_json(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    import json

    from fleet.errors import ExitStatus
    from fleet.inventory import load_inventory
    from fleet.report import reporter_for
    from fleet.report.history import cell
    from fleet.store import open_store, settings
    from fleet.store.collect import collect

    inventory = load_inventory(args.inventory_file) if args.inventory_file else None
    found = settings(inventory, url=args.store)
    reporter = reporter_for(env)
    with open_store(found.url) as store:
        result = collect(store, env.cwd / args.path, keep=args.keep, retain=found.retain)
    if args.json:
        env.console.file.write(json.dumps(result, indent=2, ensure_ascii=True) + "\n")
        env.console.file.flush()
    else:
        for name, why in result["refused"].items():
            reporter.error(f"{cell(name)}: refused: {cell(why, 300)}")
        counts = ", ".join(f"{len(result[k]) if k == 'refused' else result[k]} {k}"
                           for k in ("stored", "unchanged", "duplicate", "refused"))
        reporter.note(f"{counts} ({found.url})")
    return ExitStatus.HOST_FAILED if result["refused"] else ExitStatus.OK
