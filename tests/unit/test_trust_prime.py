"""fleet_trust_prime (fleet/shell.py TRUST_FN): a probe takes the stat and ls answers its sections' trust judgements
need once at its start. Held here to what matters: every judgement after a prime prints exactly what the same
judgement prints without one, for each way a path is judged unsafe or safe (run by real bash, as root, on a real
tree: owners, modes, a sticky directory, links, a venv's .pth, an ACL, paths missing then made), and a judgement of
what the prime took starts no process at all."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest

from fleet.engine import probe
from fleet.shell import TRUST_FN, TRUST_PRIME

NOBODY = 65534


def bash(script: str) -> str:
    return subprocess.run(["bash", "-c", f"{TRUST_FN}\n{TRUST_PRIME}\n{script}"], capture_output=True, text=True,
                          timeout=60,
                          env={"PATH": os.environ["PATH"], "LC_ALL": "C"}).stdout


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("prime")
    os.chmod(root, 0o755)
    for name in ("safe", "badpth"):      # a venv each: its python a link to the system's, a .pth in its site
        (root / name / "venv/bin").mkdir(parents=True)
        (root / name / "venv/lib/python3.11/site-packages").mkdir(parents=True)
        (root / name / "venv/pyvenv.cfg").write_text("home = /usr/bin\n")
        os.symlink("/usr/bin/python3", root / name / "venv/bin/python")
    (root / "safe/venv/lib/python3.11/site-packages/ok.pth").write_text("/x\n")
    bsite = root / "badpth/venv/lib/python3.11/site-packages"
    (bsite / "planted.pth").write_text("import os\n")
    os.chown(bsite / "planted.pth", NOBODY, NOBODY)
    (root / "nobody/sub").mkdir(parents=True)
    os.chown(root / "nobody", NOBODY, NOBODY)
    (root / "open/sub").mkdir(parents=True)
    os.chmod(root / "open", 0o777)
    (root / "sticky/mine").mkdir(parents=True)
    os.chmod(root / "sticky", 0o1777)
    (root / "groupw").mkdir()
    os.chmod(root / "groupw", 0o775)
    os.symlink(root / "nobody/sub", root / "safe/link-to-nobody")
    os.symlink(root / "safe/venv", root / "safe/link-to-safe")
    (root / "acl").mkdir()
    os.setxattr(root / "acl", "system.posix_acl_access", bytes.fromhex(
        "02000000" "0100070000000000" "0200070000fe0000" "04000500ffffffff" "10000700ffffffff" "20000500ffffffff"))
    return root


CASES = [
    ["{r}/safe/venv/bin/python"], ["{r}/safe/venv"], ["{r}/safe/missing/venv"], ["{r}/nobody/sub/x"],
    ["{r}/open/sub"], ["{r}/sticky/mine"], ["{r}/sticky/absent"], ["{r}/groupw/x"], ["{r}/safe/link-to-nobody/x"],
    ["{r}/safe/link-to-safe/bin/python"], ["{r}/acl/x"], ["relative/path"], ["{r}/safe/venv", "{r}/nobody/sub"],
    ["/usr/bin/python3"], ["/", "{r}"], ["{r}/absent/deeper/still"],
]
JUDGED = ["{r}/safe/venv/bin/python", "{r}/badpth/venv/bin/python", "{r}/nobody/sub/python"]


def _args(paths, tree) -> str:
    return " ".join(shlex.quote(p.format(r=tree)) for p in paths)


@pytest.mark.parametrize("paths", CASES, ids=lambda p: "+".join(x.replace("{r}/", "") for x in p))
def test_a_judgement_after_the_prime_says_what_it_says_without(tree, paths):
    every = _args([p for case in CASES for p in case], tree)
    alone = bash(f"fleet_trust {_args(paths, tree)}")
    assert bash(f"fleet_trust_prime {every}; fleet_trust {_args(paths, tree)}") == alone
    # in a section started after it (the probe's background sections are subshells of the script)
    assert bash(f"fleet_trust_prime {every}; ( fleet_trust {_args(paths, tree)} )") == alone
    # primed with only these, or with something else entirely
    assert bash(f"fleet_trust_prime {_args(paths, tree)}; fleet_trust {_args(paths, tree)}") == alone
    assert bash(f"fleet_trust_prime /etc /usr/lib; fleet_trust {_args(paths, tree)}") == alone


@pytest.mark.parametrize("program", JUDGED, ids=lambda p: p.split("/")[1])
def test_fleet_judge_after_the_prime_says_what_it_says_without(tree, program):
    program = program.format(r=tree)
    alone = bash(f"fleet_judge {shlex.quote(program)}")
    assert bash(f"fleet_trust_prime --judge {shlex.quote(program)}; fleet_judge {shlex.quote(program)}") == alone
    if "badpth" in program:
        assert "planted.pth is owned by nobody" in alone


def test_what_a_section_made_after_the_prime_is_judged_as_it_is_now(tree, tmp_path):
    """A path missing when the probe started and made since (an apply's install in the same command): the prime's
    'missing' is not taken for anything below which something now exists."""
    os.chmod(tmp_path, 0o755)
    made = tmp_path / "late/dir/file"
    script = (f"fleet_trust_prime {shlex.quote(str(made))}; mkdir -p {shlex.quote(str(made.parent))}; "
              f"chown {NOBODY} {shlex.quote(str(made.parent))}; touch {shlex.quote(str(made))}; "
              f"fleet_trust {shlex.quote(str(made))}")
    assert bash(script).strip() == f"{made.parent} is owned by nobody with mode 755"


def test_a_primed_judgement_starts_no_process(tree):
    """Counted in a PID namespace of its own (no other process of the machine counted), by builtins alone."""
    path = shlex.quote(f"{tree}/safe/venv/bin/python")
    text = (f"{TRUST_FN}\n{TRUST_PRIME}\nfleet_trust_prime --judge {path}\n"
            "read -r a < /proc/sys/kernel/ns_last_pid\n"
            f"fleet_judge {path} > /dev/null\n"
            "read -r b < /proc/sys/kernel/ns_last_pid; echo \"@@$((b - a))\"")
    out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", text], capture_output=True,
                         text=True, timeout=60).stdout
    assert out.strip().endswith("@@0"), out
    unprimed = text.replace(f"fleet_trust_prime --judge {path}\n", "")
    out = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", unprimed],
                         capture_output=True, text=True, timeout=60).stdout
    assert int(out.strip().rsplit("@@", 1)[1]) >= 3     # the stat, the ls and ls --version it spares


def test_the_probe_primes_what_its_sections_judge():
    text = probe.script(probe.Needs.of({}, ["fleet-shell-trace-0123456789abcdef"]))
    first = text.index("\nfleet_trust_prime /opt/cutlass/.git/config") + 1
    # after the shells' trace starts (the chain the rest waits on: it judges its own program), before every other
    def began(name):   # its frame's start: section()'s marker, or fleet/remote/frame.sh's fleet_begin
        return re.search(rf"@@fleet:begin {re.escape(name)}@@|^fleet_begin {re.escape(name)}$", text, re.M).start()

    begins = [began(name) for name in ("facts.paths", "facts.python", "facts.cutlass", "facts.verify_fingerprint",
                                       "facts.torch")]
    assert began("facts.shells") < first < min(begins)
    line = text[first:].split("\n", 1)[0]
    assert "--judge /opt/fleet/venv/bin/python" in line
    assert "/var/lib/fleet/bin/fleet-shell-trace-0123456789abcdef" in line and "/opt/cutlass/.git/config" in line
