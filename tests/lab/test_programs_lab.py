"""fleet's helper programs on a lab host (fleet/programs.py): installed by the digest of their text, run
from /var/lib/fleet/bin, shipped only where the host lacks them; the facts' own two (the shells' trace, the
fingerprint of what verify proves: fleet/programs.py) run from there too once the host has them.

Each claim is asked of the host itself (stat, sha256sum in a plain shell), and the bytes are those of the very
commands fleet sent (recorded at the connection, with what the host answered). One fresh pod with the verify role
alone: verify runs there and fails as it always did on a host without the venv, from the installed program. The
converged one-command no-op of whole lab hosts is measured by bench/probe_bytes.py; verify passing from the installed
program is tests/lab/test_verify_*.py's.
"""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest

from fleet.connection import ssh
from fleet.facts.fingerprint import fingerprint_program
from fleet.facts.shells import trace_program
from fleet.resources.verify import verify_program

from helpers import fleet_json, ok

HOST = "pod-570"
VENV = "/opt/fleet/venv"   # the default venv, where verify looks
WHY = "verify the torch stack: no result (env: '/opt/fleet/venv/bin/python': No such file or directory)"


class Sent(list):
    """The scripts fleet sent over SSH in this test, as bash read them (stdin: base64, gzipped when long), and what
    the host answered to each (`answers`)."""

    def __init__(self):
        super().__init__()
        self.answers: list[str] = []

    def clear(self):
        super().clear()
        self.answers.clear()


@pytest.fixture
def sent(monkeypatch):
    scripts = Sent()
    real = ssh.SSHConnection._exec

    def recorded(self, command, *, stdin, **kwargs):
        packed = base64.b64decode(stdin or b"")
        scripts.append((gzip.decompress(packed) if packed[:2] == b"\x1f\x8b" else packed).decode())
        result = real(self, command, stdin=stdin, **kwargs)
        scripts.answers.append(result.stdout)
        return result

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


def bin_listing(lab) -> str:
    """/var/lib/fleet/bin as the host's own ls and sha256sum show it (names, owners, modes, digests)."""
    return ok(lab, HOST, "cd /var/lib/fleet/bin 2>/dev/null || { echo absent; exit 0; }; "
                         "stat -c '%n %u %a %s' -- * 2>&1; sha256sum -- * 2>&1")


def own_lines() -> list[str]:
    """The long lines of the shells' trace and of the fingerprint as a probe carries them inline: text no other facts
    source's body holds."""
    from fleet.engine import probe
    from fleet.facts.fingerprint import fingerprint_script

    others = "\n".join(body for name, body in probe.bodies().items() if name not in ("shells", "verify_fingerprint"))
    text = trace_program().text + fingerprint_script(VENV, capture=False)
    return [line for line in text.splitlines() if len(line) > 60 and line not in others]


def recorded(lab) -> dict:
    return json.loads((lab.inventory.facts_dir / f"{HOST}.json").read_text())


def _runs_shells(script: str) -> bool:
    """The script runs the shells' trace: its section, framed by section() or by fleet/remote/frame.sh's fleet_begin."""
    return bool(re.search(r"@@fleet:begin facts\.shells@@|^fleet_begin facts\.shells$", script, re.M))


