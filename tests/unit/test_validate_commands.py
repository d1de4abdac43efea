"""Which commands check the inventory's variables: those that render something from them.

`fleet facts` renders its probe from them (the venv's place, ...): a bad one is exit 2 at its file:line before
any host, as for apply and script (tests/unit/test_validate.py). `fleet run` sends the user's command as
written and renders nothing from them: a bad one is a warning naming file:line and the command still runs.
"""

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

CASES = sorted((Path(__file__).resolve().parent.parent / "data" / "variables").glob("*.yaml"))


def fleet(tmp_path, *argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=400, soft_wrap=True),
                      err_console=Console(file=err, width=400, soft_wrap=True), cwd=tmp_path)
    return main(list(argv), env), out.getvalue(), err.getvalue()


def expectations(path: Path) -> tuple[int, list[str]]:
    text = path.read_text()
    return int(re.search(r"# expect-line: (\d+)", text)[1]), re.findall(r"# expect: (.*)", text)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_facts_refuses_a_bad_variable_at_its_line_before_any_host(case, tmp_path, counting_port):
    path = tmp_path / case.name
    path.write_text(case.read_text().replace("PORT", str(counting_port.port)))
    line, texts = expectations(case)
    status, out, err = fleet(tmp_path, "facts", str(path))
    message = " ".join(err.split())
    assert status == 2, message
    assert message.startswith(f"error: {path}:{line}: "), message
    assert all(text in message for text in texts), message
    assert not counting_port.contacted(), "a host was contacted although a variable is bad"
    assert not (tmp_path / "facts").exists()


def test_facts_cached_reads_records_whatever_the_variables(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n  here: {connection: local}\n")
    assert fleet(tmp_path, "facts", str(inv), "--json")[0] == 0
    inv.write_text("hosts:\n  here: {connection: local, vars: {cuda_verison: '13.0'}}\n")
    assert fleet(tmp_path, "facts", str(inv))[0] == 2                     # live: the probe would use them
    status, out, err = fleet(tmp_path, "facts", str(inv), "--cached", "--json")
    assert status == 0, err
    assert json.loads(out)["hosts"]["here"]["host"] == "here"


def test_run_is_not_blocked_by_a_bad_variable_and_warns_at_its_line(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("hosts:\n  here:\n    connection: local\n    vars:\n      cuda_verison: '13.0'\n")
    status, out, err = fleet(tmp_path, "run", str(inv), "--json", "--", "echo", "ran")
    assert status == 0, err
    assert json.loads(out)["hosts"]["here"]["stdout"] == "ran\n"
    warning = " ".join(err.split())
    assert warning.startswith(f"warning: {inv}:5: unknown variable 'cuda_verison'"), warning
    assert "did you mean 'cuda_version'?" in warning and "not used by fleet run" in warning
