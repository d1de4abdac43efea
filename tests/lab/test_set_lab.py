"""`--set NAME=VALUE` on apply, verify and script (issue 25): the value reaches the host for this run only, and an
unknown name is bad input (exit 2, the closest name offered, no host touched). Proven on the host itself."""

from __future__ import annotations

import io
import shutil

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

from helpers import ok

POD = "pod-580"


def fleet(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), Environment(console=Console(file=out, width=200), err_console=Console(file=err, width=200, soft_wrap=True)))
    return code, out.getvalue(), err.getvalue()


def test_set_reaches_the_host_and_a_typo_touches_nothing(lab):
    lab.reset([POD])
    shutil.rmtree(lab.inventory.facts_dir, ignore_errors=True)
    inv = str(lab.inventory_path)
    code, out, err = fleet("apply", inv, "--limit", POD, "--roles", "cutlass", "--set", "cutlass_dri=/opt/elsewhere")
    assert code == 2, out + err
    assert "--set cutlass_dri: unknown variable 'cutlass_dri'" in err and "did you mean 'cutlass_dir'" in err, err
    assert not (lab.inventory.facts_dir / f"{POD}.json").exists()      # nobody was asked anything

    code, out, err = fleet("apply", inv, "--limit", POD, "--roles", "cutlass", "--check", "--detailed-exitcode",
                           "--set", "cutlass_dir=/opt/cutlass-set")
    assert code == 4, out + err                                       # a change pending, and nothing made yet
    assert ok(lab, POD, "test -e /opt/cutlass-set && echo there || echo absent").strip() == "absent"

    code, out, err = fleet("apply", inv, "--limit", POD, "--roles", "cutlass", "--set", "cutlass_dir=/opt/cutlass-set")
    assert code == 0, out + err
    assert ok(lab, POD, "git -C /opt/cutlass-set describe --tags --exact-match").strip() == "v4.3.0"
    assert ok(lab, POD, "test -e /opt/cutlass && echo there || echo absent").strip() == "absent"   # this run only

    code, out, err = fleet("script", inv, "--limit", POD, "--roles", "cutlass", "--set", "cutlass_dir=/opt/c2")
    assert code == 0, err
    assert "/opt/c2" in out and "/opt/cutlass-set" not in out

    code, out, err = fleet("verify", inv, "--limit", POD, "--set", "verify_perff=false")
    assert code == 2 and "did you mean 'verify_perf'" in err, out + err
