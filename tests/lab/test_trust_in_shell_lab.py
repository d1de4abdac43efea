"""Trust judged in the shell that runs the program, just before it runs (issue 39, family 1), asked of the host:
a mark file that only a planted .pth file or a planted module writes, with the uid it ran as.

- `fleet apply --check` on a venv under a volume shared with a POSIX ACL (as `setfacl -R -m u:nobody:rwx
  /workspace` leaves it: mode 775, owner root): the .pth file `nobody` planted in site-packages never runs, and
  the refusal names the ACL. Before: the mode read 775 root, the venv was trusted and the check ran its python.
- `fleet script` run from a shared /workspace holding a planted json.py: Python starts from /, never imports it,
  and the script converges; then with the .pth planted, the script refuses the venv naming why, the mark absent.
- `fleet script` takes the host's apply lock: with the lock held, it is refused and runs no task.
- a probe cut short by its deadline (a df that never answers) is never "in state"; a login shell that never starts
  fleet's command is given up at the first-output deadline; a venv whose creation was cut is moved aside and made
  again.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest
import yaml

from helpers import ok, sh
from test_trust_lab import POD, inventory
from test_user_role_lab import fleet

MARK = "/var/tmp/fleet-test-planted-ran"
ENV = "/workspace/venv"

# A venv made to the end (pyvenv.cfg, bin/python -> the system's python3, bin/activate, a pip dist-info with its
# RECORD and the file it lists, as ensurepip leaves them: a dist-info whose package is gone is a broken install), on a tmpfs volume at /workspace owned by root, mode 755.
VENV = f"""set -e
umount /workspace 2>/dev/null || true
mkdir -p /workspace && mount -t tmpfs -o size=64m,mode=0755 fleet-test /workspace
rm -f {MARK}
python3 -m venv --without-pip {ENV}
sp=$(echo {ENV}/lib/python3*/site-packages); mkdir -p "$sp/pip-24.0.dist-info"
printf 'Metadata-Version: 2.1\\nName: pip\\nVersion: 24.0\\n' > "$sp/pip-24.0.dist-info/METADATA"
echo 'pip/__init__.py,,' > "$sp/pip-24.0.dist-info/RECORD"
mkdir -p "$sp/pip"; : > "$sp/pip/__init__.py"
"""
# nobody's .pth file: any Python that starts with this venv's site-packages runs its import line
PTH = (f"sp=$(echo {ENV}/lib/python3*/site-packages)\n"
       f"printf 'import os; os.system(\"id -u >> {MARK}\")\\n' > \"$sp/zz-planted.pth\"; chown 65534 \"$sp/zz-planted.pth\"\n")
# `setfacl -R -m u:nobody:rwx /workspace`, written as setfacl writes it (the system.posix_acl_access attribute,
# linux/posix_acl_xattr.h: version 2, then tag/perm/id entries; the kernel sets the mode's group bits to the mask)
ACL = """python3 - <<'EOF'
import os, struct
entries = [(0x01, 7, 0xFFFFFFFF), (0x02, 7, 65534), (0x04, 5, 0xFFFFFFFF), (0x10, 7, 0xFFFFFFFF), (0x20, 5, 0xFFFFFFFF)]
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
for top, dirs, files in os.walk("/workspace"):
    for name in [top] + [os.path.join(top, f) for f in files]:
        if not os.path.islink(name):
            os.setxattr(name, "system.posix_acl_access", acl)
EOF
ls -ld /workspace | cut -c1-11; stat -c '%a %U' /workspace
"""


def setup(lab, tmp_path: Path, packages: list[str], verify: bool = True) -> Path:
    """An inventory of the pod with python_env on the volume and a role that runs the venv: a pip check (which
    starts its python where a package is absent) and a verify (the venv's python -c, then verify.json's writer)."""
    role = tmp_path / "roles" / "venvuse"
    role.mkdir(parents=True)
    tasks = [{"name": "packages in the venv", "pip": {"packages": packages, "venv": "{{ python_env }}",
                                                       "no_index": True, "find_links": "/nonexistent"}}]
    if verify:
        tasks.append({"name": "the venv answers", "verify": {
            "script": "import json; print(json.dumps({'passed': True, 'checks': []}))",
            "python": "{{ python_env }}/bin/python", "msg": "venv"}})
    role.joinpath("role.yaml").write_text(yaml.safe_dump({"description": "runs the venv", "tasks": tasks}))
    path = with_roles(inventory(lab, tmp_path, python_env=ENV), ["venvuse"])
    ok(lab, POD, VENV)
    return path


def with_roles(path: Path, roles: list[str]) -> Path:
    """test_trust_lab's one-pod inventory, running only `roles` from tmp_path/roles."""
    doc = yaml.safe_load(path.read_text())
    doc.update(roles_path=[str(path.parent / "roles")], roles=roles)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def marks(lab) -> str:
    return sh(lab, POD, f"cat {MARK} 2>/dev/null; true").stdout


