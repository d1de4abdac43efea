"""Issue 45 item 2 through real sshd on the lab's pod-580: every variable of the families a GPU job reads, per kind of
shell, with its line. After a converged apply (shared: converged_fresh), the traps are set by hand, as a forum's fix
left in would set them:

- `export NCCL_P2P_DISABLE=1` at the TOP of ~/.bashrc (every kind: `ssh host cmd` reads ~/.bashrc up to its early
  return, login shells through ~/.profile); NVIDIA's NCCL guide lists it among the debugging variables;
- `export CUDA_LAUNCH_BLOCKING=1` at the top of ~/.profile (login shells only; serialises every kernel launch);
- `export OMP_NUM_THREADS=1` in /etc/profile.d (login shells; a note, never a failure);
- of the families, named by no issue: `export CUDNN_LOGINFO_DBG=1` at the end of /etc/bash.bashrc (interactive
  shells: a note), `export TRITON_CACHE_DIR=/tmp/triton-cache` there and `export KMP_AFFINITY=granularity=fine` in
  /etc/profile.d (recorded, judged by no row), and `export NCCL_NVLS_ENABLE=0` at the end of /etc/bash.bashrc as the
  lent machines set it (deliberate: said so, never a failure).

Each is proven by asking a plain shell of each kind on the host what it gets; then `fleet facts` records each with
its file:line, `fleet apply --check --detailed-exitcode` is no longer "passed (reused)", and `fleet verify` fails
naming the variable, its value, the kind and the line; with the lines gone, verify passes again.
"""

from __future__ import annotations

import json
import pathlib
import shlex

import pytest

from helpers import fleet, fleet_json, ok

HOST = "pod-580"
FRESH = "env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PROFILE_D = "/etc/profile.d/zz-fleet-test-families.sh"
NAMES = ("NCCL_P2P_DISABLE", "CUDA_LAUNCH_BLOCKING", "OMP_NUM_THREADS", "CUDNN_LOGINFO_DBG", "TRITON_CACHE_DIR",
         "KMP_AFFINITY", "NCCL_NVLS_ENABLE")
ASK = "for v in " + " ".join(NAMES) + "; do printf '%s=%s\\n' \"$v\" \"${!v-@unset}\"; done"


def asked(lab) -> dict:
    """{kind: {NAME: value or None}} as a plain shell of each kind on the host prints them (no help from fleet)."""
    commands = {"noninteractive": ASK,   # fleet's connection runs it as `ssh host cmd` does: ~/.bashrc, early return
                "interactive": f"{FRESH} setsid -w bash -i -c {shlex.quote(ASK)} </dev/null 2>/dev/null",
                "login": f"{FRESH} setsid -w bash -l -c {shlex.quote(ASK)} </dev/null 2>/dev/null"}
    out = {}
    for kind, command in commands.items():
        pairs = (line.split("=", 1) for line in ok(lab, HOST, command).splitlines() if "=" in line)
        out[kind] = {k: (None if v == "@unset" else v) for k, v in pairs if k in NAMES}
    return out


@pytest.fixture(scope="module")
def trapped(lab, converged_fresh):
    code, doc = converged_fresh(HOST)
    assert code == 0, json.dumps(doc["hosts"][HOST], indent=1)[-3000:]
    inventory = str(lab.inventory_path)
    clean = asked(lab)
    # lines above fleet's guards (which stay the last word of ~/.bashrc and ~/.profile), and at the end of
    # /etc/bash.bashrc, which returns first where PS1 is unset (interactive shells only)
    ok(lab, HOST, "cp -p /root/.bashrc /root/.bashrc.fam && cp -p /root/.profile /root/.profile.fam && "
                  "cp -p /etc/bash.bashrc /etc/bash.bashrc.fam && "
                  "sed -i '1i export NCCL_P2P_DISABLE=1' /root/.bashrc && "
                  "printf '%s\\n' 'export CUDNN_LOGINFO_DBG=1' 'export TRITON_CACHE_DIR=/tmp/triton-cache' "
                  "'export NCCL_NVLS_ENABLE=0' >> /etc/bash.bashrc && "
                  "sed -i '1i export CUDA_LAUNCH_BLOCKING=1' /root/.profile && "
                  f"printf '%s\\n' 'export OMP_NUM_THREADS=1' 'export KMP_AFFINITY=granularity=fine' > {PROFILE_D}")
    try:
        yield inventory, clean
    finally:
        undo(lab)


def undo(lab) -> None:
    ok(lab, HOST, f"[ ! -e /root/.bashrc.fam ] || mv -f /root/.bashrc.fam /root/.bashrc; "
                  f"[ ! -e /root/.profile.fam ] || mv -f /root/.profile.fam /root/.profile; "
                  f"[ ! -e /etc/bash.bashrc.fam ] || mv -f /etc/bash.bashrc.fam /etc/bash.bashrc; rm -f {PROFILE_D}")