def test_installed_by_digest_sent_once_and_sent_again_where_the_host_lost_it(lab, sent):
    lab.reset([HOST])
    (lab.inventory.facts_dir / f"{HOST}.json").unlink(missing_ok=True)
    program, trace, fingerprint = verify_program(), trace_program(), fingerprint_program(VENV)
    marker = "def allreduce_worker():"          # a line of the program's text, in no other script
    assert marker in program.text
    ok(lab, HOST, "! test -e /var/lib/fleet/bin")                              # fresh: nothing installed

    code, first = apply(lab)                                                   # a fresh host gets it
    # no venv on a fresh host: verify fails as it always did there, the program run from where it was installed
    assert code != 0 and WHY in verify_entry(first)["reason"], verify_entry(first)
    for each in (program, trace, fingerprint):
        assert on_host(lab, each.path) == ("0 755 | 0 755", each.digest), each.name
    assert any(marker in s for s in sent)
    # first contact: the facts carried the tracer's and the fingerprint's text (what the lines below must not find)
    probe = next(s for s in sent if _runs_shells(s))
    assert len(own_lines()) > 30 and not [line for line in own_lines() if line not in probe]
    facts = recorded(lab)

    # the probe of a host that has them (--check: the probe alone, no record to write): one command, no program text;
    # the facts run the trace and the fingerprint from /var/lib/fleet/bin
    sent.clear()
    code, doc = apply(lab, "--check")
    assert doc["stats"][HOST]["remote_commands"] == 1 and len(sent) == 1, doc["stats"][HOST]
    assert marker not in sent[0] and program.file in sent[0]
    assert not [line for line in own_lines() if line in sent[0]]
    assert f"bash {trace.path}" in sent[0] and f"bash {fingerprint.path} --trace-on-stdin" in sent[0]
    assert len(sent[0].encode()) < len(program.text.encode()), len(sent[0])   # the whole probe: less than the program
    assert WHY in verify_entry(doc)["reason"], verify_entry(doc)   # verify fails as it did

    # tampered (one byte more), made writable by others, removed: found by the host, sent again, run again; --check
    # runs the text it carries from a temporary copy and writes nothing under /var/lib/fleet/bin
    for damage in (f"echo '# x' >> {program.path}", f"chmod 0777 {program.path}", f"rm -f {program.path}"):
        ok(lab, HOST, damage)
        before = bin_listing(lab)
        sent.clear()
        code, again = apply(lab, "--check")
        assert again["stats"][HOST]["remote_commands"] == 2 and marker not in sent[0] and marker in sent[1], damage
        assert f"@@fleet:program-missing {program.file}" in sent.answers[0].splitlines(), damage   # the host said so
        assert WHY in verify_entry(again)["reason"], (damage, verify_entry(again))
        assert bin_listing(lab) == before, damage
        assert ok(lab, HOST, "ls -d /tmp/fleet-check.* 2>/dev/null; :") == "", damage   # its copy removed
    code, again = apply(lab)                                                   # an apply installs it again
    assert on_host(lab, program.path) == ("0 755 | 0 755", program.digest)
    assert WHY in verify_entry(again)["reason"], verify_entry(again)

    # the facts' own: the trace removed, the fingerprint made writable by others. The host says so, the facts come
    # out as before (those sources asked again with their text), and the apply puts the file back
    for each, damage in ((trace, f"rm -f {trace.path}"), (fingerprint, f"chmod 0777 {fingerprint.path}")):
        ok(lab, HOST, damage)
        sent.clear()
        code, again = apply(lab)
        said = next(answer for script, answer in zip(sent, sent.answers) if _runs_shells(script))
        assert f"@@fleet:program-missing {each.file}" in said.splitlines(), each.name
        assert any(each.text in script for script in sent), each.name
        assert on_host(lab, each.path) == ("0 755 | 0 755", each.digest), each.name
        now = recorded(lab)
        assert now["shells"] == facts["shells"] and now["verify_fingerprint"] == facts["verify_fingerprint"], each.name
        assert WHY in verify_entry(again)["reason"], (each.name, verify_entry(again))


def test_the_facts_are_the_same_from_the_installed_programs_as_inline(lab):
    """The shells' trace and the fingerprint, run from /var/lib/fleet/bin and with their text inline, print the same
    bytes on the same host (one probe each, the facts sources alone)."""
    from fleet import sections
    from fleet.engine import session
    from fleet.engine import probe

    lab.reset([HOST])
    code, _ = apply(lab)                                                        # installs them
    host = lab.inventory.hosts[HOST]
    last = recorded(lab)
    have = probe.programs_of(last)
    assert {trace_program().file, fingerprint_program(VENV).file} <= set(have), have
    settings = session.variables(last, host.vars)
    with lab.connect(HOST) as conn:
        inline = probe.run_sections(conn, sections.together(probe.parts(probe.Needs.of(settings))), "probe")
        installed = probe.run_sections(conn, sections.together(probe.parts(probe.Needs.of(settings, have))), "probe")
    for name in ("facts.shells", "facts.verify_fingerprint"):
        assert installed[name].rc == inline[name].rc == 0, (name, installed[name].output[-500:])
        assert installed[name].output == inline[name].output, name
    assert "@@shell login" in inline["facts.shells"].output and "libcuda.login " in inline["facts.verify_fingerprint"].output


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


def test_a_host_holding_an_older_fleet_s_fingerprint_gets_this_one_in_the_probe_itself(lab, sent):
    """A fleet upgrade changes the fingerprint's text (its digest): a host holding the older file runs the source
    with its text once, and that same command of an apply installs this version; the probes after run it from
    /var/lib/fleet/bin and carry none of its text. --check installs nothing."""
    lab.reset([HOST])
    apply(lab)                                                                  # installs them
    fingerprint = fingerprint_program(VENV)
    older = f"{fingerprint.name}-0123456789abcdef"                              # an older fleet's, as the record says
    ok(lab, HOST, f"mv {fingerprint.path} /var/lib/fleet/bin/{older}")
    path = lab.inventory.facts_dir / f"{HOST}.json"
    record = recorded(lab)
    record["programs"] = sorted({*record["programs"], older} - {fingerprint.file})
    path.write_text(json.dumps(record))
    own = [line for line in own_lines() if line in fingerprint.text]           # its lines no other source holds
    assert len(own) > 20

    sent.clear()
    apply(lab, "--check")
    assert not ok(lab, HOST, f"test -e {fingerprint.path} && echo there; :")    # --check: nothing installed
    assert f"install.{fingerprint.file}" not in sent[0]
    sent.clear()
    apply(lab)
    assert f"@@fleet:begin install.{fingerprint.file}@@" in sent[0] and own[0] in sent[0]   # the probe itself
    assert on_host(lab, fingerprint.path) == ("0 755 | 0 755", fingerprint.digest)
    assert fingerprint.file in recorded(lab)["programs"]
    sent.clear()
    code, doc = apply(lab, "--check")
    assert doc["stats"][HOST]["remote_commands"] == 1 and f"bash {fingerprint.path} --trace-on-stdin" in sent[0]
    assert not [line for line in own if line in sent[0]]
