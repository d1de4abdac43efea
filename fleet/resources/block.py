"""A block of lines between markers inside a file someone else owns (~/.bashrc, /etc/profile).

Placement matters: Ubuntu's ~/.bashrc returns early for non-interactive shells, and `ssh host cmd` runs one,
so a hook appended at the end never reaches it. `position: top` puts the block first, before that return.
The file is rewritten through a temp file and a rename, so a dropped connection never leaves half a .bashrc.
"""

from __future__ import annotations

from .base import DIFF_MARK, NEEDS_CHANGE, Param, Resource, q, qpath

# awk program: print the file without the block (markers included).
_STRIP = 'BEGIN{skip=0} $0==b{skip=1; next} $0==e{skip=0; next} !skip{print}'


class Block(Resource):
    type_name = "block"
    params = {
        "path": Param((str,), required=True),
        "block": Param((str,), required=True),
        "marker": Param((str,), default="fleet"),
        "position": Param((str,), default="bottom"),     # top | bottom
        "mode": Param((str,), default="0644"),
        "root": Param((bool,), default=None),
    }

    def describe(self) -> str:
        return f"manage block '{self.p['marker']}' in {self.p['path']} ({self.p['position']})"

    @property
    def root(self) -> bool:
        if self.p["root"] is not None:
            return self.p["root"]
        return not str(self.p["path"]).startswith("~")

    def _markers(self) -> tuple[str, str]:
        return f"# BEGIN {self.p['marker']}", f"# END {self.p['marker']}"

    def _wanted(self) -> str:
        begin, end = self._markers()
        return f"{begin}\n{self.p['block'].rstrip(chr(10))}\n{end}\n"

    def wanted_text(self) -> str:
        return self._wanted()

    def check(self) -> str:
        path = qpath(self.p["path"])
        begin, end = self._markers()
        where = "head -n 1" if self.p["position"] == "top" else "cat"
        return (
            f"b={q(begin)}; e={q(end)}; want={q(self._wanted())}\n"
            f"if [ ! -f {path} ]; then echo 'file absent'; exit {NEEDS_CHANGE}; fi\n"
            f"have=$(awk -v b=\"$b\" -v e=\"$e\" '$0==b{{on=1}} on{{print}} $0==e{{on=0}}' {path}; echo x)\n"
            "have=${have%x}\n"
            f"if [ \"$have\" = \"$want\" ] && {where} {path} | grep -qxF -- \"$b\"; then "
            "echo 'block present and placed'; exit 0; fi\n"
            "if [ -z \"$have\" ]; then echo 'block absent'; else echo 'block differs or is misplaced'; fi\n"
            f"printf '\\n{DIFF_MARK}\\n'; printf '%s' \"$have\"\n"
            f"exit {NEEDS_CHANGE}\n"
        )

    def apply(self) -> str:
        path = qpath(self.p["path"])
        begin, end = self._markers()
        strip = "awk -v b=\"$b\" -v e=\"$e\" '" + _STRIP + "' \"$f\""
        if self.p["position"] == "top":
            assemble = "{ printf '%s' \"$want\"; " + strip + "; }"
        else:
            assemble = "{ " + strip + "; printf '%s' \"$want\"; }"
        return (
            "set -e\n"
            f"b={q(begin)}; e={q(end)}; want={q(self._wanted())}\n"
            f"f={path}; mkdir -p -- \"$(dirname -- \"$f\")\"; [ -f \"$f\" ] || : > \"$f\"\n"
            "tmp=$(mktemp \"$(dirname -- \"$f\")/.fleet-block.XXXXXX\"); trap 'rm -f -- \"$tmp\"' EXIT\n"
            f"{assemble} > \"$tmp\"\n"
            "chmod --reference=\"$f\" \"$tmp\"; chown --reference=\"$f\" \"$tmp\" 2>/dev/null || true\n"
            "sync -- \"$tmp\" 2>/dev/null || sync\n"
            "mv -f -- \"$tmp\" \"$f\"; trap - EXIT\n"
            f"echo {q('block written to ' + self.p['path'])}\n"
        )
