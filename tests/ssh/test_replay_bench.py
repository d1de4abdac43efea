"""The controller benchmark's simulated hosts (bench/controller.py, bench/_replay.py) answer fleet as the recorded
converged lab hosts did: a converged apply changes nothing and is one command per host, facts records are
written, `fleet run` works. When fleet changes what it sends, this fails until bench/record_replay.py records
again: the benchmark must measure the fleet that ships."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import controller  # noqa: E402


@pytest.fixture
def simulated(tmp_path):
    lab = controller.Lab(tmp_path, 8, "127.0.0.1", _free_ports(8), controller.RECORDING)
    yield lab
    stats = lab.stop()
    assert stats["unknown"] == 0, STALE


def _free_ports(n: int) -> int:
    """The first of n consecutive free ports."""
    import socket

    for base in range(24000, 60000, 97):
        socks = []
        try:
            for port in range(base, base + n):
                sock = socket.socket()
                sock.bind(("127.0.0.1", port))
                socks.append(sock)
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise AssertionError("no run of free ports")


def fleet(lab, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(lab.workdir), "XDG_STATE_HOME": str(lab.workdir), "NO_COLOR": "1",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fleet", args[0], str(lab.inventory), *args[1:]],
                          capture_output=True, text=True, env=env, timeout=300)


STALE = ("fleet now sends commands the benchmark's recording lacks: record again with "
         "`python3 bench/record_replay.py` (as root) and commit bench/data")


def test_the_simulated_hosts_are_converged_hosts_to_fleet(simulated):
    applied = fleet(simulated, "apply", "--json")
    assert "replay: no recording" not in applied.stdout + applied.stderr, STALE
    assert applied.returncode == 0, applied.stderr[-3000:]
    document = json.loads(applied.stdout)
    assert len(document["hosts"]) == 8
    for name, doc in document["hosts"].items():
        assert doc["changed"] == 0 and doc["failed"] == 0 and not doc["error"], (name, doc)
        assert document["stats"][name]["remote_commands"] == 1
    gathered = fleet(simulated, "facts")
    assert gathered.returncode == 0, gathered.stderr[-3000:]
    records = sorted(p.name for p in (simulated.workdir / "facts").glob("h*.json") if ".prev." not in p.name)
    assert len(records) == 8
    assert json.loads((simulated.workdir / "facts" / "h0001.json").read_text())["host"] == "h0001"
    ran = fleet(simulated, "run", "--", "true")
    assert ran.returncode == 0, ran.stderr[-3000:]


def test_the_recorded_no_op_runs_the_trace_and_the_fingerprint_from_the_host_and_carries_neither():
    """What each converged lab host received for its no-op apply (the recording, as bash read it: base64, gzip):
    ONE command, whose facts run the shells' trace and the fingerprint from /var/lib/fleet/bin; no line of their
    text rides along (issue 34: the bytes per no-op)."""
    import base64
    import gzip

    from fleet.engine import probe
    from fleet.facts.fingerprint import fingerprint_script
    from fleet.facts.shells import trace_program

    others = "\n".join(body for name, body in probe.bodies().items() if name not in ("shells", "verify_fingerprint"))
    own = [line for line in (trace_program().text + fingerprint_script("/opt/fleet/venv", capture=False)).splitlines()
           if len(line) > 60 and line not in others]
    assert len(own) > 30
    applies: dict[str, list[str]] = {}
    with gzip.open(controller.RECORDING, "rt") as rows:
        for row in map(json.loads, rows):
            packed = base64.b64decode(row["stdin"])
            script = (gzip.decompress(packed) if packed[:2] == b"\x1f\x8b" else packed).decode()
            if re.search(r"@@fleet:begin check\.|^fleet_begin check\.", script, re.M):   # sections or frame.sh's
                applies.setdefault(row["host"], []).append(script)
    assert sorted(applies) == ["pod-570", "pod-580", "spark", "thor"], sorted(applies)
    for host, (script, *more) in applies.items():
        assert not more, f"{host}: {1 + len(more)} commands"
        assert f"bash {trace_program().path}\n" in script and " --trace-on-stdin " in script, host
        assert not [line for line in own if line in script], host
