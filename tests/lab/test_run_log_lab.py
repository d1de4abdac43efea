"""A log of each apply (issue 25): what happened on each host, kept after the pod is gone, its path printed at the
end (stderr). What the log says changed is checked on the host itself."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet.record import runlog

from helpers import ok

POD = "pod-580"


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), Environment(console=Console(file=out, width=300), err_console=Console(file=err, width=300, soft_wrap=True)))
    return code, out.getvalue(), err.getvalue()


def read_log(path: Path) -> list[dict]:
    return runlog.read(path)   # each line, texts said once by reference given back


def test_each_apply_leaves_a_log_of_what_happened_on_each_host(lab, tmp_path, isolated_home):
    lab.reset([POD])
    inv = str(lab.inventory_path)
    code, out, err = fleet("apply", inv, "--limit", POD, "--roles", "cutlass")
    assert code == 0, out + err
    runs = sorted((isolated_home / ".local" / "state" / "fleet" / "runs").glob("*.jsonl"))
    assert len(runs) == 1, runs
    assert f"run log: {runs[0]}" in err                     # the path, last, on stderr
    head, host = read_log(runs[0])
    assert head["argv"] == ["fleet", "apply", inv, "--limit", POD, "--roles", "cutlass"] and head["check"] is False
    assert host["host"] == POD and host["changed"] == 1 and host["failed"] == 0
    done = [t for t in host["tasks"] if t["status"] == "changed"]
    assert [t["role"] for t in done] == ["cutlass"]
    assert ok(lab, POD, "git -C /opt/cutlass describe --tags --exact-match").strip() == "v4.3.0"   # it did happen

    log = tmp_path / "logs" / "pods.jsonl"                   # --log FILE: appended, one run after the other
    for _ in range(2):
        code, out, err = fleet("apply", inv, "--limit", POD, "--roles", "cutlass", "--log", str(log))
        assert code == 0, out + err
    lines = read_log(log)
    assert [("run" in d, d.get("changed")) for d in lines] == [(True, None), (False, 0), (True, None), (False, 0)]
    assert oct(log.stat().st_mode & 0o777) == "0o600"
