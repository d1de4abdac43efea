"""A fix per class of failure (issue 50), each with the command a person runs next, printed once per host; then the
command is run as printed and the pod is asked over a plain OpenSSH client whether it is fixed. A torch uninstalled
from the venv by hand: `fleet verify` fails with "gone from the venv" and the apply that puts it back; a verify made
stale (a file it proved changed): `fleet facts` names the `fleet verify` that runs it again; a connection lost
mid-apply: one fix for the host, not one per task."""

from __future__ import annotations

import io
import json
import re
import shlex
import shutil
import subprocess

from rich.console import Console

from fleet.cli import main
from fleet.env import Environment
from fleet_lab import paths

POD = "pod-570"


def fleet(*argv: str, terminal: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(console=Console(file=out, width=200, force_terminal=terminal),
                      err_console=Console(file=err, width=200, soft_wrap=True))
    code = main(list(argv), env)
    return code, re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()), err.getvalue()


def plain_ssh(lab, command: str) -> subprocess.CompletedProcess:
    host = lab.inventory.hosts[POD]
    return subprocess.run(["ssh", "-i", str(paths.lab_key(lab.root)), "-o", "BatchMode=yes",
                           "-o", f"UserKnownHostsFile={paths.lab_known_hosts(lab.root)}",
                           "-o", "StrictHostKeyChecking=yes", "-p", str(host.port), f"root@{host.address}", command],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def run_as_printed(command: str, **kw) -> tuple[int, str, str]:
    argv = shlex.split(command)
    assert argv[0] == "fleet", command
    return fleet(*argv[1:], **kw)


def test_a_torch_uninstalled_by_hand_makes_verify_stale_then_failed_each_with_its_command(lab, tmp_path,
                                                                                          converged_fresh):
    """The renter's path: `fleet facts` says stale and names the verify to run; that verify fails, naming the apply
    that puts torch back; that apply does; each command run as printed, the pod asked over plain ssh at the end."""
    code, _ = converged_fresh(POD)
    assert code == 0
    inventory = tmp_path / "lab.yaml"
    shutil.copy(lab.inventory_path, inventory)
    # taken out as a person does it: the venv's pip, first on PATH in `ssh host cmd`
    removed = plain_ssh(lab, "pip uninstall -y torch && ! python3 -c 'import torch'")
    assert removed.returncode == 0, removed.stdout + removed.stderr

    code, out, err = fleet("facts", str(inventory), "--limit", POD, terminal=True)
    assert code == 0, out + err
    said = " ".join(out.split())
    assert "stale" in next(line for line in out.splitlines() if line.startswith("verify")), out
    command = re.search(r"(fleet verify \S+ --limit \S+) runs it again", said)[1]
    assert command == f"fleet verify {inventory} --limit {POD}", out

    code, out, err = run_as_printed(command)
    assert code == 1, out + err
    fixes = [line.strip() for line in out.splitlines() if line.strip().startswith("fix:")]
    assert len(fixes) == 1, out                                          # once for the host
    assert f"gone from {POD}'s venv" in fixes[0], out
    command = re.search(r"`(fleet apply [^`]+)`", fixes[0])[1]
    assert command == f"fleet apply {inventory} --limit {POD}", fixes
    code, out, err = run_as_printed(command)
    assert code == 0 and re.search(rf"^{POD}\t.*\tpassed\t", out, re.M), out[-3000:] + err[-3000:]
    asked = plain_ssh(lab, "python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())'")
    assert asked.returncode == 0 and asked.stdout.split() == ["2.11.0+cu130", "True"], asked.stdout + asked.stderr


def test_a_torch_removed_with_rm_rf_is_seen_and_put_back(lab, tmp_path, converged_fresh):
    """torch's files removed by hand (`rm -rf .../site-packages/torch`), its dist-info left: pip still lists it, so
    pip's metadata alone said "in state". fleet sees the package gone: `fleet facts` says verify is stale, the apply
    plans torch naming its files gone and puts it back; a plain shell imports torch again afterwards."""
    code, _ = converged_fresh(POD)
    assert code == 0
    inventory = tmp_path / "lab.yaml"
    shutil.copy(lab.inventory_path, inventory)
    removed = plain_ssh(lab, "site=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__path__[0]))') && "
                             "rm -rf \"$site/torch\" && ls -d \"$site\"/torch-*.dist-info && pip show torch && "
                             "! python3 -c 'import torch'")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "Name: torch" in removed.stdout     # pip still lists it: its metadata is all that is left

    code, out, err = fleet("facts", str(inventory), "--limit", POD, terminal=True)
    assert code == 0, out + err
    assert "stale" in next(line for line in out.splitlines() if line.startswith("verify")), out

    code, out, err = fleet("apply", str(inventory), "--limit", POD, "--json")
    host = json.loads(out)["hosts"][POD]
    torch_task = next(t for t in host["tasks"] if t["role"] == "torch" and t["task"].startswith("torch "))
    assert torch_task["status"] == "changed" and "its files are gone" in torch_task["reason"], torch_task
    assert code == 0 and host["verify"] == "passed", out[-3000:] + err[-3000:]
    asked = plain_ssh(lab, "python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())'")
    assert asked.returncode == 0 and asked.stdout.split() == ["2.11.0+cu130", "True"], asked.stdout + asked.stderr


def test_a_lost_connection_is_one_fix_for_the_host_with_its_commands(lab, tmp_path):
    """The pod dies mid-apply (tests/lab/test_reliability_lab.py's drill): three of its tasks are cut, and the person
    reads ONE fix for it (it once read "read the task's output above" once per task), naming the apply to run when
    it answers again and the forget for a pod that is gone; run as printed, the apply converges it."""
    import threading

    from test_reliability_lab import ROLE, SLOW, drill_inventory, kill_host, upper, wait_for

    lab.reset(["pod-570", "pod-580"])
    inv = drill_inventory(lab, tmp_path, ROLE, {"pod-570": {"slow": SLOW}, "pod-580": {}})
    result = {}
    run = threading.Thread(target=lambda: result.update(run=fleet("apply", inv, "--roles", "drill")))
    run.start()
    wait_for(lambda: (upper(lab, "pod-570") / "root" / "slept").exists() or not run.is_alive(),
             "pod-570 to enter its slow step")
    assert run.is_alive(), result
    kill_host(lab, "pod-570")
    run.join(timeout=600)
    code, out, err = result["run"]
    assert code == 1, out + err
    fixes = [line.strip() for line in out.splitlines() if line.strip().startswith("fix:")]
    assert len(fixes) == 1, out
    assert "the connection to pod-570 was lost mid-apply" in fixes[0], fixes
    assert f"`fleet apply {inv} --limit pod-570`" in fixes[0] and f"`fleet forget pod-570 --inventory {inv}`" \
        in fixes[0], fixes
    lab.up(["pod-570"])
    code, out, err = run_as_printed(re.search(r"`(fleet apply [^`]+)`", fixes[0])[1])
    assert code == 0, out + err
    assert plain_ssh(lab, "cat /root/drill.conf").stdout == "after the slow step\n"
