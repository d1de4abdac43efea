"""Helper programs on the host, installed by the digest of their text and run from there.

A helper program (fleet's verify program, the cuda-compat gate) is a file fleet ships as it is. On the host it
lives at /var/lib/fleet/bin/<name>-<first 16 hex of its sha256> (the directory root-owned, 0755: the checks that
run these programs run as the connecting user), written whole or not at all (a temp file in that directory,
its digest checked, then renamed), and it is run only after `fleet_program` found it root-owned, writable by
root alone (and every directory above it) and of the right digest. So a converged host's probe carries no
program text: only the program's name and digest.

    program = Program("verify", text)
    program.path                                 # /var/lib/fleet/bin/verify-0123456789abcdef
    prelude(programs, have)                      # shell: the functions a section needs to use them; the text of
                                                 # each program not in `have` (file names) rides along
    use(program)                                 # shell: make sure it is there, else say so and leave the section

Where the host lacks a program the controller believed it had (removed, tampered with, a host rebuilt), `use`
prints `@@fleet:program-missing NAME` and ends its section with MISSING_EXIT: the engine sends that section again
with the text (fleet/engine/observe.py). What the host has is the facts' `programs` (fleet/facts/programs.py),
with what the probe's own checks installed (`@@fleet:program-installed NAME`) folded in.
A program is added by a resource's `programs()` (fleet/resources/base.py): the engine and `fleet script` do the
rest.
"""

from __future__ import annotations

from fleet.facts.programs import (BIN, INSTALLED, MISSING, MISSING_EXIT, TRUSTED, Program,  # noqa: F401
                                  fingerprint_program, trace_program)


FUNCTIONS = TRUSTED + rf"""fleet_program() {{  # FILE SHA256: 0 when {BIN}/FILE is trusted and whole; else installs it where this
  # command carries it (fleet_ship_FILE), or says it is missing (the controller sends it in another command)
  local p={BIN}/$1 h f=fleet_ship_${{1//-/_}}
  if fleet_bin_trusted "$p" && h=$(sha256sum < "$p" 2>/dev/null) && [ "${{h%% *}}" = "$2" ]; then return 0; fi
  if ! declare -F "$f" >/dev/null; then printf '{MISSING}%s\n' "$1"; return {MISSING_EXIT}; fi
  if "$f" "$1" "$2" && fleet_bin_trusted "$p" && h=$(sha256sum < "$p") && [ "${{h%% *}}" = "$2" ]; then
    printf '{INSTALLED}%s\n' "$1"; return 0
  fi
  echo "fleet: could not install $p (it needs root, or sudo without a password)"; return 1
}}
fleet_install() {{  # FILE SHA256 < TEXT: {BIN}/FILE, root's, 0755, whole or not at all (temp file, digest, rename)
  local s=(); [ "$(id -u)" = 0 ] || s=(sudo -n)
  "${{s[@]}}" sh -c 'umask 022; b={BIN}
    mkdir -p /var/lib/fleet && install -d -m 0755 -o 0 -g 0 "$b" || exit 1
    t=$(mktemp "$b/.install.XXXXXX") || exit 1
    if cat > "$t" && h=$(sha256sum < "$t") && [ "${{h%% *}}" = "$2" ] && chmod 0755 "$t" && chown 0:0 "$t" \
      && mv -f "$t" "$b/$1"; then exit 0; fi
    rm -f "$t"; exit 1' fleet-install "$1" "$2"
}}
"""


def ship(program: Program) -> str:
    """Shell defining fleet_ship_<file>: installs `program` from the text this function carries."""
    end = f"FLEET_PROGRAM_{program.digest[:16]}"
    if f"\n{end}\n" in f"\n{program.text}\n":
        raise ValueError(f"program {program.name} holds its own end marker {end}")
    text = program.text if program.text.endswith("\n") else program.text + "\n"
    return (f"fleet_ship_{program.file.replace('-', '_')}() {{\nfleet_install \"$1\" \"$2\" <<'{end}'\n"
            f"{text}{end}\n}}\n")


def prelude(programs, have=None) -> str:
    """The functions a section needs to run `programs`, with the text of each whose file is not in `have` (the
    file names the host had at its last probe; None: nothing known, ship every one)."""
    programs = tuple(programs)
    if not programs:
        return ""
    have = frozenset(have or ())
    return FUNCTIONS + "".join(ship(p) for p in programs if p.file not in have)


def use(program: Program) -> str:
    """Shell: `program` is at program.path, trusted and whole, or the section ends here (missing: the engine sends
    it again with the text; not installable: exit 1 with why)."""
    return f"fleet_program {program.file} {program.digest} || exit $?\n"


def missing(output: str) -> list[str]:
    """The program files a section's output says the host lacks."""
    return [line[len(MISSING):].strip() for line in output.splitlines() if line.startswith(MISSING)]


def unmarked(output: str) -> str:
    """A section's output without the lines saying what was installed."""
    if INSTALLED not in output:
        return output
    return "\n".join(line for line in output.split("\n") if not line.startswith(INSTALLED))


def installed(output: str) -> list[str]:
    """The program files a section installed (the facts' listing, taken before, does not have them yet)."""
    return [line[len(INSTALLED):].strip() for line in output.splitlines() if line.startswith(INSTALLED)]
