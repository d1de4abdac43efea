"""Issue 11 through real sshd: traps in startup files, a container environment, an NVML mismatch and a busy
GPU, set up by hand on lab hosts the way they are met on real pods; then `fleet apply`, and what `ssh host
cmd` and `bash -i` actually load afterwards (the stand-in libcuda answers 803 where a real one would).

Each test prints what fleet said before and after (pytest -s shows it), for the issue note.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from helpers import ok, sh
from test_apply_lab import fleet, fleet_json

COMPAT = "/usr/local/cuda-13.0/compat"
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


def _inventory(lab, where, perf: bool) -> str:
    doc = yaml.safe_load(lab.inventory_path.read_text())
    doc["hosts"]["pod-580"].setdefault("vars", {})["verify_perf"] = perf
    path = where / "lab.yaml"
    doc["facts_dir"] = str(where / "facts")
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory):
    return _inventory(lab, tmp_path_factory.mktemp("shells"), perf=False)


@pytest.fixture(scope="module")
def perf_inventory(lab, tmp_path_factory):
    """pod-580's perf smoke switched on: the stand-in torch cannot run it (no mem_get_info, pure-Python
    matmul), so a test that passes with it proves the smoke was skipped."""
    return _inventory(lab, tmp_path_factory.mktemp("shells-perf"), perf=True)


@pytest.fixture(scope="module")
def trapped(lab, inventory):
    """pod-580 (driver 580.159.04, cuda-compat 580.95.05 installed): the container-style export above
    everything (/etc/rp_environment sourced at the top of .bashrc) and a pod setup script sourced at the end."""
    lab.reset(["pod-580"])
    ok(lab, "pod-580", f"""
        printf 'export LD_LIBRARY_PATH={COMPAT}:$LD_LIBRARY_PATH\\n' >> /etc/rp_environment
        sed -i '/^source \\/etc\\/rp_environment$/d' /root/.bashrc
        sed -i '1i source /etc/rp_environment' /root/.bashrc
        printf 'export LD_LIBRARY_PATH={COMPAT}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\\n' > /root/pod_setup.sh
        echo 'source /root/pod_setup.sh' >> /root/.bashrc
    """)
    before = cuinit(lab, "pod-580")
    code, check_out, _ = fleet("apply", inventory, "--limit", "pod-580", "--check")
    show("pod-580 trapped: fleet apply --check (before)", check_out)
    first = fleet_json("apply", inventory, "--limit", "pod-580")
    host = first[1]["hosts"]["pod-580"]
    show("pod-580: fleet apply (JSON, env_hooks and verify)", "\n".join(
        f"{t['status']:8} {t['role']}: {t['task']} — {t['reason']}" for t in host["tasks"]
        if t["role"] in ("env_hooks", "verify")))
    after_first = record(inventory)
    second = fleet_json("apply", inventory, "--limit", "pod-580")
    return {"before": before, "first": first, "record": after_first, "second": second, "after": cuinit(lab, "pod-580")}


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


def test_user_lines_stay_and_the_facts_name_each_neutralized_line(lab, trapped):
    code, doc = trapped["first"]
    assert code == 0, json.dumps(doc["hosts"]["pod-580"], indent=1)[-3000:]
    bashrc = ok(lab, "pod-580", "cat /root/.bashrc")
    assert bashrc.startswith("source /etc/rp_environment\n") and bashrc.count("source /root/pod_setup.sh") == 1
    facts = trapped["record"]
    lines = facts["env"]["compat_lines"]
    says = " | ".join(line["says"] for line in lines)
    assert "~/.bashrc:1 (via /etc/rp_environment:" in says and "(via ~/pod_setup.sh:1) puts" in says
    assert all("error 803 under driver 580.159.04" in line["harm"] for line in lines)
    why = next(t["reason"] for t in doc["hosts"]["pod-580"]["tasks"] if t["role"] == "env_hooks"
               and t["status"] == "changed")
    assert "neutralizes ~/.bashrc:1 (via /etc/rp_environment:" in why
    shells = facts["shells"]
    for kind in ("noninteractive", "interactive", "login"):
        assert COMPAT not in (shells[kind]["LD_LIBRARY_PATH"] or "").split(":"), (kind, shells[kind])


def test_verify_ran_in_both_shells_and_the_second_apply_changes_nothing(trapped):
    verify = trapped["record"]["verify"]
    assert verify["passed"], verify["summary"]
    names = {c["name"] for c in verify["checks"]}
    assert {"cuda_available", "cuda_available_interactive"} <= names
    code2, second = trapped["second"]
    assert code2 == 0 and second["hosts"]["pod-580"]["changed"] == 0, second["hosts"]["pod-580"]["tasks"]
    assert second["stats"]["pod-580"]["remote_commands"] == 1


def test_a_line_appended_below_the_hook_later_is_taken_off_by_the_next_apply(lab, trapped, inventory):
    ok(lab, "pod-580", f"printf 'export LD_LIBRARY_PATH={COMPAT}:$LD_LIBRARY_PATH\\n' >> /root/.bashrc")
    assert cuinit(lab, "pod-580")["interactive"][0] == 803
    code, doc = fleet_json("apply", inventory, "--limit", "pod-580")
    assert code == 0
    changed = [t for t in doc["hosts"]["pod-580"]["tasks"] if t["status"] == "changed"]
    assert [t["task"] for t in changed] == ["guard at the end of ~/.bashrc (last word in interactive shells)"]
    assert "neutralizes ~/.bashrc:" in changed[0]["reason"]
    after = cuinit(lab, "pod-580")
    assert after["interactive"][0] == 0 and after["ssh"][0] == 0


def test_a_busy_gpu_skips_perf_and_a_no_op_apply_exits_0(lab, trapped, perf_inventory):
    """A job holding 58 GB: the perf smoke (on for pod-580 here) is skipped with its reason."""
    ok(lab, "pod-580", "mkdir -p /run/fleet-lab/gpu-jobs && echo 59392 > /run/fleet-lab/gpu-jobs/train && "
                       "(setsid sleep 600 3</run/fleet-lab/gpu-jobs/train >/dev/null 2>&1 &)")
    try:
        smi = ok(lab, "pod-580", "nvidia-smi --query-compute-apps=pid,process_name,used_memory "
                                 "--format=csv,noheader,nounits")
        assert smi.strip().endswith("sleep, 59392"), smi
        code, out, _ = fleet("apply", perf_inventory, "--limit", "pod-580")
        show("pod-580 busy: no-op fleet apply", out)
        assert code == 0, out
        assert record(perf_inventory)["verify"]["reused"] is True   # a no-op does no GPU work at all (issue 14)
        code, out, _ = fleet("verify", perf_inventory, "--limit", "pod-580")   # verify now, on the busy GPU
        show("pod-580 busy: fleet verify", out)
        assert code == 0, out
        verify = record(perf_inventory)["verify"]
        assert verify["passed"] and verify["perf"]["skipped"] == "perf skipped: 1 process, 58 GB in use, 100 % busy"
        assert "perf skipped: 1 process, 58 GB in use" in out   # said, not only recorded
    finally:
        sh(lab, "pod-580", "pkill -f 'sleep 600' || true")


def test_check_mode_never_runs_the_perf_smoke(lab, trapped, perf_inventory):
    # idle GPU, verify_perf on: the stand-in torch cannot run the smoke, so a perf run would show
    # --verify: run verify now rather than reuse the last one (verify by fingerprint), in check mode
    code, doc = fleet_json("apply", perf_inventory, "--limit", "pod-580", "--check", "--verify")
    assert code == 0, doc["hosts"]["pod-580"]
    verify = record(perf_inventory)["verify"]
    assert verify["reused"] is False and verify["reason"] == "ran: asked for (--verify)"
    assert verify["perf"] is None and not [c for c in verify["checks"] if c["name"].startswith("perf")]


def record(inventory: str, host: str = "pod-580") -> dict:
    """The facts record the last run wrote for `host`."""
    import pathlib
    return json.loads((pathlib.Path(inventory).parent / "facts" / f"{host}.json").read_text())


def test_nvml_mismatch_refuses_and_no_nvidia_smi_still_means_a_gpu(lab, inventory):
    """pod-570 after an unattended upgrade of the user-space driver to 580.159.04 (kernel module 570)."""
    lab.reset(["pod-570"])
    from fleet_lab import mirror   # the upgraded user-space driver, copied in as the upgrade would
    upgraded = (mirror.ensure(lab.root) / "native" / "driver" / "libcuda.so.580.159.04").read_bytes()
    with lab.connect("pod-570") as conn:
        conn.write_file("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", upgraded, mode=0o755)
    ok(lab, "pod-570", "cd /usr/lib/x86_64-linux-gnu && ln -sf libcuda.so.580.159.04 libcuda.so.1")
    res = sh(lab, "pod-570", "nvidia-smi")
    assert res.exit == 18 and "Driver/library version mismatch" in res.stdout
    code, out, err = fleet("apply", inventory, "--limit", "pod-570", "--check")
    show("pod-570 NVML mismatch: fleet apply --check", out + err)
    assert code == 1 and "Driver/library version mismatch" in out + err and "reboot" in out + err
    facts = record(inventory, "pod-570")
    assert facts["driver"]["nvml_error"]["mismatch"] is True
    assert facts["platform"] == "x86_64-dgpu" and facts["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    # no nvidia-smi at all (the upgrade undone): the kernel's GPU, CUDA torch and compat planned
    ok(lab, "pod-570", "cd /usr/lib/x86_64-linux-gnu && ln -sf libcuda.so.570.133.20 libcuda.so.1 && "
                       "rm /usr/bin/nvidia-smi")
    code, doc = fleet_json("apply", inventory, "--limit", "pod-570", "--check")
    host = doc["hosts"]["pod-570"]
    assert code == 0 and host["refuse"] is None, host
    assert record(inventory, "pod-570")["gpus"][0]["source"] == "kernel"
    assert "/cu130" in host["reasons"]["torch"] and "cpu" not in host["reasons"]["torch"].split("whl/")[-1]
    assert any(t["role"] == "cuda_compat" and t["status"] == "changed" for t in host["tasks"])
