"""A new pod's first apply on a lab with bandwidth: wall time, each chain's time per host, the critical path.

    FLEET_BENCH_NET=127.0.32 python3 bench/first_apply.py              # 1 and 4 H100-pod hosts, medians of 3
    python3 bench/first_apply.py --hosts 1 --rounds 1 --tools fleet    # quick

The lab serves its stand-ins at the real sizes scaled (fleet_lab/bandwidth.py: FLEET_LAB_SCALE, default 1/100)
at a pod's link scaled (FLEET_LAB_RATE, default "pod": 1 Gbit/s * TIME / SCALE per host), so the first apply's
wall time depends on bytes and concurrency as on a pod. Hosts are H100 pods only (pod-570 and pod-580's
profiles alternating): the ones that install the toolkit, torch cu130 with its nvidia-* wheels and CUTLASS.

Printed per size (medians over --rounds first applies, each on fresh hosts):
  - fleet's wall time for the whole first apply;
  - each chain's time per host as a waterfall (text). A chain is a group of roles that needs nothing from
    another (CHAINS). Where `fleet apply --json` gives each task `chain`, `started`, `ended` (seconds since the
    apply started on the host), the waterfall is read from those; where it does not, each chain is timed alone
    (`fleet apply --roles <its roles>` on fresh hosts: that host's apply phase, else its `seconds`)
    and the waterfall is drawn as the engine runs them then: one after the other;
  - the longest single chain (the limit for any schedule) and the sum of all chains (what serial costs);
  - the Ansible and pyinfra peers' first runs (bench/peers/, same roles, same mirror) on the same fresh hosts.
Figures, not assertions: this machine is shared. bench/README.md keeps them with the command line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
os.environ.setdefault("FLEET_BENCH_NET", "127.0.32")
os.environ.setdefault("FLEET_BENCH_ROOT", str(Path(tempfile.gettempdir()) / f"fleet-lab-bench-first-{os.getuid()}"))

import _labn  # noqa: E402
import _peers  # noqa: E402
import compare  # noqa: E402

# Independent chains of a pod's first apply (issue 27): apt (toolkit, then compat: one dpkg lock), the venv and
# torch, the CUTLASS clone, and the small library/hook roles; verify needs all of them and comes last.
CHAINS = {"apt": ["cuda_toolkit", "cuda_compat"], "torch": ["torch"], "cutlass": ["cutlass"],
          "libs+hooks": ["cudss", "nvpl", "env_hooks"], "verify": ["verify"]}
POD_PROFILES = ("pod-570", "pod-580")
SETS: list[str] = []   # --set NAME=VALUE for every fleet apply (e.g. torch_installer=pip)


def fleet(inventory: Path, *args: str) -> compare.Run:
    """`fleet apply` as compare.fleet runs it, its JSON read from stdout alone (stderr carries the run log's
    path after it)."""
    import json
    import subprocess

    started = time.monotonic()
    sets = [a for v in SETS for a in ("--set", v)]
    proc = subprocess.run([sys.executable, "-m", "fleet", "apply", str(inventory), "--json", *sets, *args],
                          capture_output=True, text=True, cwd=BENCH.parent)
    wall = time.monotonic() - started
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(f"fleet apply {' '.join(args)} printed no JSON (exit {proc.returncode}):\n"
                         f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    hosts = doc.get("hosts", {})
    changed = sum(h.get("changed", 0) for h in hosts.values() if isinstance(h, dict))
    failures = compare.failures(hosts)
    return compare.Run(wall, proc.returncode, 0.0, changed, len(failures), 0.0, failures, doc)


def inventory_doc(n: int) -> dict:
    doc = _labn.inventory_doc(4)
    specs = {base: doc["hosts"][f"{base}-{i:03d}"] for i, base in ((3, "pod-570"), (4, "pod-580"))}
    hosts = {}
    for i in range(n):
        base = POD_PROFILES[i % 2]
        hosts[f"{base}-{i + 1:03d}"] = dict(specs[base], address=f"{_labn.NET}.{_labn.FIRST + i}")
    return {"facts_dir": "facts", "vars": doc["vars"], "hosts": hosts,
            "groups": {"pods": {"hosts": list(hosts)}}}


def lab_up(workdir: Path, n: int) -> Path:
    import yaml

    inventory = workdir / f"pods-{n}.yaml"
    inventory.write_text(yaml.safe_dump(inventory_doc(n), sort_keys=False))
    os.environ["FLEET_LAB_ROOT"] = str(_labn.lab_root())
    started = time.monotonic()
    _labn.reset(inventory)
    print(f"lab: {n} pod hosts up and fresh in {time.monotonic() - started:.1f} s (root {_labn.lab_root()})",
          flush=True)
    return inventory


def task_times(doc: dict) -> dict[str, dict[str, tuple[float, float]]] | None:
    """host -> chain -> (start, end) from the tasks' own `chain`/`started`/`ended`; None where they are absent."""
    out = {}
    for host, h in doc.get("hosts", {}).items():
        spans: dict[str, tuple[float, float]] = {}
        for t in h.get("tasks", []) if isinstance(h, dict) else []:
            if t.get("started") is None or t.get("ended") is None:
                continue
            chain = t.get("chain") or t.get("role")
            s, e = spans.get(chain, (t["started"], t["ended"]))
            spans[chain] = (min(s, t["started"]), max(e, t["ended"]))
        if not spans:
            return None
        out[host] = spans
    return out


