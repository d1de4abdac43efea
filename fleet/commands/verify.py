"""`fleet verify INVENTORY`: run verify now on every selected host, whatever its fingerprint says."""

from __future__ import annotations

import argparse

from fleet.commands import _common

HELP = "run verify now (torch, CUDA, a matmul, the perf smoke) and record it"
DESCRIPTION = """\
Run the verify role now on every selected host and record the result, even where nothing it proved has
changed. `fleet apply` re-runs verify by itself only when its fingerprint changes (driver, libcuda, torch,
the venv's Python, the env hook, LD_LIBRARY_PATH of each kind of shell, the variables verify reads such as
verify_perf), after a change in that apply, when the last run failed (a failed verify is never reused), or
when the last run is older than verify_max_age (default 24h). Nothing else is applied.

  fleet verify inventories/pods.yaml --limit pod-1
  fleet verify inventories/pods.yaml --set verify_perf=false
"""


def register(subparsers) -> None:
    _common.command(subparsers, "verify", HELP, DESCRIPTION, _common.add_inventory, _common.add_set, _common.add_json,
                    _common.add_connect, func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.commands import apply

    args.roles, args.check, args.diff, args.verify = ["verify"], False, False, False
    return apply.run(args, env, rerun="asked for (fleet verify)")
