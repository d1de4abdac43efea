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
reboot). Fast enough to run before every job; nothing is installed or recorded.

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
    from fleet.connection.parallel import on_hosts
    from fleet.inventory import load_inventory, set_vars
    from fleet.engine.session import check_variables
    from fleet.workflows import health

    inventory = load_inventory(args.inventory)
    hosts = inventory.select(args.limit)
    set_vars(hosts, _common.overrides(args))
    check_variables(hosts, inventory.roles_path)      # a bad expect_gpus: exit 2, nobody contacted
    reporter = reporter_for(args, env)
    outcomes = on_hosts(hosts, lambda conn, host: health.check(conn, host),
                        options=_common.connect_options(args, reporter), forks=args.forks, debug=env.debug)
    verdicts = {name: o.value[0] for name, o in outcomes.items() if not o.error}
    if args.json:
        reporter.json({name: {**verdicts[name].to_json(), "facts": o.value[1]} if name in verdicts else None
                       for name, o in outcomes.items()}, outcomes,
                      errors={name: o.error for name, o in outcomes.items() if o.error})
    else:
        print_verdicts(reporter, outcomes, verdicts)
    return exit_status(outcomes, verdicts)


def exit_status(outcomes, verdicts) -> int:
    from fleet.errors import ExitStatus

    if any(o.interrupted for o in outcomes.values()):
        return ExitStatus.INTERRUPTED
    kinds = {v.verdict for v in verdicts.values()}
    if "return" in kinds:
        return ExitStatus.RETURN_POD
    if any(o.error for o in outcomes.values()):
        return ExitStatus.HOST_FAILED
    # degraded, or a GPU host whose health could not be read (no nvidia-smi, NVML failing): not a go for a job
    return ExitStatus.GPU_DEGRADED if kinds & {"degraded", "unknown"} else ExitStatus.OK


STYLE = {"healthy": "green", "none": "dim", "degraded": "yellow", "return": "red", "unknown": "yellow"}


def print_verdicts(reporter, outcomes, verdicts) -> None:
    from rich.markup import escape
    from rich.table import Table

    from fleet.report import safe_value

    table = Table(title="GPU health", title_justify="left")
    for name in ("host", "verdict", "GPUs", "findings (NVIDIA's action), keep or return"):
        table.add_column(name, overflow="fold")
    for name, outcome in outcomes.items():
        if outcome.error:
            table.add_row(escape(name), "[red]unreachable[/red]", "-", escape(safe_value(outcome.error)))
            continue
        v = verdicts[name]
        lines = [f.line() for f in v.findings] or [v.reason]
        lines.append(v.advice)
        style = STYLE.get(v.verdict, "")
        table.add_row(escape(name), f"[{style}]{'return this pod' if v.verdict == 'return' else v.verdict}[/{style}]",
                      str(v.gpus), escape(safe_value("\n".join(lines))))
    reporter.print(table)
    reporter.note(", ".join(f"{name} {o.seconds:.2f}s/{o.remote_commands} cmd" for name, o in outcomes.items()))
