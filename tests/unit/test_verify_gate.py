"""The fingerprint rules that decide whether verify runs again (fleet/resources/verify_gate.py), without SSH; the lab
test tests/lab/test_verify_fingerprint.py runs them on a real host."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from datetime import datetime, timedelta, timezone

import pytest

from fleet.resources import verify_gate
from fleet.engine import probe
from fleet.facts import shells

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
PARTS = {"driver": "580.95.05", "torch": "a", "ld.interactive": "/x"}
LAST = {"passed": True, "fingerprint": "abcd", "fingerprint_parts": PARTS,
        "at": (NOW - timedelta(hours=2)).isoformat()}


@pytest.mark.parametrize("last, gate, max_age, forced, why", [
    (LAST, verify_gate.Gate("abcd", PARTS), 3600, None, "the last verify is 2h old (verify_max_age 1h)"),
    (LAST, verify_gate.Gate("abcd", PARTS), None, "asked for (--verify)", "asked for (--verify)"),
    ({**LAST, "fingerprint": None}, verify_gate.Gate("abcd"), 86400, None,
     "no earlier verify with a fingerprint on the host"),
    (None, verify_gate.Gate("abcd"), 86400, None, "no earlier verify with a fingerprint on the host"),
    ({**LAST, "at": "yesterday"}, verify_gate.Gate("abcd", PARTS), 86400, None, "the last verify has no readable time"),
    (LAST, verify_gate.Gate("ffff", {**PARTS, "driver": "580.159.04",
                                     "ld.interactive": "/usr/local/cuda-13.0/compat:/x"}), 86400, None,
     "changed since the last verify: kernel driver, LD_LIBRARY_PATH of interactive shells"),
])
def test_why_verify_ran(last, gate, max_age, forced, why):
    assert verify_gate.run_reason(last, gate, max_age, NOW, forced) == why


@pytest.mark.parametrize("text, seconds", [("24h", 86400), ("30m", 1800), ("2d", 172800), ("90", 90), (0, 0)])
def test_max_age_durations(text, seconds):
    assert verify_gate.parse_age(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "-1h", "1w", True])
def test_bad_max_age_is_one_sentence(bad):
    with pytest.raises(ValueError, match="write e.g. 24h"):
        verify_gate.parse_age(bad)


def run_gate(tmp_path, max_age):
    check = "echo '{\"passed\": true}'; exit 0"
    script = verify_gate.gated(check, str(tmp_path / "venv"), max_age, str(tmp_path / "verify.json"))
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600,
                         env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(tmp_path)})
    return verify_gate.read(res.stdout)


def record(tmp_path, gate, age_s=0):
    """The host's verify record as the engine writes it (json indent=1), aged by its mtime."""
    path = tmp_path / "verify.json"
    path.write_text(json.dumps({"passed": True, "fingerprint": gate.fingerprint,
                                "fingerprint_parts": gate.parts}, indent=1) + "\n")
    when = path.stat().st_mtime - age_s
    os.utime(path, (when, when))


def test_the_host_reuses_verify_only_while_its_own_record_matches_and_is_young(tmp_path):
    first = run_gate(tmp_path, 86400)
    assert not first.reused and first.output.strip() == '{"passed": true}' and len(first.fingerprint) == 16
    assert first.parts["ld.noninteractive"] == "" and first.parts["torch"].startswith("none")
    record(tmp_path, first)
    again = run_gate(tmp_path, 86400)
    assert again.reused and again.output.strip() == "" and again.fingerprint == first.fingerprint
    assert not run_gate(tmp_path, None).reused                # asked for: it runs
    record(tmp_path, first, age_s=7200)
    assert not run_gate(tmp_path, 3600).reused                # older than verify_max_age: it runs
    assert run_gate(tmp_path, 86400).reused
    (tmp_path / ".bashrc").write_text("export LD_LIBRARY_PATH=/opt/extra\n")   # interactive shells change
    changed = run_gate(tmp_path, 86400)
    assert not changed.reused and changed.parts["ld.interactive"] == "/opt/extra"
    assert verify_gate.changed_parts(first.parts, changed.parts) == ["LD_LIBRARY_PATH of interactive shells"]
    (tmp_path / "verify.json").unlink()                        # no record on the host: it runs
    assert not run_gate(tmp_path, 86400).reused


def test_the_gate_reads_the_probes_own_trace_of_the_shells_and_starts_none_of_its_own(tmp_path):
    """Inside the probe, the fingerprint's LD_LIBRARY_PATHs come from the facts.shells trace the probe already took."""
    compat = tmp_path / "cuda-13.0" / "compat"
    compat.mkdir(parents=True)
    (compat / "libcuda.so.580.95.05").write_bytes(b"x" * 123)
    (compat / "libcuda.so.1").symlink_to("libcuda.so.580.95.05")
    trace = ("@@home /h\n@@shell noninteractive\n@@value LD_LIBRARY_PATH=/a\n@@shell interactive\n"
             f"@@value LD_LIBRARY_PATH=/from/the/trace:{compat}\n@@shell login\n@@unset LD_LIBRARY_PATH\n")
    (tmp_path / ".bashrc").write_text("export LD_LIBRARY_PATH=/never/read\n")
    script = (f"{shells.CAPTURED}={shlex.quote(trace)}\n"
              + verify_gate.gated("echo '{}'", str(tmp_path / "venv"), 86400, str(tmp_path / "verify.json")))
    res = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600,
                         env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(tmp_path)})
    parts = verify_gate.read(res.stdout).parts
    assert parts["ld.interactive"] == f"/from/the/trace:{compat}" and parts["ld.login"] == ""
    # the loader's pick for that path: the first directory holding libcuda.so.1, resolved (path, size, mtime)
    assert parts["libcuda.interactive"].startswith(f"{compat}/libcuda.so.580.95.05 123 ")
    assert parts["libcuda.login"] == parts["libcuda.noninteractive"] != parts["libcuda.interactive"]


def test_the_fingerprint_is_the_same_inside_the_probe_and_in_a_command_of_its_own(tmp_path):
    """A check-only command (the probe's guess was wrong) must not see a different fingerprint and re-run verify."""
    (tmp_path / ".bashrc").write_text("export LD_LIBRARY_PATH=/opt/extra:$LD_LIBRARY_PATH\n")
    (tmp_path / ".profile").write_text("export LD_LIBRARY_PATH=/opt/login\n")
    gate = verify_gate.gated("echo '{}'", str(tmp_path / "venv"), 86400, str(tmp_path / "verify.json"))
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(tmp_path)}
    alone, in_probe = (verify_gate.read(subprocess.run(["bash", "-c", s], capture_output=True, text=True,
                                                       timeout=600, env=env).stdout)
                       for s in (gate, probe.script(probe.Needs.of({"python_env": str(tmp_path / "venv")})) + "\n" + gate))
    assert alone.parts["ld.interactive"].startswith("/opt/extra") and alone.parts["ld.login"] == "/opt/login"
    assert in_probe.parts == alone.parts and in_probe.fingerprint == alone.fingerprint
