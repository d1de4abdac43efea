"""The lent H200 after issue 44's structural moves (tests/data/h200-device/accept*/, written by bench/h200/accept.sh):
the tree converges in one apply, the no-op is one command carrying no more bytes than before the moves (final3/),
every kind of shell a user opens gets the venv's python with torch and CUDA, and a forced verify ran on the GPU."""

import json
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "h200-device"
RUNS = ["accept-mid", "accept", "accept-final", "accept-44", "accept-46", "accept-46-final"]
# gzipped bytes of the no-op's one command, as measured: accept-mid is the structural moves alone (under final3's),
# accept the merged main, whose probe carries the pod's resources (issue 45) and escaped path verdicts (issue 49)
NOOP_BYTES = {"accept-mid": 23141, "accept": 23599, "accept-final": 23696, "accept-44": 22501, "accept-46": 22724,
              "accept-46-final": 22724}
# accept-44: issue 44's last cuts (verify's tables inside its installed program, one section frame, fewer execs), the
# families' session gaps (issue 45) and the health fold (issue 50) merged: under final3's again
# accept-46: issue 46's controller cuts (the probe's and decide's controller side, the sinks, the connection's threads;
# the transcript's "fleet at" names the device copy's stale git, the tree was main after dcc0b3e): they send what
# main 04d77cd sent (the replay recognised every command); the 223 bytes over accept-44 (1dcdf50) came between the
# two, with the connection watchdog's change (stop_with_connection.sh, 225ecf7, recorded again in b5f75b1). Still
# under final3's
# accept-46-final: the tree submitted after CI run 54 (05cd489, "fleet tree 33c020025930" as bench/h200/tree_id.sh
# digests it here too): the same bytes and verdicts as accept-46
# the roles' tasks skipped on a converged one-GPU pod: issue 48's NVSwitch generation-4 tasks (NVLSM, ib_umad) add 2
SKIPPED = {"accept-mid": "18", "accept": "18", "accept-final": "20", "accept-44": "20", "accept-46": "20",
           "accept-46-final": "20"}
# a plain `fleet verify`'s checks: at accept-mid the user's shells were judged only where the run rendered env_hooks;
# at accept a plain verify proves them as apply's does (issue 45 item 1)
# at accept-final: the job variables of each kind (issue 45 item 2) and the host copies (issue 48 item 2) too
CHECKS = {"accept-mid": 16, "accept": 19, "accept-final": 23, "accept-44": 23, "accept-46": 23, "accept-46-final": 23}


def _row(text: str, after: str) -> list[str]:
    """The recap row of host h100 of the first command run after the line `after`."""
    rest = text[text.index(after):]
    return re.search(r"^h100\t(.*)$", rest, re.M)[1].split("\t")


@pytest.mark.parametrize("run", RUNS)
def test_converged_in_one_apply_and_the_noop_is_one_command_no_larger_than_before(run):
    text = (DATA / run / "transcript.txt").read_text()
    first = _row(text, "# first apply")
    assert first[1] == "7" and first[2] == "0" and first[4] == "passed" and first[5] == "healthy", first
    noop = _row(text, "# second apply")
    assert noop[1:6] == ["0", "0", SKIPPED[run], "passed (reused)", "healthy"] and noop[-1] == "1", noop
    sent = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", text)[1])
    before = (DATA / "final3" / "transcript.txt").read_text()
    was = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", before)[1])
    assert sent == NOOP_BYTES[run]
    if run in ("accept-mid", "accept-44", "accept-46", "accept-46-final"):
        assert sent <= was, (sent, was)
    again = _row(text, "# after verify and health")
    assert again[-1] == "1" and again[4] == "passed (reused)", again


@pytest.mark.parametrize("run", RUNS)
def test_every_kind_of_shell_gets_the_venvs_python_with_torch_and_cuda(run):
    text = (DATA / run / "transcript.txt").read_text()
    kinds = {}
    for line in text.splitlines():
        if line.startswith('{"kind"'):
            row = json.loads(line)
            kinds[row["kind"]] = row
    for kind in ("ssh host cmd", "bash -l", "bash -i"):
        row = kinds[kind]
        assert row["python3"] == "/opt/torch/.venv/bin/python3", row
        assert row["nvcc"] == "release 13.0", row
        assert row["python3_torch"]["torch"].startswith("/opt/torch/.venv/"), row
        assert row["python3_torch"]["cuda"] is True, row
    assert kinds["bare (env -i)"]["python3"] == "/usr/bin/python3"


@pytest.mark.parametrize("run", RUNS)
def test_a_forced_verify_ran_on_the_gpu_and_health_is_read(run):
    text = (DATA / run / "transcript.txt").read_text()
    verify = _row(text, "$ F verify")
    assert verify[4] == "passed" and verify[5] == "healthy", verify
    n = CHECKS[run]
    assert re.search(rf"^verify\.checks\t{n}/{n} passed$", text, re.M)
    summary = re.search(r"^verify\.summary\t(.*)$", text, re.M)[1]
    assert ("user_commands_interactive" in summary) == (run != "accept-mid"), summary
    assert int(re.search(r"^verify\.load\.batches\.0\t(\d+)$", text, re.M)[1]) > 0
    assert re.search(r"^h100\thealthy\t1\t", text, re.M)
