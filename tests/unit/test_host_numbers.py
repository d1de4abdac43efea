"""Every number from a host is finite before it reaches JSON, and a fact with a natural size keeps to it (issue 49:
one pod's NaN in its verify record made the whole fleet's `--json` invalid JSON; a 24 KB PRETTY_NAME reached every
view)."""

import io
import json

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.facts.record import STRING_LIMIT, assemble
from fleet.jsontext import dumps
from fleet.resources.assert_ import json_result


def _strict(text: str):
    """json.loads as jq, JavaScript and Go read: NaN and Infinity are not JSON."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_a_pods_nan_leaves_the_fleets_json_valid(tmp_path):
    """Two pods' records on disk, one holding NaN and Infinity (what a hostile pod's verify.json or an older fleet
    wrote): `fleet facts --cached --json` prints one document every JSON reader reads, the numbers null."""
    (tmp_path / "inv.yaml").write_text("hosts:\n  good:\n    address: 127.0.0.1\n  bad:\n    address: 127.0.0.1\n")
    facts = tmp_path / "facts"
    facts.mkdir()
    for name, perf in (("good", "528.4"), ("bad", "NaN")):
        (facts / f"{name}.json").write_text(
            f'{{"host": "{name}", "platform": "cpu-only", "gathered_at": "2026-11-28T23:00:00Z", '
            f'"verify": {{"passed": true, "perf": {{"attention_tflops": {perf}, "peak": Infinity, '
            f'"floor": -Infinity}}}}}}\n')
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200, color_system=None, soft_wrap=True),
                      err_console=Console(file=err, width=200, color_system=None, soft_wrap=True), cwd=tmp_path)
    assert main(["facts", str(tmp_path / "inv.yaml"), "--cached", "--json"], env) == 0, err.getvalue()
    doc = _strict(out.getvalue())
    assert doc["hosts"]["bad"]["verify"]["perf"] == {"attention_tflops": None, "peak": None, "floor": None}
    assert doc["hosts"]["good"]["verify"]["perf"]["attention_tflops"] == 528.4


def test_a_verify_record_with_nan_is_read_as_null_and_written_back_valid():
    """The probe's verify section, and the verify run's own answer, as a hostile pod would print them."""
    record = assemble({"verify": '{"passed": true, "perf": {"tflops": NaN, "big": 1e999, "low": -Infinity}}',
                       "health": ""}, [])
    assert record["verify"]["perf"] == {"tflops": None, "big": None, "low": None}
    _strict(dumps(record))
    result = json_result("verify", 0, 'noise\n{"passed": true, "checks": [], "ms": NaN, "x": [Infinity, 2.5]}\n')
    assert result.data["ms"] is None and result.data["x"] == [None, 2.5]
    _strict(dumps(result.data))


def test_dumps_refuses_what_no_reader_reads():
    import math

    import pytest

    with pytest.raises(ValueError):
        dumps({"x": math.nan})


def test_a_24_kb_pretty_name_is_kept_to_its_natural_size():
    os_release = 'ID=ubuntu\nVERSION_ID="24.04"\nPRETTY_NAME="' + "token-" * 4000 + '"\n'
    record = assemble({"os_release": os_release, "uname": "Linux " + "h" * 65 + " 6.8.0 #1 SMP x86_64 GNU/Linux\n"
                       "x86_64\n", "cpu": "nproc 4\nmodel name\t: " + "Intel " + " " * 30000 + "x\n"}, [])
    assert record["system"]["os_id"] == "ubuntu"
    assert record["system"]["os_name"] == ("token-" * 4000)[:256]
    assert any("uname" in error and "64" in error for error in record["probe"]["errors"])
    assert record["system"]["cpu_model"] == "Intel " + " " * 250


def test_every_fact_string_is_bounded():
    """A source whose parser keeps any string (here the python section) keeps at most STRING_LIMIT of it."""
    from fleet.facts.record import _Reader

    reader = _Reader({"os_release": "ID=" + "a" * 100_000 + "\n"}, [])
    value = reader._bounded("x", {"k": ["y" * (STRING_LIMIT + 10)]})
    assert len(value["k"][0]) == STRING_LIMIT and reader.notes


def test_the_bounded_walk_keeps_every_kind_of_value_as_it_reads_it():
    """The walk keeps what needs nothing without a call (issue 46): whatever the container, each value comes back as
    json would keep it: long strings cut (a str subclass too), NaN and Infinity null, tuples lists, in new
    containers (the record's own, which assembly goes on to change)."""
    import math
    from collections import OrderedDict

    from fleet.facts.record import _Reader

    class Name(str):
        pass

    long, kept = "z" * (STRING_LIMIT + 1), "ok"
    value = {"a": [1, True, None, 2.5, math.nan, (math.inf, kept)], "b": OrderedDict(c=Name(long), d=long),
             "e": ({"f": -math.inf},), "g": Name("short"), "h": 0}
    reader = _Reader({}, [])
    got = reader._bounded("x", value)
    assert got == {"a": [1, True, None, 2.5, None, [None, "ok"]], "b": {"c": "z" * STRING_LIMIT, "d": "z" * STRING_LIMIT},
                   "e": [{"f": None}], "g": "short", "h": 0}
    assert type(got["a"][5]) is list and type(got["e"]) is list and got["a"] is not value["a"]
    assert reader.notes == [f"facts.x: 2 value(s) longer than {STRING_LIMIT} characters (the longest {STRING_LIMIT + 1:,}) "
                            f"kept to their first {STRING_LIMIT}"]
