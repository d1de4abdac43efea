"""`fleet script --report`: the target checked before anything is written; the script carries the sender and
the target, never a token; the report goes before `changed=N`, which stays the last line."""

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

FACTS = Path(__file__).parents[1] / "data" / "records" / "h100-pod-570.json"


def script(tmp_path, *argv):
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True), cwd=tmp_path)
    code = main(["script", "--from-facts", str(FACTS), *argv], env)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("target, says", [
    ("http://10.0.0.5:8470/v1/reports", "http:// to a loopback address"),
    ("ftp://127.0.0.1/x", "give an https:// URL"),
    ("dir:relative/path", "dir:/ABSOLUTE/PATH"),
    ("https://fleet:t0ken@collector.example/v1/reports", "carries a user or password"),
])
def test_a_bad_target_is_bad_input(tmp_path, target, says):
    code, out, err = script(tmp_path, "--report", target, "-o", "s.sh")
    assert code == 2 and says in err and "t0ken" not in err
    assert not (tmp_path / "s.sh").exists()


def test_the_script_reports_before_its_last_line(tmp_path, monkeypatch):
    monkeypatch.setenv("FLEET_REPORT_TOKEN", "never-in-the-script-0123456789")
    code, text, err = script(tmp_path, "--report", "https://collector.example:8470/v1/reports")
    assert code == 0, err
    assert "never-in-the-script" not in text
    assert "fleet_report_program=" in text and "def send_all(target, spool):" in text
    end = re.search(r"^fleet_end\(\) \{ (.*) \}$", text, re.M)[1]
    assert end.index('fleet_report "$1"') < end.index("printf 'changed=%d")
    code, plain, _ = script(tmp_path)
    assert "fleet_report_program" not in plain and "fleet_report() { :; }" in plain
