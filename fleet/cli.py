"""The `fleet` command line: parse, call the core, print through the reporter, map errors to exit codes."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import traceback

from rich.markup import escape

from fleet import __version__
from fleet import completion
from fleet.commands import NAMES
from fleet.env import Environment
from fleet.errors import ExitStatus, FleetError, InputError

DESCRIPTION = """\
Converge a small, mixed fleet of GPU hosts (Jetson Thor, DGX Spark, rented H100 pods) over SSH with
idempotent roles (CUDA 13 toolkit, cuda-compat where needed, NVPL, cuDSS, LD_LIBRARY_PATH hooks, CUTLASS,
torch, verify), and record every host's state as JSON facts.
"""

EPILOG = """\
examples:
  fleet lab up && fleet apply inventories/lab.yaml     rehearse on simulated hosts (root, no GPU needed)
  fleet apply --check                                  what would change on your pods, and why
  fleet facts inventories/fleet.yaml                   compare hosts side by side
  fleet bootstrap "ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519"
  fleet run inventories/fleet.yaml -- nvidia-smi

-v, -q and --debug go anywhere on the line (before a remote command's --).
A command given no inventory uses $FLEET_INVENTORY, else ~/.config/fleet/pods.yaml (where bootstrap adds pods).
exit status: 0 ok, 1 a host failed, was unreachable or refused, 2 bad input (nothing was touched), 3 internal
error, 4 changes pending (only `fleet apply --check --detailed-exitcode`), 5 a GPU fault only the provider can
fix: "return this pod" (fleet health, apply, verify, bootstrap), 6 a GPU degraded or its health unreadable (only
`fleet health`), 130 interrupted (Ctrl-C: hosts not
yet started are skipped, the recap says what each host had done; an apply's remote work is stopped), 143 on
SIGTERM and 129 on SIGHUP, handled as Ctrl-C is.
"""


def _add_output_flags(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """-v/-q/--debug on the main parser and on every subcommand, so they work anywhere on the line.
    On subcommands the default is SUPPRESS: a flag given before the subcommand is not reset after it."""
    keep = {} if top else {"default": argparse.SUPPRESS}
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors",
                        **({"default": False} if top else keep))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-v", "--verbose", action="count", help="more detail: one line per remote command "
                       "(exit status, seconds), and tasks already in state", **({"default": 0} if top else keep))
    group.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr: results and "
                       "errors only", **({"default": False} if top else keep))
    parser.add_argument("--color", choices=("auto", "always", "never"), help="colors and styles: auto (the "
                        "default: on a terminal, unless NO_COLOR is set), always (as on a terminal, e.g. for "
                        "less -R), never", **({"default": "auto"} if top else keep))



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleet", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"fleet {__version__}")
    _add_output_flags(parser, top=True)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in NAMES:
        try:
            module = importlib.import_module(f"fleet.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"fleet.commands.{name}":
                raise
            continue  # tests/test_cli.py insists every command is present
        module.register(subparsers)
    _flags_everywhere(subparsers)
    return parser


# What other tools call the flag fleet has (Ansible, terraform, rsync, many CLIs): named in the did-you-mean.
_OTHER_TOOLS = {"--dry-run": "--check", "-n": "--check", "-C": "--check", "-e": "--set NAME=VALUE",
                "--extra-vars": "--set NAME=VALUE", "--var": "--set NAME=VALUE", "--no-color": "--color never",
                "--nocolor": "--color never", "--inventory": "INVENTORY (a positional argument)",
                "-i": "INVENTORY (a positional argument)", "--tags": "--roles", "-t": "--roles",
                "--yes": "(nothing: fleet does not ask)", "-y": "(nothing: fleet does not ask)"}


def _unknown_flags(parser: argparse.ArgumentParser, argv: list[str], unknown: list[str]) -> None:
    """An unknown flag answered by the subcommand it was given to: its usage line, and the closest flag it has
    (or the one another tool's name stands for: --dry-run is --check). Exits 2, as argparse does."""
    import difflib

    sub = parser
    for word in argv:   # the deepest subcommand named on the line (fleet lab up ...)
        choices = next((a.choices for a in sub._actions if isinstance(a, argparse._SubParsersAction)), None)
        if choices and word in choices:
            sub = choices[word]
    flags = [s for action in sub._actions for s in action.option_strings]
    hints = []
    for word in unknown:
        if not word.startswith("-"):
            continue
        name = word.split("=", 1)[0]
        close = _OTHER_TOOLS.get(name) or next(iter(difflib.get_close_matches(name, flags, n=1, cutoff=0.6)), None)
        if close:
            hints.append(f"did you mean {close} for {name}?" if len(unknown) > 1 else f"did you mean {close}?")
    sub.error(f"unrecognized argument{'s' if len(unknown) > 1 else ''} {' '.join(unknown)}: "
              + (" ".join(hints) + " " if hints else "") + f"({sub.prog} --help lists them all)")


def _flags_everywhere(subparsers) -> None:
    for sub in subparsers.choices.values():
        _add_output_flags(sub, top=False)
        for action in sub._actions:   # nested commands (fleet lab up) too
            if isinstance(action, argparse._SubParsersAction):
                _flags_everywhere(action)


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    env = env or Environment()
    parser = build_parser()
    completion.complete(parser)        # the shell asking for candidates (argcomplete): answers and exits
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is a remote command (fleet run), never fleet's own options.
    rest = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            _unknown_flags(parser, argv, unknown)
        args.rest = rest
        args.argv = argv + (["--", *rest] if rest else [])   # the command line as given (the run log keeps it)
    except SystemExit as exc:  # argparse: --help exits 0, a bad flag exits 2 after one line of usage
        return int(exc.code or 0)
    env.debug, env.quiet, env.verbose = args.debug, args.quiet, args.verbose or 0   # the output flags, once
    _color(env, args.color)
    if not getattr(args, "func", None):
        parser.print_help()
        return ExitStatus.BAD_INPUT
    signalled: list[int] = []
    previous = _catch_signals(signalled)
    try:
        _inventory_from_env(args)
        status = int(args.func(args, env))
        return 128 + signalled[0] if signalled and status == ExitStatus.INTERRUPTED else status
    except FleetError as exc:
        from fleet.report import markup_safe   # the one terminal filter: an error may quote a host's or a record's text
        env.err_console.print(f"[bold red]error:[/bold red] {markup_safe(exc)}")
        return int(exc.exit_status)
    except KeyboardInterrupt:
        env.err_console.print("interrupted")
        return 128 + signalled[0] if signalled else ExitStatus.INTERRUPTED
    except Exception as exc:  # a bug: one sentence unless --debug
        if args.debug:
            env.err_console.print(traceback.format_exc(), markup=False)
        else:
            from fleet.report import terminal_safe
            env.err_console.print(f"internal error: {type(exc).__name__}: {terminal_safe(exc)} (run with --debug "
                                  "for the traceback, and please report it)", markup=False)
        return ExitStatus.INTERNAL
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


# SIGTERM (a service manager, `kill`, a CI timeout) and SIGHUP (the terminal went away) end a run as Ctrl-C
# does: hosts not started are skipped, the ones running are aborted (an apply's remote work stops with its
# connection: fleet/engine/hostlock.py), the recap says what each had done; the exit status is 128 + the signal.
_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _catch_signals(signalled: list[int]) -> dict:
    if threading.current_thread() is not threading.main_thread():   # signals reach the main thread only
        return {}

    def interrupt(signum, _frame):
        signalled.append(signum)
        if len(signalled) == 1:      # a second one while the recap is printed changes nothing
            raise KeyboardInterrupt

    return {sig: signal.signal(sig, interrupt) for sig in _SIGNALS}


def _color(env: Environment, mode: str) -> None:
    """--color on both consoles. auto leaves Rich's own rule (a terminal, NO_COLOR, FORCE_COLOR); never drops every
    style, keeping the layout; always renders as for a terminal (Rich has no public setter for either)."""
    from rich.console import ColorSystem

    for console in (env.console, env.err_console):
        if mode == "never":
            console.no_color = True
            console._color_system = None
        elif mode == "always":
            console._force_terminal = True
            console.no_color = False
            if console._color_system is None:
                console._color_system = ColorSystem.STANDARD


def _inventory_from_env(args: argparse.Namespace) -> None:
    """A command's INVENTORY, when omitted, is the one home for pods (FLEET_INVENTORY, else ~/.config/fleet/pods.yaml:
    fleet/inventory/home.py), where fleet bootstrap adds them."""
    if not getattr(args, "needs_inventory", False) or args.inventory:
        return
    from fleet.inventory.home import default_inventory, shown

    path = default_inventory()
    if not path.is_file():
        source = "FLEET_INVENTORY names" if os.environ.get("FLEET_INVENTORY") else "the default inventory,"
        raise InputError(f"fleet {args.command} needs an inventory: none named, and {source} {shown(path)} does not "
                         f"exist yet (fleet bootstrap adds pods there); name one (e.g. fleet {args.command} "
                         "inventories/lab.yaml) or set FLEET_INVENTORY")
    args.inventory = str(path)


def entry() -> None:
    code = main()
    if code == ExitStatus.INTERRUPTED:
        # Ctrl-C: the recap is printed; hosts cut short may still sit in a library's blocking read (paramiko,
        # invoke). Do not wait for them at exit: flush what we printed and go, within the promised 2 s.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
