"""`fleet bootstrap SSH_LINE`: a new pod from the SSH line its provider shows to a verified stack."""

from __future__ import annotations

import argparse
import os

from fleet import parse
from fleet.commands import _common

HELP = "a new pod, from its SSH line to a verified stack, in one shot"
DESCRIPTION = """\
Paste the SSH line your provider shows: fleet waits for the pod to answer (it may still be booting), takes
its host key on first use and shows the fingerprint (a CHANGED key is always refused), gathers facts,
detects the platform, adds the pod to the inventory (~/.config/fleet/pods.yaml unless --inventory or
$FLEET_INVENTORY names another: the one apply, facts and forget use when given none; comments kept, one entry
per pod; a pod another known inventory holds is named, not added twice), applies every role,
verifies, records facts, and prints a summary with the line to connect with. Run it again: nothing changes.
A pod that cannot be provisioned (refused by the decisions, disk too small, unreachable) is not added.

  fleet bootstrap "ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519"
  fleet bootstrap root@203.0.113.10:17322 --name pod-a --inventory team-pods.yaml

A pod whose NVIDIA sources come from a mirror that serves its own cuda-keyring .deb (the lab's): --keyring-pins
FILE (`sha256sum` lines, e.g. the lab's $FLEET_LAB_ROOT/keyring.sha256) pins that .deb for this pod only, written
into its own entry; every other host keeps fleet's pins for NVIDIA's real keyring.

  fleet bootstrap "ssh root@127.0.1.13 -p 22 -i /var/lib/fleet-lab/id_ed25519" --name lab-pod \\
      --keyring-pins /var/lib/fleet-lab/keyring.sha256 --inventory inventories/lab-pods.yaml
"""


def register(subparsers) -> None:
    parser = _common.command(subparsers, "bootstrap", HELP, DESCRIPTION)
    parser.add_argument("target", nargs="+", metavar="SSH_LINE_OR_TARGET",
                        help="the SSH line as pasted (quote it), or user@host[:port]")
    parser.add_argument("-p", "--port", type=parse.flag(parse.count, most=65535), default=None, metavar="PORT", help="SSH port (default 22)")
    parser.add_argument("-i", "--identity", dest="key", default=None, metavar="KEY", help="private key file")
    parser.add_argument("-o", dest="ssh_options", action="append", default=[], metavar="OPTION",
                        help="ssh -o options pasted with the line: Port, User and IdentityFile are used, "
                             "the others ignored")
    parser.add_argument("--name", default=None, help="host name in the inventory (default: derived, e.g. pod-10-17322)")
    parser.add_argument("--inventory", default=None, metavar="FILE",
                        help="inventory to add the pod to (default: $FLEET_INVENTORY, else ~/.config/fleet/pods.yaml, "
                             "which apply, facts, validate and forget use when given none; created if missing)")
    parser.add_argument("--wait", type=parse.flag(parse.seconds, zero=True), default=300.0, metavar="SECONDS",
                        help="keep retrying a pod that does not answer yet, with backoff, this long (default: 300)")
    parser.add_argument("--connect-timeout", type=parse.flag(parse.seconds), default=10.0, metavar="SECONDS",
                        help="give up one connection attempt after this long (default: 10)")
    parser.add_argument("--keyring-pins", default=None, metavar="FILE",
                        help="sha256sum lines (DIGEST  URL) of the cuda-keyring .debs this pod's mirror serves at "
                             "NVIDIA's URLs (the lab's: $FLEET_LAB_ROOT/keyring.sha256), written into this pod's "
                             "entry only: other hosts keep fleet's pins")
    parser.add_argument("--ignore-health", action="store_true",
                        help="provision the pod even where its GPU health says to return it (a row remap failed, a "
                             "GPU missing or off the bus, a reset the provider must do): by default bootstrap stops "
                             "there, before installing anything, with exit status 5")
    _common.add_set(parser)
    _common.add_json(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    import shlex

    from fleet.inventory.home import default_inventory
    from fleet.report.bootstrap import print_result
    from fleet.workflows.bootstrap import bootstrap
    from fleet.workflows.ssh_line import parse_target
    from fleet.errors import ExitStatus

    words = list(args.target) + [w for opt in args.ssh_options for w in ("-o", opt)]
    line = words[0] if len(words) == 1 else shlex.join(words)
    target = parse_target(line, port=args.port, key=args.key, cwd=env.cwd)
    if args.keyring_pins:   # bad input: exit 2, nothing touched
        target.pins = _pins(env.cwd / os.path.expanduser(args.keyring_pins))
    inventory = env.cwd / os.path.expanduser(args.inventory) if args.inventory else default_inventory(env.cwd)
    reporter = reporter_for(env)
    for note in target.notes:
        reporter.progress("bootstrap", note)
    values = _common.overrides(args)    # bad input: exit 2, nothing touched
    with reporter.heartbeat(live=not args.json):   # on a terminal: a live status line while it runs
        result = bootstrap(target, inventory_path=inventory, name=args.name, wait=args.wait,
                           connect_timeout=args.connect_timeout, progress=reporter.progress, overrides=values,
                           on_task=reporter.on_task, ignore_health=args.ignore_health)
    print_result(reporter, result, json_out=args.json)
    if result.ok:
        return ExitStatus.OK
    returned = result.health is not None and result.health.verdict == "return" and not args.ignore_health
    return ExitStatus.RETURN_POD if returned else ExitStatus.HOST_FAILED


def _pins(path):
    from fleet.errors import InputError
    from fleet.inventory import read_keyring_pins

    pins = read_keyring_pins(path, fix="fix the --keyring-pins path (the lab's is $FLEET_LAB_ROOT/keyring.sha256)")
    if not pins:
        raise InputError(f"--keyring-pins {path} holds no 'SHA256  https://URL' line; give the file the mirror wrote "
                         "(the lab's is $FLEET_LAB_ROOT/keyring.sha256)")
    return pins
