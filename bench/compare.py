"""fleet against Ansible and pyinfra on N lab hosts: first run, no-op, remote commands, controller memory.

    python3 bench/compare.py                    # 3 and 30 hosts (as root: it runs its own lab on 127.0.7.x)
    python3 bench/compare.py --hosts 3,30,100 --rounds 5
    python3 bench/compare.py --quick            # smoke run: 3 hosts, one round of everything
    python3 bench/compare.py --tools fleet      # fleet only (no peers needed)

Every figure is a median over --rounds runs (first runs over --first-rounds, each on fresh hosts), each run a
child process of this one whose peak RSS (ru_maxrss of it and its reaped children, from wait4) is the
controller's memory. The peers (bench/peers/, fleet's eight roles as an Ansible playbook and a pyinfra deploy,
same sources: the lab mirror) run from bench/.venv-peers (bench/peers/requirements.txt). Remote commands per
host: fleet's own `stats`; Ansible: every ssh/sftp/scp it starts (a wrapper logs them); pyinfra: every SSH
session it opens (paramiko's open_session, counted in bench/peers/pyinfra/run.py). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

import _labn  # noqa: E402
import _peers  # noqa: E402


@dataclass
class Run:
    wall: float
    rc: int
    maxrss_mb: float
    changed: int = 0
    failed: int = 0
    commands: float = 0.0        # remote commands per host (mean over hosts)
    failures: dict = field(default_factory=dict)   # host -> why it failed (fleet: its error or first failed task)
    doc: dict = field(default_factory=dict, repr=False)


def spawn(argv: list[str], env: dict | None = None, log: Path | None = None) -> tuple[float, int, float, str]:
    """Run a child; wall seconds, exit code, peak RSS (MB) of it and its reaped children, stdout+stderr."""
    out = tempfile.TemporaryFile()
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=BENCH.parent)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    text = out.read().decode(errors="replace")
    return wall, proc.returncode, usage.ru_maxrss / 1024, text


# -- fleet ------------------------------------------------------------------------------------------
def fleet(inventory: Path, *args: str, runner: str | None = None, env: dict | None = None) -> Run:
    argv = [sys.executable] + ([str(BENCH / runner)] if runner else ["-m", "fleet"]) + list(args)
    argv[argv.index("INV")] = str(inventory)
    wall, rc, rss, text = spawn(argv, env=env)
    try:
        # stderr is merged in (the progress before, "run log: ..." after the document): the one JSON document
        doc, _ = json.JSONDecoder().raw_decode(text, text.index("{"))
    except ValueError:
        raise SystemExit(f"fleet {' '.join(args)} printed no JSON (exit {rc}):\n{text[-3000:]}")
    hosts, stats = doc.get("hosts", {}), doc.get("stats", {})
    changed = sum(h.get("changed", 0) for h in hosts.values() if isinstance(h, dict))
    failed = sum(1 for h in hosts.values() if isinstance(h, dict) and (h.get("failed") or h.get("unreachable")
                                                                        or h.get("error")))
    cmds = statistics.mean(s["remote_commands"] for s in stats.values()) if stats else 0
    return Run(wall, rc, rss, changed, failed, cmds, failures(hosts), doc)


def failures(hosts: dict) -> dict[str, str]:
    """Each failed host's reason, short: kept in the --json record (a run at 100 hosts cannot be read back)."""
    out = {}
    for name, h in hosts.items():
        if not isinstance(h, dict):
            continue
        task = next((t for t in h.get("tasks", []) if t.get("status") == "failed"), None)
        why = h.get("error") or (f"{task.get('role')}: {task.get('task')}: {task.get('reason')}" if task else None)
        if why or h.get("unreachable"):
            out[name] = str(why or "unreachable")[:300]
    return out


# -- peers ------------------------------------------------------------------------------------------
def ansible(ctx, log: Path) -> Run:
    log.unlink(missing_ok=True)
    env = _peers.ansible_env(log)
    env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = tempfile.mkdtemp(prefix="cp-", dir=ctx.workdir)  # no warm masters
    wall, rc, rss, text = spawn(_peers.ansible_command(ctx.ansible_hosts, len(ctx.addresses)), env=env)
    _stop_masters(Path(env["ANSIBLE_SSH_CONTROL_PATH_DIR"]))
    recap = re.findall(r"^\S+\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", text, re.M)
    changed = sum(int(c) for c, _, _ in recap)
    failed = sum(1 for _, u, f in recap if int(u) or int(f))
    return _peer_run(ctx, log, wall, rc, rss, changed, failed, text, "ansible")


