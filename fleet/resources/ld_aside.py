"""Take a directory out of the dynamic loader's reach: its ld.so.conf entries and /etc/ld.so.preload lines.

What a startup line is to a shell, an ld cache entry is to EVERY process (services, cron, `docker exec` read no
startup file: shared/DOMAIN.md, "Forward compatibility"): a cuda-compat directory registered where the kernel
driver is new enough gives every process error 803, a stub directory gives CUDA_ERROR_STUB_LIBRARY (34).
fleet.decide.loader decides which directories are harmful on this host (`dirs`, an ERE for one directory); this
resource takes each mention out of effect, reversibly, and never deletes:

- an /etc/ld.so.conf.d/*.conf file whose every directory line is harmful is MOVED to `<aside>/<its path>`
  (/var/lib/fleet/aside/etc/ld.so.conf.d/000-cuda-compat.conf); to undo: move it back and run ldconfig;
- a harmful line in a file shared with other entries (/etc/ld.so.conf, a mixed conf.d file) is commented out with
  the marker `# fleet ld_aside: ` in front of it; to undo: delete the marker;
- a harmful line of /etc/ld.so.preload is taken OUT of the file and appended to `<aside>/etc/ld.so.preload` (its
  other libraries stay in effect on that line); to undo: put it back. Never a comment there: glibc's rtld blanks
  comments in ld.so.preload with a loop that never advances its start (elf/rtld.c, "Eliminate comments"), so a
  second `#` line is blanked only in part and the rest of it is PRELOADED (seen on the real H100: every process
  printed "object 'local/cuda-13.0/.../stubs/libcuda.so' from /etc/ld.so.preload cannot be preloaded");
- then `ldconfig`, so the cache no longer lists the directory. A cache that still lists one with no file behind it
  (ldconfig not run since) is rebuilt too.

`keep` names files never touched (fleet's own compat drop-in, /etc/ld.so.conf.d/000-fleet-cuda-compat.conf, where
compat IS decided). The check reads the files as they are now (not the probe's facts), so it is idempotent: a
file moved aside or a line commented out no longer matches. `sysroot` (a directory) stands in for / in tests.
"""

from __future__ import annotations

from fleet import remote
from fleet.resources.base import DIFF_MARK, NEEDS_CHANGE, Param, Resource, q

MARKER = "# fleet ld_aside: "
ASIDE = "/var/lib/fleet/aside"


def _dirs_problem(value) -> str | None:
    return "must be one line (an extended regular expression for a directory)" if "\n" in str(value) else None


# The loader's files -> one finding a line: fleet/remote/ld_aside_find.awk (what it reads and prints: in
# ld_aside_find.sh); a conf line commented out, a preload line taken out: ld_aside_comment.awk, ld_aside_drop.awk.
_FIND = remote.text("ld_aside_find.awk")
_COMMENT = remote.text("ld_aside_comment.awk")
_DROP = remote.text("ld_aside_drop.awk")


class LdAside(Resource):
    type_name = "ld_aside"
    needs_root = True
    renders_diff = True      # the check prints the whole diff (--diff): what differs is per host, no one wanted text
    params = {
        "dirs": Param((str,), required=True, check=_dirs_problem),   # ERE for one harmful directory
        "keep": Param((list, str), default=[]),                        # files never touched (a list, or blank-separated)
        "aside": Param((str,), default=ASIDE),
        "sysroot": Param((str,), default=""),                          # stands in for / (tests)
    }

    def locks(self) -> frozenset[str]:
        return frozenset({"ldcache"})   # it edits /etc/ld.so.conf.d or /etc/ld.so.preload and runs ldconfig

    def describe(self) -> str:
        return f"take loader entries matching {self.p['dirs']} out of effect (ld.so.conf*, ld.so.preload)"

    def _find(self) -> str:
        """Shell that prints the findings (see _FIND), one per line, into $found."""
        root = self.p["sysroot"].rstrip("/")
        keep_list = self.p["keep"].split() if isinstance(self.p["keep"], str) else self.p["keep"] or []
        keep = "\n".join(str(k) for k in keep_list)
        return (f"R={q(root)}; pat={q(self.p['dirs'])}; keep={q(keep)}; find_awk={q(_FIND)}\n"
                + remote.program("ld_aside_find") + "\n")

    def check(self) -> str:
        aside = self.p["aside"].rstrip("/")
        return (self._find()
                + f"aside={q(aside)} marker={q(MARKER)} diff_mark={q(DIFF_MARK)} needs_change={NEEDS_CHANGE}\n"
                + remote.program("ld_aside_check") + "\n")

    def apply(self) -> str:
        aside = self.p["aside"].rstrip("/")
        return ("set -e\n" + self._find()
                + f"aside={q(aside)} marker={q(MARKER)} drop_awk={q(_DROP)} comment_awk={q(_COMMENT)}\n"
                + remote.program("ld_aside_apply") + "\n")
