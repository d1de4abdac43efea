"""What `python3` and `import torch` resolve to, whatever the mechanism (issue 45, item 4), on the lab's pod-580 after
one converged apply shared by the module. Each trap is set by hand as a user would, the host is asked by a plain
OpenSSH client in each kind of shell it changes (`ssh host python3 ...`, `bash -i -c`, `bash -l -c` from the fresh
environment a session gets), and only then is fleet asked: verify names the cause with its file:line and the fix of
THAT cause, never the env hook's PATH sentence for a cause that is not PATH order. Each trap is undone after its test.

The environment activated after fleet's guard (docs/decisions/45-a-users-own-environment.md): after `fleet apply`
moves its guard below the activation, the user's environment is still what interactive shells run, VIRTUAL_ENV (or
CONDA_PREFIX) and python3's sys.prefix agree, and apply says so naming the activation's line."""

from __future__ import annotations

import contextlib
import json
import pathlib
import shlex
import subprocess

import pytest

from fleet_lab import paths
from helpers import ok
from test_apply_lab import fleet_json

HOST = "pod-580"
VENV = "/opt/fleet/venv"
FRESH = "env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# what a python says when asked by a user: where it runs from, VIRTUAL_ENV/CONDA_PREFIX, and `import torch`
ASK = ("import os, sys\nprint(sys.prefix, os.environ.get('VIRTUAL_ENV', '-'), os.environ.get('CONDA_PREFIX', '-'))\n"
       "try:\n import torch\n print('torch', os.path.dirname(torch.__file__))\n"
       "except Exception as exc:\n print('no torch:', type(exc).__name__, exc)\n")
SRC_TREE = "/root/pytorch-src"     # an unbuilt source tree: its torch/__init__.py needs torch._C, which a build makes


def ssh(lab, command: str) -> subprocess.CompletedProcess:
    """A plain OpenSSH client, as a user types it: fleet's code is not in the path."""
    host = lab.inventory.hosts[HOST]
    return subprocess.run(["ssh", "-i", str(paths.lab_key(lab.root)), "-o", "BatchMode=yes",
                           "-o", f"UserKnownHostsFile={paths.lab_known_hosts(lab.root)}",
                           "-o", "StrictHostKeyChecking=yes", "-p", str(host.port), f"root@{host.address}",
                           command], capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def asked(lab, kind: str, what: str = "python3") -> list[str]:
    """`what -c ASK` typed in that kind of shell on the host -> its lines: "sys.prefix VIRTUAL_ENV CONDA_PREFIX",
    then "torch DIR" or "no torch: ERROR"; [""] where it printed nothing."""
    typed = f"{what} -c {shlex.quote(ASK)}"
    if kind != "noninteractive":
        flag = {"interactive": "-i", "login": "-l"}[kind]
        typed = f"{FRESH} setsid -w bash {flag} -c {shlex.quote(typed)} </dev/null 2>/dev/null"
    done = ssh(lab, typed)
    return (done.stdout.strip().splitlines() or [""])


@pytest.fixture(scope="module")
def converged(lab, converged_fresh):
    code, doc = converged_fresh(HOST)
    assert code == 0, json.dumps(doc["hosts"][HOST], indent=1)[-3000:]
    site = ok(lab, HOST, f"ls -d {VENV}/lib/python3*/site-packages").strip()
    return str(lab.inventory_path), site


@contextlib.contextmanager
def trap(lab, file: str, *lines: str, setup: str = "", undo: str = ""):
    """`lines` appended to `file` on the host (after `setup`), and the file put back (then `undo`) whatever the test
    found; yields the first appended line's number."""
    n = int(ok(lab, HOST, f"{setup}\ntouch {file}; cp -p {file} {file}.rs; wc -l < {file}").split()[-1]) + 1
    ok(lab, HOST, "printf '%s\\n' " + " ".join(shlex.quote(line) for line in lines) + f" >> {file}")
    try:
        yield n
    finally:
        ok(lab, HOST, f"mv -f {file}.rs {file}; {undo or 'true'}")


def user_commands(inventory: str, *argv: str) -> tuple[int, dict]:
    """`fleet verify` (or the command given) on the host -> (exit, {kind: its user_commands check})."""
    code, _ = fleet_json(*(argv or ("verify",)), inventory, "--limit", HOST)
    record = json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())
    return code, {c["name"].removeprefix("user_commands_"): c for c in record["verify"]["checks"]
                  if c["name"].startswith("user_commands_")}


def failed_in(checks: dict, kind: str) -> str:
    check = checks[{"noninteractive": "ssh"}.get(kind, kind)]
    assert not check["passed"], check
    assert "env_hooks_venv_on_path" not in check["detail"], check     # not the hook's sentence: not PATH order
    return check["detail"]


WRAPPER = "/opt/resolve-trap/python3-system"
MAKE_WRAPPER = (f"mkdir -p /opt/resolve-trap && printf '%s\\n' '#!/bin/sh' 'exec /usr/bin/python3 \"$@\"' > {WRAPPER} && "
                f"chmod 755 {WRAPPER}")