def _stop_masters(control_dir: Path) -> None:
    """ControlPersist masters outlive the run: close them, so the next run connects as a fresh one would."""
    for sock in control_dir.iterdir():
        subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "x"], capture_output=True)


def pyinfra(ctx, log: Path) -> Run:
    log.unlink(missing_ok=True)
    wall, rc, rss, text = spawn(_peers.pyinfra_command(ctx.pyinfra_inventory), env=_peers.pyinfra_env(log))
    m = re.search(r"Grand total\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)", text)
    num = lambda s: 0 if s == "-" else int(s)  # noqa: E731
    changed, failed = (num(m.group(2)), num(m.group(3))) if m else (0, len(ctx.addresses))
    return _peer_run(ctx, log, wall, rc, rss, changed, failed, text, "pyinfra")


def _peer_run(ctx, log, wall, rc, rss, changed, failed, text, tool) -> Run:
    counts = _peers.count_by_address(log, ctx.addresses)
    if rc != 0 or failed:
        (ctx.workdir / f"{tool}-failed.log").write_text(text)
        print(f"  {tool} exit {rc}, {failed} failed host(s); output in {ctx.workdir / (tool + '-failed.log')}",
              flush=True)
        # the workdir goes with the run: say here what failed (the lines that name it)
        for line in [x for x in text.splitlines() if re.search(r"fatal:|FAILED|[Ee]rror", x)][-6:]:
            print(f"    {line[:3000]}", flush=True)
    return Run(wall, rc, rss, changed, failed, statistics.mean(counts.values()) if counts else 0)


# -- one size ---------------------------------------------------------------------------------------
@dataclass
class Ctx:
    n: int
    workdir: Path
    inventory: Path
    addresses: dict[str, str]           # address -> host name
    ansible_hosts: Path | None = None
    pyinfra_inventory: Path | None = None


def measure_size(n: int, args, workdir: Path) -> dict:
    inventory = _labn.up(workdir, n)
    hosts = _peers.hosts_of(inventory)
    ctx = Ctx(n, workdir, inventory, {h.address: h.name for h in hosts})
    if set(args.tools) - {"fleet"}:
        verify = _peers.write_verify(workdir, inventory)
        decisions = _peers.decisions_of(inventory)
        ctx.ansible_hosts = _peers.write_ansible(workdir, inventory, _labn.lab_root(), verify, decisions)
        ctx.pyinfra_inventory = _peers.write_pyinfra(workdir, inventory, _labn.lab_root(), verify, decisions)
    out = {}
    try:
        for tool in args.tools:
            out.update(TOOLS[tool](ctx, args))
    finally:
        _labn.down(inventory, purge=False)
    return out


def _first_rounds(ctx, args, label, once) -> list[Run]:
    runs = []
    for i in range(args.first_rounds):
        if i or label != "fleet apply":       # fleet goes first, on the hosts `up` just made fresh
            _labn.reset(ctx.inventory)
        runs.append(_say(label, "first", once()))
    return runs


def _say(label: str, what: str, run: Run) -> Run:
    print(f"  {label:<12} {what:<6} {run.wall:7.2f} s  changed {run.changed:<4} failed {run.failed:<3} "
          f"{run.commands:5.1f} cmds/host  {run.maxrss_mb:6.0f} MB", flush=True)
    return run


def fleet_all(ctx, args) -> dict:
    first = _first_rounds(ctx, args, "fleet apply", lambda: fleet(ctx.inventory, "apply", "INV", "--json"))
    noop = [_say("fleet apply", "no-op", fleet(ctx.inventory, "apply", "INV", "--json")) for _ in range(args.rounds)]
    facts = [_say("fleet facts", "", fleet(ctx.inventory, "facts", "INV", "--json")) for _ in range(args.rounds)]
    floor = [_say("fleet run", "true", fleet(ctx.inventory, "run", "INV", "--json", "--", "true"))
             for _ in range(args.rounds)]
    remote_log = ctx.workdir / "remote.log"
    remote_log.unlink(missing_ok=True)
    profiled = fleet(ctx.inventory, "apply", "INV", "--json", runner="_fleet_profiled.py",
                     env=dict(os.environ, BENCH_REMOTE_LOG=str(remote_log)))
    remote = [line.split() for line in remote_log.read_text().splitlines()] if remote_log.exists() else []
    return {"fleet apply": {"first": first, "noop": noop}, "fleet facts": {"noop": facts},
            "fleet run true": {"noop": floor}, "_profile": {"noop": noop, "floor": floor, "profiled": profiled,
                                                            "remote": remote}}


