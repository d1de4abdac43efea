"""Issue 35 through real sshd on the lab's pod-580: what the user types reaches what verify proved. After a converged
apply, each trap is set by hand, `fleet apply` runs, and then each kind of process is asked by a plain shell what it
runs and sees (`command -v python3`, torch's CUDA, `nvcc`, CUDA_HOME), never fleet's verdict read back:

- python3/pip not the venv's (the first apply itself): every kind's python3 imports the venv's torch with CUDA, its
  pip is the venv's, and root's system tools keep /usr/bin/python3 (a #!/usr/bin/python3 tool, apt-get);
- CUDA_VISIBLE_DEVICES=1 at the top of ~/.bashrc (copied from an 8-GPU box): every kind the host shows without its
  GPU (the stand-in libcuda answers 100 as the real driver does), and apply fails naming the variable, its value and
  ~/.bashrc:1; the same variable emptied in /etc/profile.d (login shells only): named at that file and line;
- another toolkit's nvcc first with its CUDA_HOME at the end of ~/.bashrc: after apply, `nvcc` and CUDA_HOME are the
  decided toolkit's in every kind;
- of the same family, unnamed by the issue: that toolkit put first from /etc/profile.d (login shells), and
  CUDA_VISIBLE_DEVICES naming a UUID of another box at the top of ~/.bashrc.
"""

from __future__ import annotations

import json
import shlex

import pytest

from helpers import ok, sh
from test_apply_lab import fleet_json
from test_verify_kinds_lab import trap   # the same host (pod-580): a trap set by hand, always undone

HOST = "pod-580"
TOOLKIT = "/usr/local/cuda-13.0"
OLD = "/usr/local/cuda-12.4"
FRESH = "env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What each kind runs and sees, asked inside that kind (no help from fleet): one line of facts per kind
ASK = ("printf 'python3=%s pip=%s nvcc=%s cuda_home=%s cvd=%s\\n' \"$(command -v python3)\" "
       "\"$(command -v pip)\" \"$(readlink -f \"$(command -v nvcc)\")\" \"${CUDA_HOME-}\" \"${CUDA_VISIBLE_DEVICES-@unset}\"; "
       "python3 -c 'import torch; print(\"torch\", torch.__file__, torch.cuda.is_available(), torch.cuda.device_count())'"
       " 2>/dev/null; true")
KINDS = {
    "ssh": ASK,     # the lab's `ssh host cmd`: bash reads ~/.bashrc up to its non-interactive return
    "interactive": f"{FRESH} setsid -w bash -i -c {shlex.quote(ASK)} </dev/null 2>/dev/null",
    "login": f"{FRESH} setsid -w bash -l -c {shlex.quote(ASK)} </dev/null 2>/dev/null",
}


def asked(lab) -> dict:
    """{kind: {python3, pip, nvcc, cuda_home, cvd, torch: (file, available, count)}} from a plain shell of each kind."""
    out = {}
    for kind, command in KINDS.items():
        text = ok(lab, HOST, command)
        line = next(x for x in text.splitlines() if x.startswith("python3="))
        seen = dict(part.split("=", 1) for part in line.split(" "))
        torch = next((x.split()[1:] for x in text.splitlines() if x.startswith("torch ")), None)
        seen["torch"] = (torch[0], torch[1] == "True", int(torch[2])) if torch else None
        out[kind] = seen
    return out


def apply(lab) -> tuple[int, dict, str]:
    code, doc = fleet_json("apply", str(lab.inventory_path), "--limit", HOST)
    return code, doc, json.dumps(doc["hosts"][HOST])


@pytest.fixture(scope="module")
def converged(lab, converged_fresh):
    code, doc = converged_fresh(HOST)       # a fresh host converged (conftest.py: shared with other modules)
    assert code == 0, json.dumps(doc["hosts"][HOST])[-3000:]
    # a second toolkit as an older image leaves one: its own nvcc and version.json
    ok(lab, HOST, f"mkdir -p {OLD}/bin && cp {TOOLKIT}/bin/nvcc {OLD}/bin/nvcc && "
                  f"printf '{{\\n \"cuda\" : {{\\n  \"version\" : \"12.4.1\"\\n }}\\n}}\\n' > {OLD}/version.json")
    return lab