SOURCE_TREE = (f"mkdir -p {SRC_TREE}/torch && printf '%s\\n' 'from torch._C import *' > {SRC_TREE}/torch/__init__.py")


@pytest.mark.parametrize("name, file, lines, kind, setup, says, fix", [
    ("alias", "/root/.bashrc", ["alias python3=/usr/bin/python3"], "interactive", "",
     "an alias: `alias python3=/usr/bin/python3` at ~/.bashrc:{n}", "remove the alias at ~/.bashrc:{n}"),
    ("function", "/root/.bashrc", ["python3() {", '  /usr/bin/python3 "$@"', "}"], "interactive", "",
     "a shell function defined at ~/.bashrc:{n}", "remove the function python3() at ~/.bashrc:{n}"),
    # a name hashed to another program (the system's python3 hashed by its bare name would still find the venv
    # through PATH: CPython's getpath; tests/unit/test_resolve_shells.py)
    ("hash", "/root/.bashrc", [f"hash -p {WRAPPER} python3"], "interactive", MAKE_WRAPPER,
     f"hashed to {WRAPPER} by `hash -p {WRAPPER} python3` at ~/.bashrc:{{n}}",
     "remove the `hash -p` at ~/.bashrc:{n}"),
    ("PYTHONPATH", "/root/.profile", [f"export PYTHONPATH={SRC_TREE}"], "login", SOURCE_TREE,
     f"PYTHONPATH={SRC_TREE} (set at ~/.profile:{{n}}) puts {SRC_TREE}'s torch",
     f"take {SRC_TREE} off PYTHONPATH at ~/.profile:{{n}}"),
    ("PYTHONHOME", "/root/.profile", ["export PYTHONHOME=/usr/lib/nothing-here"], "login", "",
     "PYTHONHOME=/usr/lib/nothing-here (set at ~/.profile:{n})", "remove PYTHONHOME at ~/.profile:{n}"),
])
def test_each_cause_is_named_with_its_line_and_its_own_fix(lab, converged, name, file, lines, kind, setup, says, fix):
    inventory, _ = converged
    clean = asked(lab, kind)
    assert clean[0].split()[0] == VENV and clean[-1].startswith(f"torch {VENV}/"), clean
    with trap(lab, file, *lines, setup=setup, undo=f"rm -rf {SRC_TREE} /opt/resolve-trap") as n:
        # the host itself, as a user types it: that kind now runs another python, or no torch
        got = asked(lab, kind)
        if name == "PYTHONPATH":
            assert got[0].split()[0] == VENV and got[-1] == "no torch: ModuleNotFoundError No module named 'torch._C'", got
        elif name == "PYTHONHOME":
            assert got == [""], got         # the venv's python does not start at all
        else:
            assert got[0].split()[0] == "/usr" and got[-1].startswith("no torch: ModuleNotFoundError"), got
        assert asked(lab, "noninteractive")[0].split()[0] == VENV       # `ssh host cmd` reads neither line
        code, checks = user_commands(inventory)
    assert code != 0
    detail = failed_in(checks, kind)
    assert says.format(n=n) in detail and fix.format(n=n) in detail, detail
    assert checks["ssh"]["passed"], checks["ssh"]
    # the plan's judgement of the same facts (`fleet decide FACTS`: what apply's env_hooks why prints) says the same
    _, doc = fleet_json("decide", str(pathlib.Path(inventory).parent / "facts" / f"{HOST}.json"))
    found = [f for f in doc["hosts"][HOST]["shells"]["findings"] if f["kind"] == kind and "`python3`" in f["says"]]
    assert len(found) == 1 and found[0]["cause"] == name and not found[0]["hook_fixes"], found
    assert says.format(n=n) in found[0]["says"] and found[0]["fix"].startswith(fix.format(n=n)), found


def test_a_pth_line_that_adds_a_source_tree_is_named_by_file_and_line(lab, converged):
    inventory, site = converged
    pth = f"{site}/zz-pytorch-src.pth"
    with trap(lab, pth, "# pip install -e ~/pytorch-src, by hand", f"import sys; sys.path.insert(0, {SRC_TREE!r})",
              setup=SOURCE_TREE, undo=f"rm -rf {SRC_TREE} {pth}"):
        for kind in ("noninteractive", "interactive", "login"):
            got = asked(lab, kind)
            assert got[0].split()[0] == VENV and got[-1] == "no torch: ModuleNotFoundError No module named 'torch._C'", got
        code, _ = fleet_json("verify", inventory, "--limit", HOST)
        record = json.loads((pathlib.Path(inventory).parent / "facts" / f"{HOST}.json").read_text())
    assert code != 0
    # verify's own python reads the .pth too (python -I still runs site-packages' .pth files): its import fails there
    check = next(c for c in record["verify"]["checks"] if c["name"] == "torch_imports")
    assert not check["passed"] and "No module named 'torch._C'" in check["detail"], check
    assert f"{pth}:2 (a .pth file site.py reads at every start) adds {SRC_TREE}" in check["detail"], check
    assert f"delete line 2 of {pth}" in check["detail"], check


