r"""The secret scrubber reads a host's text in time linear in its length (issue 49: one pod's 24 KB PRETTY_NAME of
repeated "token-" took the old patterns cubic time, `fleet facts` of two pods 70 s instead of 2.6 s).

Work is counted (tests/unit/work_count.py: regex steps and Python calls), never timed: doubling a hostile input
may at most double the work (with a margin for the fixed part). Against the old patterns the same inputs give 4x
("a." runs, "-pass", "eyJ...-"), 8x ("token-") per doubling. bench/scrub_cost.py times the same families.
"""

import pytest

from fleet.facts.scrub import _scrub_all, scrub_text
from work_count import work

# Each family is a shape that made a pattern read the same characters again from many starts.
HOSTILE = {
    "runs of a. ending in pass (a name's run read from every dot)": lambda n: "a." * (n // 2) + "pass",
    "token- repeated (a name with two unbounded runs around its keyword)": lambda n: "token-" * (n // 6),
    "-pass repeated (the _pass name from every dash)": lambda n: "-pass" * (n // 5),
    "eyJ...- repeated (a JWT's first segment from every dash)": lambda n: "eyJaaaaaaaaaaaaa-" * (n // 17),
    "BEGIN PRIVATE KEY lines with no END": lambda n: "-----BEGIN RSA PRIVATE KEY-----\n" * (n // 32),
    'token=" repeated (unterminated quoted values)': lambda n: 'token="' * (n // 7),
    "token=' repeated": lambda n: "token='" * (n // 7),
    "a name then spaces": lambda n: "HF_TOKEN" + " " * n + ",",
    "Bearer then spaces": lambda n: "Bearer" + " " * n,
    "URL user parts with no @": lambda n: "https://" + "u" * n + " ://a:" * (n // 6),
    "plain text with a keyword at the end": lambda n: "x" * n + " token",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_doubling_a_hostile_text_at_most_doubles_the_scrubbers_work(name):
    make = HOSTILE[name]
    small, large = work(_scrub_all, make(40_000)), work(_scrub_all, make(80_000))
    assert small > 20, f"{name}: too little work to measure ({small})"   # the counter does count
    assert large <= 2.3 * small, f"{name}: 40 KB -> {small}, 80 KB -> {large} ({large / small:.1f}x)"


def test_the_counter_sees_a_quadratic_pattern():
    r"""The measure itself: a pattern that reads every suffix again by backtracking (`(?:a\w)*c` over a's)
    quadruples its count when its input doubles."""
    import re

    pattern = re.compile(r"(?:a\w)*c")
    small, large = work(pattern.search, "a" * 3000), work(pattern.search, "a" * 6000)
    assert large >= 3.5 * small


def test_what_the_new_bounds_mask():
    """An unterminated quoted value is masked to the end of its line, a key block cut short to the end of the
    text (the old patterns left both whole)."""
    assert scrub_text('HF_TOKEN="hf_abc def\nnext line') == "HF_TOKEN=***\nnext line"
    assert scrub_text("x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk") == \
        "x\n-----BEGIN OPENSSH PRIVATE KEY-----***"
    assert scrub_text("a-eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2Q") == "a-***"
