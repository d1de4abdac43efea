"""The `fleet` command line: parse, call the core, print through the reporter, map errors to exit codes."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from rich.markup import escape

from . import __version__
from .commands import NAMES
from .env import Environment
from .errors import ExitStatus, FleetError

DESCRIPTION = """\
Converge a small, mixed fleet of GPU hosts (Jetson Thor, DGX Spark, rented H100 pods) over SSH with
idempotent roles (CUDA 13 toolkit, cuda-compat where needed, NVPL, cuDSS, LD_LIBRARY_PATH hooks, CUTLASS,
torch, verify), and record every host's state as JSON facts.
"""

EPILOG = """\
examples:
  fleet lab up && fleet apply inventories/lab.yaml     rehearse on simulated hosts (root, no GPU needed)
  fleet apply inventories/pods.yaml --check            what would change, and why
  fleet facts inventories/fleet.yaml                   compare hosts side by side
  fleet bootstrap "ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519"
  fleet run inventories/fleet.yaml -- nvidia-smi

exit status: 0 ok, 1 a host failed or was unreachable, 2 bad input (nothing was touched), 3 internal error.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleet", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"fleet {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in NAMES:
        try:
            module = importlib.import_module(f"fleet.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"fleet.commands.{name}":
                raise
            continue  # tests/test_cli.py insists every command is present
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    env = env or Environment()
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is a remote command (fleet run), never fleet's own options.
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    try:
        args = parser.parse_args(argv)
        args.rest = rest
    except SystemExit as exc:  # argparse: --help exits 0, a bad flag exits 2 after one line of usage
        return int(exc.code or 0)
    env.debug = args.debug
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitStatus.BAD_INPUT
    try:
        return int(args.func(args, env))
    except FleetError as exc:
        env.err_console.print(f"[bold red]error:[/bold red] {escape(str(exc))}")
        return int(exc.exit_status)
    except KeyboardInterrupt:
        env.err_console.print("interrupted")
        return ExitStatus.INTERRUPTED
    except Exception as exc:  # a bug: one sentence unless --debug
        if args.debug:
            env.err_console.print(traceback.format_exc(), markup=False)
        else:
            env.err_console.print(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the "
                                  "traceback, and please report it)", markup=False)
        return ExitStatus.INTERNAL


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
