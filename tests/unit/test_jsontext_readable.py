"""The facts record's layout (fleet.jsontext.readable): written by json's C encoder a line per item of its top three
levels, it reads back as json.dumps(indent=2) wrote it, refuses what `dumps` refuses, and stays a file people grep
(issue 46: json.dumps with indent runs the pure-Python encoder, a record per host at every run)."""

import json
import math
from pathlib import Path

import pytest

from fleet.jsontext import OPEN_LEVELS, readable
from fleet.record import store

RECORDS = sorted((Path(__file__).resolve().parents[2] / "bench" / "data" / "replay-lab-facts").glob("*.json"))


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.stem)
def test_a_recorded_lab_record_reads_back_as_indent_2_wrote_it(path):
    record = json.loads(path.read_text())
    text = readable(record)
    assert json.loads(text) == json.loads(json.dumps(record, indent=2)) == record
    assert text.isascii()
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}"
    assert f'  "host": "{record["host"]}",' in lines   # a top-level key on its own line, as indent=2 puts it
    assert "    \"arch\": " + json.dumps(record["system"]["arch"]) + "," in lines   # and a section's keys
    assert len(lines) > 100 and max(map(len, lines)) < 4000   # laid out, not one line


def test_the_top_levels_open_and_deeper_values_keep_one_line():
    value = {"a": {"b": {"c": {"d": [1, 2.5, None, True, "x"]}}, "e": []}, "f": {}, "g": "é\n\"", "h": [[1], {}]}
    assert readable(value) == (
        '{\n'
        '  "a": {\n'
        '    "b": {\n'
        '      "c": {"d": [1, 2.5, null, true, "x"]}\n'
        '    },\n'
        '    "e": []\n'
        '  },\n'
        '  "f": {},\n'
        '  "g": "\\u00e9\\n\\"",\n'
        '  "h": [\n'
        '    [\n'
        '      1\n'
        '    ],\n'
        '    {}\n'
        '  ]\n'
        '}')
    assert OPEN_LEVELS == 3
    assert json.loads(readable(value)) == value


@pytest.mark.parametrize("value", [1, "a", None, [], {}, 1.5, [1, [2, [3, [4]]]], {"k": (1, 2)}])
def test_any_json_value_reads_back(value):
    assert json.loads(readable(value)) == json.loads(json.dumps(value))


def test_keys_that_are_no_string_are_written_as_json_dumps_writes_them():
    value = {"a": {1: {2.5: "x"}, None: 1, True: {False: 0}}}
    assert json.loads(readable(value)) == json.loads(json.dumps(value))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("depth", [0, 1, 4])
def test_nan_and_infinity_are_refused_at_any_depth_as_dumps_refuses_them(bad, depth):
    value = bad
    for _ in range(depth):
        value = {"k": [value]}
    with pytest.raises(ValueError, match="not JSON compliant"):
        readable(value)


def test_an_object_json_cannot_write_is_a_type_error():
    with pytest.raises(TypeError, match="not JSON serializable"):
        readable({"a": {"b": {"c": {"d": object()}}}})


def test_the_facts_record_on_disk_is_the_layout_and_reads_back(tmp_path):
    record = json.loads(RECORDS[0].read_text())
    path = store.write(tmp_path, record["host"], record)
    assert path.read_text() == readable(record) + "\n"
    assert store.read(tmp_path, record["host"]) == record
