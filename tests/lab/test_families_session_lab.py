"""Issue 45's gaps through the lab's real sshd on pod-580, after a converged apply (shared: converged_fresh):

- **sshd's SetEnv**: the lab's sshd reads its own config (fleet_lab/host.py SSHD_CONFIG, `sshd -f`) and honours its
  first SetEnv line; NCCL_P2P_DISABLE=1 and NCCL_NVLS_ENABLE=0 are added to that line and the host restarts. Every
  new SSH session then has them before any startup file.
- **NCCL's config files**: /etc/nccl.conf with NCCL_NVLS_ENABLE=0 (as the lent multi-GPU machines have it: deliberate,
  never a fault) and ~/.nccl.conf with NCCL_ALGO=Ring (a debugging variable: a note).
- **`unset`**: `unset NCCL_NVLS_ENABLE` in ~/.bashrc after its interactive guard (interactive shells only): the
  deliberate setting sshd gave is gone there, and NCCL then reads /etc/nccl.conf's.
- **limits per kind**: `ulimit -n 256` in ~/.bashrc after the same guard: interactive shells get 256.

Each is first asked of a plain shell of each kind on the host (a new SSH session, `bash -i`, `bash -l` started from it,
as a user types them; grep -n for the lines); then `fleet facts` records each with its file:line, and `fleet verify`
fails naming the SetEnv line and says the rest in the kinds' details; undone (the host restarted), verify passes again.
"""

from __future__ import annotations

import json
import pathlib
import shlex

import pytest

from fleet_lab.host import SSHD_CONFIG
from helpers import fleet_json, ok

HOST = "pod-580"
NAMES = ("NCCL_P2P_DISABLE", "NCCL_NVLS_ENABLE", "NCCL_ALGO")
ASK = ("for v in " + " ".join(NAMES) + "; do printf '%s=%s\\n' \"$v\" \"${!v-@unset}\"; done; "
       "printf 'nofile=%s\\n' \"$(ulimit -n)\"")
# after the first `esac` of ~/.bashrc: the end of its `case $- in *i*) ;; *) return;; esac` guard
AFTER_GUARD = "sed -i '0,/^esac/{/^esac/a ulimit -n 256\\nunset NCCL_NVLS_ENABLE\n}' /root/.bashrc"


def reload(lab) -> None:
    """sshd reads its config as it starts: the host restarted keeping its writes, as a pod restarts (control.restart
    waits until sshd answers; a SIGHUP would leave a moment when the old listener still answers)."""
    from fleet_lab import control

    control.restart(lab.inventory_path, [HOST], root=lab.root)


def asked(lab) -> dict:
    """{kind: {NAME: value or None, "nofile": "..."}} as a plain shell of each kind prints them, each from a new SSH
    session (sshd's SetEnv in it), no help from fleet."""
    commands = {"noninteractive": ASK,
                "interactive": f"setsid -w bash -i -c {shlex.quote(ASK)} </dev/null 2>/dev/null",
                "login": f"setsid -w bash -l -c {shlex.quote(ASK)} </dev/null 2>/dev/null"}
    out = {}
    for kind, command in commands.items():
        pairs = (line.split("=", 1) for line in ok(lab, HOST, command).splitlines() if "=" in line)
        out[kind] = {k: (None if v == "@unset" else v) for k, v in pairs if k in NAMES + ("nofile",)}
    return out


def grep(lab, pattern: str, *files: str) -> list[tuple[str, int]]:
    out = ok(lab, HOST, f"grep -n -- {shlex.quote(pattern)} {' '.join(files)} /dev/null || true")
    return [(f, int(n)) for f, n, _ in (line.split(":", 2) for line in out.splitlines())]


@pytest.fixture(scope="module")
def trapped(lab, converged_fresh):
    code, doc = converged_fresh(HOST)
    assert code == 0, json.dumps(doc["hosts"][HOST], indent=1)[-3000:]
    clean = asked(lab)
    ok(lab, HOST, f"cp -p {SSHD_CONFIG} /root/sshd_config.fam && cp -p /root/.bashrc /root/.bashrc.fam && "
                  f"sed -i 's/^SetEnv .*/& NCCL_P2P_DISABLE=1 NCCL_NVLS_ENABLE=0/' {SSHD_CONFIG} && "
                  "printf 'NCCL_NVLS_ENABLE=0\\n' > /etc/nccl.conf && printf '# mine\\nNCCL_ALGO=Ring\\n' > /root/.nccl.conf && "
                  f"{AFTER_GUARD}")
    reload(lab)
    try:
        yield str(lab.inventory_path), clean
    finally:
        undo(lab)


def undo(lab) -> None:
    kept = ok(lab, HOST, "[ ! -e /root/sshd_config.fam ] || echo kept")
    ok(lab, HOST, f"[ ! -e /root/sshd_config.fam ] || mv -f /root/sshd_config.fam {SSHD_CONFIG}; "
                  "[ ! -e /root/.bashrc.fam ] || mv -f /root/.bashrc.fam /root/.bashrc; "
                  "rm -f /etc/nccl.conf /root/.nccl.conf")
    if kept.strip():
        reload(lab)


def facts(inventory: str) -> dict:
    return json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())


