"""The processes a converged lab host's no-op probe starts: the script fleet sends for a no-op `fleet apply` (its one
command, recorded as it leaves fleet), run on the host itself under strace(1), counting what the kernel was asked:
every fork (clone, clone3, fork, vfork that made a process, not a thread) and every execve that succeeded.

    sudo python3 bench/probe_processes.py --net 127.0.21.               # this checkout, its own lab, pod-570
    sudo python3 bench/probe_processes.py --net 127.0.21. --tree /tmp/base   # another fleet's source (git archive)

Steps (bench/probe_bytes.py's): lab up, `fleet apply` until an apply changes nothing (at most 3), one recorded no-op
apply; then the recorded script goes to the host over SSH (the lab's key, known_hosts) into a file, and
`strace -ff -qq -e trace=process bash FILE` runs it there REPEAT times (one trace file per process: in one file,
under load, strace splits a call another process interrupted, which the counter joins again) (the host's own bash, tools and state: an
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

# strace lines: `[PID ]clone(...) = CHILD`, `clone3({...}) = CHILD`, `execve("...", ...) = 0`; a call another
# process interrupted is split in two: `PID execve("...", ... <unfinished ...>` then `PID <... execve resumed>) = 0`
_FORK = re.compile(r"\b(clone3?|v?fork)\(")
_DONE = re.compile(r"= (\d+)\s*$")
_EXEC = re.compile(r'execve\("(?:[^"]*/)?([^"/]+)"')
_RESUMED = re.compile(r"<\.\.\. (\w+) resumed>")


def calls(trace: str) -> list[tuple[str, str, str]]:
    """strace output -> [(call, its whole text, what it returned)] for each finished clone/clone3/fork/vfork/execve,
    a split call (`<unfinished ...>` ... `<... NAME resumed>`) joined again by its PID (strace -f), or by its order
    in the file (strace -ff, one process a file)."""
    pending: dict[str, str] = {}
    out = []
    for line in trace.splitlines():
        pid, _, rest = line.partition(" ") if line[:1].isdigit() else ("", "", line)
        if rest.rstrip().endswith("<unfinished ...>"):
            pending[pid] = rest
            continue
        resumed = _RESUMED.match(rest)
        if resumed:
            rest = pending.pop(pid, resumed[1] + "(") + rest[resumed.end():]
        call = re.match(r"(\w+)\(", rest)
        done = _DONE.search(rest)
        if call and done and (call[1] == "execve" or _FORK.match(rest)):
            out.append((call[1], rest, done[1]))
    return out


def programs(trace: str) -> Counter:
    """strace output -> {program name: how many times it was exec'd} (the connection watchdog's `sleep` left out,
    as count() leaves it out)."""
    names: Counter = Counter(name[1] for call, text, ret in calls(trace)
                             if call == "execve" and ret == "0" and (name := _EXEC.search(text)))
    names.pop("sleep", None)
    return names


def count(trace: str) -> dict[str, int]:
    """strace output -> {"forks": processes made, "execs": programs started, "threads": threads made, "sleeps":
    the `sleep` programs among the execs}. The sleeps are the connection watchdog's (fleet/remote/
    stop_with_connection.sh: one `sleep 1` a second while the probe runs): they count the probe's seconds, not its
    work, so a loaded host shows more of them; "forks" and "execs" then leave them out."""
    forks = execs = threads = sleeps = 0
    for call, text, ret in calls(trace):
        if call == "execve":
            if ret == "0":
                execs += 1
                sleeps += bool(re.search(r'execve\("[^"]*/sleep"', text))
        elif int(ret) > 0:
            if "CLONE_THREAD" in text:
                threads += 1
            else:
                forks += 1
    return {"forks": forks - sleeps, "execs": execs - sleeps, "threads": threads, "sleeps": sleeps}


def on_host(inventory: Path, host: str, script: bytes, repeat: int,
            traces: Path | None = None) -> list[tuple[dict[str, int], Counter]]:
    """Run `script` on the lab host under strace, `repeat` times; the counts of each run, with its programs (and
    each run's trace written to `traces`/run-N.trace when given)."""
    import yaml
    from fleet_lab import paths

    entry = yaml.safe_load(inventory.read_text())["hosts"][host]
    ssh = ["ssh", "-i", str(paths.lab_key()), "-o", f"UserKnownHostsFile={paths.lab_known_hosts()}",
           "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-p", str(entry.get("port", 22)),
           f"{entry.get('user', 'root')}@{entry['address']}"]
    subprocess.run([*ssh, "umask 077; cat > /tmp/fleet-probe-bench.sh"], input=script, check=True, timeout=120)
    out = []
    for _ in range(repeat):
        # -ff: one file per process, so no call is split by another's (strace -f into one file split them under
        # load, and a split execve or clone went uncounted: the figures moved with the load)
        run = subprocess.run([*ssh, "rm -rf /tmp/fleet-probe-bench.d; mkdir -m 700 /tmp/fleet-probe-bench.d && "
                              "strace -ff -qq -e trace=process -o /tmp/fleet-probe-bench.d/t "
                              "bash /tmp/fleet-probe-bench.sh >/dev/null 2>&1 </dev/null; "
                              "cat /tmp/fleet-probe-bench.d/t.*"],
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise SystemExit(f"strace on {host} exited {run.returncode}: {run.stderr[-2000:]}")
        out.append((count(run.stdout), programs(run.stdout)))
        if traces:
            traces.mkdir(parents=True, exist_ok=True)
            (traces / f"run-{len(out)}.trace").write_text(run.stdout)
    subprocess.run([*ssh, "rm -rf /tmp/fleet-probe-bench.sh /tmp/fleet-probe-bench.d"], timeout=120)
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
    parser.add_argument("--traces", type=Path, help="write each run's strace output (argv of every exec) here")
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
            runs = on_host(inventory, args.host, script, args.repeat, args.traces)
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
