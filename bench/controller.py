"""The controller's own cost per host, at up to 1,000 simulated converged hosts (issue 27, item 4).

    python3 bench/controller.py [--hosts 30,100,1000] [--rounds 3] [--address 127.0.70.1] [--port 20000]
                                [--recording bench/data/replay-lab.jsonl.gz] [--warm 1]

The hosts are ports of one replaying SSH server (bench/_replay.py): each answers every command with what a
real converged lab host answered to exactly that command (the recording), so the hosts cost this machine
one asyncio process and what is measured is the controller: its SSH, its parsing, deciding, rendering and
record writing. Hosts take the recorded lab hosts' profiles in turn (Thor, Spark, an H100 pod on driver 570,
one on 580 with cuda-compat): four distinct host states, as in a mixed fleet.

For each size and each command (a converged `fleet apply`, `fleet facts`, `fleet run -- true`), it runs the
controller as its own process, `--warm` times unmeasured (default 1: a converged fleet has applied before, so its
history store holds every host's last report; the warm-up's CPU a host is printed apart) then `--rounds` times,
and prints medians of: wall time, controller CPU (user+sys
of the controller's process, from wait4), CPU per host, peak RSS, and the replaying server's CPU over the
same run. Every run must exit 0 with the server having recognised every command (a controller that sends
something new fails the bench, it is not measured). The figures are this machine's (2 cores, shared): see
bench/README.md for what was measured when.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import asyncssh
import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
# A recorded set: replay-SET.jsonl.gz (every command and its answer), replay-SET.yaml (the inventory settings it
# was recorded with: the scripts fleet sends depend on them, and the server recognises a command only if it is
# the recorded one), replay-SET-facts/ (each host's last record), replay-SET-keyring.sha256 (pins, if any).
# `lab`: the 4-host lab (bench/record_replay.py); `h100`: the lent H100 over real SSH (bench/README.md).
RECORDING = DATA / "replay-lab.jsonl.gz"
DROPPED = ("address", "port", "key", "lab")   # where the recorded host was; the simulated one is elsewhere
COMMANDS = {"apply": ["apply"], "facts": ["facts"], "run true": ["run", "--", "true"]}


def command(name: str, forks: int | None = None) -> list[str]:
    """The fleet arguments of a measured command, with `--forks N` where asked (before `run`'s `--`)."""
    argv = list(COMMANDS[name])
    return argv[:1] + ["--forks", str(forks)] + argv[1:] if forks else argv


def _cpu_of(pid: int) -> float:
    """user+sys seconds of a running process (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Lab:
    """The replaying server for n hosts, its keys, and an inventory pointing at it."""

    def __init__(self, workdir: Path, n: int, address: str, port: int, recording: Path = RECORDING):
        self.workdir, self.n = workdir, n
        stem = recording.name.removesuffix(".jsonl.gz")
        key, host_key = workdir / "id_ed25519", workdir / "host_ed25519"
        for path in (key, host_key):
            if not path.exists():
                made = asyncssh.generate_private_key("ssh-ed25519")
                made.write_private_key(str(path))
                made.write_public_key(f"{path}.pub")
                path.chmod(0o600)
        recorded = yaml.safe_load((recording.parent / f"{stem}.yaml").read_text())
        profiles = list(recorded["hosts"])
        host_pub = (workdir / "host_ed25519.pub").read_text().split()[:2]
        known = workdir / "known_hosts"
        known.write_text("".join(f"[{address}]:{port + i} {host_pub[0]} {host_pub[1]}\n" for i in range(n)))
        pins = recording.parent / f"{stem}-keyring.sha256"
        hosts = {}
        (workdir / "facts").mkdir(exist_ok=True)
        for i in range(n):
            name = profiles[i % len(profiles)]
            entry = {k: v for k, v in recorded["hosts"][name].items() if k not in DROPPED}
            # A converged fleet has each host's last record: the probe fleet sends is planned from it.
            record = json.loads((recording.parent / f"{stem}-facts" / f"{name}.json").read_text())
            record["host"] = f"h{i:04d}"
            (workdir / "facts" / f"h{i:04d}.json").write_text(json.dumps(record))
            hosts[f"h{i:04d}"] = {"address": address, "port": port + i, **entry}
        inventory = {"key": str(key), "known_hosts": str(known), "facts_dir": str(workdir / "facts"),
                     "vars": recorded.get("vars") or {}, "hosts": hosts}
        if pins.exists():
            shutil.copy(pins, workdir / "keyring.sha256")
            inventory["keyring_pins"] = str(workdir / "keyring.sha256")
        self.inventory = workdir / f"hosts-{n}.yaml"
        self.inventory.write_text(yaml.safe_dump(inventory, sort_keys=False))
        plain = workdir / "recording.jsonl"
        with gzip.open(recording, "rt") as src, open(plain, "w") as dst:
            shutil.copyfileobj(src, dst)
        self.server = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "_replay.py"), str(plain), "--address", address, "--port",
             str(port), "--hosts", str(n), "--profiles", ",".join(profiles), "--authorized", f"{key}.pub",
             "--host-key", str(host_key)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.server.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"the replaying server did not start: {line!r}")

    def stop(self) -> dict:
        self.server.stdin.close()
        out = self.server.stdout.read()
        self.server.wait(30)
        return json.loads(out.strip().splitlines()[-1])


def measure(lab: Lab, name: str, command: list[str], rounds: int, env: dict, warm: int = 0) -> dict:
    """Medians over rounds; the controller's CPU and peak RSS come from a wrapper that wait4()s it. `warm`: runs
    of the command before the measured ones, measured apart (`first`): a fleet's first apply into an empty history
    store inserts every host's report, every later one finds it unchanged (deduplicated): a converged fleet's apply
    is the second kind."""
    walls, cpus, rss, server, first = [], [], [], [], []
    for i in range(warm + rounds):
        argv = [sys.executable, str(ROOT / "bench" / "_rusage.py"), sys.executable, "-m", "fleet", command[0],
                str(lab.inventory), *command[1:]]
        before = _cpu_of(lab.server.pid)
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        if os.environ.get("FLEET_BENCH_KEEP"):   # each run's stderr (progress, warnings), to look into an odd figure
            keep = Path(os.environ["FLEET_BENCH_KEEP"])
            keep.mkdir(parents=True, exist_ok=True)
            (keep / f"{name.replace(' ', '-')}-{lab.n}-{i}.stderr").write_text(proc.stderr)
        server.append(_cpu_of(lab.server.pid) - before)
        usage = json.loads(proc.stderr.strip().splitlines()[-1])
        if usage["exit"] != 0:
            raise SystemExit(f"`fleet {' '.join(command)}` on {lab.n} hosts exited {usage['exit']}:\n"
                             + proc.stderr[-3000:])
        if i < warm:
            first.append(usage["cpu"] / lab.n * 1000)
            server.pop()
            continue
        walls.append(usage["wall"])
        cpus.append(usage["cpu"])
        rss.append(usage["maxrss_mb"])
    if not rounds:
        return {"command": name, "hosts": lab.n, "warm_cpu_per_host_ms": first}
    med = statistics.median
    return {"command": name, "hosts": lab.n, "wall": med(walls), "cpu": med(cpus), "cpu_per_host_ms":
            med(cpus) / lab.n * 1000, "maxrss_mb": max(rss), "server_cpu": med(server), "rounds": rounds,
            "walls": walls, "cpus": cpus, "warm_cpu_per_host_ms": first}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", default="30,100,1000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--address", default="127.0.70.1")
    parser.add_argument("--port", type=int, default=20000)
    parser.add_argument("--recording", type=Path, default=RECORDING,
                        help="bench/data/replay-lab.jsonl.gz (the lab) or bench/data/replay-h100.jsonl.gz")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--warm", type=int, default=1,
                        help="unmeasured runs of each command first (default 1: a converged fleet's apply finds its "
                             "history store holding every host; 0 measures the first run into an empty store)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    parser.add_argument("--forks", type=int, default=None,
                        help="hosts at once, for every command (default: fleet's own, every host at once): fewer "
                             "lowers the controller's contention for the GIL, and so both commands' CPU a host")
    parser.add_argument("--pairs", action="store_true",
                        help="run the commands in turn, round after round (apply, run true, apply, ...), and print "
                             "each round's ratio of the first command's CPU a host to the second's and their median: "
                             "this machine's speed drifts by tens of percent over minutes, a pair a minute apart "
                             "does not")
    args = parser.parse_args()
    if args.pairs:
        return _pairs(args)
    sizes = [int(n) for n in args.hosts.split(",")]
    results = []
    print(f"{'command':<10}{'hosts':>6}{'wall s':>9}{'cpu s':>8}{'cpu/host ms':>13}{'peak MB':>9}{'server cpu s':>14}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="fleet-bench-controller-") as tmp:
        # run logs in the throw-away directory, not the user's state directory
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONPATH=path, NO_COLOR="1", XDG_STATE_HOME=tmp)
        for n in sizes:
            lab = Lab(Path(tmp), n, args.address, args.port, args.recording)
            try:
                for name in args.commands.split(","):
                    r = measure(lab, name, command(name, args.forks), args.rounds, env, args.warm)
                    results.append(r)
                    print(f"{name:<10}{n:>6}{r['wall']:>9.2f}{r['cpu']:>8.2f}{r['cpu_per_host_ms']:>13.1f}"
                          f"{r['maxrss_mb']:>9.0f}{r['server_cpu']:>14.2f}"
                          + (f"   (warm-up: {', '.join(f'{c:.1f}' for c in r['warm_cpu_per_host_ms'])} cpu/host ms)"
                             if r["warm_cpu_per_host_ms"] else ""), flush=True)
            finally:
                stats = lab.stop()
            if stats["unknown"]:
                raise SystemExit(f"the server met {stats['unknown']} command(s) it has no recording of: the "
                                 "controller sent something new; record again (bench/README.md)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


def _pairs(args) -> int:
    """--pairs: the commands in turn, `--rounds` rounds after `--warm` rounds of each, one size."""
    names = args.commands.split(",")
    if len(names) != 2 or "," in args.hosts:
        raise SystemExit("--pairs takes two commands (e.g. --commands 'apply,run true') and one --hosts size")
    n = int(args.hosts)
    rounds = []
    with tempfile.TemporaryDirectory(prefix="fleet-bench-controller-") as tmp:
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        env = dict(os.environ, PYTHONPATH=path, NO_COLOR="1", XDG_STATE_HOME=tmp)
        lab = Lab(Path(tmp), n, args.address, args.port, args.recording)
        try:
            for name in names:
                measure(lab, name, command(name, args.forks), 0, env, args.warm)
            for i in range(args.rounds):
                runs = [measure(lab, name, command(name, args.forks), 1, env) for name in names]
                got = [r["cpu_per_host_ms"] for r in runs]
                rounds.append({"load": os.getloadavg()[0], names[0]: got[0], names[1]: got[1],
                               "ratio": got[0] / got[1], "forks": args.forks,
                               "wall_s": {name: r["wall"] for name, r in zip(names, runs)}})
                print(f"round {i + 1}: {names[0]} {got[0]:.1f}  {names[1]} {got[1]:.1f}  ratio {got[0] / got[1]:.2f}x  "
                      f"[load {rounds[-1]['load']:.1f}]", flush=True)
        finally:
            stats = lab.stop()
    if stats["unknown"]:
        raise SystemExit(f"the server met {stats['unknown']} command(s) it has no recording of: record again")
    med = statistics.median
    print(f"median of {len(rounds)} rounds: {names[0]} {med(r[names[0]] for r in rounds):.1f}  {names[1]} "
          f"{med(r[names[1]] for r in rounds):.1f} CPU-ms a host; ratio {med(r['ratio'] for r in rounds):.2f}x "
          f"(rounds {min(r['ratio'] for r in rounds):.2f}-{max(r['ratio'] for r in rounds):.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
