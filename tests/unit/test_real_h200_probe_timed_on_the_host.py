"""A converged host's probe timed ON the lent H200 (tests/data/h200-device/remote/, written by bench/h200/remote.sh, its
README says what ran): the shells traced at once, the fingerprint fed the trace while the other sources run, no
`nvidia-smi -q -x` and no table header in the routine probe; then issue 34's end-to-end figures as measured, the
1.25x it asks not met (the note says so). Before (tests/data/h200-device/final/, main 691d111): 1.61x and 1.66x; on
the host the whole command 331-388 ms."""

import re
import statistics
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "h200-device" / "remote"
FILES = ("transcript.txt", "timings.txt", "timings-compiled.txt", "sections-apply.txt", "sections-facts.txt", "smi.txt")


@pytest.fixture(scope="module")
def data() -> dict[str, str]:
    missing = [name for name in FILES if not (DATA / name).is_file()]
    if missing:
        pytest.fail(f"{DATA} lacks {', '.join(missing)}: run `bash bench/h200/remote.sh` on the lent H200 (from the "
                    "project root, .gpu carried) and copy what it writes under $OUT there", pytrace=False)
    return {name: (DATA / name).read_text() for name in FILES}


def sections(text: str) -> dict[str, float]:
    """bench/sections.py's table -> section name (or end:NAME): median ms."""
    return {m[3]: float(m[1]) for m in re.finditer(r"^ *([\d.]+) +(\d+) +(\S+)$", text, re.M)}


def ratios(text: str) -> dict[str, float]:
    rows: dict[str, list[float]] = {}
    for line in text.splitlines():
        what, value = line.split()
        rows.setdefault(what, []).append(float(value))
    assert {k: len(v) for k, v in rows.items()} == {"apply-noop": 9, "facts": 9, "run-true": 9}
    floor = statistics.median(rows["run-true"])
    return {what: round(statistics.median(rows[what]) / floor, 2) for what in ("apply-noop", "facts")}


def test_the_host_converged_and_the_no_op_is_one_command_with_under_half_the_bytes(data):
    text = data["transcript.txt"]
    assert len(re.findall(r"^h100\t13\t0\t0\t18\tpassed \(reused\)\thealthy\t[\d.]+\t1$", text, re.M)) == 2
    sent = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", text)[1])
    was = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)",
                        (DATA.parent / "before" / "transcript.txt").read_text())[1])
    assert sent <= was / 2, (sent, was)          # 23,238 of 50,561


def test_every_kind_of_shell_gets_the_venv_s_python_pip_and_torch_and_verify_loaded_the_gpu(data):
    every_kind_gets_the_venv(data["transcript.txt"])


def every_kind_gets_the_venv(text: str) -> None:
    """A transcript's plain-SSH-client answers (tests/data/h200-device/ask_kinds.py) and its forced verify and health:
    each kind of shell the venv's python3 with CUDA and its pip, load batches run on the GPU, the GPU healthy."""
    kinds = [line for line in text.splitlines() if line.startswith('{"kind": ')]
    assert len(kinds) == 4
    for line in kinds[:3]:
        assert '"python3": "/opt/torch/.venv/bin/python3"' in line and '"cuda": true, "count": 1' in line
        assert "from /opt/torch/.venv/lib/python3.12/site-packages/pip" in line
    assert int(re.search(r"^batches \{'0': (\d+)\}", text, re.M)[1]) > 0
    assert re.search(r"^h100\thealthy\t1\t", text, re.M)


@pytest.mark.parametrize("what", ["apply", "facts"])
def test_the_probe_on_the_host_is_its_slowest_chain_and_no_slow_nvidia_smi(what, data):
    found = sections(data[f"sections-{what}.txt"])
    assert not any(name.endswith(("nvidia_smi_header", "health_xml")) for name in found)
    assert found["WHOLE-COMMAND"] < 200, found["WHOLE-COMMAND"]       # 331-388 ms at 691d111
    # the fingerprint starts with the others and ends soon after the trace it is fed (it waited for the trace before)
    assert found["end:facts.verify_fingerprint"] - found["end:facts.shells"] < 20
    assert found["facts.shells"] < 150, found["facts.shells"]         # was 208-266 ms, its kinds one after another


def test_the_ratios_are_as_measured_and_issue_34s_1_25x_is_not_met(data):
    assert ratios(data["timings.txt"]) == {"apply-noop": 1.29, "facts": 1.29}
    assert ratios(data["timings-compiled.txt"]) == {"apply-noop": 1.37, "facts": 1.31}
