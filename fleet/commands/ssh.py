"""`fleet ssh NAME`: log in to a host of the inventory with OpenSSH, the way fleet reaches it."""

from __future__ import annotations

import argparse

HELP = "log in to a host with OpenSSH, with its key and the host keys fleet trusts (or print an ssh_config stanza)"
DESCRIPTION = """\
Run OpenSSH's own client to the host as fleet reaches it: its address, port, user and key from the inventory, and
the host keys fleet trusts (~/.ssh/known_hosts, fleet's ~/.config/fleet/known_hosts, the inventory's known_hosts:)
with strict checking, so a changed key is refused there as fleet refuses it. Anything after -- runs as `ssh host
cmd` does. --config prints the same as an ~/.ssh/config stanza (then `ssh NAME`, scp and rsync work by name).

  fleet ssh pod-a
  fleet ssh pod-a -- nvidia-smi
  fleet ssh pod-a --config >> ~/.ssh/config          then: scp data.tar pod-a:/workspace/
"""


def register(subparsers) -> None:
    parser = subparsers.add_parser("ssh", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", metavar="NAME", help="a host of the inventory")
    parser.add_argument("--inventory", default=None, metavar="FILE",
                        help="the inventory (default: $FLEET_INVENTORY, else ~/.config/fleet/pods.yaml)")
    parser.add_argument("--config", action="store_true", help="print an ~/.ssh/config stanza instead of connecting")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    import os
    import shutil
    from pathlib import Path

    from fleet import yamlsrc
    from fleet.connection import ConnectOptions
    from fleet.errors import InputError
    from fleet.inventory import load_inventory
    from fleet.inventory.home import default_inventory

    path = env.cwd / os.path.expanduser(args.inventory) if args.inventory else default_inventory(env.cwd)
    if not path.is_file():
        raise InputError(f"inventory {path} not found; name it with --inventory FILE")
    inventory = load_inventory(path)
    host = inventory.hosts.get(args.name)
    if host is None:
        hint = yamlsrc.closest(args.name, set(inventory.hosts)).replace("valid keys", "hosts")
        raise InputError(f"no host named {args.name!r} in {path}{hint}; --inventory FILE for another")
    if host.connection != "ssh":
        raise InputError(f"{args.name!r} is reached locally (connection: local): no ssh to it")
    files = [Path("~/.ssh/known_hosts").expanduser(), ConnectOptions().fleet_known_hosts()]
    files += [Path(host.known_hosts)] if host.known_hosts else []
    options = {"HostName": host.address, "Port": str(host.port), "User": host.user,
               "UserKnownHostsFile": " ".join(str(f) for f in files), "StrictHostKeyChecking": "yes"}
    if host.key:
        options.update(IdentityFile=str(Path(os.path.expanduser(host.key))), IdentitiesOnly="yes")
    if args.config:
        stanza = {**options, "UserKnownHostsFile": " ".join(_quoted(str(f)) for f in files)}   # each file a word
        env.console.print(f"Host {host.name}\n" + "".join(f"  {k} {v if k == 'UserKnownHostsFile' else _quoted(v)}\n"
                                                          for k, v in stanza.items()),
                          markup=False, highlight=False, soft_wrap=True, end="")
        return 0
    command = list(getattr(args, "rest", []) or [])     # after --: fleet.cli keeps it apart from fleet's options
    ssh = shutil.which("ssh")
    if ssh is None:
        raise InputError("OpenSSH's ssh is not installed here (apt-get install openssh-client)")
    argv = [ssh, *(f"-o{k}={v}" for k, v in options.items()), "--", host.address, *command]
    os.execv(ssh, argv)
    return 1   # not reached


def _quoted(value: str) -> str:
    return f'"{value}"' if " " in value else value
