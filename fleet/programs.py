"""fleet's helper programs, the one module that knows them: a program is a file fleet ships as it is (the verify
program, the cuda-compat gate, the facts' own two: the shells' trace, facts/shells.py, and the fingerprint of what
verify proves, facts/fingerprint.py). On the host it lives at /var/lib/fleet/bin/<name>-<first 16 hex of its
sha256> (the directory root-owned, 0755: the checks that run these programs run as the connecting user), written
whole or not at all (a temp file in that directory, its digest checked, then renamed), and it is run only after
`fleet_program` (or, in a read-only facts section, `fleet_bin_ok`) found it root-owned, writable by root alone (and
every directory above it) and of the right digest. So a converged host's probe carries no program text: only the
program's name and digest.

    program = Program("verify", text)
    program.path                                 # /var/lib/fleet/bin/verify-0123456789abcdef
    prelude(programs, have, install=True)        # shell: the functions a section needs to use them; the text of
                                                 # each program not in `have` (file names) rides along
    use(program)                                 # shell: make sure it is there, else say so and leave the section
    f'python "{program.at}"'                     # shell: run it from where `use` found or put it
    from_bin(program)                            # shell for a read-only section: run it, or say the host lacks it

What the host has is the `programs` facts source (COMMAND, parse: the file names under that directory):

    @@bin /var/lib/fleet/bin
    verify-0123456789abcdef
    fleet-cuda-compat-gate-fedcba9876543210
    -> ["fleet-cuda-compat-gate-fedcba9876543210", "verify-0123456789abcdef"]

with what the probe's own sections installed (`@@fleet:program-installed NAME`, `installed`) folded in. The next
probe sends a program's text only where this list lacks its file.

`--check` writes nothing on the host: there (prelude's install=False) a text that rides along is not installed but
copied into a private temporary directory (mktemp -d, the connecting user's), its digest checked and judged by
fleet_trust, run from there and removed when the section ends, so a check answers as it would after the install and
the plan is what the apply that follows does.

Where the host lacks a program the controller believed it had (removed, tampered with, a host rebuilt), `use` and
`from_bin` print `@@fleet:program-missing NAME` and end their section with MISSING_EXIT: the probe sends that
section again with the text (fleet/engine/probe.py). A program is added by a resource's `programs()`
(fleet/resources/base.py): the engine and `fleet script` do the rest.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property

from fleet import remote, shell
from fleet.sections import MISSING, MISSING_EXIT   # noqa: F401 (the section protocol's; used and re-exported here)

BIN = "/var/lib/fleet/bin"
INSTALLED = "@@fleet:program-installed "


@dataclass(frozen=True)
class Program:
    name: str      # plain: letters, digits, - and _
    text: str

    def __post_init__(self):
        if not re.fullmatch(r"[a-z][a-z0-9_-]*", self.name):
            raise ValueError(f"program name {self.name!r} must be lower-case letters, digits, - and _")

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def file(self) -> str:
        return f"{self.name}-{self.digest[:16]}"

    @property
    def path(self) -> str:
        return f"{BIN}/{self.file}"

    @property
    def at(self) -> str:
        """Shell, for inside double quotes: where a section that ran fleet_program for it (`use`) runs it from: `path`, or in --check a temporary copy of the text its command carries."""
        return "${fleet_at_" + self.file.replace("-", "_") + "}"


# fleet_bin_trusted PATH (a helper program is judged by fleet_trust, and must be root's own besides) and fleet_bin_ok
# FILE SHA256: fleet/remote/bin_trusted.sh and bin_ok.sh (BIN written there, held equal by a test), the shared
# functions "bin" (fleet.shell.FUNCTIONS): a body that calls them declares it (NEEDS_BIN), the script defines them.
NEEDS_BIN = ("bin",)


def lacks(program: Program, then: str) -> str:
    """Shell ("bin" defined): `then` where the host lacks `program` (no such file, not trusted, another digest)."""
    return f"fleet_bin_ok {program.file} {program.digest} || {{ {then}; }}\n"


def from_bin(program: Program, args: str = "") -> str:
    """Shell for a read-only section (the facts): `bash PROGRAM ARGS` from /var/lib/fleet/bin where the host has it,
    trusted and whole, right before it runs; else the section says the host lacks it (MISSING, MISSING_EXIT) and
    ends. It never installs: the probe asks again with the text (fleet/engine/probe.py). Needs NEEDS_BIN."""
    return (lacks(program, f"printf '{MISSING}%s\\n' {program.file}; exit {MISSING_EXIT}")
            + f"bash {program.path}{args}")


def missing(output: str) -> list[str]:
    """The program files a section's output says the host lacks."""
    if MISSING not in output:   # the answer of nearly every section: its lines are not split to say so
        return []
    return [line[len(MISSING):].strip() for line in output.splitlines() if line.startswith(MISSING)]


COMMAND = 'echo "@@bin /var/lib/fleet/bin"; for f in /var/lib/fleet/bin/*; do [ -f "$f" ] && echo "${f##*/}"; done; :'
_FILE = re.compile(r"^[a-z][a-z0-9_-]*-[0-9a-f]{16}\Z")


def parse(text: str) -> list[str]:
    """The listing -> the program files, sorted (other names under the directory are not fleet's: left out);
    ValueError without the listing's first line (the source did not run)."""
    lines = [line.strip() for line in text.splitlines()]
    if "@@bin /var/lib/fleet/bin" not in lines:
        raise ValueError("no listing of /var/lib/fleet/bin")
    return sorted({line for line in lines if _FILE.match(line)})


# fleet_program FILE SHA256, fleet_install FILE SHA256 < TEXT, and fleet_install in --check (a private copy, removed
# when the section ends): fleet/remote/program_run.sh, program_install.sh and program_stage.sh (BIN, MISSING,
# MISSING_EXIT and INSTALLED written there, held equal by a test). fleet_program is the shared function "program"
# (fleet.shell.FUNCTIONS): a body that runs a helper program declares it (NEEDS_PROGRAM), the script defines it.
NEEDS_PROGRAM = ("program",)
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
    """What a section needs to run `programs` besides the shared function "program" (NEEDS_PROGRAM, defined by the
    script): the text of each whose file is not in `have` (the file names the host had at its last probe; None:
    nothing known, ship every one) and the function installing it. `install` False (--check): a text that rides along
    is run from a temporary copy that the section's end removes, never installed. Installed at once, whether the
    section runs it or not (pip's check runs its program only where its fast path cannot vouch): else a host that
    never needs it would be sent its text by every command."""
    programs = tuple(programs)
    have = frozenset(have or ())
    shipped = [p for p in programs if p.file not in have]
    if not shipped:
        return ""
    text = (INSTALL if install else STAGE) + "".join(ship(p) for p in shipped)
    if install:   # said installed only where it is there, whole and trusted (not a private copy's fallback)
        text += "".join(f"fleet_program {p.file} {p.digest} >/dev/null 2>&1; fleet_bin_ok {p.file} {p.digest} "
                        f"&& printf '{INSTALLED}%s\\n' {p.file}\n" for p in shipped)
    return text


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
    if INSTALLED not in output:
        return []
    return [line[len(INSTALLED):].strip() for line in output.splitlines() if line.startswith(INSTALLED)]


def marks(output: str) -> tuple[list[str], list[str]]:
    """(the program files a section installed, those it says the host lacks)."""
    return installed(output), missing(output)
