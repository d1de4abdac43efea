"""The one table of bench/compare.py, the profile of fleet's no-op, and the JSON of every figure."""

from __future__ import annotations

import statistics
from dataclasses import asdict

ORDER = ("fleet apply", "fleet facts", "fleet run true", "ansible", "pyinfra")
med = statistics.median


def _fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def _noop(results_n: dict, tool: str):
    runs = results_n.get(tool, {}).get("noop")
    return med(r.wall for r in runs) if runs else None


def print_report(results: dict, versions: dict) -> None:
    print("\nfleet vs Ansible vs pyinfra on the lab (seconds: medians of whole runs over all hosts in parallel)")
    if versions:
        print("peers: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    head = (f"{'tool':<15}{'hosts':>6}{'first':>8}{'no-op':>8}{'no-op chg':>10}{'cmds/host':>16}{'peak MB':>9}"
            f"{'x floor':>9}{'ansible/x':>10}{'pyinfra/x':>10}")
    print(head)
    print("-" * len(head))
    for n, res in results.items():
        floor, ans, pyi = _noop(res, "fleet run true"), _noop(res, "ansible"), _noop(res, "pyinfra")
        for tool in ORDER:
            if tool not in res:
                continue
            first, noop = res[tool].get("first") or [], res[tool]["noop"]
            t_first = med(r.wall for r in first) if first else None
            t_noop = med(r.wall for r in noop)
            cmds = f"{_fmt(med(r.commands for r in first) if first else None, '.1f')} / {med(r.commands for r in noop):.1f}"
            rss = max(r.maxrss_mb for r in first + noop)
            print(f"{tool:<15}{n:>6}{_fmt(t_first):>8}{t_noop:>8.2f}{max(r.changed for r in noop):>10}{cmds:>16}"
                  f"{rss:>9.0f}{_fmt(t_noop / floor if floor else None, '.1f'):>9}"
                  f"{_fmt(ans / t_noop if ans else None, '.1f'):>10}{_fmt(pyi / t_noop if pyi else None, '.1f'):>10}")
    print("first: first run on fresh hosts; no-op: the run after; no-op chg: changes a no-op still reports (max);\n"
          "cmds/host: remote commands per host, first / no-op; peak MB: controller process tree's peak RSS;\n"
          "x floor: no-op over `fleet run -- true`; ansible/x, pyinfra/x: how many times faster than that peer.")
    for n, res in results.items():
        if "_profile" in res:
            print_profile(n, res["_profile"])


def _per_host(runs, key):
    """Median over runs of a per-host figure, then median and max over hosts."""
    hosts = runs[0].doc.get("stats", {}).keys()
    values = [med(r.doc["stats"][h][key] for r in runs) for h in hosts]
    return (med(values), max(values)) if values else (None, None)


def print_profile(n: int, prof: dict) -> None:
    noop, floor, remote = prof["noop"], prof["floor"], prof["remote"]
    wall = med(r.wall for r in noop)
    host_med, host_max = _per_host(noop, "seconds")
    print(f"\nprofile of fleet's no-op apply, {n} hosts (medians; per-host figures: median / slowest host)")
    print(f"  whole command (process start to exit)       {wall:7.3f} s")
    print(f"  one host, connect to record                 {host_med:7.3f} / {host_max:.3f} s")
    phases: dict[str, list[float]] = {}
    for r in noop:
        for h in r.doc.get("hosts", {}).values():
            for name, secs in (h.get("phases") or {}).items() if isinstance(h, dict) else ():
                phases.setdefault(name, []).append(secs)
    for name, values in phases.items():
        print(f"    phase {name:<37} {med(values):7.3f} / {max(values):.3f} s")
    if remote:
        on_host = [float(x[1]) for x in remote]
        rtt = [float(x[2]) for x in remote]
        print(f"    remote: the probe running on the host     {med(on_host):7.3f} / {max(on_host):.3f} s "
              f"({len(remote)} commands, one instrumented run)")
        print(f"    remote: round trip of that command        {med(rtt):7.3f} / {max(rtt):.3f} s "
              f"(transport and framing: {med(rtt) - med(on_host):.3f} s)")
    f_med, f_max = _per_host(floor, "seconds")
    print(f"  floor: one host of `fleet run -- true`      {f_med:7.3f} / {f_max:.3f} s; whole command "
          f"{med(r.wall for r in floor):.3f} s")
    print(f"  controller outside the hosts (start, load, threads, report): {wall - host_max:.3f} s")


def to_json(results: dict, versions: dict) -> dict:
    out = {"versions": versions, "sizes": {}}
    for n, res in results.items():
        size = {}
        for tool, body in res.items():
            if tool == "_profile":
                size[tool] = {"remote": body["remote"]}
                continue
            size[tool] = {kind: [{k: v for k, v in asdict(r).items() if k != "doc"} for r in runs]
                          for kind, runs in body.items()}
        out["sizes"][str(n)] = size
    return out


def from_json(path, results: dict, run_cls) -> dict:
    """Join an earlier run's figures (to_json's document) into `results`, tool by tool, where this run has none
    of that tool at that size; returns that run's peer versions. Its profile is not joined."""
    import json

    doc = json.loads(path.read_text())
    for size, tools in doc["sizes"].items():
        here = results.setdefault(int(size), {})
        for tool, body in tools.items():
            if tool != "_profile" and tool not in here:
                here[tool] = {kind: [run_cls(**r) for r in runs] for kind, runs in body.items()}
    return doc.get("versions") or {}
