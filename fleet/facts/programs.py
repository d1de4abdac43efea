"""fleet's helper programs as the host holds them: a program is a file under /var/lib/fleet/bin named
`<name>-<first 16 hex of its sha256>` (installed by fleet/resources/programs.py), and this module says which the
host has (the `programs` source: the file names under that directory). The next probe sends a program's text only
where this list lacks its file; the host itself checks each file (owner, mode, digest) before it runs it.

    @@bin /var/lib/fleet/bin
    verify-0123456789abcdef
    fleet-cuda-compat-gate-fedcba9876543210
    -> ["fleet-cuda-compat-gate-fedcba9876543210", "verify-0123456789abcdef"]

The facts' own programs are here too: the shells' trace (facts/shells.py) and the fingerprint of what verify
proves (facts/fingerprint.py), which the verify resource runs and installs.
"""

from __future__ import annotations

import functools
import hashlib
import re
import shlex
from dataclasses import dataclass
from functools import cached_property

from fleet import shell
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
        """Shell, for inside double quotes: where a section that ran fleet_program for it (fleet/resources/programs.py
        use) runs it from: `path`, or in --check a temporary copy of the text its command carries."""
        return "${fleet_at_" + self.file.replace("-", "_") + "}"


# A helper program is judged right before it runs by the one trust mechanism (fleet/shell.py's TRUST_FN: owner, mode,
# ACLs, root's group, every parent), and must be root's own besides: it runs as root wherever fleet has root.
# Root owns it: what fleet_trust passed is owned by root or the running user (the file and, a symlink, its target), so
# bash's own -O (owned by the effective user, the link followed, as `stat -L -c %u` reads it) tells which, with no
# process: owned by root is -O as root, not -O for anyone else (-e first: fleet_trust passes a path missing at its end).
TRUSTED = shell.TRUST_FN + "\n" + r"""fleet_bin_trusted() {  # PATH under /var/lib/fleet/bin: fleet_trust passes it, and root owns it
  [ -z "$(fleet_trust "$1" 2>&1)" ] && [ -e "$1" ] && if [ "$EUID" = 0 ]; then [ -O "$1" ]; else [ ! -O "$1" ]; fi
}
"""
HAVE = TRUSTED + rf"""fleet_bin_ok() {{  # FILE SHA256: {BIN}/FILE is trusted (fleet_bin_trusted) and holds that digest
  local h; fleet_bin_trusted {BIN}/$1 && h=$(sha256sum < {BIN}/$1 2>/dev/null) && [ "${{h%% *}}" = "$2" ]
}}
"""


def lacks(program: Program, then: str) -> str:
    """Shell (HAVE defined): `then` where the host lacks `program` (no such file, not trusted, another digest)."""
    return f"fleet_bin_ok {program.file} {program.digest} || {{ {then}; }}\n"


def from_bin(program: Program, args: str = "") -> str:
    """Shell for a read-only section (the facts): `bash PROGRAM ARGS` from /var/lib/fleet/bin where the host has it,
    trusted and whole, right before it runs; else the section says the host lacks it (MISSING, MISSING_EXIT) and
    ends. It never installs: the engine asks again with the text (fleet/engine/session.py)."""
    return (HAVE + lacks(program, f"printf '{MISSING}%s\\n' {program.file}; exit {MISSING_EXIT}")
            + f"bash {program.path}{args}")


def missing(output: str) -> list[str]:
    """The program files a section's output says the host lacks."""
    return [line[len(MISSING):].strip() for line in output.splitlines() if line.startswith(MISSING)]


@functools.lru_cache(maxsize=None)
def trace_program() -> Program:
    """fleet.facts.shells' trace of the startup files, as a bash file (the verify program runs `bash PATH`)."""
    from fleet.facts import shells

    return Program("fleet-shell-trace", shells.command() + "\n")


@functools.lru_cache(maxsize=64)
def fingerprint_program(venv: str) -> Program:
    """The fingerprint's parts for this venv, as a bash file: what the gate runs where the facts did not take them."""
    from fleet.facts.fingerprint import fingerprint_script

    return Program("fleet-fingerprint", fingerprint_script(venv))


def fingerprint_part(python_env: str, program: Program | None = None) -> str:
    """The facts probe's fingerprint source (fleet/facts/fingerprint.py probe_part), fed the shells' trace on its stdin
    (fleet/sections.py `fed`): `program`, the installed fingerprint program, run with TRACE_ON_STDIN where the host
    has it, else the script inline. Where the host lacks it, or the trace says the shells' own program was missing, the
    section says so (MISSING, MISSING_EXIT): the gate then takes its own (taken()), and the engine asks again with the
    text."""
    from fleet.facts import fingerprint

    if program is not None:
        return from_bin(program, f" {fingerprint.TRACE_ON_STDIN} 2>/dev/null")
    return fingerprint.probe_part(python_env)


def taken() -> str:
    """Shell test: the probe took the host's fingerprint parts ($fleet_fp_host kept, and not its section saying the
    host lacks a program)."""
    from fleet.facts.fingerprint import HOST_PARTS

    return f'[ -n "${{{HOST_PARTS}+x}}" ] && [[ ${HOST_PARTS} != {shlex.quote(MISSING)}* ]]'


def shipped(name: str, settings: dict) -> Program | None:
    """The installed program that prints what the facts source `name` prints, for these settings (the probe's own:
    fleet/facts/sources.py settings_of), or None: the shells' trace (`bash PROGRAM`, the verify program's too) and
    the fingerprint's parts (`bash PROGRAM --trace-on-stdin`, the trace the probe kept on its stdin; the verify
    gate's own where it runs without the probe)."""
    if name == "shells":
        return trace_program()
    if name == "verify_fingerprint":
        return fingerprint_program(str(settings["python_env"]))
    return None


COMMAND = 'echo "@@bin /var/lib/fleet/bin"; for f in /var/lib/fleet/bin/*; do [ -f "$f" ] && echo "${f##*/}"; done; :'
_FILE = re.compile(r"^[a-z][a-z0-9_-]*-[0-9a-f]{16}\Z")


def parse(text: str) -> list[str]:
    """The listing -> the program files, sorted (other names under the directory are not fleet's: left out);
    ValueError without the listing's first line (the source did not run)."""
    lines = [line.strip() for line in text.splitlines()]
    if "@@bin /var/lib/fleet/bin" not in lines:
        raise ValueError("no listing of /var/lib/fleet/bin")
    return sorted({line for line in lines if _FILE.match(line)})
