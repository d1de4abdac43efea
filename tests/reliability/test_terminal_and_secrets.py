"""Remote text reaches the terminal without escape sequences or secrets: every printer goes through
fleet.report.terminal_safe, and every --json document is scrubbed."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from fleet.engine import HostReport, TaskReport
from fleet.env import Environment
from fleet.facts.scrub import scrub_text
from fleet.connection.parallel import Outcome
from fleet.report import Reporter, terminal_safe
from fleet.report.apply import print_apply
from reliability_helpers import HOSTILE, TOKEN, assert_clean, run


@pytest.mark.parametrize("text, kept", [
    ("\x1b]0;new title\x07after", "after"),                      # OSC 0: window title, BEL-terminated
    ("\x1b]52;c;ZXZpbA==\x1b\\after", "after"),                  # OSC 52: clipboard write, ST-terminated
    ("line\x1b[2K\x1b[1Aafter", "lineafter"),                    # CSI: erase line, cursor up
    ("\x9b31mred\x9b0m", "red"),                                  # 8-bit CSI
    ("\x9d0;title\x9cafter", "after"),                            # 8-bit OSC
    ("\x1bP1$r\x1b\\after", "after"),                             # DCS
    ("\x1b]0;unterminated\nnext line", "\nnext line"),           # a newline ends a runaway string
    ("HOST KEY CHANGED\rok      ", "HOST KEY CHANGEDok      "),   # CR cannot overwrite the warning
    ("tabs\tand\nnewlines stay\r\n", "tabs\tand\nnewlines stay\n"),
    ("ünïcode ✓ stays", "ünïcode ✓ stays"),
    ("verify \u202edeliaf\u202c", "verify deliaf"),                # RLO...PDF: "failed" shown backwards
    ("a\u2066b\u2069c\u200bd\u200fe\u061cf\ufeffg\u2028h", "abcdefgh"),   # isolates, zero-width, ALM, BOM, LS
    ("עברית stays", "עברית stays"),                               # right-to-left text itself is text
])
def test_terminal_safe_drops_every_escape_and_keeps_text(text, kept):
    assert terminal_safe(text) == kept


@pytest.mark.parametrize("text, secret", [
    ("DB_PASS=hunter2 next", "hunter2"),
    ("export SMTP_PASS='two words'", "two words"),
    ("SSH_PRIVATE_KEY=b3BlbnNzaC1rZXktdjE", "b3BlbnNzaC1rZXktdjE"),
    ("git clone https://ghp_tok3nvalue@github.com/org/repo", "ghp_tok3nvalue"),
    ("https://x-access-token@github.com/NVIDIA/cutlass.git", "x-access-token"),
    ('HF_TOKEN="my secret phrase"', "secret phrase"),
    ("RUNPOD_API_KEY='rp abc def'", "rp abc"),
    ('{"api_key": "with spaces inside"}', "spaces inside"),
])
def test_scrubber_covers_pass_private_key_url_tokens_and_quoted_values(text, secret):
    assert secret not in scrub_text(text) and "***" in scrub_text(text)


@pytest.mark.parametrize("text", ['"passed": true', "bypass=1", "compass: north", "git@github.com:org/repo",
                                  "https://github.com/NVIDIA/cutlass"])
def test_scrubber_leaves_lookalikes(text):
    assert scrub_text(text) == text


def reporter(terminal=True):
    """A Reporter over captured consoles; terminal=True makes rich write styles as it does to a terminal."""
    out, err = io.StringIO(), io.StringIO()
    kw = {"force_terminal": True, "color_system": "standard"} if terminal else {"color_system": None}
    env = Environment(console=Console(file=out, width=200, **kw), err_console=Console(file=err, width=200, **kw))
    return Reporter(env), out, err


def strip_rich_styles(text: str) -> str:
    """Drop the SGR sequences rich itself writes to a terminal, so only what came from remote text is left."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_apply_output_progress_reasons_diff_and_errors_are_clean():
    rep, out, err = reporter()
    url = f"https://{TOKEN}@github.com/NVIDIA/cutlass"
    rep.progress("pod" + HOSTILE, f"git clone {url} " + HOSTILE)
    rep.warn(HOSTILE)
    rep.error(f"HF_TOKEN={TOKEN} " + HOSTILE)
    report = HostReport("pod", False, error="apply failed: " + HOSTILE, tasks=(
        TaskReport("cutlass", "checkout" + HOSTILE, "changed", f"origin is {url} {HOSTILE}",
                   diff=f"--- a\n+++ b\n@@ -1 +1 @@\n-{HOSTILE}\n+export HF_TOKEN={TOKEN}\n"),))
    print_apply(rep, {"pod": Outcome("pod", value=report)}, json_out=False, show_diff=True, check=False)
    print_apply(rep, {"pod": Outcome("pod", error=HOSTILE, unreachable=True)}, json_out=False, show_diff=True,
                check=False)
    for text in (out.getvalue(), err.getvalue()):
        assert_clean(strip_rich_styles(text))
    assert "rover" in out.getvalue() and "***" in out.getvalue()


