"""The history store at scale (issue 46): figures, no assertions.

    sudo .venv/bin/python bench/store.py                      # both parts, 1,000 hosts
    sudo .venv/bin/python bench/store.py --part queries --hosts 1000 --runs 10
    sudo .venv/bin/python bench/store.py --part ingest --pods 1000 --json bench/results/DATE-store.json

queries: 1,000 hosts x 10 runs (each run changes the host's report: 10 rows a host; a tenth of them quiet for
the last three runs), shaped like fleet's facts
(tests/data/records/h100-pod-570.json, about 9 KB), into SQLite and into a real PostgreSQL (a temporary cluster,
fleet_lab/postgres.py); then each question `fleet facts` asks, timed as the command runs it (median of 7).

ingest: that many simulated pods send their report at once (one asyncio client, a connection each) through a
real `fleet serve` process into PostgreSQL; the server is killed (SIGKILL) once half the answers are in and
started again; every pod whose answer did not come sends the same report again until one does. Reported:
reports per second over the whole stream (restart included), the server's peak memory (VmHWM of each
incarnation), and whether every report is stored exactly once (receipts and rows counted in the database).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "store"))

from fleet.store import open_store, query, schema  # noqa: E402
from fleet_lab.postgres import TempCluster  # noqa: E402
from store_helpers import record  # noqa: E402

TOKEN = "bench-store-token-0123456789abcdef"
DRIVERS = ["560.35.03", "570.133.20", "575.57.08", "580.65.06", "580.82.07", "580.95.05", "580.105.08",
           "580.126.09", "580.159.04", "590.44.01"]


def fill(store, hosts: int, runs: int, now: float) -> float:
    started = time.perf_counter()
    for run in range(runs):
        at = now - (runs - run) * 3600
        for i in range(hosts):
            if i % 10 == 0 and run >= runs - 3:    # a tenth of the hosts went quiet three hours ago
                continue
            driver = DRIVERS[(i + run) % len(DRIVERS)]
            facts = record(f"pod-{i:04d}", driver=driver, verdict="healthy" if (i + run) % 7 else "degraded")
            sent = schema.envelope(report_id=uuid.uuid4().hex, host=f"pod-{i:04d}", kind="apply",
                                   at=datetime.fromtimestamp(at + i * 0.01, timezone.utc),
                                   status="failed" if (i + run) % 13 == 0 else "ok", facts=facts)
            store.add(schema.check(sent, now=now))
    return time.perf_counter() - started


def timed(call, rounds: int = 7) -> tuple[float, float, int]:
    """Median and least wall ms of `rounds` calls (the least: the cost with the fewest other processes in the
    way, on a shared machine), and the answer's length."""
    seconds, size = [], 0
    for _ in range(rounds):
        started = time.perf_counter()
        found = call()
        seconds.append(time.perf_counter() - started)
        size = len(found)
    return statistics.median(seconds) * 1000, min(seconds) * 1000, size


def queries(url: str, hosts: int, runs: int) -> dict:
    now = time.time()
    with open_store(url) as store:
        fill_s = fill(store, hosts, runs, now)
        rows = store.rows("SELECT COUNT(*) FROM reports")[0][0]
        where = query.parse_where
        asks = {
            "where driver.version < 580": lambda: query.hosts(store, where=[where("driver.version < 580")], now=now),
            "where driver >= 580 and health != healthy": lambda: query.hosts(
                store, where=[where("driver.version >= 580"), where("health.verdict != healthy")], now=now),
            "failed": lambda: query.hosts(store, failed=True, now=now),
            "stale 2h": lambda: query.hosts(store, stale=7200, now=now),
            "all hosts (expire_after 7d)": lambda: query.hosts(store, expire_after=7 * 86400, now=now),
            "history one host": lambda: query.history(store, "pod-0500"),
            "changed since 3h": lambda: query.changed_since(store, now - 3 * 3600),
        }
        figures = {name: timed(ask) for name, ask in asks.items()}
    return {"fill_s": round(fill_s, 1), "reports_per_s_fill": round(hosts * runs / fill_s), "rows": rows,
            "load_average": round(os.getloadavg()[0], 1),
            "queries_ms": {name: {"median": round(ms, 1), "least": round(least, 1), "answers": n}
                           for name, (ms, least, n) in figures.items()}}


def hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


async def stream(url: str, pods: int, server, cluster_url: str) -> dict:
    from aiohttp import ClientSession, ClientTimeout, TCPConnector

    bodies = {}
    for i in range(pods):
        host = f"pod-{i:04d}"
        bodies[host] = json.dumps(schema.envelope(
            report_id=uuid.uuid4().hex, host=host, kind="script", at=datetime.now(timezone.utc), status="ok",
            facts=record(host), exit=0, changed=0)).encode()
    answered, attempts, outcomes = 0, 0, {}
    half = asyncio.Event()
    restarted = asyncio.Event()
    hwm = []

    async def pod(session, host):
        nonlocal answered, attempts
        while True:
            attempts += 1
            try:
                async with session.post(url, data=bodies[host], headers={
                        "Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}) as answer:
                    if answer.status == 200:
                        outcomes[host] = (await answer.json())["outcome"]
                        answered += 1
                        if answered >= pods // 2:
                            half.set()
                        return
            except Exception:   # noqa: BLE001 - the server died under it: the pod keeps the report, sends again
                pass
            await asyncio.sleep(0.2)

    async def restart():
        await half.wait()
        hwm.append(hwm_kb(server.proc.pid))
        server.kill()
        await asyncio.get_running_loop().run_in_executor(None, server.start)
        restarted.set()

    started = time.perf_counter()
    async with ClientSession(connector=TCPConnector(limit=0), timeout=ClientTimeout(total=60)) as session:
        killer = asyncio.create_task(restart())
        await asyncio.gather(*(pod(session, host) for host in bodies))
        await killer
    wall = time.perf_counter() - started
    hwm.append(hwm_kb(server.proc.pid))
    return {"load_average": round(os.getloadavg()[0], 1), "pods": pods, "wall_s": round(wall, 2), "reports_per_s": round(pods / wall),
            "attempts": attempts, "outcomes": {k: list(outcomes.values()).count(k) for k in set(outcomes.values())},
            "server_peak_rss_mb": [round(kb / 1024, 1) for kb in hwm]}


def ingest(cluster, pods: int) -> dict:
    from fleet_lab.report_server import ServeProcess

    url = cluster.database("bench_ingest")
    server = ServeProcess(url, TOKEN).start()
    try:
        result = asyncio.run(stream(server.url, pods, server, url))
    finally:
        server.kill()
    with open_store(url) as store:
        result["receipts"] = store.rows("SELECT COUNT(*) FROM receipts")[0][0]
        result["rows"] = store.rows("SELECT COUNT(*) FROM reports")[0][0]
        result["hosts"] = store.rows("SELECT COUNT(*) FROM hosts")[0][0]
        result["each_once"] = result["receipts"] == result["rows"] == result["hosts"] == pods
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("queries", "ingest", "both"), default="both")
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--json", default=None, help="write every figure here")
    args = parser.parse_args()
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))     # a connection per pod
    figures: dict = {"hosts": args.hosts, "runs": args.runs}
    with TempCluster() as cluster:
        if args.part in ("queries", "both"):
            import tempfile
            with tempfile.TemporaryDirectory() as scratch:
                for name, url in (("sqlite", f"sqlite:///{scratch}/history.sqlite3"),
                                  ("postgresql", cluster.database("bench_queries"))):
                    figures[name] = queries(url, args.hosts, args.runs)
                    print(name, json.dumps(figures[name], indent=1), flush=True)
        if args.part in ("ingest", "both"):
            figures["ingest"] = ingest(cluster, args.pods)
            print("ingest", json.dumps(figures["ingest"], indent=1), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
