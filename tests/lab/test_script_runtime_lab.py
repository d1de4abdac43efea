"""`fleet script` for pod templates decides cuda-compat at RUN time: a script made offline (--from-facts) from
a 570 pod's facts, run on a 580 pod (cuda-compat 580.95.05 installed under a newer kernel driver, the trap of
error 803), keeps compat off LD_LIBRARY_PATH and verify passes; a second run changes nothing. A script made
for another CPU architecture refuses, saying why, and touches nothing."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment

from helpers import ok

RECORDS = Path(__file__).resolve().parents[1] / "data" / "records"
BARE = "env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash /root/fleet.sh"
COMPAT = "/usr/local/cuda-13.0/compat"


def fleet(*argv: str, cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=240), err_console=Console(file=err, width=240, soft_wrap=True), cwd=cwd)
    return main(list(argv), env), out.getvalue(), err.getvalue()


def run_script(lab, host: str, text: str):
    with lab.connect(host) as conn:
        conn.write_file("/root/fleet.sh", text, mode=0o755)
        return conn.run(BARE)


def test_a_script_from_570_facts_keeps_compat_off_the_path_on_a_580_pod(lab, tmp_path):
    lab.reset(["pod-570", "pod-580"])
    code, out, err = fleet("facts", str(lab.inventory_path), "--limit", "pod-570", cwd=tmp_path)
    assert code == 0, out + err
    record = lab.inventory.facts_dir / "pod-570.json"
    code, _, err = fleet("script", str(lab.inventory_path), "--limit", "pod-570", "--from-facts", str(record),
                         "-o", "template.sh", cwd=tmp_path)
    assert code == 0, err
    text = (tmp_path / "template.sh").read_text()
    assert f"#   direct  LD_LIBRARY_PATH /usr/local/cuda-13.0/targets/x86_64-linux/lib\n" in text
    assert f"#   compat  LD_LIBRARY_PATH {COMPAT}:/usr/local/cuda-13.0/targets/x86_64-linux/lib\n" in text
    assert "run-time variants: direct, compat" in " ".join(err.split())

    first = run_script(lab, "pod-580", text)
    assert first.exit == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert ("run-time decision: kernel driver 580.159.04 >= 580.65.06 needed by CUDA 13.0: no cuda-compat, and "
            "none on LD_LIBRARY_PATH") in first.stdout
    assert "cuda_compat" not in first.stdout                          # the compat package is not installed
    assert "verify  verify passed" in first.stdout
    path = ok(lab, "pod-580", 'echo "$LD_LIBRARY_PATH"').strip()      # what `ssh host cmd` gets
    assert path and COMPAT not in path.split(":")
    assert COMPAT not in ok(lab, "pod-580", "bash -ic 'echo $LD_LIBRARY_PATH' 2>/dev/null")   # interactive too

    second = run_script(lab, "pod-580", text)
    assert second.exit == 0, second.stdout[-3000:] + second.stderr[-2000:]
    assert second.stdout.splitlines()[-1] == "changed=0"


def test_a_script_for_another_cpu_refuses_and_touches_nothing(lab, tmp_path):
    lab.reset(["pod-580"])
    code, out, err = fleet("script", "--from-facts", str(RECORDS / "thor.json"), cwd=tmp_path)
    assert code == 0, err
    state = "ls -A /root /etc/fleet /opt 2>&1; md5sum /root/.bashrc; dpkg -l | md5sum"
    with lab.connect("pod-580") as conn:
        conn.write_file("/root/fleet.sh", out, mode=0o755)
        before = conn.run(state).stdout
        result = conn.run(BARE)
        after = conn.run(state).stdout
    assert result.exit == 3
    assert result.stderr.startswith("REFUSED this host's CPU is x86_64, the script's decisions are for aarch64: "
                                     "generate a script from this host's own facts")
    assert result.stdout == "changed=0\n"
    assert after == before