def chains_alone(inventory: Path) -> dict[str, dict[str, float]]:
    """host -> chain -> seconds, each chain applied alone on fresh hosts (the fallback without task times)."""
    out: dict[str, dict[str, float]] = {}
    for chain, roles in CHAINS.items():
        _labn.reset(inventory)
        if chain == "verify":   # verify checks what the others installed: time it on a host that has them
            fleet(inventory)
            run = fleet(inventory, "--roles", "verify")
        else:
            run = fleet(inventory, "--roles", ",".join(roles))
        for host, stats in run.doc.get("stats", {}).items():
            phases = (run.doc["hosts"].get(host) or {}).get("phases") or {}
            # the chain's own work: the apply phase (probe and connection are paid once in a whole apply)
            out.setdefault(host, {})[chain] = phases.get("apply", stats["seconds"])
    return out


def waterfall(spans: dict[str, tuple[float, float]], width: int = 60) -> list[str]:
    end = max(e for _, e in spans.values()) or 1.0
    lines = []
    for chain, (s, e) in sorted(spans.items(), key=lambda kv: kv[1]):
        a, b = int(s / end * width), max(int(e / end * width), int(s / end * width) + 1)
        lines.append(f"    {chain:<11} {' ' * a}{'#' * (b - a)}{' ' * (width - b)} {s:6.2f}-{e:6.2f} s")
    return lines


