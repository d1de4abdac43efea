"""`fleet decide` prints remote-derived text (GPU names, versions, paths, the host name) from a facts record:
all of it through fleet.report.terminal_safe, on a terminal and in a pipe, so a fact holding an escape
sequence or a secret never reaches the terminal raw (the --json document is scrubbed and escaped too)."""

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"
TITLE = "\x1b]0;pwned\x07"                    # OSC 0: retitles the operator's terminal window
TOKEN = "hf_" + "Ab3dEf6hIj9kLm2nOp5qRs8t"    # the shape of a Hugging Face token


def hostile_record(tmp_path, case: str) -> Path:
    """A GPU name carrying an escape sequence and a token, on a host decided, refused, or with a bad fact."""
    record = json.loads((RECORDS / ("a100-470.json" if case == "refused" else "h100-pod-570.json")).read_text())
    record["host"] = f"pod{TITLE} {TOKEN}"                 # the host name is a JSON key too
    record["gpus"][0]["name"] += f"{TITLE} {TOKEN}"       # reasons and the refusal quote the GPU name
    if case == "bad-fact":   # the InputError sentence quotes the remote value
        record["driver"]["version"] = f"450.51.06{TITLE} {TOKEN}"
    path = tmp_path / "pod.json"
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("case, status", [("decided", 0), ("refused", 1), ("bad-fact", 2)])
@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_no_escape_sequence_or_secret_reaches_the_output(tmp_path, terminal, case, status, json_out):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300, force_terminal=terminal, soft_wrap=True),
                      err_console=Console(file=err, width=300, force_terminal=terminal, soft_wrap=True), cwd=tmp_path)
    code = main(["decide", str(hostile_record(tmp_path, case))] + (["--json"] if json_out else []), env)
    shown = out.getvalue() + err.getvalue()
    assert code == status, shown
    assert "\x07" not in shown and TOKEN not in shown and "***" in shown, shown   # the token was there, masked
    if case == "bad-fact":       # the sentence quotes the value as repr() writes it: no raw control byte
        assert "450.51.06" in shown and "\x1b]0;pwned" not in shown
    elif json_out:               # JSON escapes control characters itself (\\u001b): no raw ones
        assert "A100" in shown or "H100" in shown
    else:
        assert "]0;pwned" not in shown and ("A100" in shown or "H100" in shown), shown
    if not terminal:
        assert "\x1b" not in shown, shown                     # no colour in a pipe: no escape byte at all
    else:
        assert "\x1b]" not in shown, shown                    # colour (CSI m) only, never an OSC
