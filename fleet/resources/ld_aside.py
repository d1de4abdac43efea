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

from fleet.resources.base import DIFF_MARK, NEEDS_CHANGE, Param, Resource, q

MARKER = "# fleet ld_aside: "
ASIDE = "/var/lib/fleet/aside"


def _dirs_problem(value) -> str | None:
    return "must be one line (an extended regular expression for a directory)" if "\n" in str(value) else None


# Input: the files to read (ld.so.conf kinds first, then the preload file, marked by `p=1`), env pat, keep.
# Output, one line per finding:  move<TAB>file   or   comment<TAB>file<TAB>line number<TAB>text
# A conf line is one directory (a trailing comment allowed); a preload line holds paths separated by blanks or
# colons, and is harmful when one of them is a file in a harmful directory.
_FIND = r"""
function flush() {
  if (file == "") return
  if (hits > 0 && hits == lines && !preload && file ~ /\/ld\.so\.conf\.d\/[^\/]+\.conf$/) print "move\t" file
  else for (i = 1; i <= hits; i++) print (preload ? "drop" : "comment") "\t" file "\t" hn[i] "\t" ht[i]
}
FNR == 1 { flush(); file = FILENAME; hits = 0; lines = 0; preload = (FILENAME ~ /ld\.so\.preload$/) }
{ l = $0; sub(/#.*/, "", l); gsub(/^[[:space:]]+|[[:space:]]+$/, "", l)
  if (l == "" || (!preload && l ~ /^include[[:space:]]/)) next
  lines++
  bad = 0
  if (preload) { n = split(l, part, /[[:space:]:]+/); for (i = 1; i <= n; i++) if (part[i] ~ ("^" pat "/?/[^/]+$")) bad = 1 }
  else if (l ~ ("^" pat "/?$")) bad = 1
  if (bad) { hits++; hn[hits] = FNR; ht[hits] = $0 }
}
END { flush() }
"""


# Comment out line n of an ld.so.conf file.
_COMMENT = r"""FNR == n { print m $0; next }
{ print }"""

# Take line n out of /etc/ld.so.preload: its other entries (another preloaded library) stay on that line.
_DROP = r"""FNR == n {
  k = split($0, part, /[[:space:]:]+/); keep = ""
  for (i = 1; i <= k; i++) if (part[i] != "" && part[i] !~ ("^" pat "/?/[^/]+$")) keep = keep (keep == "" ? "" : " ") part[i]
  if (keep != "") print keep
  next
}
{ print }"""


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
        return (
            f"R={q(root)}; pat={q(self.p['dirs'])}; keep={q(keep)}\n"
            "fs=()\n"
            "for f in \"$R\"/etc/ld.so.conf \"$R\"/etc/ld.so.conf.d/*.conf \"$R\"/etc/ld.so.preload; do\n"
            "  [ -f \"$f\" ] || continue\n"
            "  case $'\\n'\"$keep\"$'\\n' in *$'\\n'\"${f#$R}\"$'\\n'*) continue;; esac\n"
            "  fs+=(\"$f\")\n"
            "done\n"
            f"found=; [ ${{#fs[@]}} -gt 0 ] && found=$(awk -v pat=\"$pat\" {q(_FIND)} \"${{fs[@]}}\")\n"
            # the cache: an entry in a harmful directory that no file lists any more (ldconfig not run since)
            "lc=$(command -v ldconfig || echo /sbin/ldconfig)\n"
            "stale=$(\"$lc\" -p 2>/dev/null | awk -v pat=\"$pat\" '/ => /{p=$NF; sub(/\\/[^\\/]+$/, \"\", p);"
            " if (p ~ (\"^\" pat \"/?$\")) {print p; exit}}')\n"
        )

    def check(self) -> str:
        aside = self.p["aside"].rstrip("/")
        return (
            self._find()
            + "if [ -z \"$found\" ] && [ -z \"$stale\" ]; then echo 'no harmful loader entry'; exit 0; fi\n"
            "diff=\n"
            "while IFS=$'\\t' read -r op f n text; do\n"
            "  [ -n \"$op\" ] || continue\n"
            f"  if [ \"$op\" = move ]; then echo \"moves ${{f#$R}} aside to {aside}${{f#$R}}\"\n"
            f"    diff+=\"--- ${{f#$R}} (now)\"$'\\n'\"+++ {aside}${{f#$R}} (moved aside)\"$'\\n'\"$(sed 's/^/-/' \"$f\")\"$'\\n'\n"
            "  elif [ \"$op\" = drop ]; then echo \"takes ${f#$R}:$n ($text) out, kept in "
            f"{aside}/etc/ld.so.preload\"\n"
            "    diff+=\"--- ${f#$R} (now)\"$'\\n'\"+++ ${f#$R} (after)\"$'\\n'\"@@ -$n @@\"$'\\n'\"-$text\"$'\\n'\n"
            "  else echo \"comments out ${f#$R}:$n ($text)\"\n"
            "    diff+=\"--- ${f#$R} (now)\"$'\\n'\"+++ ${f#$R} (after)\"$'\\n'\"@@ -$n +$n @@\"$'\\n'\"-$text\"$'\\n'"
            f"\"+{MARKER}$text\"$'\\n'\n  fi\n"
            "done <<< \"$found\"\n"
            "[ -n \"$stale\" ] && [ -z \"$found\" ] && echo \"rebuilds the ld cache: it still lists $stale (ldconfig)\"\n"
            f"printf '\\n{DIFF_MARK}\\n%s' \"$diff\"\n"
            f"exit {NEEDS_CHANGE}\n"
        )

    def apply(self) -> str:
        aside = self.p["aside"].rstrip("/")
        return (
            "set -e\n"
            + self._find()
            + "while IFS=$'\\t' read -r op f n text; do\n"
            "  [ -n \"$op\" ] || continue\n"
            "  if [ \"$op\" = move ]; then\n"
            f"    d=\"$R\"{q(aside)}\"${{f#$R}}\"; mkdir -p -- \"$(dirname -- \"$d\")\"\n"
            "    i=1; while [ -e \"$d\" ]; do d=\"${d%.~*~}.~$i~\"; i=$((i+1)); done\n"
            "    mv -- \"$f\" \"$d\"; echo \"moved ${f#$R} aside to ${d#$R}\"\n"
            "  else\n"
            "    t=$(mktemp \"$(dirname -- \"$f\")/.fleet-aside.XXXXXX\")\n"
            "    if [ \"$op\" = drop ]; then\n"
            f"      k=\"$R\"{q(aside)}/etc/ld.so.preload; mkdir -p -- \"$(dirname -- \"$k\")\"\n"
            "      printf '%s\\n' \"$text\" >> \"$k\"\n"
            f"      awk -v n=\"$n\" -v pat=\"$pat\" {q(_DROP)} \"$f\" > \"$t\"\n"
            "    else\n"
            f"      awk -v n=\"$n\" -v m={q(MARKER)} {q(_COMMENT)} \"$f\" > \"$t\"\n"
            "    fi\n"
            "    chmod --reference=\"$f\" \"$t\"; mv -f -- \"$t\" \"$f\"\n"
            "    if [ \"$op\" = drop ]; then echo \"took ${f#$R}:$n ($text) out, kept in ${k#$R}\"\n"
            "    else echo \"commented out ${f#$R}:$n ($text)\"; fi\n"
            "  fi\n"
            # the last line first: a preload line that keeps other entries adds a line below itself
            "done < <(printf '%s\\n' \"$found\" | sort -t $'\\t' -k3,3nr)\n"
            "\"$lc\" && echo 'ran ldconfig'\n"
        )
