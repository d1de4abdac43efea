"""Record what converged lab hosts answer, for bench/controller.py's replaying server. Run as root:

    python3 bench/record_replay.py [--net 127.0.69] [--lab-root /var/tmp/fleet-lab-record]

Brings up the 4-host lab (inventories/lab.yaml on its own subnet and root), converges it with `fleet apply`,
then runs a converged `fleet apply`, `fleet facts` and `fleet run -- true` with every remote command recorded
(bench/_fleet_recorded.py), and writes into bench/data: the recording (replay-lab.jsonl.gz), the inventory
settings it was made with (replay-lab.yaml), the lab's keyring pins and each host's facts record (a converged
fleet has them, and the probe fleet sends is planned from them). Record again whenever fleet changes what it
sends: the server answers only commands it has seen byte for byte, and bench/controller.py fails otherwise.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"


def fleet(*args: str, env: dict, record: Path | None = None) -> None:
    runner = [str(ROOT / "bench" / "_fleet_recorded.py")] if record else ["-m", "fleet"]
    extra = {"BENCH_RECORD": str(record)} if record else {}
    proc = subprocess.run([sys.executable, *runner, *args], env={**env, **extra}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fleet {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", default="127.0.69")
    parser.add_argument("--lab-root", default="/var/tmp/fleet-lab-record")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleet-record-") as tmp:
        tmp = Path(tmp)
        text = (ROOT / "inventories" / "lab.yaml").read_text().replace("127.0.1.", f"{args.net}.")
        text = text.replace("facts_dir: facts/lab", f"facts_dir: {tmp / 'facts'}")
        inventory = tmp / "lab.yaml"
        inventory.write_text(text)
        env = dict(os.environ, FLEET_LAB_ROOT=args.lab_root, PYTHONPATH=str(ROOT), XDG_STATE_HOME=str(tmp),
                   NO_COLOR="1")
        fleet("lab", "up", str(inventory), env=env)
        try:
            fleet("apply", str(inventory), env=env)          # converge
            fleet("apply", str(inventory), env=env)          # a record of the converged state to plan from
            recording = tmp / "recording.jsonl"
            fleet("apply", str(inventory), env=env, record=recording)
            fleet("facts", str(inventory), env=env, record=recording)
            fleet("run", str(inventory), "--", "true", env=env, record=recording)
            # the records as the recorded apply found them are what the last facts run left: planned alike
            settings = yaml.safe_load(inventory.read_text())
            DATA.mkdir(exist_ok=True)
            with open(recording, "rb") as src, gzip.GzipFile(DATA / "replay-lab.jsonl.gz", "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
            hosts = {name: {k: v for k, v in entry.items() if k != "address"}
                     for name, entry in settings["hosts"].items()}
            (DATA / "replay-lab.yaml").write_text(
                "# The lab inventory's settings when bench/data/replay-lab.jsonl.gz was recorded "
                "(bench/record_replay.py).\n" + yaml.safe_dump({"vars": settings.get("vars", {}), "hosts": hosts},
                                                               sort_keys=False))
            shutil.copy(Path(settings["keyring_pins"]), DATA / "replay-lab-keyring.sha256")
            facts = DATA / "replay-lab-facts"
            facts.mkdir(exist_ok=True)
            for name in hosts:
                shutil.copy(tmp / "facts" / f"{name}.json", facts / f"{name}.json")
            rows = [json.loads(line) for line in recording.read_text().splitlines()]
            print(f"recorded {len(rows)} commands from {len(hosts)} hosts into {DATA}")
        finally:
            fleet("lab", "down", str(inventory), env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
