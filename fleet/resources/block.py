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

from fleet import remote
from fleet.errors import InputError
from fleet.resources.base import (DIFF_MARK, NEEDS_CHANGE, Param, Resource, mode_problem, mode_text, one_line_problem, one_of, q,
                   qpath)

# One awk program, three uses (env `fleet_do`): `keep` prints the complete blocks (what the check compares),
# `strip` prints everything else, `replace` prints everything with the first complete block swapped for the
# wanted one. Only a BEGIN that meets its END is a block: a lone BEGIN (a hand edit) and the lines after it
# stay, never swallowed. Markers come through ENVIRON (`awk -v` would expand backslashes in them), the wanted text
# through a file: an environment string is capped at 128 KiB (MAX_ARG_STRLEN) and would fail every command.
# A file with CRLF line ends (edited on Windows) is compared without the CR: its block is recognised, not doubled;
# `strip` and `replace` print the other lines as they were.
_AWK = remote.text("block.awk")   # fleet/remote/block.awk


# The leading run of marked blocks (`# BEGIN X` ... `# END X`, one after another from line 1): a block there
# is "at the top" for every purpose (before the early return), so two roles' top blocks (env_hooks and a
# user's role) both stay placed instead of pushing each other down on every apply.
_TOP_RUN = remote.text("block_top_run.awk")   # fleet/remote/block_top_run.awk


def _awk(op: str, path: str) -> str:
    return f"fleet_do={op} awk {q(_AWK)} {path}"


# The non-interactive early return of a ~/.bashrc: Ubuntu's `case $- in ... *) return;; esac`, Debian's and
# others' `[ -z "$PS1" ] && return`, `[[ $- != *i* ]] && return`, `if [[ $- != *i* ]]; then return; fi`.
EARLY_RETURN = (r'^[[:space:]]*(case[[:space:]]+"?\$-"?[[:space:]]+in'
                r'|\[\[?[[:space:]].*(\$-|PS1).*\]\]?[[:space:]]*(&&|\|\|)[[:space:]]*return'
                r'|if[[:space:]].*(\$-|PS1).*then[[:space:]]*return)')


class Block(Resource):
    type_name = "block"
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

    def _placed(self, path: str) -> str:
        """A test that is true when the block stands where its position wants it (CRLF files too)."""
        position = self.p["position"]
        if position == "top":       # anywhere in the leading run of marked blocks (two roles' top blocks)
            return f"tr -d '\\r' < {path} | awk {q(_TOP_RUN)} | grep -qxF -- \"$b\""
        if position == "last":  # the last non-blank line ends the block
            return f"[ \"$(tr -d '\\r' < {path} | grep -v '^[[:space:]]*$' | tail -n 1)\" = \"$e\" ]"
        if position == "before_return":  # just above the early return, or first where there is none
            return (f"{{ r=$(grep -nE -m1 {q(EARLY_RETURN)} {path} | cut -d: -f1); "
                    f"if [ -n \"$r\" ]; then [ \"$r\" -gt 1 ] && [ \"$(sed -n \"$((r-1))p\" {path} | tr -d '\\r')\" = \"$e\" ]; "
                    f"else head -n 1 {path} | tr -d '\\r' | grep -qxF -- \"$b\"; fi; }}")
        return f"tr -d '\\r' < {path} | grep -qxF -- \"$b\""

    def check(self) -> str:
        path = qpath(self.p["path"])
        return (
            self._vars()
            + (f"if [ ! -e {path} ]; then echo 'file absent: nothing reads it, so no block'; exit 0; fi\n"
               if self.p.get("only_if_exists") else "")
            + f"if [ ! -f {path} ]; then echo 'file absent'; exit {NEEDS_CHANGE}; fi\n"
            f"have=$({_awk('keep', path)}; echo x)\n"
            "have=${have%x}\n"
            f"if [ \"$have\" = \"$want\" ] && {self._placed(path)}; then "
            "echo 'block present and placed'; exit 0; fi\n"
            "if [ -z \"$have\" ]; then echo 'block absent'; else echo 'block differs or is misplaced'; fi\n"
            f"printf '\\n{DIFF_MARK}\\n'; printf '%s' \"$have\"\n"
            f"exit {NEEDS_CHANGE}\n"
        )

    def apply(self) -> str:
        """fleet/remote/block_apply.sh: the block where `position` wants it, the file replaced whole."""
        only = "1" if self.p.get("only_if_exists") else ""
        return ("set -e\n" + self._vars()
                + f"f={qpath(self.p['path'])} position={q(self.p['position'])} early={q(EARLY_RETURN)} "
                  f"mode={q(mode_text(self.p['mode']))} only_if_exists={only}\n"
                + f"fleet_awk={q(_AWK)} written={q('block written to ' + self.p['path'])}\n"
                + remote.program("block_apply") + "\n")