def test_after_apply_every_kind_runs_the_proved_python_torch_pip_and_nvcc(converged):
    lab = converged
    for kind, seen in asked(lab).items():
        assert seen["python3"] == "/opt/fleet/venv/bin/python3", (kind, seen)   # not the system's
        assert seen["torch"] and seen["torch"][0].startswith("/opt/fleet/venv/") and seen["torch"][1], (kind, seen)
        assert seen["pip"] == "/opt/fleet/venv/bin/pip", (kind, seen)
        assert seen["nvcc"] == f"{TOOLKIT}/bin/nvcc" and seen["cuda_home"] == TOOLKIT, (kind, seen)
    # root's system tools keep the system's Python: a #!/usr/bin/python3 tool and apt-get, from a login shell
    ok(lab, HOST, "printf '#!/usr/bin/python3\\nimport sys; print(sys.executable)\\n' > /usr/local/bin/lab-systool && "
                  "chmod +x /usr/local/bin/lab-systool")
    said = ok(lab, HOST, f"{FRESH} setsid -w bash -l -c 'lab-systool; apt-get --version | head -n 1' </dev/null")
    assert said.splitlines()[0] == "/usr/bin/python3" and said.splitlines()[1].startswith("apt "), said
    # the venv's pip installs (a venv is never externally managed, PEP 668)
    assert "externally-managed" not in sh(lab, HOST, "pip install --no-index --no-deps /nonexistent.whl 2>&1").stdout


def test_a_package_taken_out_of_the_venv_refuses_reuse_and_says_so(converged):
    """The issue's `pip uninstall nvidia-cublas` left "passed (reused)": a distribution beside torch taken out of the
    venv (its files moved aside as pip uninstall removes them, put back after) makes apply run verify again, naming
    the venv's packages; with them back, the next apply runs it again for the same reason."""
    lab = converged
    code, doc, said = apply(lab)
    assert code == 0 and '"verify": "passed (reused)"' in said, said[-1500:]
    site = ok(lab, HOST, "ls -d /opt/fleet/venv/lib/python3*/site-packages").strip()
    dist = next(d for d in ok(lab, HOST, f"cd {site} && ls -d *.dist-info").split()
                if not d.startswith(("torch-", "pip-", "setuptools-")))
    with trap(lab, f"mv {site}/{dist} /tmp/{dist}", f"rm -rf {site}/{dist}; mv /tmp/{dist} {site}/{dist}"):
        code, doc, said = apply(lab)
        record = json.loads((lab.inventory.facts_dir / f"{HOST}.json").read_text())["verify"]
    print(f"\n===== apply with {dist} out of the venv (exit {code}): verify {record['reason']}")
    assert record["reused"] is False and "packages beside torch" in record["reason"], record["reason"]


def _hidden(lab, setup, undo, kinds_hidden, where, value, check=False):
    with trap(lab, setup, undo):
        before = asked(lab)
        for kind in KINDS:   # the trap, as the host shows it
            assert (before[kind]["torch"][1] is False) == (kind in kinds_hidden), (kind, before[kind])
        if check:   # the issue's `--check --detailed-exitcode` said 0 (verify reused): it must not now
            checked, _ = fleet_json("apply", str(lab.inventory_path), "--limit", HOST, "--check", "--detailed-exitcode")
            assert checked not in (0, 2), checked
        code, doc, said = apply(lab)
        after = asked(lab)
    print(f"\n===== apply with CUDA_VISIBLE_DEVICES={value!r} at {where} (exit {code}): {said[-1500:]}")
    assert code != 0, said[-2000:]
    for kind in kinds_hidden:       # fleet leaves the line to the user: the host still shows it, and apply failed
        assert after[kind]["torch"][1] is False and after[kind]["cvd"] != "@unset", (kind, after[kind])
    assert "CUDA_VISIBLE_DEVICES" in said and where in said and f"CUDA_VISIBLE_DEVICES={value!r}" in said, said[-3000:]
    return said


def test_cuda_visible_devices_at_the_top_of_bashrc_fails_apply_naming_the_line(converged):
    _hidden(converged, "sed -i '1i export CUDA_VISIBLE_DEVICES=1' /root/.bashrc", "sed -i '1d' /root/.bashrc",
            ("ssh", "interactive", "login"), "~/.bashrc:1", "1", check=True)


