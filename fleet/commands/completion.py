"""`fleet completion bash|zsh|fish`: the shell code that completes fleet's commands, flags and host names."""

from __future__ import annotations

import argparse

HELP = "print shell completion code (bash, zsh or fish)"
DESCRIPTION = """\
Print the code that makes your shell complete fleet's commands, flags and, after --limit, the inventory's host
and group names. Load it once per shell, or put the line in your shell's startup file:

  eval "$(fleet completion bash)"        # ~/.bashrc
  eval "$(fleet completion zsh)"         # ~/.zshrc
  fleet completion fish | source         # ~/.config/fish/config.fish
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("completion", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shell", choices=("bash", "zsh", "fish"), help="your shell")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.completion import shellcode

    env.console.file.write(shellcode(args.shell))   # as is: shell code, never wrapped or styled
    return 0
