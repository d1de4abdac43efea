"""cuda-compat for every process, behind a gate that re-checks the kernel driver at every start (issue 23).

pod-570 (H100, driver 570.133.20: compat needed). Every claim is asked of the host itself, never read from
fleet's verdict: a process started as `docker exec` starts one (the lab's nsenter: no shell, no startup file,
no SSH; what a service or a cron job gets), and over a plain OpenSSH client `ssh host cmd`, `env -i` under it,
`bash -i` and `bash -l`; each prints whether torch (the lab's stand-in) has CUDA and which libcuda file the
process mapped. Then the pod restarts on driver 580.159.04 with nothing re-applied (fleet lab restart).
"""

from __future__ import annotations

import io
import json
import shlex
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet_lab import paths

HOST = "pod-570"
COMPAT_LIB = "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05"
DRIVER_570 = "/usr/lib/x86_64-linux-gnu/libcuda.so.570.133.20"
DRIVER_580 = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
DROP_IN = "/etc/ld.so.conf.d/000-fleet-cuda-compat.conf"
PYTHON = "/opt/fleet/venv/bin/python"
# Which libcuda the process loaded (its file, from the process's own maps) and whether torch has CUDA.
PROG = ("import torch; ok = torch.cuda.is_available(); "
        "libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if '/libcuda.so' in l}); "
        "print('cuda=%s libcuda=%s' % (ok, ','.join(libs)))")
ASK = f"{PYTHON} -c {shlex.quote(PROG)}"
BASE_ENV = "env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SSH_KINDS = {
    "ssh host cmd": ASK,
    "env -i": f"env -i PATH=/usr/bin:/bin {ASK}",
    "bash -i": f"{BASE_ENV} bash -ic {shlex.quote(ASK)}",
    "bash -l": f"{BASE_ENV} bash -lc {shlex.quote(ASK)}",
}


def fleet(*argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=240), err_console=Console(file=err, width=240, soft_wrap=True),
                      **({"cwd": cwd} if cwd else {}))
    return main(list(argv), env), out.getvalue(), err.getvalue()


def fleet_json(*argv: str) -> tuple[int, dict]:
    code, out, err = fleet(*argv, "--json")
    try:
        return code, json.loads(out)
    except ValueError:
        raise AssertionError(f"not JSON (exit {code}):\n{out}\n{err}") from None


