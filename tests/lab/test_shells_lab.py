"""Issue 11 through real sshd: traps in startup files and a container environment on a `seed-template` lab
pod (fleet_lab/profiles.py: compat in /etc/rp_environment and a setup script at the end of .bashrc, driver
580, cuda-compat installed), with the container line moved above fleet's hook; then `fleet apply`, and what
`ssh host cmd` and `bash -i` actually load afterwards (the stand-in libcuda answers 803 where a real one
would). The NVML mismatch and the busy GPU are profiles of their own (test_lab_real_hosts.py).

Each test prints what fleet said before and after (pytest -s shows it), for the issue note.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from fleet_lab import control, testing
from helpers import ok
from test_apply_lab import fleet, fleet_json

COMPAT = "/usr/local/cuda-13.0/compat"
POD = "seed-pod"
# Ask the driver API in this shell: the libcuda the loader picks, cuInit's code (the stand-in's rules are
# the real ones: fleet_lab/native/libcuda.c).
CUINIT = ("python3 -c 'import ctypes,os; l=ctypes.CDLL(\"libcuda.so.1\"); c=l.cuInit(0); "
          "m=[x.split()[-1] for x in open(\"/proc/self/maps\") if \"libcuda.so\" in x]; "
          "print(\"cuInit\", c, os.path.realpath(m[0]), os.environ.get(\"LD_LIBRARY_PATH\", \"\"))'")
# `bash -i` as a person's terminal runs it: a fresh environment, no tty
INTERACTIVE = ("env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "
               "setsid -w bash -i -c {cmd} </dev/null 2>/dev/null")


def cuinit(lab, host: str) -> dict:
    """{kind: (code, libcuda, LD_LIBRARY_PATH)} for `ssh host cmd` and `bash -i`."""
    import shlex
    return parse_cuinit(ok(lab, host, f"{CUINIT}; {INTERACTIVE.format(cmd=shlex.quote(CUINIT))}"))


def parse_cuinit(out: str) -> dict:
    rows = [line.split(" ", 3) for line in out.splitlines() if line.startswith("cuInit ")]
    assert len(rows) == 2, out
    return {kind: (int(row[1]), row[2], row[3] if len(row) > 3 else "")
            for kind, row in zip(("ssh", "interactive"), rows)}


def show(title: str, text: str) -> None:
    print(f"\n===== {title}\n{text.strip()}")


@pytest.fixture(scope="module")
def pod_lab(lab, tmp_path_factory):
    """One `seed-template` pod beside the classic four (same lab root and mirror), as a TestLab."""
    from fleet.inventory import load_inventory
    path = tmp_path_factory.mktemp("shells") / "lab.yaml"
    doc = {"facts_dir": "facts", "vars": {"verify_perf": False},
           "hosts": {POD: {"address": f"{testing.test_net()}.47", "lab": {"profile": "seed-template"}}}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    control.up(path, None, lab.root)   # writes the lab's key and known hosts into the inventory
    yield testing.TestLab(lab.root, path, load_inventory(path))
    control.down(path, lab.root)


@pytest.fixture(scope="module")
def inventory(pod_lab):
    return str(pod_lab.inventory_path)


@pytest.fixture(scope="module")
def perf_inventory(pod_lab, tmp_path_factory):
    """The pod's perf smoke switched on: the stand-in torch cannot run it (no mem_get_info), so a test that
    passes with it proves the smoke was skipped."""
    doc = yaml.safe_load(pod_lab.inventory_path.read_text())
    doc["hosts"][POD]["vars"] = {"verify_perf": True}
    path = tmp_path_factory.mktemp("shells-perf") / "lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


@pytest.fixture(scope="module")
def trapped(pod_lab, inventory):
    """The seed-template pod with its container line (/etc/rp_environment, compat inside) moved to the top of
    .bashrc, above fleet's hook, so `ssh host cmd` gets it too; its setup script stays sourced at the end."""
    lab = pod_lab
    lab.reset([POD])
    ok(lab, POD, "sed -i '/^source \\/etc\\/rp_environment$/d' /root/.bashrc && "
                 "sed -i '1i source /etc/rp_environment' /root/.bashrc")
    before = cuinit(lab, POD)
    code, check_out, _ = fleet("apply", inventory, "--limit", POD, "--check")
    show("seed pod trapped: fleet apply --check (before)", check_out)
    first = fleet_json("apply", inventory, "--limit", POD)
    host = first[1]["hosts"][POD]
    show("seed pod: fleet apply (JSON, env_hooks and verify)", "\n".join(
        f"{t['status']:8} {t['role']}: {t['task']} — {t['reason']}" for t in host["tasks"]
        if t["role"] in ("env_hooks", "verify")))
    after_first = record(inventory)
    second = fleet_json("apply", inventory, "--limit", POD)
    return {"before": before, "first": first, "record": after_first, "second": second, "after": cuinit(lab, POD)}


