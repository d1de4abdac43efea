"""Fact filters: versions compared as versions, nulls, booleans, text; bad filters are one sentence."""

import pytest

from fleet.errors import InputError
from fleet.store.query import matches, parse_since, parse_where


@pytest.mark.parametrize("actual, op, wanted, expected", [
    ("580.65.06", "<", "580.159.04", True),
    ("580.159.04", "<", "580.65.06", False),
    ("570.133.20", "<", "580", True),
    ("580.65.06", "<", "580", False),
    ("580.65.06", ">=", "580", True),
    ("580.65.06", "==", "580", True),        # the filter's own parts
    ("581.1", "==", "580", False),
    ("2.11.0+cu130", ">", "2.9", True),      # 2.11 > 2.9: not as decimals
    ("13.0", ">=", "12.8", True),
    (16, ">", "8", True),
    ("healthy", "!=", "healthy", False),
    ("degraded", "!=", "healthy", True),
    (None, "!=", "healthy", True),           # says nothing: not healthy
    (None, "<", "580", False),
    (None, "==", "null", True),
    ("x", "==", "null", False),
    ("x", "!=", "none", True),
    (True, "==", "true", True),
    (False, "==", "yes", False),
    (True, "!=", "no", True),
    ("NVIDIA H100 80GB HBM3", "==", "NVIDIA H100 80GB HBM3", True),
])
def test_matches(actual, op, wanted, expected):
    assert matches(actual, op, wanted) is expected


def test_parse_where_takes_spaces_or_none_and_quotes():
    assert parse_where("driver.version<580").path == ("driver", "version")
    where = parse_where(" gpus.0.name == 'NVIDIA H100 80GB HBM3' ")
    assert (where.path, where.op, where.value) == (("gpus", "0", "name"), "==", "NVIDIA H100 80GB HBM3")


@pytest.mark.parametrize("text", ["driver.version", "driver.version ~ 580", "== 580", "driver.version <"])
def test_a_bad_filter_is_one_sentence_naming_the_flag(text):
    with pytest.raises(InputError, match=r"^--where .* is not a filter: write PATH OP VALUE"):
        parse_where(text)


def test_since_takes_a_date_or_a_duration_back():
    assert parse_since("2026-11-20") == 1_795_132_800.0
    assert parse_since("2026-11-20T12:00+01:00") == 1_795_132_800.0 + 11 * 3600
    assert parse_since("2d", now=1_000_000.0) == 1_000_000.0 - 2 * 86400
    with pytest.raises(InputError, match="neither a date"):
        parse_since("last tuesday")
