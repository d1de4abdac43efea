"""Issue 23, item 5 and the fix-text half of item 3, through real sshd on the lab's pod-580 (driver 580.159.04,
cuda-compat 580.95.05 installed, compat NOT decided): verify asks CUDA in each kind of process (bare `env -i`,
`ssh host cmd`, `bash -i`, `bash -l`), and each failure names the kind, the libcuda loaded and the step of the
loader that put it first, found on the host. Each trap is set by hand, proven by asking the host itself (a plain
process of each kind, the stand-in libcuda's cuInit answering by the kernel driver as a real one would), then
`fleet verify` is asked.

pytest -s prints what fleet said for each trap (for the issue's note).
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import shlex

import pytest

from helpers import ok
from test_apply_lab import fleet_json

HOST = "pod-580"
COMPAT = "/usr/local/cuda-13.0/compat"
COMPAT_LIB = f"{COMPAT}/libcuda.so.580.95.05"
DRIVER_LIB = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04"
CONF = "/etc/ld.so.conf.d/000-cuda-compat.conf"
PY = "/usr/bin/python3"
# The driver API asked in one process: cuInit's code and the libcuda it mapped (the loader's pick)
CUINIT = ("import ctypes,os; l=ctypes.CDLL('libcuda.so.1'); c=l.cuInit(0); "
          "m=[x.split()[-1] for x in open('/proc/self/maps') if 'libcuda.so' in x]; "
          "print('cuInit', c, os.path.realpath(m[0]))")
FRESH = "env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Each kind of process, started as it is started in life, with no help from fleet
ASK = {
    "bare": f"env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root {PY} -c {shlex.quote(CUINIT)}",
    "ssh": f"{PY} -c {shlex.quote(CUINIT)}",   # the lab's `ssh host cmd` itself: bash read ~/.bashrc
    "interactive": f"{FRESH} setsid -w bash -i -c {shlex.quote(PY + ' -c ' + shlex.quote(CUINIT))} </dev/null",
    "login": f"{FRESH} setsid -w bash -l -c {shlex.quote(PY + ' -c ' + shlex.quote(CUINIT))} </dev/null",
}
KINDS = tuple(ASK)
CHECK = {"ssh": "cuda_available", "bare": "cuda_available_bare", "interactive": "cuda_available_interactive",
         "login": "cuda_available_login"}
SAYS = {"bare": "in a bare process (env -i: services, cron, docker exec)", "ssh": "in `ssh host cmd`",
        "interactive": "in an interactive shell (bash -i)", "login": "in a login shell (bash -l)"}


def asked(lab) -> dict:
    """{kind: (cuInit code, libcuda real path)}, each kind asked by a plain process on the host."""
    out = {}
    for kind, command in ASK.items():
        line = next(x for x in ok(lab, HOST, f"{command} 2>/dev/null").splitlines() if x.startswith("cuInit "))
        _, code, lib = line.split(" ", 2)
        out[kind] = (int(code), lib)
    return out


def verify(inventory) -> tuple[int, dict, dict]:
    """`fleet verify` on the host: exit code, the host's verify record as fleet keeps it, and its checks by name."""
    code, doc = fleet_json("verify", inventory, "--limit", HOST)
    record = json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())["verify"]
    print(f"\n===== fleet verify (exit {code}): {record['summary']}")
    # what fleet's report of the run says of verify is the record's summary, failed kinds and all
    task = next(t for t in doc["hosts"][HOST]["tasks"] if t["role"] == "verify")
    assert record["summary"] in task["reason"], (task, record["summary"])
    return code, record, {c["name"]: c for c in record["checks"]}


@pytest.fixture(scope="module")
def converged(lab, converged_fresh):
    """pod-580 fresh, applied once: torch in the venv, fleet's hooks in place, compat installed and not used
    (conftest.py: that converge shared with other modules)."""
    code, doc = converged_fresh(HOST)
    assert code == 0, json.dumps(doc["hosts"][HOST], indent=1)[-3000:]
    return str(lab.inventory_path)



@contextlib.contextmanager
def trap(lab, setup: str, undo: str):
    """A trap set on the host by hand, and taken out again whatever the test found (the next test finds it clean)."""
    ok(lab, HOST, setup)
    try:
        yield
    finally:
        ok(lab, HOST, undo)