def ansible_all(ctx, args) -> dict:
    log = ctx.workdir / "ansible-count.log"
    first = _first_rounds(ctx, args, "ansible", lambda: ansible(ctx, log))
    noop = [_say("ansible", "no-op", ansible(ctx, log)) for _ in range(_peer_rounds(ctx, args))]
    return {"ansible": {"first": first, "noop": noop}}


def pyinfra_all(ctx, args) -> dict:
    log = ctx.workdir / "pyinfra-count.log"
    first = _first_rounds(ctx, args, "pyinfra", lambda: pyinfra(ctx, log))
    noop = [_say("pyinfra", "no-op", pyinfra(ctx, log)) for _ in range(_peer_rounds(ctx, args))]
    return {"pyinfra": {"first": first, "noop": noop}}


def _peer_rounds(ctx, args) -> int:
    """--peer-rounds caps the peers' no-op runs from --peer-rounds-from hosts on (Ansible at 30 hosts is slow)."""
    if args.peer_rounds and ctx.n >= args.peer_rounds_from:
        return args.peer_rounds
    return args.rounds


TOOLS = {"fleet": fleet_all, "ansible": ansible_all, "pyinfra": pyinfra_all}


def bytecode_as_installed() -> None:
    """Every tool runs as pip leaves it installed: its modules compiled to bytecode once, read from __pycache__
    afterwards. A shell with PYTHONDONTWRITEBYTECODE set (this project's build machine has it) would make every
    run of every tool compile its Python again: about 0.5 s of CPU per fleet command, and more for Ansible."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    import sysconfig

    # roles/ is the package fleet.builtin_roles (its __init__.py), in the editable install this checkout runs from
    trees = {BENCH.parent / "fleet", BENCH.parent / "roles", Path(sysconfig.get_paths()["purelib"]),
             Path(sysconfig.get_paths()["platlib"])}
    trees |= {p for p in (BENCH / ".venv-peers",) if p.is_dir()}
    for tree in sorted(trees):
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(tree)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", default="3,30", help="comma-separated host counts (default 3,30)")
    parser.add_argument("--rounds", type=int, default=3, help="no-op, facts and floor runs per size (median)")
    parser.add_argument("--first-rounds", type=int, default=1, help="first runs per tool and size, each on fresh hosts")
    parser.add_argument("--tools", default="fleet,ansible,pyinfra")
    parser.add_argument("--peer-rounds", type=int, default=0,
                        help="no-op runs of each peer (default: --rounds), from --peer-rounds-from hosts on")
    parser.add_argument("--peer-rounds-from", type=int, default=0, help="host count where --peer-rounds starts")
    parser.add_argument("--peers-from", metavar="FILE", action="append", default=[],
                        help="the figures of an earlier --json run (e.g. the peers alone), joined into this table")
    parser.add_argument("--quick", action="store_true", help="smoke run: 3 hosts, one round")
    parser.add_argument("--json", metavar="FILE", help="also write every figure here")
    parser.add_argument("--purge", action="store_true", help="remove the lab's build caches at the end")
    args = parser.parse_args()
    args.tools = [t for t in args.tools.split(",") if t]
    if unknown := set(args.tools) - set(TOOLS):
        parser.error(f"unknown tool(s) {', '.join(sorted(unknown))}; choose from {', '.join(TOOLS)}")
    sizes = [3] if args.quick else [int(x) for x in args.hosts.split(",")]
    if not args.tools:   # --tools '' --peers-from A --peers-from B: one table of earlier runs, nothing measured
        sizes = []
    if args.quick:
        args.rounds = args.first_rounds = 1
    if set(args.tools) - {"fleet"}:
        _peers.ensure_venv()
    bytecode_as_installed()
    from _report import from_json, print_report, to_json

    results = {}
    with tempfile.TemporaryDirectory(prefix="fleet-bench-compare-") as tmp:
        try:
            for n in sizes:
                print(f"\n== {n} hosts", flush=True)
                workdir = Path(tmp) / str(n)
                workdir.mkdir()
                results[n] = measure_size(n, args, workdir)
                if len(sizes) > 1:   # each size's table as soon as it is done: a long run stopped later keeps it
                    print_report({n: results[n]}, {})
        finally:
            if args.purge:
                from fleet_lab import control
                control.down(None, _labn.lab_root(), purge=True)
    versions = _peers.versions() if set(args.tools) - {"fleet"} else {}
    for earlier in args.peers_from:
        versions = {**from_json(Path(earlier), results, Run), **versions}
    print_report(results, versions)
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(results, versions), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
