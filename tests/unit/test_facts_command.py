"""`fleet facts` end to end on this machine through the local connection (cpu-only here)."""

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.record import store

ROOT = Path(__file__).parents[2]


def environment(tmp_path) -> tuple[Environment, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200, color_system=None, soft_wrap=True),
                      err_console=Console(file=err, width=200, color_system=None, soft_wrap=True), cwd=tmp_path)
    return env, out, err


def closed_port() -> int:
    """A local TCP port nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def inventory(tmp_path, extra: str = "") -> Path:
    path = tmp_path / "inv.yaml"
    path.write_text("hosts:\n  here:\n    connection: local\n" + extra)
    return path


def test_live_json_one_command_and_record_written(tmp_path):
    env, out, err = environment(tmp_path)
    assert main(["facts", str(inventory(tmp_path)), "--json"], env) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    record = doc["hosts"]["here"]
    assert doc["stats"]["here"]["remote_commands"] == 1
    assert doc["stats"]["here"]["seconds"] > 0
    assert record["system"]["arch"] == os.uname().machine
    assert record["system"]["hostname"] == os.uname().nodename
    assert record["probe"]["errors"] == []
    if not Path("/proc/driver/nvidia/version").exists():
        assert record["platform"] == "cpu-only" and record["gpus"] == []
    assert store.read(tmp_path / "facts", "here") == record


def test_second_gather_keeps_previous_and_cached_needs_no_host(tmp_path):
    inv = inventory(tmp_path)
    env, _, _ = environment(tmp_path)
    assert main(["facts", str(inv), "--json"], env) == 0
    first = store.read(tmp_path / "facts", "here")
    env, out, _ = environment(tmp_path)
    assert main(["facts", str(inv), "--json"], env) == 0
    assert store.read(tmp_path / "facts", "here", previous=True) == first
    env, out, _ = environment(tmp_path)
    assert main(["facts", str(inv), "--json", "--cached"], env) == 0
    doc = json.loads(out.getvalue())
    assert doc["stats"]["here"]["remote_commands"] == 0
    assert doc["hosts"]["here"] == store.read(tmp_path / "facts", "here")


def test_table_and_drift(tmp_path):
    inv = inventory(tmp_path)
    env, _, _ = environment(tmp_path)
    assert main(["facts", str(inv)], env) == 0
    # pretend the host had another driver and no torch env last time: drift must name those rows
    current = store.read(tmp_path / "facts", "here")
    older = json.loads(json.dumps(current))
    older["driver"]["version"] = "570.133.20"
    older["python"]["env_exists"] = True
    store.write(tmp_path / "facts", "here", older)
    store.write(tmp_path / "facts", "here", current)
    env, out, _ = environment(tmp_path)
    assert main(["facts", str(inv), "--cached", "--drift"], env) == 0
    text = out.getvalue()
    assert "system.arch" in text  # one host: nothing folded
    assert "here: 2 changes since the previous record" in text
    assert "570.133.20" in text and "python.env_exists" in text


def test_unreachable_host_exit_1_with_age_of_last_record(tmp_path):
    inv = inventory(tmp_path, f"  gone:\n    address: 127.0.0.1\n    port: {closed_port()}\n")
    store.write(tmp_path / "facts", "gone", {"host": "gone", "gathered_at": "2020-01-01T00:00:00Z",
                                             "platform": "x86_64-dgpu", "driver": {"version": "570.133.20"}})
    env, out, err = environment(tmp_path)
    assert main(["facts", str(inv), "--connect-timeout", "2"], env) == 1
    text = out.getvalue()
    assert "unreachable" in text and "record " in text and "d " in text  # "record 2150d 3h ago"
    assert "x86_64-dgpu" in text  # last known values still shown
    assert "gone" in err.getvalue()
    env, out, _ = environment(tmp_path)
    assert main(["facts", str(inv), "--json", "--connect-timeout", "2"], env) == 1
    doc = json.loads(out.getvalue())
    assert doc["hosts"]["gone"] is None and doc["errors"]["gone"]["unreachable"] is True
    assert doc["errors"]["gone"]["last_record_age_s"] > 3600
    assert doc["hosts"]["here"]["host"] == "here"


def test_cached_without_record_says_how_to_fix(tmp_path):
    env, out, err = environment(tmp_path)
    assert main(["facts", str(inventory(tmp_path)), "--cached"], env) == 1
    assert "run `fleet facts` without --cached" in err.getvalue()


def test_bad_limit_is_input_error(tmp_path):
    env, _, err = environment(tmp_path)
    assert main(["facts", str(inventory(tmp_path)), "--limit", "nope"], env) == 2
    assert "--limit names 'nope'" in err.getvalue()


BLOCK_SSH_LIBS = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("fabric", "paramiko", "invoke"):
            raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, Block())
from fleet.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_local_connection_works_without_fabric(tmp_path):
    """As on the H100 machine: only PyYAML, Jinja2 and Rich installed."""
    result = subprocess.run([sys.executable, "-c", BLOCK_SSH_LIBS, "facts", str(inventory(tmp_path)), "--json"],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stats"]["here"]["remote_commands"] == 1