def test_a_clean_host_passes_in_every_kind_of_process(lab, converged):
    assert all(answer == (0, DRIVER_LIB) for answer in asked(lab).values()), asked(lab)
    code, record, checks = verify(converged)
    assert code == 0 and record["passed"], record["summary"]
    for kind in KINDS:
        assert checks[CHECK[kind]]["passed"] and DRIVER_LIB in checks[CHECK[kind]]["detail"], checks[CHECK[kind]]
        assert record["kinds"][kind]["passed"] and record["kinds"][kind]["libcuda_real"] == DRIVER_LIB


def test_a_bash_profile_putting_compat_first_fails_login_naming_the_file_and_line(lab, converged):
    with trap(lab, f"printf '# mine\\nexport LD_LIBRARY_PATH={COMPAT}:$LD_LIBRARY_PATH\\n' > /root/.bash_profile",
              "rm -f /root/.bash_profile"):
        before = asked(lab)
        assert before["login"] == (803, COMPAT_LIB), before          # the trap, as the host itself shows it
        assert all(before[k] == (0, DRIVER_LIB) for k in ("bare", "ssh", "interactive")), before
        code, record, checks = verify(converged)
    assert code != 0 and not record["passed"]
    login = checks["cuda_available_login"]
    assert not login["passed"]
    assert login["detail"].startswith(f"{SAYS['login']}: CUDA error 803 ") and COMPAT_LIB in login["detail"]
    assert "cuda-compat libcuda 580.95.05" in login["detail"]
    assert f"loaded because ~/.bash_profile:2 puts {COMPAT} first on LD_LIBRARY_PATH" in login["detail"]
    assert f"fix: take {COMPAT} off LD_LIBRARY_PATH at that line" in login["detail"]
    assert record["kinds"]["login"]["step"]["mechanism"] == "LD_LIBRARY_PATH"
    assert record["kinds"]["login"]["libcuda_version"] == "580.95.05" and record["kinds"]["login"]["stub"] is False
    for kind in ("bare", "ssh", "interactive"):     # the kinds the host showed healthy pass
        assert checks[CHECK[kind]]["passed"], checks[CHECK[kind]]
    assert "cuda_available_login: in a login shell (bash -l): CUDA error 803" in record["summary"]


def test_compat_in_the_ld_cache_fails_every_kind_naming_the_conf_file(lab, converged):
    with trap(lab, f"printf '%s\\n' {COMPAT} > {CONF} && ldconfig",
              f"rm -f {CONF} && ldconfig"):
        before = asked(lab)
        assert all(answer == (803, COMPAT_LIB) for answer in before.values()), before
        code, record, checks = verify(converged)
    assert code != 0 and not record["passed"]
    for kind in KINDS:
        detail = checks[CHECK[kind]]["detail"]
        assert not checks[CHECK[kind]]["passed"] and detail.startswith(f"{SAYS[kind]}: CUDA error 803 "), detail
        assert f"loaded because {CONF}:1 puts {COMPAT} in the ld cache (ldconfig -p: libcuda.so.1 => " in detail
        assert f"fix: move {CONF} aside" in detail and "run ldconfig" in detail
        assert "LD_LIBRARY_PATH" not in detail.split("; fix: ")[1], detail   # the wrong mechanism is not blamed
        step = record["kinds"][kind]["step"]
        assert step["mechanism"] == "ld cache" and step["conf"] == CONF
    assert asked(lab)["bare"] == (0, DRIVER_LIB)   # taken out again: the host is clean for the next test


def test_a_preload_of_the_compat_libcuda_is_named_as_the_preload(lab, converged):
    with trap(lab, f"printf '%s\\n' {COMPAT}/libcuda.so.1 > /etc/ld.so.preload",
              "rm -f /etc/ld.so.preload"):
        before = asked(lab)
        assert all(answer == (803, COMPAT_LIB) for answer in before.values()), before
        code, record, checks = verify(converged)
    assert code != 0
    for kind in KINDS:
        detail = checks[CHECK[kind]]["detail"]
        assert f"loaded because /etc/ld.so.preload:1 preloads {COMPAT}/libcuda.so.1" in detail, detail
        assert f"fix: take {COMPAT}/libcuda.so.1 out of /etc/ld.so.preload" in detail


