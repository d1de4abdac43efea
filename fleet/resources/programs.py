"""Helper programs on the host, installed by the digest of their text and run from there.

A helper program (fleet's verify program, the cuda-compat gate) is a file fleet ships as it is. On the host it
lives at /var/lib/fleet/bin/<name>-<first 16 hex of its sha256> (the directory root-owned, 0755: the checks that
run these programs run as the connecting user), written whole or not at all (a temp file in that directory,
its digest checked, then renamed), and it is run only after `fleet_program` found it root-owned, writable by
root alone (and every directory above it) and of the right digest. So a converged host's probe carries no
program text: only the program's name and digest.

    program = Program("verify", text)
    program.path                                 # /var/lib/fleet/bin/verify-0123456789abcdef
    prelude(programs, have, install=True)        # shell: the functions a section needs to use them; the text of
                                                 # each program not in `have` (file names) rides along
    use(program)                                 # shell: make sure it is there, else say so and leave the section
    f'python "{program.at}"'                     # shell: run it from where `use` found or put it

`--check` writes nothing on the host: there (prelude's install=False) a text that rides along is not installed but
copied into a private temporary directory (mktemp -d, the connecting user's), its digest checked and judged by
fleet_trust, run from there and removed when the section ends, so a check answers as it would after the install and
the plan is what the apply that follows does.

Where the host lacks a program the controller believed it had (removed, tampered with, a host rebuilt), `use`
prints `@@fleet:program-missing NAME` and ends its section with MISSING_EXIT: the engine sends that section again
with the text (fleet/engine/observe.py). What the host has is the facts' `programs` (fleet/facts/programs.py),
with what the probe's own checks installed (`@@fleet:program-installed NAME`) folded in. The facts' own programs
(the shells' trace, the fingerprint: fleet/facts/programs.py) run from there too, read-only; where the host lacks
one, fleet/engine/session.py asks their sources again with the text, and installs them with `prelude` + `use`.
A program is added by a resource's `programs()` (fleet/resources/base.py): the engine and `fleet script` do the
rest.
"""

from __future__ import annotations

from fleet import remote
from fleet.facts.programs import (BIN, HAVE, INSTALLED, MISSING, MISSING_EXIT, TRUSTED, Program,  # noqa: F401
                                  fingerprint_program, missing, trace_program)


# fleet_program FILE SHA256, fleet_install FILE SHA256 < TEXT, and fleet_install in --check (a private copy, removed
# when the section ends): fleet/remote/program_run.sh, program_install.sh and program_stage.sh (BIN, MISSING,
# MISSING_EXIT and INSTALLED written there, held equal by a test).
FUNCTIONS = HAVE + remote.program("program_run") + "\n"
INSTALL = remote.program("program_install") + "\n"
STAGE = remote.program("program_stage") + "\n"


def ship(program: Program) -> str:
    """Shell defining fleet_ship_<file>: installs `program` from the text this function carries."""
    end = f"FLEET_PROGRAM_{program.digest[:16]}"
    if f"\n{end}\n" in f"\n{program.text}\n":
        raise ValueError(f"program {program.name} holds its own end marker {end}")
    text = program.text if program.text.endswith("\n") else program.text + "\n"
    return (f"fleet_ship_{program.file.replace('-', '_')}() {{\nfleet_install \"$1\" \"$2\" <<'{end}'\n"
            f"{text}{end}\n}}\n")


def prelude(programs, have=None, *, install: bool = True) -> str:
    """The functions a section needs to run `programs`, with the text of each whose file is not in `have` (the
    file names the host had at its last probe; None: nothing known, ship every one). `install` False (--check): a
    text that rides along is run from a temporary copy that the section's end removes, never installed."""
    programs = tuple(programs)
    if not programs:
        return ""
    have = frozenset(have or ())
    shipped = "".join(ship(p) for p in programs if p.file not in have)
    return FUNCTIONS + ((INSTALL if install else STAGE) + shipped if shipped else "")


def use(program: Program) -> str:
    """Shell: `program` is at "$(program.at)", trusted and whole (program.path, or in --check a temporary copy of the
    text this command carries), or the section ends here (missing: the engine sends it again with the text; not
    installable: exit 1 with why)."""
    return f"fleet_program {program.file} {program.digest} || exit $?\n"


def unmarked(output: str) -> str:
    """A section's output without the lines saying what was installed."""
    if INSTALLED not in output:
        return output
    return "\n".join(line for line in output.split("\n") if not line.startswith(INSTALLED))


def installed(output: str) -> list[str]:
    """The program files a section installed (the facts' listing, taken before, does not have them yet)."""
    return [line[len(INSTALLED):].strip() for line in output.splitlines() if line.startswith(INSTALLED)]