def test_apply_check_never_starts_a_venv_under_an_acl_shared_volume(lab, tmp_path):
    lab.reset([POD])
    try:
        inv = setup(lab, tmp_path, ["pip", "fleet-absent==1.0"])
        ok(lab, POD, PTH)
        assert ok(lab, POD, ACL).split() == ["drwxrwxr-x+", "775", "root"]     # what the mode alone says: root, 775
        code, out, err = fleet("apply", str(inv), "--check")
        said = " ".join((out + err).split())
        assert code != 0, said[-3000:]
        assert "/workspace/venv has a POSIX ACL that cannot be read here" in said, said[-3000:]
        assert marks(lab) == ""                                    # the .pth never ran: no Python started there
    finally:
        sh(lab, POD, f"umount /workspace; rm -f {MARK}")


def script_to_host(lab, inv: Path, tmp_path: Path) -> None:
    code, _, err = fleet("script", str(inv), "--limit", POD, "-o", str(tmp_path / "fleet.sh"))
    assert code == 0, err
    with lab.connect(POD) as conn:
        conn.write_file("/root/fleet.sh", (tmp_path / "fleet.sh").read_text(), mode=0o755)


def run_script(lab, start: str = "/workspace"):
    """The script as a pod's start command runs it: from `start`, with a bare environment."""
    return sh(lab, POD, f"cd {shlex.quote(start)} && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "
                        "bash /root/fleet.sh")


def test_fleet_script_starts_python_away_from_its_start_directory_and_judges_the_venv(lab, tmp_path):
    lab.reset([POD])
    try:
        inv = setup(lab, tmp_path, ["pip"])
        # nobody's json.py in the start directory (a pod's shared /workspace): `python -c 'import json'` run from
        # there imports it
        ok(lab, POD, f"printf 'import os; os.system(\"id -u >> {MARK}\")\\n' > /workspace/json.py; "
                     "chown 65534 /workspace/json.py")
        script_to_host(lab, inv, tmp_path)
        run = run_script(lab)
        assert run.exit == 0 and run.stdout.splitlines()[-1] == "changed=0", run.stdout[-2000:] + run.stderr
        assert marks(lab) == ""
        assert "passed" in ok(lab, POD, "cat /var/lib/fleet/verify.json")        # the verify record was written

        # an apply holding the host's lock, as hostlock.wrap takes it (flock on /var/lib/fleet/apply.lock): the
        # script is refused at once naming it, and runs no task (verify.json is not written again)
        ok(lab, POD, "rm /var/lib/fleet/verify.json; echo 'fleet apply from elsewhere' > /var/lib/fleet/apply.lock; "
                     "flock /var/lib/fleet/apply.lock sleep 30 >/dev/null 2>&1 < /dev/null & "
                     "echo $! > /var/tmp/fleet-test-holder; sleep 0.3")
        run = run_script(lab)
        assert run.exit == 75 and "fleet apply from elsewhere" in run.stdout, run.stdout[-2000:] + run.stderr
        assert sh(lab, POD, "test -e /var/lib/fleet/verify.json").exit != 0
        ok(lab, POD, "h=$(cat /var/tmp/fleet-test-holder); pkill -P $h; kill $h; rm /var/tmp/fleet-test-holder")

        ok(lab, POD, f"chmod 777 {ENV}/lib/python3*/site-packages\n" + PTH)
        run = run_script(lab)
        said = " ".join((run.stdout + run.stderr).split())
        assert run.exit != 0 and "site-packages is owned by root with mode 777" in said, said[-2000:]
        assert marks(lab) == ""
    finally:
        sh(lab, POD, f"h=$(cat /var/tmp/fleet-test-holder 2>/dev/null) && {{ pkill -P $h; kill $h; }}; umount /workspace; "
                     f"rm -f {MARK} /var/lib/fleet/verify.json /var/lib/fleet/apply.lock")


# A df that never answers: what a dead NFS or FUSE mount does to statfs(2) under one of the probe's df paths (the
# process waits in the kernel until the mount answers). It is found first on PATH (/usr/local/bin), as the probe
# calls `df`; a sleep that nothing else on the host runs, so the host can be asked whether it was left behind.
HANG = "417.75"
BLOCKED_DF = f"printf '#!/bin/sh\\nexec sleep {HANG}\\n' > /usr/local/bin/df; chmod 755 /usr/local/bin/df"
SEEN = "/var/tmp/fleet-test-probe-seen"