def ssh(lab, command: str) -> subprocess.CompletedProcess:
    """A plain OpenSSH client, as a user would type it: fleet's code is not in the path."""
    host = lab.inventory.hosts[HOST]
    return subprocess.run(["ssh", "-i", str(paths.lab_key(lab.root)), "-o", "BatchMode=yes",
                           "-o", f"UserKnownHostsFile={paths.lab_known_hosts(lab.root)}",
                           "-o", "StrictHostKeyChecking=yes", "-p", str(host.port), f"root@{host.address}",
                           command], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def answer(text: str) -> tuple[bool, str]:
    line = next(line for line in text.splitlines() if line.startswith("cuda="))
    cuda, libs = line.split()
    return cuda == "cuda=True", libs.removeprefix("libcuda=")


def bare(lab) -> tuple[bool, str, str]:
    """As `docker exec`, a service or cron starts a process: (has CUDA, the libcuda file mapped, stderr)."""
    done = lab.exec(HOST, [PYTHON, "-c", PROG])
    assert done.returncode == 0, done.stderr
    return (*answer(done.stdout), done.stderr)


def every_ssh_kind(lab) -> dict[str, tuple[bool, str]]:
    out = {}
    for kind, command in SSH_KINDS.items():
        done = ssh(lab, command)
        assert done.returncode == 0, (kind, done.stdout, done.stderr)
        out[kind] = answer(done.stdout)
    return out


def changed(doc: dict) -> set[tuple[str, str]]:
    return {(t["role"], t["task"]) for t in doc["hosts"][HOST]["tasks"] if t["status"] == "changed"}


@pytest.fixture(scope="module", autouse=True)
def host_as_the_inventory_has_it(lab):
    """Leave pod-570 as the inventory makes it (its driver), so the session's other tests find it as `up` would."""
    yield
    lab.reset([HOST])


@pytest.fixture(scope="module")
def applied(lab, fresh_apply, converged_fresh):
    """pod-570 fresh: --check, apply, apply again, and what its /var/lib/fleet/bin held before and after each, as
    the host's own ls and sha256sum say (conftest's fresh_apply: the suite's one fresh converge of the lab's four);
    then the pod put back as that apply left it (converged_fresh.restore), for the tests below to restart."""
    runs = {name: fresh_apply[name][:2] for name in ("check", "first", "second")}
    runs.update({f"bin {stage}": fresh_apply["bin"][stage][HOST] for stage in ("before", "after check", "after apply")})
    converged_fresh.restore([HOST])
    return lab, runs


def test_check_says_exactly_what_apply_does_and_the_second_apply_changes_nothing(applied):
    _, runs = applied
    (code, check), (first_code, first), (second_code, second) = runs["check"], runs["first"], runs["second"]
    assert code == 0 and first_code == 0 and second_code == 0, json.dumps(first)[-3000:]
    planned = changed(check) - {("verify", "torch works on this GPU")}
    assert planned == changed(first)
    assert {("cuda_compat", "the gate that re-checks the kernel driver at every start "
                            "(/usr/local/sbin/fleet-cuda-compat-gate)"),
            ("cuda_compat", "compat in the ld cache for every process, only under an older kernel driver "
                            "(000-fleet-cuda-compat.conf)")} <= planned
    gate = next(t for t in check["hosts"][HOST]["tasks"] if t["task"].startswith("compat in the ld cache"))
    assert "cuda-compat is not installed yet" in gate["reason"] and DROP_IN in gate["reason"]
    assert second["hosts"][HOST]["changed"] == 0, second["hosts"][HOST]["tasks"]


def test_check_writes_no_helper_program_the_apply_installs_them(applied):
    """--check runs the helper programs it carries (the gate, verify's) from a temporary copy it removes: the host's
    /var/lib/fleet/bin is as before (absent on this fresh pod), as its own ls and sha256sum say; the apply installs
    them."""
    _, runs = applied
    assert runs["bin before"].startswith("ls: cannot access '/var/lib/fleet/bin': No such file or directory")
    assert runs["bin after check"] == runs["bin before"], runs["bin after check"]
    assert "fleet-cuda-compat-gate-" in runs["bin after apply"] and "verify-" in runs["bin after apply"]


def test_every_kind_of_process_loads_the_compat_libcuda_and_has_cuda(applied):
    lab, _ = applied
    assert bare(lab)[:2] == (True, COMPAT_LIB)                       # no startup file: the ld cache
    for kind, got in every_ssh_kind(lab).items():
        assert got == (True, COMPAT_LIB), kind
    assert lab.exec(HOST, ["cat", DROP_IN]).stdout == "/usr/local/cuda-13.0/compat\n"


def test_a_restart_on_a_newer_driver_the_first_root_shell_runs_the_gate(applied):
    """No start command: the drop-in of the 570 life is still there, and a process that reads no startup file
    gets 803 from the compat libcuda (the trap is real); the first root login runs the gate from env.sh, and
    from then on no process loads compat."""
    lab, _ = applied
    lab.restart(HOST, driver="580.159.04")
    cuda, lib, err = bare(lab)
    assert (cuda, lib) == (False, COMPAT_LIB) and "803" in err
    assert ssh(lab, "true").returncode == 0                           # root's .bashrc -> env.sh -> the gate
    assert bare(lab)[:2] == (True, DRIVER_580)
    for kind, got in every_ssh_kind(lab).items():
        assert got == (True, DRIVER_580), kind
    assert lab.exec(HOST, ["test", "-e", DROP_IN]).returncode == 1
    record = lab.exec(HOST, ["cat", "/var/lib/fleet/cuda-compat-gate"]).stdout.splitlines()
    assert "580.159.04" in record[0] and record[1] == "off" and "kernel driver 580.159.04 >= 580.65.06" in record[2]


def test_check_after_a_restart_on_a_newer_driver_changes_nothing_and_apply_runs_the_gate(applied):
    """fleet's own commands never run the gate from env.sh (fleet.shell.REMOTE_MARK): after a restart on 580 with
    nothing run, `--check` names the gate's change and leaves the host as it was (the 570 drop-in still in the
    ld cache, the gate's record untouched), asked of the host; the apply that follows runs the gate as its task."""
    lab, _ = applied
    lab.restart(HOST, driver="570.133.20")
    assert ssh(lab, "true").returncode == 0                           # the gate has seen 570: compat on
    lab.restart(HOST, driver="580.159.04")
    record = lab.exec(HOST, ["cat", "/var/lib/fleet/cuda-compat-gate"]).stdout
    cache = lab.exec(HOST, ["sh", "-c", "ldconfig -p | grep 'libcuda.so.1 '"]).stdout
    assert "/usr/local/cuda-13.0/compat/" in cache and "570.133.20" in record.splitlines()[0]
    inv = str(lab.inventory_path)
    code, check = fleet_json("apply", inv, "--limit", HOST, "--check")
    assert code == 0
    gate = next(t for t in check["hosts"][HOST]["tasks"] if t["task"].startswith("compat in the ld cache"))
    assert gate["status"] == "changed" and gate["reason"].startswith("kernel driver 580.159.04 >= 580.65.06")
    assert lab.exec(HOST, ["cat", "/var/lib/fleet/cuda-compat-gate"]).stdout == record
    assert lab.exec(HOST, ["sh", "-c", "ldconfig -p | grep 'libcuda.so.1 '"]).stdout == cache
    assert lab.exec(HOST, ["cat", DROP_IN]).stdout == "/usr/local/cuda-13.0/compat\n"
    code, first = fleet_json("apply", inv, "--limit", HOST)
    assert code == 0, [t for t in first["hosts"][HOST]["tasks"] if t["status"] == "failed"] or json.dumps(first)[-3000:]
    assert ("cuda_compat", gate["task"]) in changed(first)
    assert bare(lab)[:2] == (True, DRIVER_580)
    assert lab.exec(HOST, ["test", "-e", DROP_IN]).returncode == 1


def test_the_start_command_runs_the_gate_before_anything_else_both_ways(applied):
    """A container's start command that runs the gate (as the role says): each start decides from the driver
    found then, before any process, with nothing re-applied: back on 570 compat for every process again, on
    580 for none."""
    lab, _ = applied
    gate = "/usr/local/sbin/fleet-cuda-compat-gate"
    lab.exec(HOST, ["sh", "-c", f"printf '%s\\n' '{gate} run start' > /pre_start.sh"])
    for driver, lib in (("570.133.20", COMPAT_LIB), ("580.159.04", DRIVER_580), ("570.133.20", COMPAT_LIB)):
        lab.restart(HOST, driver=driver)
        assert bare(lab)[:2] == (True, lib), driver                    # first: before any SSH login
        log = (lab.root / "hosts" / HOST / "start.log").read_text()
        assert f"fleet-cuda-compat-gate (start): kernel driver {driver}" in log, log
        for kind, got in every_ssh_kind(lab).items():
            assert got == (True, lib), (driver, kind)
    lab.exec(HOST, ["rm", "-f", "/pre_start.sh"])


def test_apply_finds_and_repairs_a_drop_in_that_disagrees_with_the_driver(applied):
    """On driver 580 (compat installed, not decided), a compat drop-in under fleet's name, as an image made on
    a 570 host carries it: every process gets 803; --check names it, apply removes it, asked again after."""
    lab, _ = applied
    lab.restart(HOST, driver="580.159.04")
    assert ssh(lab, "true").returncode == 0                           # the gate has seen this driver
    lab.exec(HOST, ["sh", "-c", f"echo /usr/local/cuda-13.0/compat > {DROP_IN} && ldconfig"])
    cuda, lib, err = bare(lab)
    assert (cuda, lib) == (False, COMPAT_LIB) and "803" in err
    inv = str(lab.inventory_path)
    code, check = fleet_json("apply", inv, "--limit", HOST, "--check")
    assert code == 0
    gate = next(t for t in check["hosts"][HOST]["tasks"] if t["task"].startswith("compat in the ld cache"))
    assert gate["status"] == "changed"
    assert gate["reason"].startswith("kernel driver 580.159.04 >= 580.65.06")
    assert "the gate removes it" in gate["reason"]
    code, first = fleet_json("apply", inv, "--limit", HOST)
    assert code == 0, [t for t in first["hosts"][HOST]["tasks"] if t["status"] == "failed"] or json.dumps(first)[-3000:]
    assert bare(lab)[:2] == (True, DRIVER_580)
    for kind, got in every_ssh_kind(lab).items():
        assert got == (True, DRIVER_580), kind
    code, second = fleet_json("apply", inv, "--limit", HOST)
    assert code == 0 and second["hosts"][HOST]["changed"] == 0, second["hosts"][HOST]["tasks"]


def test_fleet_script_applies_the_same_and_its_start_keeps_compat_from_a_newer_driver(lab, tmp_path):
    """`fleet script` run on the pod gives every process compat too; run as the pod's start command after a
    restart on driver 580.159.04 it runs the gate first, and no process loads compat."""
    lab.reset([HOST])
    code, _, err = fleet("script", str(lab.inventory_path), "--limit", HOST, "-o", "fleet.sh", cwd=tmp_path)
    assert code == 0, err
    text = (tmp_path / "fleet.sh").read_text()
    run = f"{BASE_ENV} bash /root/fleet.sh"
    with lab.connect(HOST) as conn:
        conn.write_file("/root/fleet.sh", text, mode=0o755)
    first = ssh(lab, run)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert "compat in the ld cache for every process" in first.stdout and "verify  verify passed" in first.stdout
    assert bare(lab)[:2] == (True, COMPAT_LIB)
    for kind, got in every_ssh_kind(lab).items():
        assert got == (True, COMPAT_LIB), kind
    second = ssh(lab, run)
    assert second.returncode == 0 and second.stdout.splitlines()[-1] == "changed=0", second.stdout[-3000:]

    lab.exec(HOST, ["sh", "-c", "printf '%s\\n' 'bash /root/fleet.sh' > /pre_start.sh"])
    lab.restart(HOST, driver="580.159.04")
    log = (lab.root / "hosts" / HOST / "start.log").read_text()
    assert bare(lab)[:2] == (True, DRIVER_580), log                    # first: before any SSH login
    assert "fleet-cuda-compat-gate (fleet-script): kernel driver 580.159.04 >= 580.65.06" in log, log
    assert "run-time decision: kernel driver 580.159.04 >= 580.65.06" in log and "verify  verify passed" in log, log
    for kind, got in every_ssh_kind(lab).items():
        assert got == (True, DRIVER_580), kind
    lab.exec(HOST, ["rm", "-f", "/pre_start.sh"])


def test_fleet_lab_restart_changes_the_driver_and_keeps_what_the_host_wrote(lab):
    lab.reset([HOST])
    assert ssh(lab, "echo kept > /root/mark").returncode == 0
    inv = str(lab.inventory_path)
    code, out, err = fleet("lab", "restart", HOST, "--driver", "580.159.04", "--inventory", inv)
    assert code == 0 and "restarted" in out and "580.159.04" in out, out + err
    asked = ssh(lab, "cat /root/mark; nvidia-smi --query-gpu=driver_version --format=csv,noheader; "
                     "readlink /usr/lib/x86_64-linux-gnu/libcuda.so.1; cat /proc/driver/nvidia/version")
    assert asked.returncode == 0, asked.stderr
    mark, smi, link, proc = asked.stdout.splitlines()[:4]
    assert (mark, smi, link) == ("kept", "580.159.04", "libcuda.so.580.159.04") and "  580.159.04  " in proc
    code, _, err = fleet("lab", "restart", HOST, "--driver", "580; true", "--inventory", inv)
    assert code == 2 and "is not a driver version such as 580.159.04" in err
