"""A block of lines between markers inside a file someone else owns (~/.bashrc, /etc/profile).

Placement matters: Ubuntu's ~/.bashrc returns early for non-interactive shells, and `ssh host cmd` runs one,
so a hook appended at the end never reaches it. `position: top` puts the block first, before that return.
`position: before_return` puts it just above that return (at the top where there is none), so it runs LAST
in a non-interactive shell: after every line above it, which would otherwise get the final word. `position:
last` keeps it the file's last block, moving it back down when someone appends below it (it runs last in an
interactive shell). Both exist for env_hooks (issue 11: a compat export above or below the hook won).
The file is rewritten through a temp file and a rename, so a dropped connection never leaves half a .bashrc.
"""

from __future__ import annotations

from fleet import remote, shell
from fleet.errors import InputError
from fleet.resources.base import (Param, Resource, mode_problem, mode_text, one_line_problem, one_of, q,
                   qpath)

# One awk program, three uses (env `fleet_do`): `keep` prints the complete blocks (what the check compares),
# `strip` prints everything else, `replace` prints everything with the first complete block swapped for the
# wanted one. Only a BEGIN that meets its END is a block: a lone BEGIN (a hand edit) and the lines after it
# stay, never swallowed. Markers come through ENVIRON (`awk -v` would expand backslashes in them), the wanted text
# through a file: an environment string is capped at 128 KiB (MAX_ARG_STRLEN) and would fail every command.
# A file with CRLF line ends (edited on Windows) is compared without the CR: its block is recognised, not doubled;
# `strip` and `replace` print the other lines as they were. fleet/remote/block.awk, with block_top_run.awk (the
# leading run of marked blocks: a block there is "at the top" for every purpose, before the early return, so two
# roles' top blocks both stay placed) and the check (block_check.sh): the shared functions "block"
# (fleet.shell.FUNCTIONS), defined once per script however many block tasks it holds.
# The non-interactive early return of a ~/.bashrc (an ERE): fleet.shell.EARLY_RETURN.
EARLY_RETURN = shell.EARLY_RETURN


class Block(Resource):
    type_name = "block"
    needs = ("block",)   # fleet_block_check, and the awk programs as $fleet_awk_block...
    path_param = "path"
    params = {
        "path": Param((str,), required=True),
        "block": Param((str,), required=True),
        "marker": Param((str,), default="fleet", check=one_line_problem),
        "position": Param((str,), default="bottom", check=one_of("top", "bottom", "before_return", "last")),
        "mode": Param((str, int), default="0644", check=mode_problem),   # for a file it creates
        "root": Param((bool,), default=None),
        # Only a file that exists gets the block (a login shell's ~/.bash_profile, ~/.bash_login: creating one
        # would hide ~/.profile from bash); an absent file is in state and stays absent.
        "only_if_exists": Param((bool,), default=False),
    }

    def locks(self) -> frozenset[str]:
        return frozenset({f"path:{self.p['path']}"})

    @classmethod
    def validate(cls, values, where: str, *, check_types: bool = True):
        out = super().validate(values, where, check_types=check_types)
        text, marker = out.get("block"), out.get("marker")
        if isinstance(text, str) and isinstance(marker, str) and "{{" not in text + marker:
            markers = {f"# BEGIN {marker}", f"# END {marker}"}
            inside = [line for line in text.replace("\r", "").split("\n") if line.strip() in markers]
            if inside:
                # The file would hold a block that ends early: it never converges and grows each apply.
                raise InputError(f"{where}: the block's text contains its own marker line {inside[0].strip()!r}; "
                                 "change 'marker:' or remove that line from the text")
        return out

    def describe(self) -> str:
        where = f"{self.p['path']} ({self.p['position']}{', if it exists' if self.p.get('only_if_exists') else ''})"
        return f"manage block '{self.p['marker']}' in {where}"

    def _markers(self) -> tuple[str, str]:
        return f"# BEGIN {self.p['marker']}", f"# END {self.p['marker']}"

    def _wanted(self) -> str:
        begin, end = self._markers()
        return f"{begin}\n{self.p['block'].rstrip(chr(10))}\n{end}\n"

    def wanted_text(self) -> str:
        return self._wanted()

    def _vars(self) -> str:
        begin, end = self._markers()
        return f"b={q(begin)} e={q(end)} want={q(self._wanted())}; export b e\n"

    def check(self) -> str:
        """fleet_block_check (fleet/remote/block_check.sh) for this file, position and markers."""
        only = "1" if self.p.get("only_if_exists") else ""
        return (self._vars()
                + f"fleet_block_check {qpath(self.p['path'])} {q(self.p['position'])} {only or chr(39) * 2}\n")

    def apply(self) -> str:
        """fleet/remote/block_apply.sh: the block where `position` wants it, the file replaced whole."""
        only = "1" if self.p.get("only_if_exists") else ""
        return ("set -e\n" + self._vars()
                + f"f={qpath(self.p['path'])} position={q(self.p['position'])} "
                  f"mode={q(mode_text(self.p['mode']))} only_if_exists={only}\n"
                + f"written={q('block written to ' + self.p['path'])}\n"
                + remote.program("block_apply") + "\n")
