"""This session's runs on the lent H200 (tests/data/h200-device/remote2/ and ab/, each README says what ran): the probe
with one fork fewer a section, the trust prime and the trace's builtin lookups, converged in one command, under half
of 638870a's bytes, every kind of shell getting the venv; and what it measured, as measured: issue 34's 1.25x met on
one lease uncompiled, not compiled, and not on the one lease that compared both trees (ab/)."""

import re
import statistics
from pathlib import Path

import pytest
from test_real_h200_probe_timed_on_the_host import every_kind_gets_the_venv

DATA = Path(__file__).resolve().parents[1] / "data" / "h200-device"


def read(folder: str, name: str) -> str:
    path = DATA / folder / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: its README says which run on the lent H200 wrote it", pytrace=False)
    return path.read_text()


def sections(text: str) -> dict[str, float]:
    return {m[3]: float(m[1]) for m in re.finditer(r"^ *([\d.]+) +(\d+) +(\S+)$", text, re.M)}


def medians(text: str) -> dict[str, tuple[int, float]]:
    rows: dict[str, list[float]] = {}
    for line in text.splitlines():
        what, value = line.split()
        rows.setdefault(what, []).append(float(value))
    return {what: (len(values), statistics.median(values)) for what, values in rows.items()}


def ratios(text: str, prefix: str = "") -> dict[str, float]:
    found = medians(text)
    floor = found[f"{prefix}run-true"][1]
    return {what: round(found[f"{prefix}{what}"][1] / floor, 2) for what in ("apply-noop", "facts")}


def test_the_session_s_probe_converged_in_one_command_under_half_the_bytes():
    text = read("remote2", "transcript.txt")
    assert len(re.findall(r"^h100\t13\t0\t0\t18\tpassed \(reused\)\thealthy\t[\d.]+\t1$", text, re.M)) == 2
    sent = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", text)[1])
    was = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", read("before", "transcript.txt"))[1])
    assert sent == 24908 and sent <= was / 2, (sent, was)


def test_every_kind_of_shell_still_gets_the_venv_and_verify_loaded_the_gpu():
    every_kind_gets_the_venv(read("remote2", "transcript.txt"))


def test_the_remote_run_s_figures_as_measured():
    for what, whole in (("apply", 147.1), ("facts", 123.8)):
        found = sections(read("remote2", f"sections-{what}.txt"))
        assert found["WHOLE-COMMAND"] == whole
        assert "facts.shells" in found and "facts.paths" in found   # own-shell sections are timed (bench/sections.py)
    assert ratios(read("remote2", "timings.txt")) == {"apply-noop": 1.13, "facts": 1.13}
    assert ratios(read("remote2", "timings-compiled.txt")) == {"apply-noop": 1.19, "facts": 1.28}


def test_one_lease_compares_the_trees_and_1_25x_is_not_met():
    text = read("ab", "transcript.txt")
    assert len(re.findall(r"^h100\t13\t0\t0\t18\tpassed \(reused\)\thealthy\t[\d.]+\t1$", text, re.M)) == 2
    base, new = sections(read("ab", "sections-base.txt")), sections(read("ab", "sections-new.txt"))
    assert (base["facts.shells"], new["facts.shells"]) == (135.2, 122.8)
    assert (base["WHOLE-COMMAND"], new["WHOLE-COMMAND"]) == (161.0, 160.3)
    rounds = read("ab", "ab.txt")
    assert {n for n, _ in medians(rounds).values()} == {20}
    assert ratios(rounds, "base-") == {"apply-noop": 1.50, "facts": 1.41}
    assert ratios(rounds, "new-") == {"apply-noop": 1.46, "facts": 1.33}
    assert all(r > 1.25 for r in ratios(rounds, "new-").values())


def test_the_session_s_start_on_its_first_lease_as_measured():
    text = read("start", "transcript.txt")
    assert re.search(r"no-op apply command: 23218 bytes of stdin \(gzip\)", text)
    assert sections(read("start", "sections-apply.txt"))["WHOLE-COMMAND"] == 141.8
    assert ratios(read("start", "timings.txt")) == {"apply-noop": 1.32, "facts": 1.22}
    assert ratios(read("start", "timings-compiled.txt")) == {"apply-noop": 1.51, "facts": 1.46}


def test_a_second_lease_compares_the_final_probe_and_it_is_slower_end_to_end():
    """ab2/: the session's last probe against its start on another lease: the same time on the host, ~50 ms more
    end to end (split/ did not see it again: that lease's noise); 1.25x met by the start there, not by the final one."""
    base, new = sections(read("ab2", "sections-base.txt")), sections(read("ab2", "sections-new.txt"))
    assert (base["facts.shells"], new["facts.shells"]) == (133.1, 121.6)
    assert (base["end:facts.verify_fingerprint"], new["end:facts.verify_fingerprint"]) == (144.3, 144.3)
    rounds = read("ab2", "ab.txt")
    assert {n for n, _ in medians(rounds).values()} == {20}
    assert ratios(rounds, "base-") == {"apply-noop": 1.25, "facts": 1.23}
    assert ratios(rounds, "new-") == {"apply-noop": 1.37, "facts": 1.35}


def test_the_split_of_a_no_op_facts_on_one_lease():
    """split/: wall, controller CPU, round trip and time on the host, medians of 12 per tree: the newer tree no
    slower in any (ab2's gap not seen again), and ~70 ms of each round trip outside the script."""
    rows: dict[str, list[list[float]]] = {}
    for line in read("split", "split.txt").splitlines():
        tree, *values = line.split()
        rows.setdefault(tree, []).append([float(v) for v in values])
    med = {tree: [round(statistics.median(c), 3) for c in zip(*v)] for tree, v in rows.items()}
    assert {len(v) for v in rows.values()} == {12}
    assert med["base"] == [0.748, 0.489, 0.207, 0.138] and med["new"] == [0.711, 0.46, 0.202, 0.133]
    assert all(n <= b for n, b in zip(med["new"], med["base"]))


def test_the_final_code_converged_and_every_kind_still_gets_the_venv():
    """final3/: the session's final code on the H200: in state in one command, under half the bytes, every kind of
    shell asked as a user asks it, verify loading the GPU, health healthy; its figures as measured."""
    text = read("final3", "transcript.txt")
    assert len(re.findall(r"^h100\t13\t0\t0\t18\tpassed \(reused\)\thealthy\t[\d.]+\t1$", text, re.M)) == 2
    sent = int(re.search(r"no-op apply command: (\d+) bytes of stdin \(gzip\)", text)[1])
    assert sent == 23198 and sent <= 50561 / 2
    every_kind_gets_the_venv(text)
    assert sections(read("final3", "sections-apply.txt"))["WHOLE-COMMAND"] == 182.7
    assert ratios(read("final3", "timings.txt")) == {"apply-noop": 1.23, "facts": 1.18}
    assert ratios(read("final3", "timings-compiled.txt")) == {"apply-noop": 1.36, "facts": 1.22}