def median_spans(per_round: list[dict[str, tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    chains = set().union(*per_round)
    return {c: (statistics.median(r[c][0] for r in per_round if c in r),
                statistics.median(r[c][1] for r in per_round if c in r)) for c in chains}


def measure(n: int, args, workdir: Path) -> dict:
    inventory = lab_up(workdir, n)
    out = {"n": n}
    try:
        walls, spans_rounds, alone_rounds, phases = [], [], [], []
        for i in range(args.rounds):
            if i:
                _labn.reset(inventory)
            run = fleet(inventory)
            if run.rc != 0 or run.failed:
                print(f"  fleet first apply failed: {run.failures}", flush=True)
            walls.append(run.wall)
            phases.append({h: (d or {}).get("phases", {}) for h, d in run.doc.get("hosts", {}).items()})
            print(f"  fleet apply first {run.wall:7.2f} s  changed {run.changed}  failed {run.failed}", flush=True)
            spans = task_times(run.doc)
            if spans is not None:
                spans_rounds.append(spans)
            elif len(alone_rounds) < args.chain_rounds:
                alone_rounds.append(chains_alone(inventory))
        out["fleet_wall"] = statistics.median(walls)
        out["phases"] = {k: statistics.median(p[h].get(k, 0) for p in phases for h in p)
                         for k in ("probe", "apply", "verify")}
        hosts = sorted(inventory_doc(n)["hosts"])
        out["source"] = "task times (chain/started/ended)" if spans_rounds else \
            "each chain alone (started/ended absent from fleet's JSON); drawn serial, as the engine runs them"
        per_host = {}
        for host in hosts if (spans_rounds or alone_rounds) else []:
            if spans_rounds:
                per_host[host] = median_spans([r[host] for r in spans_rounds if host in r])
            else:
                secs = {c: statistics.median(r[host][c] for r in alone_rounds if c in r.get(host, {}))
                        for c in CHAINS}
                t, spans = 0.0, {}
                for c in CHAINS:   # serial, in the roles' order
                    spans[c] = (t, t + secs[c])
                    t += secs[c]
                per_host[host] = spans
        out["per_host"] = per_host
        if per_host:
            out["longest_chain"] = statistics.median(max(e - s for s, e in sp.values()) for sp in per_host.values())
            out["sum_of_chains"] = statistics.median(sum(e - s for s, e in sp.values()) for sp in per_host.values())
        if set(args.tools) - {"fleet"}:
            try:
                peers(n, args, workdir, inventory, out)
            except Exception as error:   # fleet's figures stand without the peers'
                print(f"  peers: could not run ({type(error).__name__}: {error})", flush=True)
    finally:
        _labn.down(inventory, purge=False)
    return out


def peers(n: int, args, workdir: Path, inventory: Path, out: dict) -> None:
    ctx = compare.Ctx(n, workdir, inventory, {h.address: h.name for h in _peers.hosts_of(inventory)})
    verify = _peers.write_verify(workdir, inventory)
    decisions = _peers.decisions_of(inventory)
    ctx.ansible_hosts = _peers.write_ansible(workdir, inventory, _labn.lab_root(), verify, decisions)
    ctx.pyinfra_inventory = _peers.write_pyinfra(workdir, inventory, _labn.lab_root(), verify, decisions)
    for tool in [t for t in args.tools if t != "fleet"]:
        runner = getattr(compare, tool)
        walls = []
        for _ in range(args.rounds):
            _labn.reset(inventory)
            run = runner(ctx, workdir / f"{tool}.log")
            print(f"  {tool:<8} first {run.wall:7.2f} s  changed {run.changed}  failed {run.failed}",
                  flush=True)
            walls.append(run.wall)
        out[tool] = statistics.median(walls)


def report(r: dict, rounds: int) -> None:
    from fleet_lab import bandwidth

    print(f"\n== {r['n']} host(s): first apply, medians of {rounds}; lab at 1/{bandwidth.scale()} of the real "
          f"sizes, {bandwidth.host_rate() / 1e6:.1f} MB/s per host ({bandwidth.rate_setting()})")
    print(f"  chain times from: {r['source']}" + (f"; fleet apply --set {' --set '.join(SETS)}" if SETS else ""))
    for host, spans in r["per_host"].items():
        print(f"  {host}")
        for line in waterfall(spans):
            print(line)
    wall = r["fleet_wall"]
    if "longest_chain" in r:
        longest, total = r["longest_chain"], r["sum_of_chains"]
        print(f"  fleet wall {wall:.2f} s | longest chain {longest:.2f} s (wall/longest {wall / longest:.2f}x) | "
              f"sum of chains {total:.2f} s (sum/wall {total / wall:.2f}x)")
    else:
        print(f"  fleet wall {wall:.2f} s (chains not timed)")
    ph = r["phases"]
    print(f"  fleet's phases per host (median): probe {ph['probe']:.2f} s, apply {ph['apply']:.2f} s, "
          f"verify {ph['verify']:.2f} s")
    for tool in ("ansible", "pyinfra"):
        if tool in r:
            print(f"  {tool} first run {r[tool]:.2f} s ({r[tool] / wall:.2f}x fleet's wall)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", default="1,4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tools", default="fleet,ansible,pyinfra")
    parser.add_argument("--chain-rounds", type=int, default=1,
                        help="times each chain alone (only without task times; each costs a first apply per chain)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="passed to fleet apply")
    args = parser.parse_args()
    SETS.extend(args.set)
    args.tools = [t for t in args.tools.split(",") if t]
    if set(args.tools) - {"fleet"}:
        _peers.ensure_venv()
    compare.bytecode_as_installed()
    results = []
    with tempfile.TemporaryDirectory(prefix="fleet-bench-first-") as tmp:
        for n in [int(x) for x in args.hosts.split(",")]:
            print(f"\n== {n} host(s)", flush=True)
            workdir = Path(tmp) / str(n)
            workdir.mkdir()
            results.append(measure(n, args, workdir))
            report(results[-1], args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
