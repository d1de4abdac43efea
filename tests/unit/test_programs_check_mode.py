"""A helper program's text that rides along in --check (fleet/programs.py prelude with install=False) runs
from a private temporary copy, removed when the section ends; nothing is written under /var/lib/fleet/bin. Real bash,
the section as fleet frames it."""

from __future__ import annotations

import os
import subprocess

from fleet import programs, sections
from fleet.shell import define

PROGRAM = programs.Program("fleet-test-echo", 'printf "ran from %s with %s\\n" "$0" "$*"\n')


def run(body: str, tmp) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp), "HOME": str(tmp)}
    # as a probe holds it: the section declares the shared function it calls, the script defines it once
    script = sections.together([sections.Plain(sections.section("check.t.0", body), programs.NEEDS_PROGRAM)])
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)


def test_check_mode_runs_the_carried_text_from_a_temporary_copy_it_removes(tmp_path):
    assert not os.path.exists(PROGRAM.path)
    body = (programs.prelude([PROGRAM], (), install=False) + programs.use(PROGRAM)
            + f'bash "{PROGRAM.at}" a b\n')
    done = run(body, tmp_path)
    out = sections.split_sections(done.stdout)["check.t.0"]
    assert out.rc == 0, done.stdout + done.stderr
    ran = out.output.strip()
    assert ran.startswith(f"ran from {tmp_path}/fleet-check.") and ran.endswith(f"/{PROGRAM.file} with a b"), ran
    assert list(tmp_path.iterdir()) == [] and not os.path.exists(PROGRAM.path)    # removed; nothing installed
    assert programs.INSTALLED not in out.output


def test_without_the_text_a_missing_program_is_said_missing_and_nothing_runs(tmp_path):
    done = run(programs.prelude([PROGRAM], [PROGRAM.file], install=False) + programs.use(PROGRAM) + "echo ran\n",
               tmp_path)
    out = sections.split_sections(done.stdout)["check.t.0"]
    assert out.rc == programs.MISSING_EXIT and programs.missing(out.output) == [PROGRAM.file]
    assert "ran" not in out.output.splitlines()


def test_a_copy_whose_digest_differs_is_not_run(tmp_path):
    other = programs.Program(PROGRAM.name, PROGRAM.text + "echo tampered\n")
    forged = programs.ship(other).replace(other.file.replace("-", "_"), PROGRAM.file.replace("-", "_"))
    body = (define(programs.NEEDS_PROGRAM) + programs.STAGE + forged + programs.use(PROGRAM) + f'bash "{PROGRAM.at}"\n')
    out = sections.split_sections(run(body, tmp_path).stdout)["check.t.0"]
    assert out.rc == 1 and "could not run" in out.output and "ran from" not in out.output
    assert list(tmp_path.iterdir()) == []


def test_a_user_who_cannot_install_runs_the_text_from_a_private_copy(tmp_path):
    """Not root and no sudo without a password (a user's own venv): installing fails, said so; the program still runs,
    from a private copy the section's end removes, and nothing lands in /var/lib/fleet/bin."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "id").write_text('#!/bin/sh\n[ "$1" = -u ] && { echo 1000; exit 0; }\nexec /usr/bin/id "$@"\n')
    (stubs / "sudo").write_text("#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    body = programs.prelude([PROGRAM], (), install=True) + programs.use(PROGRAM) + f'bash "{PROGRAM.at}" a\n'
    script = sections.together([sections.Plain(sections.section("check.t.0", body), programs.NEEDS_PROGRAM)])
    env = {"PATH": f"{stubs}:{os.environ['PATH']}", "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    out = sections.split_sections(done.stdout)["check.t.0"]
    assert out.rc == 0, done.stdout + done.stderr
    assert f"could not install {programs.BIN}/{PROGRAM.file}" in out.output and programs.INSTALLED not in out.output
    assert f"ran from {tmp_path}/fleet-program." in out.output and out.output.rstrip().endswith(" with a")
    assert list(tmp_path.iterdir()) == [stubs] and not os.path.exists(PROGRAM.path)
