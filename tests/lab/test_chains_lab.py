"""Apply's chains on a real lab host (fleet/engine/chains.py): independent work runs at once in the one remote
command, a failed chain stops only what depends on it, apt and pip never wait for each other's locks, and two
apt installs never run at once. Every claim is asked of the host (its files, its dpkg, its venv), not read back
from fleet's report; the report's own timings are checked against what the host did."""

from __future__ import annotations

import io
import json
import subprocess
import textwrap
import threading
import time
from pathlib import Path

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

from helpers import ok, sh

POD = "pod-580"
WORK = "/tmp/chains-test"


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True))
    return main(list(argv), env), out.getvalue(), err.getvalue()


def inventory(lab, tmp_path: Path, roles: list[str], roles_dir: Path | None = None, host: str = POD) -> Path:
    return lab.write_inventory(tmp_path / "inventory.yaml", host, roles=roles,
                               **({"roles_path": [str(roles_dir)]} if roles_dir is not None else {}))


def role(roles_dir: Path, name: str, text: str) -> None:
    (roles_dir / name).mkdir(parents=True, exist_ok=True)
    (roles_dir / name / "role.yaml").write_text(textwrap.dedent(text))


# Each waits (up to 120 s) for a file the other makes when it starts: run one after the other, the first would
# give up and fail; only two tasks running at once both succeed.
WAIT_FOR = ('touch {w}/{me}-started; i=0; while [ ! -e {w}/{other}-started ] && [ $i -lt 1200 ]; do sleep 0.1; '
            'i=$((i+1)); done; [ -e {w}/{other}-started ] && touch {w}/{me}-done')


def test_two_independent_roles_run_at_once_on_the_host(lab, tmp_path):
    roles_dir = tmp_path / "roles"
    for me, other in (("ping", "pong"), ("pong", "ping")):
        role(roles_dir, me, f"""\
            tasks:
              - name: {me} waits for {other}
                command:
                  cmd: "{WAIT_FOR.format(w=WORK, me=me, other=other)}"
                  creates: {WORK}/{me}-done
                locks: [{me}]
            """)
    inv = inventory(lab, tmp_path, ["ping", "pong"], roles_dir)
    lab.reset([POD])
    ok(lab, POD, f"mkdir -p {WORK}")
    code, out, err = fleet("apply", str(inv), "--json")
    assert code == 0, out[-3000:] + err[-3000:]
    assert ok(lab, POD, f"ls {WORK}").split() == ["ping-done", "ping-started", "pong-done", "pong-started"]
    tasks = {t["role"]: t for t in json.loads(out)["hosts"][POD]["tasks"]}
    assert tasks["ping"]["status"] == tasks["pong"]["status"] == "changed"
    assert tasks["ping"]["chain"] == "ping" and tasks["pong"]["chain"] == "pong"
    # the host's clock agrees: each began before the other ended
    assert tasks["ping"]["started"] < tasks["pong"]["ended"] and tasks["pong"]["started"] < tasks["ping"]["ended"]

    code, out, err = fleet("apply", str(inv), "--json")            # converged: nothing to do, one command
    doc = json.loads(out)
    assert code == 0 and doc["hosts"][POD]["changed"] == 0, out[-3000:]
    assert doc["stats"][POD]["remote_commands"] == 1