def test_apply_json_is_scrubbed_and_escapes_stay_escaped():
    rep, out, _ = reporter(terminal=False)
    report = HostReport("pod", False, tasks=[TaskReport("r", "t", "failed", f"HF_TOKEN={TOKEN} \x9b31m")])
    print_apply(rep, {"pod": Outcome("pod", value=report)}, json_out=True, show_diff=False, check=False)
    text = out.getvalue()
    assert TOKEN not in text and "\x9b" not in text and "\\u009b" in text
    assert json.loads(text)["hosts"]["pod"]["tasks"][0]["reason"] == "HF_TOKEN=*** \x9b31m"


def facts_inventory(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n  here: {connection: local}\n")
    return inv


def test_facts_table_and_json_of_a_live_record_show_no_secret(tmp_path, monkeypatch):
    # The host's environment carries a token (as a pod's does): the record on disk is scrubbed, and so must
    # be what is printed from the record in memory.
    monkeypatch.setenv("CUDA_HOME", f"/opt/cuda HF_TOKEN={TOKEN}")
    inv = facts_inventory(tmp_path)
    code, out, err = run(["facts", str(inv), "--json"], tmp_path)
    assert code == 0, err
    assert TOKEN not in out and "HF_TOKEN=***" in out
    code, out, err = run(["facts", str(inv), "--all"], tmp_path)
    assert code == 0 and TOKEN not in out + err and "HF_TOKEN=***" in out
    assert TOKEN not in (tmp_path / "facts" / "here.json").read_text()


def test_facts_table_of_a_hostile_record_is_clean(tmp_path):
    from fleet.record import store

    inv = facts_inventory(tmp_path)
    record = json.loads((Path(__file__).parents[1] / "data" / "records" / "h100-pod-570.json").read_text())
    record["host"] = "here"
    record["system"]["os_name"] = "Ubuntu" + HOSTILE
    record["gpus"][0]["name"] = HOSTILE
    store.write(tmp_path / "facts", "here", record)
    code, out, err = run(["facts", str(inv), "--cached", "--all"], tmp_path, terminal=True)
    assert code == 0, err
    assert_clean(strip_rich_styles(out + err))
    assert "NVIDIA H100" in out


def test_bootstrap_json_and_summary_are_scrubbed():
    from fleet.workflows.bootstrap import BootstrapResult
    from fleet.workflows.ssh_line import Target
    from fleet.report.bootstrap import print_result

    target = Target("root", "203.0.113.10", 22)
    result = BootstrapResult("pod-10", Path("pods.yaml"), target)
    result.error = f"clone https://{TOKEN}@github.com/x failed " + HOSTILE
    result.facts = {"platform": "x86_64-dgpu", "gpus": [{"name": HOSTILE}], "env": {"x": f"HF_TOKEN={TOKEN}"},
                    "verify": {"passed": False, "summary": f"RUNPOD_API_KEY={TOKEN}"}}
    for json_out in (True, False):
        rep, out, err = reporter(terminal=not json_out)
        print_result(rep, result, json_out=json_out)
        assert TOKEN not in out.getvalue() + err.getvalue()
        if not json_out:
            assert_clean(strip_rich_styles(out.getvalue() + err.getvalue()))


def test_an_error_is_printed_through_the_same_filter(tmp_path):
    """An error's sentence may quote a host's output, a record's value or a path: its escapes and bidirectional
    controls never reach the terminal (before, cli printed str(exc) as it was)."""
    code, out, err = run(["decide", str(tmp_path / "x\u202enosj.json\x1b]0;pwned\x07")], tmp_path, terminal=True)
    assert code == 2 and "cannot read the facts file" in err
    assert_clean(strip_rich_styles(out + err))
