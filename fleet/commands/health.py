"""`fleet health INVENTORY`: the GPU health check alone, on every selected host at once."""

from __future__ import annotations

import argparse

from fleet.commands import _common

HELP = "check the GPUs' health (ECC, row remaps, Xid, PCIe, power, clocks): healthy, degraded or return the pod"
DESCRIPTION = """\
Read each selected host's GPU health with one read-only remote command (nvidia-smi's query fields and
remapped rows, the driver's recovery action and PCIe replays, the kernel log's Xid events) and judge it:
healthy, degraded (what, which GPU, NVIDIA's action) or "return this pod" (a fault only the provider can
fix: a row remap failed, a GPU missing or off the bus, Xid 79, a recovery action needing a GPU reset or a
reboot). Fast enough to run before every job; nothing is installed on the host nor written to its facts
record (the run log keeps each verdict).

  fleet health inventories/pods.yaml
  fleet health inventories/pods.yaml --limit pod-1 --json
  fleet health inventories/pods.yaml --set expect_gpus="8x H200"

A host's `expect_gpus` variable (8, H200 or 8x H200) says what was rented: fewer or other GPUs is a pod to
return. A kernel log this user cannot read shows Xid events as "unreadable", never as none.

`fleet apply`, `fleet facts` and bootstrap judge the same verdict from every field above but the PCIe replay
counters: those are this command's note only (nvidia-smi has them only in its full `nvidia-smi -q -x`, 115 ms
on an H200, the slowest nvidia-smi start: the routine probe leaves it out). Never the verdict either way.

Exit status: 0 every host healthy (or without a GPU), 5 a host to return, 1 a host unreachable, 6 a host
degraded or whose GPU health could not be read (in that order).
"""


def register(subparsers) -> None:
    _common.command(subparsers, "health", HELP, DESCRIPTION, _common.add_inventory, _common.add_set, _common.add_json,
                    _common.add_connect, func=run)


def run(args: argparse.Namespace, env) -> int:
    from fleet.report import reporter_for
    from fleet.report.health import HealthPrinter
    from fleet.workflows.health import HealthRequest, check_hosts

    reporter = reporter_for(env)
    connect = _common.connect_options(args, reporter)
    inventory, hosts = _common.selected_hosts(args)
    request = HealthRequest(connect=connect, forks=args.forks, debug=env.debug,
                            argv=("fleet", *getattr(args, "argv", [args.command])))
    printer = HealthPrinter(reporter, json_out=args.json)
    result = check_hosts(inventory, hosts, request)
    printer.finish(result)
    return result.status