def test_the_traps_really_break_cuda_before(trapped):
    before = trapped["before"]
    assert before["ssh"][0] == 803 and before["ssh"][1].startswith(COMPAT)       # the container line
    assert before["interactive"][0] == 803 and before["interactive"][1].startswith(COMPAT)


def test_after_apply_both_shells_load_the_driver_libcuda(trapped):
    after = trapped["after"]
    for kind in ("ssh", "interactive"):
        code, lib, ld = after[kind]
        assert code == 0, (kind, after)
        assert lib == "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", (kind, lib)
        assert COMPAT not in ld.split(":"), (kind, ld)


def test_user_lines_stay_and_the_facts_name_each_neutralized_line(pod_lab, trapped):
    code, doc = trapped["first"]
    assert code == 0, json.dumps(doc["hosts"][POD], indent=1)[-3000:]
    bashrc = ok(pod_lab, POD, "cat /root/.bashrc")
    assert bashrc.startswith("source /etc/rp_environment\n") and bashrc.count("source /root/pod_setup.sh") == 1
    facts = trapped["record"]
    lines = facts["env"]["compat_lines"]
    says = " | ".join(line["says"] for line in lines)
    assert "~/.bashrc:1 (via /etc/rp_environment:" in says and "(via ~/pod_setup.sh:2) puts" in says
    assert not any("harm" in line for line in lines)          # facts observe; decide.loader judges
    why = next(t["reason"] for t in doc["hosts"][POD]["tasks"] if t["role"] == "env_hooks"
               and t["status"] == "changed")
    assert "neutralizes ~/.bashrc:1 (via /etc/rp_environment:" in why
    # the summary says what fleet fixed, one line per neutralized line (test_after_apply_... asks the shells)
    fixed = doc["hosts"][POD]["fixed"]
    assert len(fixed) == len(lines) and all(f.startswith("neutralized ") and "error 803" in f for f in fixed), fixed
    assert "neutralized ~/.bashrc:1 (via /etc/rp_environment:" in fixed[0], fixed
    assert why.count("first: error 803 under driver 580.159.04 (cuda-compat 580.95.05 is not newer)") == len(lines)
    shells = facts["shells"]
    for kind in ("noninteractive", "interactive", "login"):
        assert COMPAT not in (shells[kind]["LD_LIBRARY_PATH"] or "").split(":"), (kind, shells[kind])


def test_verify_ran_in_both_shells_and_the_second_apply_changes_nothing(trapped):
    verify = trapped["record"]["verify"]
    assert verify["passed"], verify["summary"]
    names = {c["name"] for c in verify["checks"]}
    assert {"cuda_available", "cuda_available_interactive"} <= names
    code2, second = trapped["second"]
    assert code2 == 0 and second["hosts"][POD]["changed"] == 0, second["hosts"][POD]["tasks"]
    assert second["stats"][POD]["remote_commands"] == 1


def test_a_line_appended_below_the_hook_later_is_taken_off_by_the_next_apply(pod_lab, trapped, inventory):
    ok(pod_lab, POD, f"printf 'export LD_LIBRARY_PATH={COMPAT}:$LD_LIBRARY_PATH\\n' >> /root/.bashrc")
    assert cuinit(pod_lab, POD)["interactive"][0] == 803
    code, doc = fleet_json("apply", inventory, "--limit", POD)
    assert code == 0
    changed = [t for t in doc["hosts"][POD]["tasks"] if t["status"] == "changed"]
    assert [t["task"] for t in changed] == ["guard at the end of ~/.bashrc (last word in interactive shells)"]
    assert "neutralizes ~/.bashrc:" in changed[0]["reason"]
    after = cuinit(pod_lab, POD)
    assert after["interactive"][0] == 0 and after["ssh"][0] == 0


def test_check_mode_never_runs_the_perf_smoke(trapped, perf_inventory):
    # idle GPU, verify_perf on: the stand-in torch cannot run the smoke, so a perf run would show
    # --verify: run verify now rather than reuse the last one (verify by fingerprint), in check mode
    code, doc = fleet_json("apply", perf_inventory, "--limit", POD, "--check", "--verify")
    assert code == 0, doc["hosts"][POD]
    verify = record(perf_inventory)["verify"]
    assert verify["reused"] is False and verify["reason"] == "ran: asked for (--verify)"
    assert verify["perf"] is None and not [c for c in verify["checks"] if c["name"].startswith("perf")]


def record(inventory: str, host: str = POD) -> dict:
    """The facts record the last run wrote for `host`."""
    import pathlib
    return json.loads((pathlib.Path(inventory).parent / "facts" / f"{host}.json").read_text())
