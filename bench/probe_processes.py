"""The processes a converged lab host's no-op probe starts: the script fleet sends for a no-op `fleet apply` (its one
command, recorded as it leaves fleet), run on the host itself under strace(1), counting what the kernel was asked:
every fork (clone, clone3, fork, vfork that made a process, not a thread) and every execve that succeeded.

    sudo python3 bench/probe_processes.py --net 127.0.21.               # this checkout, its own lab, pod-570
    sudo python3 bench/probe_processes.py --net 127.0.21. --tree /tmp/base   # another fleet's source (git archive)

Steps (bench/probe_bytes.py's): lab up, `fleet apply` until an apply changes nothing (at most 3), one recorded no-op
apply; then the recorded script goes to the host over SSH (the lab's key, known_hosts) into a file, and
`strace -f -qq -e trace=process bash FILE` runs it there REPEAT times (the host's own bash, tools and state: an
overlay of this machine's / with its profile, as fleet found it); the lab is removed at the end. The login shell sshd
starts and the `bash -c` that unpacks the script (fleet.shell.wrap_bash) are not counted: they are the same for any
script. What a probe starts depends on load only where a section races another (none should): the figures of each
run are printed, with their median.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import Counter
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from probe_bytes import fleet, script_of  # noqa: E402

# strace -f lines: `PID clone(...) = CHILD`, `PID clone3({...}) = CHILD`, `PID execve("...", ...) = 0`
_FORK = re.compile(r"\b(clone3?|v?fork)\(")
_DONE = re.compile(r"= (\d+)\s*$")
_EXEC = re.compile(r'execve\("(?:[^"]*/)?([^"/]+)"')


def programs(trace: str) -> Counter:
    """strace -f output -> {program name: how many times it was exec'd} (the connection watchdog's `sleep` left out,
    as count() leaves it out)."""
    names: Counter = Counter()
    for line in trace.splitlines():
        if "execve(" in line and line.rstrip().endswith("= 0") and (name := _EXEC.search(line)):
            names[name[1]] += 1
    names.pop("sleep", None)
    return names


def count(trace: str) -> dict[str, int]:
    """strace -f output -> {"forks": processes made, "execs": programs started, "threads": threads made, "sleeps":
    the `sleep` programs among the execs}. The sleeps are the connection watchdog's (fleet/remote/
    stop_with_connection.sh: one `sleep 1` a second while the probe runs): they count the probe's seconds, not its
    work, so a loaded host shows more of them; "forks" and "execs" then leave them out."""
    forks = execs = threads = sleeps = 0
    for line in trace.splitlines():
        done = _DONE.search(line)
        if "execve(" in line and line.rstrip().endswith("= 0"):
            execs += 1
            sleeps += bool(re.search(r'execve\("[^"]*/sleep"', line))
        elif _FORK.search(line) and done and int(done[1]) > 0:
            if "CLONE_THREAD" in line:
                threads += 1
            else:
                forks += 1
    return {"forks": forks - sleeps, "execs": execs - sleeps, "threads": threads, "sleeps": sleeps}


def on_host(inventory: Path, host: str, script: bytes, repeat: int) -> list[tuple[dict[str, int], Counter]]:
    """Run `script` on the lab host under strace, `repeat` times; the counts of each run, with its programs."""
    import yaml
    from fleet_lab import paths

    entry = yaml.safe_load(inventory.read_text())["hosts"][host]
    ssh = ["ssh", "-i", str(paths.lab_key()), "-o", f"UserKnownHostsFile={paths.lab_known_hosts()}",
           "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-p", str(entry.get("port", 22)),
           f"{entry.get('user', 'root')}@{entry['address']}"]
    subprocess.run([*ssh, "umask 077; cat > /tmp/fleet-probe-bench.sh"], input=script, check=True, timeout=120)
    out = []
    for _ in range(repeat):
        run = subprocess.run([*ssh, "strace -f -qq -e trace=process -o /tmp/fleet-probe-bench.trace "
                              "bash /tmp/fleet-probe-bench.sh >/dev/null 2>&1 </dev/null; cat /tmp/fleet-probe-bench.trace"],
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise SystemExit(f"strace on {host} exited {run.returncode}: {run.stderr[-2000:]}")
        out.append((count(run.stdout), programs(run.stdout)))
    subprocess.run([*ssh, "rm -f /tmp/fleet-probe-bench.sh /tmp/fleet-probe-bench.trace"], timeout=120)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the fleet source that applies (default: this checkout)")
    parser.add_argument("--net", default="127.0.111.", help="the lab's addresses (default 127.0.111.x)")
    parser.add_argument("--host", default="pod-570")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--by-program", action="store_true",
                        help="also print the programs exec'd, by name, with each run's count")
    parser.add_argument("--keep", type=Path, help="write the recorded no-op script to this file")
    args = parser.parse_args()
    from _lab import own_lab

    roles = args.tree / "fleet" / "builtin_roles"
    if args.tree.resolve() != ROOT and not roles.exists():
        roles.symlink_to("../roles")
    with tempfile.TemporaryDirectory() as tmp:
        inventory, stop = own_lab(Path(tmp), args.net, "probe-processes")
        limit = ["--limit", args.host]
        try:
            for attempt in range(3):
                code, out = fleet(args.tree, None, "apply", str(inventory), "--json", *limit)
                changed = sum(h.get("changed", 0) for h in json.loads(out).get("hosts", {}).values())
                print(f"apply {attempt + 1}: exit {code}, {changed} changed")
                if code == 0 and not changed and attempt:
                    break
            record = Path(tmp) / "noop.jsonl"
            code, out = fleet(args.tree, record, "apply", str(inventory), "--json", *limit)
            changed = sum(h.get("changed", 0) for h in json.loads(out).get("hosts", {}).values())
            rows = [json.loads(line) for line in record.read_text().splitlines() if json.loads(line)["host"] == args.host]
            print(f"recorded no-op apply: exit {code}, {changed} changed, {len(rows)} command(s) on {args.host}")
            script, _ = script_of(rows[0]["stdin"])
            if args.keep:
                args.keep.write_bytes(script)
            runs = on_host(inventory, args.host, script, args.repeat)
        finally:
            stop()
    print(f"\nfleet from {args.tree}: {args.host}'s no-op probe ({len(script)} B of script), {args.repeat} runs")
    for key in ("forks", "execs", "threads", "sleeps"):
        values = [r[key] for r, _ in runs]
        print(f"  {key:<8} median {statistics.median(values):g}   each {values}")
    if args.by_program:
        print("  programs exec'd (median, each run):")
        names = sorted({n for _, p in runs for n in p}, key=lambda n: (-statistics.median(p[n] for _, p in runs), n))
        for name in names:
            values = [p[name] for _, p in runs]
            print(f"    {name:<24} {statistics.median(values):>5g}   {values}")


if __name__ == "__main__":
    main()