def test_each_kind_of_shell_gets_what_sshd_and_the_startup_lines_give(lab, trapped):
    _, clean = trapped
    assert all(kind[n] is None for kind in clean.values() for n in NAMES), clean
    got = asked(lab)
    for kind in ("noninteractive", "login"):
        assert got[kind] == {"NCCL_P2P_DISABLE": "1", "NCCL_NVLS_ENABLE": "0", "NCCL_ALGO": None,
                             "nofile": clean[kind]["nofile"]}, kind
    assert got["interactive"] == {"NCCL_P2P_DISABLE": "1", "NCCL_NVLS_ENABLE": None, "NCCL_ALGO": None,
                                  "nofile": "256"}
    assert clean["interactive"]["nofile"] != "256"


def test_facts_record_the_setenv_line_the_conf_lines_the_unset_and_the_limit(lab, trapped):
    inventory, _ = trapped
    code, _ = fleet_json("facts", inventory, "--limit", HOST)
    assert code == 0
    shells = facts(inventory)["shells"]
    got = asked(lab)
    [(config, setenv)] = grep(lab, "^SetEnv ", SSHD_CONFIG)
    [(_, ulimit)] = grep(lab, "^ulimit -n 256", "/root/.bashrc")
    [(_, unset)] = grep(lab, "^unset NCCL_NVLS_ENABLE", "/root/.bashrc")
    for kind in ("noninteractive", "interactive", "login"):
        shell = shells[kind]
        assert {k: v for k, v in shell["families"].items() if k in NAMES} == \
            {k: v for k, v in got[kind].items() if k in NAMES and v is not None}, kind
        setter = shell["set_by"]["NCCL_P2P_DISABLE"]
        assert (setter["file"], setter["line"], setter["text"]) == (config, setenv, "SetEnv NCCL_P2P_DISABLE=1"), kind
        assert str(shell["limits"]["nofile"]) == got[kind]["nofile"], kind
        # NCCL reads its files where the environment lacks the name: ~/.nccl.conf in every kind
        assert shell["nccl_conf"]["NCCL_ALGO"] == {"value": "Ring", "file": "/root/.nccl.conf", "line": 2}, kind
    interactive = shells["interactive"]
    assert (interactive["unset_by"]["NCCL_NVLS_ENABLE"]["file"], interactive["unset_by"]["NCCL_NVLS_ENABLE"]["line"]) \
        == ("/root/.bashrc", unset)
    assert (interactive["limits_set_by"]["nofile"]["file"], interactive["limits_set_by"]["nofile"]["line"]) \
        == ("/root/.bashrc", ulimit)
    # where the unset took sshd's value away, /etc/nccl.conf's applies; elsewhere the environment's wins
    assert interactive["nccl_conf"]["NCCL_NVLS_ENABLE"] == {"value": "0", "file": "/etc/nccl.conf", "line": 1}
    assert "NCCL_NVLS_ENABLE" not in shells["noninteractive"]["nccl_conf"]
    # sshd's AcceptEnv lines are kept: the lab's admits no family name (LANG LC_*)
    [(_, accept)] = grep(lab, "^AcceptEnv ", SSHD_CONFIG)
    assert shells["accept_env"] == [{"file": config, "line": accept, "patterns": ["LANG", "LC_*"]}]
    # a process that reads no startup file and gets nothing from sshd: NCCL's files only
    assert shells["bare"]["families"] == {} and shells["bare"]["nccl_conf"]["NCCL_NVLS_ENABLE"]["line"] == 1


def test_verify_fails_naming_the_setenv_line_and_says_the_deliberate_the_unset_and_the_limit(lab, trapped):
    inventory, _ = trapped
    [(config, setenv)] = grep(lab, "^SetEnv ", SSHD_CONFIG)
    [(_, ulimit)] = grep(lab, "^ulimit -n 256", "/root/.bashrc")
    [(_, unset)] = grep(lab, "^unset NCCL_NVLS_ENABLE", "/root/.bashrc")
    code, _ = fleet_json("verify", inventory, "--limit", HOST)
    checks = {c["name"]: c for c in facts(inventory)["verify"]["checks"]}
    assert code != 0
    for name in ("job_variables_ssh", "job_variables_interactive", "job_variables_login"):
        check = checks[name]
        assert not check["passed"] and f"NCCL_P2P_DISABLE='1' set at {config}:{setenv} (SetEnv)" in check["detail"], check
    ssh, interactive = checks["job_variables_ssh"]["detail"], checks["job_variables_interactive"]["detail"]
    # deliberate, never a fault: sshd's and the file's, each named
    assert f"NCCL_NVLS_ENABLE='0' set at {config}:{setenv} (SetEnv)" in ssh and "deliberate" in ssh
    assert f"ulimit -n 256 set at ~/.bashrc:{ulimit}: few open files" in interactive
    assert f"NCCL_NVLS_ENABLE unset at ~/.bashrc:{unset}, which {config}:{setenv} gives every SSH session" in interactive
    assert "ulimit -n" not in ssh
    # undone: each kind asked again has none of it, and verify passes again
    undo(lab)
    again = asked(lab)
    assert all(kind[n] is None for kind in again.values() for n in NAMES) and again["interactive"]["nofile"] != "256"
    code, _ = fleet_json("verify", inventory, "--limit", HOST)
    checks = facts(inventory)["verify"]["checks"]
    assert code == 0 and all(c["passed"] for c in checks if c["name"].startswith("job_variables_"))
