"""What the GPU health sources (issue 36) cost a converged host's no-op probe: the facts probe's remote command timed
with them and without them (main's probe: the same sources less `health`, `health_xml`, `xid`), interleaved round by
round on the same connection, medians; then each health source alone, and `fleet health`'s own command.

    python3 bench/health_cost.py --inventory INV.yaml --limit HOST [--rounds 15] [--json OUT.json]

The probe runs its sources at once (fleet.sections.together): what the health sources add is what they take
beyond the slowest of the others, not their sum.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEALTH_SOURCES = ("health", "health_xml", "xid")


def scripts(vars: dict) -> dict[str, str]:
    from fleet import sections
    from fleet.engine import probe
    from fleet.facts.sources import BY_NAME
    from fleet.workflows import health

    parts = dict(zip([s for s in probe.bodies(probe.Needs.of(vars))], probe.parts(probe.Needs.of(vars))))
    out = {"probe with health": sections.together(list(parts.values())),
           "probe without health (main)": sections.together([p for n, p in parts.items() if n not in HEALTH_SOURCES]),
           "fleet health's command": health.script()}
    for name in HEALTH_SOURCES:
        out[f"source {name} alone"] = sections.together([sections.background(
            f"facts.{name}", f"export LC_ALL=C\n{BY_NAME[name].command({})}")])
    return out


# bash's `times` after the script: the CPU (user + system) of every process it started, on the host. Unlike the wall
# time it hardly moves with the host's load (a shared 2-core machine under load 20 moves a probe's wall by +-0.3 s).
CPU = '\n( {script}\n) >/dev/null 2>&1\ntimes'


def _cpu(times_output: str) -> float:
    """`times`' second line ("0m0.041s 0m0.052s": children's user and system) -> seconds."""
    import re

    lines = [line for line in times_output.strip().splitlines() if re.search(r"\dm[\d.]+s", line)]
    found = re.findall(r"(\d+)m([\d.]+)s", lines[-1])
    return sum(int(m) * 60 + float(sec) for m, sec in found)


def measure(conn, texts: dict[str, str], rounds: int) -> dict[str, dict]:
    from fleet import shell

    times: dict[str, list[float]] = {name: [] for name in texts}
    cpu: dict[str, list[float]] = {name: [] for name in texts}
    for text in texts.values():
        conn.run(shell.ends_with_connection(text, local=False))          # warm: caches, the first nvidia-smi
    for _ in range(rounds):
        for name, text in texts.items():
            started = time.perf_counter()
            conn.run(shell.ends_with_connection(text, local=False))
            times[name].append(time.perf_counter() - started)
            cpu[name].append(_cpu(conn.run(CPU.format(script=text)).stdout))
    return {name: {"median_s": round(statistics.median(t), 4), "min_s": round(min(t), 4), "max_s": round(max(t), 4),
                   "cpu_median_s": round(statistics.median(cpu[name]), 4), "rounds": len(t)}
            for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--limit", required=True, help="one host")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", default=None, help="write the figures here too")
    args = parser.parse_args(argv)

    from fleet.connection import ConnectOptions, connect
    from fleet.engine.session import variables
    from fleet.inventory import load_inventory

    inventory = load_inventory(args.inventory)
    host = inventory.hosts[args.limit]
    with connect(host, ConnectOptions(accept_new_host_keys=True)) as conn:
        figures = measure(conn, scripts(variables(None, host.vars)), args.rounds)
    added = figures["probe with health"]["median_s"] - figures["probe without health (main)"]["median_s"]
    added_cpu = figures["probe with health"]["cpu_median_s"] - figures["probe without health (main)"]["cpu_median_s"]
    doc = {"host": host.name, "figures": figures, "added_to_probe_s": round(added, 4),
           "added_cpu_s": round(added_cpu, 4)}
    for name, f in figures.items():
        print(f"{name:34} median {f['median_s']:.3f} s  (min {f['min_s']:.3f}, max {f['max_s']:.3f}, {f['rounds']} "
              f"rounds), CPU {f['cpu_median_s']:.3f} s")
    print(f"{'added to the no-op probe':34} {added:+.3f} s wall (target < 0.2 s), {added_cpu:+.3f} s CPU")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
