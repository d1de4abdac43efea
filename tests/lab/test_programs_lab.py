"""fleet's helper programs on a lab host (fleet/resources/programs.py): installed by the digest of their text, run
from /var/lib/fleet/bin, shipped only where the host lacks them.

Each claim is asked of the host itself (stat, sha256sum in a plain shell), and the bytes are those of the very
commands fleet sent (recorded at the connection). One fresh pod with the verify role alone: verify runs there and
fails as it always did on a host without the venv, from the installed program. The converged
one-command no-op of whole lab hosts is measured by bench/probe_bytes.py; verify passing from the installed program
is tests/lab/test_verify_*.py's.
"""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from fleet.connection import ssh
from fleet.resources.verify import trace_program, verify_program

from helpers import fleet_json, ok

HOST = "pod-570"
WHY = "verify the torch stack: no result (env: '/opt/fleet/venv/bin/python': No such file or directory)"


@pytest.fixture
def sent(monkeypatch):
    """The scripts fleet sends over SSH in this test, as bash reads them (stdin: base64, gzipped when long)."""
    scripts: list[str] = []
    real = ssh.SSHConnection._exec

    def recorded(self, command, *, stdin, **kwargs):
        packed = base64.b64decode(stdin or b"")
        scripts.append((gzip.decompress(packed) if packed[:2] == b"\x1f\x8b" else packed).decode())
        return real(self, command, stdin=stdin, **kwargs)

    monkeypatch.setattr(ssh.SSHConnection, "_exec", recorded)
    return scripts


def apply(lab, *more: str) -> tuple[int, dict]:
    return fleet_json("apply", str(lab.inventory_path), "--limit", HOST, "--roles", "verify", *more)


def on_host(lab, path: str) -> tuple[str, str]:
    """(owner uid and mode of `path` and of its directory, its sha256) as the host's own stat and sha256sum say."""
    out = ok(lab, HOST, f"stat -c '%u %a' {path} /var/lib/fleet/bin; sha256sum < {path}").split("\n")
    return " | ".join(out[:2]), out[2].split()[0]


def verify_entry(doc: dict) -> dict:
    return next(t for t in doc["hosts"][HOST]["tasks"] if t["role"] == "verify")


def test_installed_by_digest_sent_once_and_sent_again_where_the_host_lost_it(lab, sent):
    lab.reset([HOST])
    (lab.inventory.facts_dir / f"{HOST}.json").unlink(missing_ok=True)
    program = verify_program()
    marker = "def allreduce_worker():"          # a line of the program's text, in no other script
    assert marker in program.text
    ok(lab, HOST, "! test -e /var/lib/fleet/bin")                              # fresh: nothing installed

    code, first = apply(lab)                                                   # a fresh host gets it
    # no venv on a fresh host: verify fails as it always did there, the program run from where it was installed
    assert code != 0 and WHY in verify_entry(first)["reason"], verify_entry(first)
    assert on_host(lab, program.path) == ("0 755 | 0 755", program.digest)
    assert on_host(lab, trace_program().path) == ("0 755 | 0 755", trace_program().digest)
    assert any(marker in s for s in sent)

    # the probe of a host that has it (--check: the probe alone, no record to write): one command, no program text
    sent.clear()
    code, probe = apply(lab, "--check")
    assert probe["stats"][HOST]["remote_commands"] == 1 and len(sent) == 1, probe["stats"][HOST]
    assert marker not in sent[0] and program.path in sent[0]
    assert len(sent[0].encode()) < len(program.text.encode()), len(sent[0])   # the whole probe: less than the program
    assert WHY in verify_entry(probe)["reason"], verify_entry(probe)   # verify fails as it did

    # tampered (one byte more), made writable by others, removed: found by the host, sent again, run again
    for damage in (f"echo '# x' >> {program.path}", f"chmod 0777 {program.path}", f"rm -f {program.path}"):
        ok(lab, HOST, damage)
        sent.clear()
        code, again = apply(lab, "--check")
        assert again["stats"][HOST]["remote_commands"] == 2 and marker not in sent[0] and marker in sent[1], damage
        assert on_host(lab, program.path) == ("0 755 | 0 755", program.digest), damage
        assert WHY in verify_entry(again)["reason"], (damage, verify_entry(again))


def test_a_user_with_sudo_gets_it_installed_as_root(lab):
    """spark connects as `nvidia` (passwordless sudo, as DGX Sparks are used): the checks run as nvidia, the install
    through sudo -n, and the file is root's all the same."""
    lab.reset(["spark"])
    (lab.inventory.facts_dir / "spark.json").unlink(missing_ok=True)
    code, doc = fleet_json("apply", str(lab.inventory_path), "--limit", "spark", "--roles", "verify")
    entry = next((t for t in doc["hosts"]["spark"]["tasks"] if t["role"] == "verify"), None)
    assert entry and entry["status"] == "failed" and WHY in entry["reason"], json.dumps(doc, indent=1)[-3000:]
    program = verify_program()
    out = ok(lab, "spark", f"id -un; stat -c '%u %a' {program.path}; sha256sum < {program.path}").split("\n")
    assert out[0] == "nvidia" and out[1] == "0 755" and out[2].split()[0] == program.digest, out
