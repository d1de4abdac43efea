"""The fingerprint taken in two halves (what the trace does not give first, then the trace from stdin) prints, for
the same host and the same trace, byte for byte what e611fe2's did: the text the probe keeps in $fleet_fp_host and the
verify gate hashes, so a converged host's first probe after the change still reuses its verify.

tests/data/fingerprint/e611fe2-probe-part.sh is e611fe2's fingerprint_script("/opt/fleet/venv", capture=False), which
read the trace from $fleet_shells_out. Both run under real bash on this machine (its driver file, ld cache, loader
files, python), fed real traces: this machine's own (fleet.facts.shells) and traces holding each case the parser
meets (a kind with no lines, LD_LIBRARY_PATH set then unset, a value before any shell line, a directory of each kind
holding its own libcuda.so.1)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fleet.facts import fingerprint, shells
from fleet.programs import MISSING, MISSING_EXIT

VENV = "/opt/fleet/venv"
OLD = (Path(__file__).parents[1] / "data" / "fingerprint" / "e611fe2-probe-part.sh").read_text()


def run(script: str, trace: str, env: dict, *args: str, old: bool = False) -> subprocess.CompletedProcess:
    if old:   # e611fe2: the trace in the variable the probe kept
        script = f"{shells.CAPTURED}=$(cat)\n( {script} ) 2>/dev/null"
    return subprocess.run(["bash", "-c", script, "fingerprint", *args], input=trace, capture_output=True, text=True,
                          env=env, timeout=60)


def this_machines_trace() -> str:
    out = subprocess.run(["bash", "-c", shells.capture() + f'\nprintf %s "${shells.CAPTURED}"'], capture_output=True,
                         text=True, timeout=60)
    return out.stdout


def crafted(libs: Path) -> list[str]:
    (libs / "i").mkdir()
    (libs / "l").mkdir()
    (libs / "i" / "libcuda.so.1").write_bytes(b"interactive's")
    (libs / "l" / "libcuda.so.1").write_bytes(b"login's libcuda")
    return [
        "",
        "@@value LD_LIBRARY_PATH=/before/any/shell\n@@shell interactive\n@@value PATH=/usr/bin",
        f"@@shell noninteractive\n@@value PATH=/bin\n@@shell interactive\n@@value LD_LIBRARY_PATH={libs}/i:/x\n"
        f"@@cmd python3 /usr/bin/python3\n@@py python3 /usr/lib/torch\n@@shell login\n@@value LD_LIBRARY_PATH={libs}/l\n"
        "@@unset LD_LIBRARY_PATH\n@@unset CUDA_HOME\n@@shell bare\n@@value HOME=/root\n# a comment line\n",
        f"@@shell login\n@@value LD_LIBRARY_PATH=:{libs}/none:{libs}/i\n@@value LD_LIBRARY_PATH={libs}/l\n"
        "@@shell noninteractive",
    ]


@pytest.mark.parametrize("own_ld", [False, True])
def test_same_host_same_trace_same_kept_text_as_e611fe2(tmp_path, own_ld):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if own_ld:    # the probe's own environment's LD_LIBRARY_PATH finds a libcuda.so.1 of its own
        (tmp_path / "ni").mkdir()
        (tmp_path / "ni" / "libcuda.so.1").write_bytes(b"ni")
        env["LD_LIBRARY_PATH"] = f"{tmp_path}/ni"
    new_inline = fingerprint.fingerprint_script(VENV, capture=False)
    new_program = fingerprint.fingerprint_script(VENV)
    seen = ""
    for trace in [this_machines_trace(), *crafted(tmp_path)]:
        old = run(OLD, trace, env, old=True)
        assert old.returncode == 0 and old.stdout.startswith("driver "), old
        inline = run(new_inline, trace, env)
        program = run(new_program, trace, env, fingerprint.TRACE_ON_STDIN)
        assert inline.stdout == old.stdout, trace
        assert (program.returncode, program.stdout) == (0, old.stdout), trace
        assert fingerprint.parse(inline.stdout) == fingerprint.parse(old.stdout)
        seen += inline.stdout
    for kind, lib in (("interactive", "i"), ("login", "l")):   # the crafted cases ran: each kind its own libcuda
        assert f"libcuda.{kind} {tmp_path / lib / 'libcuda.so.1'} " in seen


def test_run_alone_it_traces_the_shells_itself_as_before():
    """The verify gate's own (no probe): `bash PROGRAM` with no argument traces the shells itself."""
    old = run(f"{shells.capture()}\n" + OLD, "", dict(os.environ))
    new = run(fingerprint.fingerprint_script(VENV), "", dict(os.environ))
    assert (new.returncode, new.stdout) == (0, old.stdout) and "env.login " in new.stdout


def test_a_trace_saying_the_shells_program_was_missing_is_said_again():
    """Where the shells source found its installed program missing, its trace is that MISSING line: nothing to take
    the shells' parts from; the section says the same line (the engine asks again with the text), exit 97."""
    trace = f"{MISSING}fleet-shell-trace-0123456789abcdef"
    for script, args in ((fingerprint.fingerprint_script(VENV, capture=False), ()),
                         (fingerprint.fingerprint_script(VENV), (fingerprint.TRACE_ON_STDIN,))):
        out = run(script, trace, dict(os.environ), *args)
        assert (out.returncode, out.stdout) == (MISSING_EXIT, trace + "\n")