def lines(lab, name: str) -> list[list[str]]:
    """The line numbers of the host's startup files that hold `name`, found with grep on the host."""
    out = ok(lab, HOST, f"grep -n -- {shlex.quote(name)} /root/.bashrc /root/.profile /etc/bash.bashrc {PROFILE_D} "
                        "|| true")
    return [line.split(":")[:2] for line in out.splitlines()]


def test_each_kind_of_shell_gets_the_families_as_the_lines_say(lab, trapped):
    _, clean = trapped
    assert all(v is None for kind in clean.values() for v in kind.values()), clean
    got = asked(lab)
    assert got["noninteractive"] == {**dict.fromkeys(NAMES), "NCCL_P2P_DISABLE": "1"}
    assert got["interactive"] == {**dict.fromkeys(NAMES), "NCCL_P2P_DISABLE": "1", "CUDNN_LOGINFO_DBG": "1",
                                  "TRITON_CACHE_DIR": "/tmp/triton-cache", "NCCL_NVLS_ENABLE": "0"}
    # a login shell: ~/.profile reads ~/.bashrc (its first line); /etc/bash.bashrc returns at once (no PS1)
    assert got["login"] == {**got["noninteractive"], "CUDA_LAUNCH_BLOCKING": "1", "OMP_NUM_THREADS": "1",
                            "KMP_AFFINITY": "granularity=fine"}


def test_facts_record_each_variable_with_the_line_that_set_it(lab, trapped):
    inventory, _ = trapped
    code, _ = fleet_json("facts", inventory, "--limit", HOST)
    assert code == 0
    shells = json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())["shells"]
    got = asked(lab)
    for kind in ("noninteractive", "interactive", "login"):
        recorded = {k: v for k, v in shells[kind]["families"].items() if k in NAMES}
        assert recorded == {k: v for k, v in got[kind].items() if v is not None}, kind
    grep = {name: lines(lab, name) for name in NAMES}
    top = grep["NCCL_P2P_DISABLE"][0]
    assert top == ["/root/.bashrc", "1"]
    setter = shells["noninteractive"]["set_by"]["NCCL_P2P_DISABLE"]
    assert (setter["file"], str(setter["line"])) == tuple(top)
    setter = shells["login"]["set_by"]["CUDA_LAUNCH_BLOCKING"]
    assert [setter["file"], str(setter["line"])] == grep["CUDA_LAUNCH_BLOCKING"][0]
    setter = shells["login"]["set_by"]["OMP_NUM_THREADS"]
    assert [setter["file"], str(setter["line"])] == grep["OMP_NUM_THREADS"][0]
    assert setter["via"] and setter["via"][0].startswith("/etc/profile:")   # /etc/profile sources profile.d
    setter = shells["interactive"]["set_by"]["CUDNN_LOGINFO_DBG"]
    assert [setter["file"], str(setter["line"])] == grep["CUDNN_LOGINFO_DBG"][0]


def test_a_reused_verify_no_longer_passes_and_verify_names_the_variable_kind_and_line(lab, trapped):
    inventory, _ = trapped
    code, out, err = fleet("apply", inventory, "--limit", HOST, "--check", "--detailed-exitcode")
    text = out + err
    assert code != 0 and "(reused)" not in text, text[-3000:]
    assert "NCCL_P2P_DISABLE" in text, text[-3000:]
    code, _ = fleet_json("verify", inventory, "--limit", HOST)
    record = json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())["verify"]
    checks = {c["name"]: c for c in record["checks"]}
    assert code != 0 and record["passed"] is False
    ssh, login = checks["job_variables_ssh"], checks["job_variables_login"]
    assert not ssh["passed"] and "NCCL_P2P_DISABLE='1' set at ~/.bashrc:1" in ssh["detail"], ssh
    assert not login["passed"] and "CUDA_LAUNCH_BLOCKING='1' set at ~/.profile:1" in login["detail"], login
    interactive = checks["job_variables_interactive"]
    assert not interactive["passed"] and "CUDNN_LOGINFO_DBG='1'" in interactive["detail"]
    assert "NCCL_NVLS_ENABLE='0'" in interactive["detail"] and "deliberate" in interactive["detail"]
    assert "TRITON_CACHE_DIR" not in interactive["detail"]   # recorded, judged by no row
    # the lines gone: each kind asked again has none of them, and a plain verify passes again
    undo(lab)
    assert all(v is None for kind in asked(lab).values() for v in kind.values())
    code, _ = fleet_json("verify", inventory, "--limit", HOST)
    record = json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())["verify"]
    assert code == 0 and all(c["passed"] for c in record["checks"] if c["name"].startswith("job_variables_"))