def test_a_compat_needing_pod_is_judged_in_a_bare_process_as_a_bare_process_answers(lab, converged_fresh):
    """pod-570 (driver 570, CUDA 13.0 wheel: compat decided): verify's bare verdict is what a process that reads
    no startup file gets from torch on the host, whether or not compat reaches such processes (the cuda_compat
    role's part of issue 23); where it does not, the failure names the bare kind, the driver's libcuda and why."""
    pod = "pod-570"
    converged_fresh(pod)   # fresh, converged (conftest.py: shared by modules); its verify may fail: judged below
    answer = ok(lab, pod, "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root /opt/fleet/venv/bin/python -c "
                          "'import torch; print(torch.cuda.is_available())' 2>/dev/null").split()[-1]
    code, doc = fleet_json("verify", str(lab.inventory_path), "--limit", pod)
    record = json.loads((lab.inventory.facts_dir / f"{pod}.json").read_text())["verify"]
    bare = next(c for c in record["checks"] if c["name"] == "cuda_available_bare")
    print(f"\n===== pod-570 bare process: torch says {answer}; verify: {bare['detail']}")
    assert bare["passed"] == (answer == "True"), (answer, bare)
    assert record["kinds"]["bare"]["passed"] == bare["passed"] and (code == 0) == record["passed"]
    if not bare["passed"]:
        assert bare["detail"].startswith(f"{SAYS['bare']}: cuInit succeeded through /usr/lib/x86_64-linux-gnu/"
                                         "libcuda.so.570.133.20"), bare
        assert "driver API 12080 (libcuda 570.133.20) is older than the wheel's CUDA 13.0 needs: this kind of process does not get cuda-compat" in bare["detail"]


def test_a_line_appended_to_bashrc_fails_the_interactive_kind_naming_its_line(lab, converged):
    """Below fleet's guard at the end of ~/.bashrc: only `bash -i` reads it (`ssh host cmd` and `bash -l` stop
    at the file's non-interactive return), as the host shows; verify names that kind and that line."""
    with trap(lab, "cp /root/.bashrc /root/.bashrc.vk && "
                   f"printf 'export LD_LIBRARY_PATH={COMPAT}:$LD_LIBRARY_PATH\\n' >> /root/.bashrc",
              "mv /root/.bashrc.vk /root/.bashrc"):
        line = int(ok(lab, HOST, "wc -l < /root/.bashrc").strip())
        before = asked(lab)
        assert before["interactive"] == (803, COMPAT_LIB), before
        assert all(before[k] == (0, DRIVER_LIB) for k in ("bare", "ssh", "login")), before
        code, record, checks = verify(converged)
    assert code != 0
    assert {k for k, v in record["kinds"].items() if not v["passed"]} == {"interactive"}
    detail = checks["cuda_available_interactive"]["detail"]
    assert detail.startswith(f"{SAYS['interactive']}: CUDA error 803 ") and COMPAT_LIB in detail
    assert f"loaded because ~/.bashrc:{line} puts {COMPAT} first on LD_LIBRARY_PATH" in detail


def test_apply_with_the_bash_profile_trap_reports_the_login_shell_as_the_host_has_it(lab, converged):
    """Issue 23's false "verify passed": after `fleet apply` with a ~/.bash_profile putting compat first, apply's
    verify says of login shells what a login shell on the host then gets (whether or not apply neutralized the
    file: the env_hooks part of issue 23), and where it fails, names the kind and the file."""
    with trap(lab, f"cp /root/.bashrc /root/.bashrc.vk; cp /root/.profile /root/.profile.vk; "
                   f"printf 'export LD_LIBRARY_PATH={COMPAT}:$LD_LIBRARY_PATH\\n' > /root/.bash_profile",
              "rm -f /root/.bash_profile; mv /root/.bashrc.vk /root/.bashrc; mv /root/.profile.vk /root/.profile"):
        code, doc = fleet_json("apply", converged, "--limit", HOST, "--verify")
        after = asked(lab)
        record = json.loads((pathlib.Path(converged).parent / "facts" / f"{HOST}.json").read_text())["verify"]
    login = next(c for c in record["checks"] if c["name"] == "cuda_available_login")
    print(f"\n===== apply with ~/.bash_profile (exit {code}), login shell afterwards {after['login']}: "
          f"{record['summary']}")
    assert login["passed"] == (after["login"] == (0, DRIVER_LIB)), (after, login)
    assert (code == 0) == record["passed"] == all(a == (0, DRIVER_LIB) for a in after.values()), (code, after)
    if not login["passed"]:
        assert login["detail"].startswith(f"{SAYS['login']}: CUDA error 803 ") and "~/.bash_profile:" in login["detail"]