def test_a_probe_cut_short_by_its_deadline_is_never_in_state(lab, tmp_path, monkeypatch):
    from fleet.engine import probe

    lab.reset([POD])
    role = tmp_path / "roles" / "needs_python"
    role.mkdir(parents=True)
    # wanted wherever the probe found a python (every lab pod has one): the facts after df must be seen to judge it
    role.joinpath("role.yaml").write_text(yaml.safe_dump({"description": "a file where python is", "tasks": [
        {"name": "a mark", "file": {"path": SEEN, "content": "x\n"}, "when": "facts.python.executable"}]}))
    inv = with_roles(inventory(lab, tmp_path), ["needs_python"])
    monkeypatch.setattr(probe, "PROBE_TIMEOUT", 2.0)   # the probe stage (engine/probe.py) owns it now
    try:
        ok(lab, POD, BLOCKED_DF)
        for argv in (["apply", str(inv), "--check"], ["script", str(inv), "--limit", POD, "-o", str(tmp_path / "fleet.sh")]):
            code, out, err = fleet(*argv)
            said = " ".join((out + err).split())
            assert code != 0 and "in state" not in said, said[-3000:]
            assert "was cut short (after 2 s, its deadline) before it observed facts.{df," in said, said[-3000:]
            assert ",python," in said
        assert sh(lab, POD, f"test -e {SEEN}").exit != 0           # the host lacks what the role wants
        assert not (tmp_path / "fleet.sh").exists()
        # the blocked df did not outlive the probe (the connection's watchdog ended its session)
        assert sh(lab, POD, f"for i in $(seq 40); do pgrep -f 'sleep {HANG}' >/dev/null || break; sleep 0.2; done; "
                            f"pgrep -f 'sleep {HANG}'").stdout == ""
    finally:
        sh(lab, POD, f"rm -f /usr/local/bin/df {SEEN}")


@pytest.mark.parametrize("name, home, killed", [("spark", "/home/nvidia", True), (POD, "/root", False)])
def test_a_login_shell_that_never_starts_fleet_s_command_is_given_up_at_the_first_output_deadline(
        lab, tmp_path, monkeypatch, name, home, killed):
    """The user's ~/.bashrc blocks first thing (what a `source` from a dead NFS mount does): `fleet facts` fails in
    about FIRST_OUTPUT seconds naming the startup files, not at the probe's deadline. Then fleet asks sshd to KILL
    the session's process group (an SSH "signal" request) before it closes the connection (issue 49: the shell and
    what it started stayed): for the Spark's sudo user they are gone from the host; for root, OpenSSH refuses to
    signal a session ("session signalling requires privilege separation": a root login's session runs in sshd's
    monitor), and fleet says that they may still run there. Asked of the host without a shell (no startup file)."""
    from fleet.connection import ssh

    lab.reset([name])
    inv = inventory(lab, tmp_path, host=name)
    monkeypatch.setattr(ssh, "FIRST_OUTPUT", 2.0)

    def left() -> list[str]:   # every process but sshd's own and ps: the host as `docker exec ps` shows it
        procs = [line.split(None, 1)[1] for line in lab.exec(name, ["ps", "-eo", "pid=,args="]).stdout.splitlines()]
        return [p for p in procs if not p.startswith(("ps ", "sshd:", "[sshd]", "/usr/sbin/sshd"))]

    try:
        lab.exec(name, ["sh", "-c", f"cp {home}/.bashrc /var/tmp/bashrc.fleet-test; "
                                    f"sed -i '1i sleep 417.85' {home}/.bashrc"])
        code, out, err = fleet("facts", str(inv))
        said = " ".join((out + err).split())
        assert code != 0 and "did not start fleet's command within 2s: a startup file" in said, said[-2000:]
        assert not (tmp_path / "facts" / f"{name}.json").exists()
        if killed:
            assert "the shell and what it started were killed on the host" in said, said[-2000:]
            for _ in range(600):       # a hang bound (the kill is asynchronous on the host), not a speed expectation
                if not left():
                    break
                time.sleep(0.1)
            assert left() == [], left()
        else:
            assert "sshd refused to signal that shell (OpenSSH does for a root login)" in said, said[-2000:]
            # what the sentence says, as the host shows it: the login shell and the sleep it is blocked in, and
            # fleet's command never started there (no `head -c` reading the script, no probe)
            assert sorted(p.split()[0] for p in left()) == ["bash", "sleep"], left()
            assert "sleep 417.85" in left()
    finally:
        # put the startup file back and end the blocked shell's sleep by its pid, without a login shell
        lab.exec(name, ["sh", "-c", f"cat /var/tmp/bashrc.fleet-test > {home}/.bashrc; rm /var/tmp/bashrc.fleet-test"])
        found = lab.exec(name, ["pgrep", "-f", "^sleep 417.85$"]).stdout.split()
        if found:
            lab.exec(name, ["kill", *found])