def test_a_user_site_torch_reached_through_path_is_named_as_the_user_site(lab, converged):
    inventory, _ = converged
    user = ok(lab, HOST, "/usr/bin/python3 -c 'import site; print(site.getusersitepackages())'").strip()
    with trap(lab, "/root/.profile", "export PATH=/usr/bin:$PATH",
              setup=f"mkdir -p {user}/torch && : > {user}/torch/__init__.py", undo=f"rm -rf {user}/torch"):
        got = asked(lab, "login")
        assert got[0].split()[0] == "/usr" and got[-1] == f"torch {user}/torch", got
        code, checks = user_commands(inventory)
    assert code != 0
    check = checks["login"]       # (`python` is not found there: that one is PATH's, with the hook's fix)
    assert not check["passed"] and f"the user site {user} holds a torch" in check["detail"], check
    assert "PYTHONNOUSERSITE=1" in check["detail"], check


def test_path_order_alone_keeps_the_hooks_fix(lab, converged):
    inventory, _ = converged
    with trap(lab, "/root/.bashrc", "export PATH=/usr/bin:$PATH") as n:
        assert asked(lab, "interactive")[0].split()[0] == "/usr"
        code, checks = user_commands(inventory)
    assert code != 0
    check = checks["interactive"]
    assert not check["passed"] and "PATH last set at ~/.bashrc:" in check["detail"], check
    assert "env_hooks_venv_on_path" in check["detail"], check


ACTIVATIONS = {
    # a venv's own activate script (python -m venv), sourced at the end of ~/.bashrc
    "venv": ("/opt/projenv", "VIRTUAL_ENV", "/usr/bin/python3 -m venv --without-pip /opt/projenv",
             ". /opt/projenv/bin/activate"),
    # what `conda activate` leaves (conda's activate: CONDA_PREFIX, its bin first on PATH), from a file ~/.bashrc sources
    "conda": ("/opt/condaenv", "CONDA_PREFIX",
              "/usr/bin/python3 -m venv --without-pip /opt/condaenv && mkdir -p /opt/condaenv/etc && printf '%s\\n' "
              "'export CONDA_PREFIX=/opt/condaenv CONDA_DEFAULT_ENV=condaenv CONDA_SHLVL=1' "
              "'export PATH=/opt/condaenv/bin:$PATH' > /opt/condaenv/etc/activate.sh", ". /opt/condaenv/etc/activate.sh"),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_an_environment_activated_after_fleets_guard_stays_the_users_and_agrees(lab, converged, name):
    inventory, _ = converged
    env, var, make, line = ACTIVATIONS[name]
    with trap(lab, "/root/.bashrc", line, setup=make, undo=f"rm -rf {env}") as n:
        # fleet's apply moves its guard below the activation (a change it plans); the activation still wins
        code, checks = user_commands(inventory, "apply")
        said = {kind: asked(lab, kind) for kind in ("noninteractive", "interactive", "login")}
        guard_last = ok(lab, HOST, "grep -v '^[[:space:]]*$' /root/.bashrc | tail -n 1").strip()
        n = int(ok(lab, HOST, f"grep -nxF {shlex.quote(line)} /root/.bashrc").split(":")[0])   # the apply moved it up
    assert guard_last == "# END fleet env_hooks (end)"
    prefix, venv_var, conda_var = said["interactive"][0].split()   # sys.prefix, VIRTUAL_ENV, CONDA_PREFIX
    assert prefix == env and {"VIRTUAL_ENV": venv_var, "CONDA_PREFIX": conda_var}[var] == env, said
    assert said["interactive"][-1].startswith("no torch: ModuleNotFoundError"), said
    for kind in ("noninteractive", "login"):     # the kinds that never read the line keep fleet's venv
        assert said[kind][0].split()[:2] == [VENV, "-"] and said[kind][-1].startswith(f"torch {VENV}/"), said
    assert code != 0
    detail = failed_in(checks, "interactive")
    assert f"the environment {env} activated at {env}/" in detail and f"(read from ~/.bashrc:{n}) ({var};" in detail, detail
    assert f"set python_env={env}" in detail and f"install torch into {env}" in detail, detail
    assert checks["ssh"]["passed"] and checks["login"]["passed"], checks


def test_an_activated_environment_with_its_own_torch_passes_saying_which(lab, converged):
    inventory, site = converged
    env, _, make, line = ACTIVATIONS["venv"]
    own = f"$(ls -d {env}/lib/python3*/site-packages)/torch"
    with trap(lab, "/root/.bashrc", line, setup=f"{make} && ln -s {site}/torch {own}", undo=f"rm -rf {env}"):
        got = asked(lab, "interactive")
        assert got[0].split()[:2] == [env, env] and got[-1].startswith(f"torch {env}/"), got
        code, checks = user_commands(inventory)
    assert code == 0, checks
    detail = checks["interactive"]["detail"]
    assert checks["interactive"]["passed"] and f"the environment {env} activated at" in detail, detail
