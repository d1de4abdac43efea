"""The bytes a converged lab host receives per no-op `fleet apply`: the script of each remote command (as bash
reads it), the same gzipped (what travels when it is over 16 KiB) and the base64 text on stdin, and how many
commands. Every command of the measured apply is recorded as it leaves fleet (bench/_fleet_recorded.py).

    sudo python3 bench/probe_bytes.py                       # this checkout, its own lab (127.0.111.x)
    sudo python3 bench/probe_bytes.py --tree /tmp/base      # another fleet's source (e.g. `git archive 638870a`)
    sudo python3 bench/probe_bytes.py --hosts pod-570        # some hosts only

The lab itself is this checkout's (fleet_lab); the fleet that applies is --tree's. Steps: lab up, `fleet apply`
until an apply changes nothing (at most 3), then one recorded no-op apply; the lab is removed at the end.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def fleet(tree: Path, record: Path | None, *argv: str) -> tuple[int, str]:
    """`fleet ARGV` with --tree's source (recorded to `record` when given); (exit, stdout)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if record:
        env["BENCH_RECORD"] = str(record)
        cmd = [sys.executable, str(ROOT / "bench" / "_fleet_recorded.py"), *argv]
    else:
        cmd = [sys.executable, "-m", "fleet", *argv]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(tree), timeout=3600)
    if run.returncode not in (0, 1) or not run.stdout.strip():
        raise SystemExit(f"fleet {' '.join(argv)} exited {run.returncode}: {(run.stdout + run.stderr)[-3000:]}")
    return run.returncode, run.stdout


def script_of(stdin: str) -> tuple[bytes, bytes]:
    """A recorded stdin (fleet.shell.stdin_for: base64 of the script, gzipped when over 16 KiB) -> (the script,
    what travelled before base64)."""
    packed = base64.b64decode(stdin or b"")
    return (gzip.decompress(packed) if packed[:2] == b"\x1f\x8b" else packed), packed


def measure(record: Path) -> dict[str, dict]:
    per_host: dict[str, dict] = {}
    for line in record.read_text().splitlines():
        doc = json.loads(line)
        script, sent = script_of(doc["stdin"])
        host = per_host.setdefault(doc["host"], {"commands": 0, "script": 0, "gzip": 0, "stdin": 0, "each": []})
        host["commands"] += 1
        host["script"] += len(script)
        host["gzip"] += len(gzip.compress(script, compresslevel=1, mtime=0))   # as fleet.shell packs it
        host["stdin"] += len(doc["stdin"]) + len(doc["command"])             # what went over SSH: stdin + argv
        host["each"].append((len(script), len(sent), doc["exit"]))
    return per_host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the fleet source that applies (default: this checkout)")
    parser.add_argument("--net", default="127.0.111.", help="the lab's addresses (default 127.0.111.x)")
    parser.add_argument("--hosts", default="", help="comma-separated hosts (default: all four)")
    parser.add_argument("--keep", type=Path, help="copy the recording here")
    args = parser.parse_args()
    from _lab import own_lab

    roles = args.tree / "fleet" / "builtin_roles"
    if args.tree.resolve() != ROOT and not roles.exists():
        roles.symlink_to("../roles")   # a source tree without an install: its own roles, not this checkout's
    with tempfile.TemporaryDirectory() as tmp:
        inventory, stop = own_lab(Path(tmp), args.net, "probe-bytes")
        limit = ["--limit", args.hosts] if args.hosts else []
        try:
            for attempt in range(3):
                code, out = fleet(args.tree, None, "apply", str(inventory), "--json", *limit)
                doc = json.loads(out)
                changed = sum(h.get("changed", 0) for h in doc.get("hosts", {}).values())
                print(f"apply {attempt + 1}: exit {code}, {changed} changed")
                if code == 0 and not changed and attempt:
                    break
            record = Path(tmp) / "noop.jsonl"
            code, out = fleet(args.tree, record, "apply", str(inventory), "--json", *limit)
            doc = json.loads(out)
            changed = sum(h.get("changed", 0) for h in doc.get("hosts", {}).values())
            print(f"recorded no-op apply: exit {code}, {changed} changed")
            if args.keep:
                args.keep.write_bytes(record.read_bytes())
            per_host = measure(record)
        finally:
            stop()
    print(f"\nfleet from {args.tree}")
    print(f"{'host':<9} {'commands':>8} {'script B':>9} {'gzip B':>8} {'stdin+argv B':>12}   each (script, sent, exit)")
    for name, h in sorted(per_host.items()):
        print(f"{name:<9} {h['commands']:>8} {h['script']:>9} {h['gzip']:>8} {h['stdin']:>12}   {h['each']}")


if __name__ == "__main__":
    main()