def test_a_venv_whose_creation_was_cut_is_moved_aside_and_made_again(lab, tmp_path):
    """bin/python without pip (what `python3 -m venv` leaves when the connection drops before ensurepip ends): the
    check calls it not in state, the apply moves it aside (kept, never deleted) and makes it again; the host's own
    python then imports pip from it. Before: 'No module named pip' at every apply."""
    lab.reset([POD])
    try:
        inv = setup(lab, tmp_path, ["pip"], verify=False)
        ok(lab, POD, f"rm -rf {ENV}; python3 -m venv --without-pip {ENV}; touch {ENV}/made-before")   # cut short
        code, out, err = fleet("apply", str(inv))
        said = " ".join((out + err).split())
        assert code == 0, said[-3000:]
        assert "incomplete virtual environment" in said
        found = ok(lab, POD, f"ls -d {ENV}.incomplete-*/made-before | wc -l; {ENV}/bin/python -m pip --version")
        assert found.split()[:2] == ["1", "pip"], found
    finally:
        sh(lab, POD, "umount /workspace")


# nobody's json.py in a world-writable directory that root's PYTHONPATH names, from ~/.bashrc (what `ssh host cmd`
# reads) and /etc/environment (pam_env, where sshd uses PAM): any Python root starts unisolated imports it
SHARE = f"""set -e
install -d -m 1777 /srv/share
printf 'import os; os.system("id -u >> {MARK}")\\nfrom importlib import import_module as _i\\n' > /srv/share/json.py
chown 65534 /srv/share/json.py
cp /root/.bashrc /var/tmp/bashrc.fleet-test; sed -i '1i export PYTHONPATH=/srv/share PYTHONHOME=' /root/.bashrc
cp /etc/environment /var/tmp/environment.fleet-test 2>/dev/null || : > /var/tmp/environment.fleet-test
echo 'PYTHONPATH=/srv/share' >> /etc/environment
"""


def test_roots_python_never_reads_the_environments_import_path(lab, tmp_path):
    """Issue 49: with PYTHONPATH=/srv/share (world-writable) root's Python imported nobody's json.py, five times in
    the start script, once per no-op apply through /etc/environment; verify started <python_env>/bin/python bare.
    Every Python fleet starts as root is started -I (no PYTHONPATH, no PYTHONHOME, no user site) from /: the facts
    probe, the pip check, a role's verify script, fleet's verify program, the start script's verify writer. The host
    is asked: a plain `ssh host python3 -c 'import json'` leaves the mark (the plant works), fleet's runs leave none."""
    lab.reset([POD])
    try:
        inv = setup(lab, tmp_path, ["pip"])
        role = tmp_path / "roles" / "venvuse" / "role.yaml"
        doc = yaml.safe_load(role.read_text())
        doc["tasks"].append({"name": "fleet's verify program", "verify": {"python": "{{ python_env }}/bin/python"}})
        role.write_text(yaml.safe_dump(doc))
        ok(lab, POD, SHARE)
        ok(lab, POD, "python3 -c 'import json' 2>/dev/null; true")    # as `ssh host cmd` runs a user's python
        assert marks(lab) == "0\n", marks(lab)                         # the plant works: root imported it
        ok(lab, POD, f"rm -f {MARK}")
        for argv in (["facts", str(inv)], ["apply", str(inv), "--check"], ["apply", str(inv)],
                     ["script", str(inv), "--limit", POD, "-o", str(tmp_path / "fleet.sh")]):
            fleet(*argv)                                               # (verify fails: no torch; it ran)
            assert marks(lab) == "", (argv, marks(lab))
        script_to_host(lab, inv, tmp_path)     # a pod template whose environment sets PYTHONPATH
        sh(lab, POD, "cd /workspace && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root PYTHONPATH=/srv/share "
                     "bash /root/fleet.sh")
        assert marks(lab) == ""
        assert sh(lab, POD, "test -e /var/lib/fleet/verify.json").exit == 0   # its verify writer did run
    finally:
        sh(lab, POD, f"cat /var/tmp/bashrc.fleet-test > /root/.bashrc; cat /var/tmp/environment.fleet-test > "
                     f"/etc/environment; rm -rf /srv/share {MARK}; umount /workspace")