def test_a_failed_chain_stops_only_what_depends_on_it(lab, tmp_path):
    roles_dir = tmp_path / "roles"
    role(roles_dir, "bad", f"""\
        tasks:
          - name: fails
            command: {{cmd: "touch {WORK}/bad-ran; echo disk full >&2; exit 3", creates: {WORK}/never}}
            locks: [bad]
          - name: after the failure
            directory: {{path: {WORK}/bad-second}}
        """)
    role(roles_dir, "needs_bad", f"""\
        after: [bad]
        tasks:
          - name: depends on bad
            directory: {{path: {WORK}/needs-bad}}
        """)
    # good starts with bad and ends after bad failed: it must finish all the same
    role(roles_dir, "good", f"""\
        tasks:
          - name: waits for bad to have run, then works
            command:
              cmd: "i=0; while [ ! -e {WORK}/bad-ran ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; sleep 0.5; touch {WORK}/good-done"
              creates: {WORK}/good-done
            locks: [good]
          - name: and a second step
            directory: {{path: {WORK}/good-second}}
        """)
    inv = inventory(lab, tmp_path, ["bad", "needs_bad", "good"], roles_dir)
    lab.reset([POD])
    ok(lab, POD, f"mkdir -p {WORK}")
    code, out, err = fleet("apply", str(inv), "--json")
    assert code == 1, out[-3000:] + err[-3000:]
    assert ok(lab, POD, f"ls {WORK}").split() == ["bad-ran", "good-done", "good-second"]   # the host's own answer
    host = json.loads(out)["hosts"][POD]
    by = {t["task"]: t for t in host["tasks"]}
    assert (by["fails"]["status"], by["fails"]["reason"]) == ("failed", "apply failed (exit 3): disk full")
    assert (by["after the failure"]["status"], by["after the failure"]["reason"]) == (
        "failed", "not run: it needs 'bad: fails', which did not succeed")
    assert by["depends on bad"]["status"] == "failed" and "bad: " in by["depends on bad"]["reason"]
    assert by["waits for bad to have run, then works"]["status"] == by["and a second step"]["status"] == "changed"
    assert host["failed"] == 3 and host["changed"] == 2, host["tasks"]


def test_pip_runs_while_apt_waits_for_the_dpkg_lock_and_two_apt_installs_never_overlap(lab, tmp_path):
    """A fresh pod on driver 570 (toolkit, compat and torch to install), with the dpkg frontend lock held by
    someone else (as unattended-upgrades holds it on a fresh VM): torch goes into its venv while apt waits.
    Then the lock is let go and apt finishes; dpkg and the venv answer for what fleet reported."""
    host = "pod-570"
    inv = inventory(lab, tmp_path, ["cuda_toolkit", "cuda_compat", "torch"], host=host)
    lab.reset([host])
    holder = ("import fcntl, os, time\n"
              "f = open('/var/lib/dpkg/lock-frontend', 'w'); fcntl.lockf(f, fcntl.LOCK_EX)\n"
              "open('/tmp/dpkg-held', 'w').close()\n"
              "while not os.path.exists('/tmp/dpkg-release'): time.sleep(0.1)\n")
    ok(lab, host, f"rm -f /tmp/dpkg-held /tmp/dpkg-release; cat > /tmp/hold.py <<'EOF'\n{holder}EOF\n"
                  "nohup python3 /tmp/hold.py >/dev/null 2>&1 </dev/null & "
                  "i=0; while [ ! -e /tmp/dpkg-held ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; ls /tmp/dpkg-held")
    result: dict = {}
    run = threading.Thread(target=lambda: result.update(zip(("code", "out", "err"), fleet("apply", str(inv), "--json"))))
    run.start()
    torch_in = "/opt/fleet/venv/bin/python -c 'import torch' 2>/dev/null && echo yes"   # python_env's default
    try:
        deadline = time.monotonic() + 600      # a bound, not a measure: torch normally lands in seconds
        while time.monotonic() < deadline and sh(lab, host, torch_in).stdout.strip() != "yes" and run.is_alive():
            time.sleep(0.5)
        torch_while_locked = sh(lab, host, torch_in).stdout.strip()
        toolkit_while_locked = sh(lab, host, "dpkg-query -W -f='${Status}' cuda-toolkit-13-0 2>/dev/null").stdout
        apt_waiting = sh(lab, host, "pgrep -f 'apt-get.*install' >/dev/null && echo waiting").stdout.strip()
    finally:
        sh(lab, host, "touch /tmp/dpkg-release")
        run.join(900)
    assert torch_while_locked == "yes", result
    assert not toolkit_while_locked.endswith("ok installed") and apt_waiting == "waiting"
    assert result["code"] == 0, result["out"][-3000:] + result["err"][-3000:]
    assert ok(lab, host, "dpkg-query -W -f='${Status}' cuda-toolkit-13-0") == "hold ok installed"   # held, as asked
    tasks = json.loads(result["out"])["hosts"][host]["tasks"]
    ran = [t for t in tasks if t.get("started") is not None]
    apt = [t for t in ran if t["role"] == "cuda_toolkit" or t["task"].startswith("cuda-compat package")]
    assert len(apt) == 2, ran                                   # the toolkit and the compat package
    first, second = sorted(apt, key=lambda t: t["started"])
    assert first["ended"] <= second["started"]                 # one after the other (the dpkg lock, fleet's)