def test_emptied_in_profile_d_and_a_uuid_in_etc_bash_bashrc_each_name_their_own_line(converged):
    """The issue's: the variable emptied in /etc/profile.d (login shells). Of the family: a UUID copied from another
    box in /etc/bash.bashrc (`ssh host cmd` and interactive shells read it before ~/.bashrc; Ubuntu's /etc/profile
    sources it only for interactive login shells, so `bash -l -c` does not, as the host shows). Set together, each
    kind's failure names its own line."""
    uuid = "GPU-00000000-dead-beef-0000-000000000000"
    said = _hidden(converged, "printf '# from an image\\nexport CUDA_VISIBLE_DEVICES=\\n' > /etc/profile.d/zz-visible.sh && "
                   f"sed -i '1i export CUDA_VISIBLE_DEVICES={uuid}' /etc/bash.bashrc",
                   "rm -f /etc/profile.d/zz-visible.sh; sed -i '1d' /etc/bash.bashrc", ("ssh", "interactive", "login"),
                   "/etc/bash.bashrc:1", uuid)
    assert "CUDA_VISIBLE_DEVICES='' leaves none" in said and "set at /etc/profile.d/zz-visible.sh:2" in said, said

def test_another_toolkits_nvcc_first_is_the_decided_toolkits_after_apply(converged):
    """The issue's (at the end of ~/.bashrc, below fleet's guard: interactive shells) and the family's (from
    /etc/profile.d, with CUDA_PATH too: login shells), set together: each reaches its own kind only."""
    lab = converged
    setup = (f"cp /root/.bashrc /root/.bashrc.t && printf 'export PATH={OLD}/bin:$PATH\\nexport CUDA_HOME={OLD}\\n' "
             f">> /root/.bashrc && printf 'export PATH={OLD}/bin:$PATH CUDA_HOME={OLD} CUDA_PATH={OLD}\\n' > "
             "/etc/profile.d/00-old-cuda.sh")
    with trap(lab, setup, "mv /root/.bashrc.t /root/.bashrc; rm -f /etc/profile.d/00-old-cuda.sh"):
        ok(lab, HOST, "rm -f /etc/fleet/env.sh")    # as before fleet's hook: what the traps do alone
        before = asked(lab)
        code, doc, said = apply(lab)
        after = asked(lab)
    print(f"\n===== apply with {OLD} first (exit {code}); before: "
          + ", ".join(f"{k}: {before[k]['nvcc']} {before[k]['cuda_home']}" for k in KINDS))
    assert before["interactive"]["nvcc"] == before["login"]["nvcc"] == f"{OLD}/bin/nvcc", before
    assert code == 0, said[-2000:]
    for kind in KINDS:
        assert after[kind]["nvcc"] == f"{TOOLKIT}/bin/nvcc" and after[kind]["cuda_home"] == TOOLKIT, (kind, after)
        assert after[kind]["torch"][1], (kind, after)


def test_fleet_script_as_a_start_command_fails_naming_the_line_that_hides_the_gpu(converged, tmp_path):
    """`fleet script` (a pod template's start command, no control machine) runs the same verify program: with
    CUDA_VISIBLE_DEVICES=1 at the top of ~/.bashrc it fails naming the variable, its value and the line; and its
    verify checks each kind's python3/pip/nvcc as apply's does."""
    lab = converged
    from test_script_lab import fleet as fleet_text
    code, _, err = fleet_text("script", str(lab.inventory_path), "--limit", HOST, "-o", str(tmp_path / "fleet.sh"))
    assert code == 0, err
    with lab.connect(HOST) as conn:
        conn.write_file("/root/fleet.sh", (tmp_path / "fleet.sh").read_text(), mode=0o755)
    bare = "env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash /root/fleet.sh"
    with trap(lab, "sed -i '1i export CUDA_VISIBLE_DEVICES=1' /root/.bashrc", "sed -i '1d' /root/.bashrc"):
        run = sh(lab, HOST, bare)
    said = run.stdout + run.stderr
    print(f"\n===== fleet script with CUDA_VISIBLE_DEVICES=1 at ~/.bashrc:1 (exit {run.exit}): {said[-1200:]}")
    assert run.exit != 0 and "CUDA_VISIBLE_DEVICES='1' leaves none of the host's 1 GPU(s) visible" in said, said[-3000:]
    assert "set at ~/.bashrc:1" in said
    clean = sh(lab, HOST, bare)
    assert clean.exit == 0 and "user_commands_login" in clean.stdout + clean.stderr, clean.stdout[-2000:]
