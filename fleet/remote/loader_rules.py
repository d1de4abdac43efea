"""How fleet reads the dynamic loader's answers, in one place: what a libcuda path is (cuda-compat, a stub, which
driver version), the lines of fleet's trace of the startup files, and which file:line put a directory where the
loader found libcuda.so.1 (the startup line of an LD_LIBRARY_PATH entry, the /etc/ld.so.conf* line of an ld cache
directory, the /etc/ld.so.preload line).

Standalone and stdlib only: the facts parse with it (fleet/facts/loader.py, fleet/facts/shells.py), and the verify
program carries this very text to the host (fleet/resources/verify.py bundles it into the installed program),
where it explains a failed kind of process by the same rules.

    is_compat(path), is_stub(path), version_of(real)
    parse_change("@@change\t...") -> {file, line, depth, text, before, after, via}
    parse_etcenv("@@etcenv N\tNAME\tVALUE") -> {file, line, name, value}
    startup_line(changes, entry, home)   -> "~/.bash_profile:2" | "/etc/profile:30 (via /etc/fleet/env.sh:38)" | None
    etc_environment_line(rows, entry)    -> "/etc/environment:3" | None
    conf_row(rows, directory)            -> the first {file, line, dir} naming it | None
"""

import posixpath
import re

# A cuda-compat directory (/usr/local/cuda-13.0/compat, NGC's /usr/local/cuda/compat/lib) and a stub directory
# (/usr/local/cuda/lib64/stubs, targets/x86_64-linux/lib/stubs): as ERE, for the host's grep/awk too.
COMPAT_DIR_ERE = r"/cuda[^/:]*/compat(/lib([.]real)?)?"
STUB_DIR_ERE = r"/stubs"
_COMPAT_DIR = re.compile(COMPAT_DIR_ERE + "/?$")
_STUB_DIR = re.compile(STUB_DIR_ERE + "/?$")
_VERSION = re.compile(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)$")
UNSET = "@unset@"     # the trace's word for a variable that is not set


def is_compat(path):
    """A path inside a cuda-compat directory (or that directory itself)."""
    if not path:
        return False
    return bool(_COMPAT_DIR.search(path.rstrip("/")) or _COMPAT_DIR.search(posixpath.dirname(path)))


def is_stub(path):
    """A path inside a stubs directory (or that directory): CUDA_ERROR_STUB_LIBRARY (34) when it is the libcuda."""
    if not path:
        return False
    return bool(_STUB_DIR.search(path.rstrip("/")) or _STUB_DIR.search(posixpath.dirname(path)))


def version_of(real):
    """'/usr/local/cuda-13.0/compat/libcuda.so.580.95.05' -> '580.95.05' (the real file's name)."""
    match = _VERSION.search(real or "")
    return match.group(1) if match else None


def parse_change(raw):
    """One `@@change\\tDEPTH\\tFILE\\tLINE\\tBEFORE\\tAFTER\\tTEXT\\tVIA` line of the trace (fleet/facts/shells.py):
    a startup line that changed LD_LIBRARY_PATH, from BEFORE to AFTER, reached through VIA (outer file:line first)."""
    depth, file, line, before, after, text, via = (raw.split("\t") + [""] * 8)[1:8]
    return {"file": file, "line": int(line) if line.isdigit() else None, "depth": int(depth) if depth.isdigit() else 0,
            "text": text, "before": None if before == UNSET else before, "after": None if after == UNSET else after,
            "via": [v for v in via.split(">") if v]}


def parse_etcenv(raw):
    """`@@etcenv N\\tNAME\\tVALUE[\\tFILE]`: line N of FILE sets NAME in every session sshd starts (FILE:
    /etc/environment where not said; else ~/.ssh/environment, /etc/security/pam_env.conf, or sshd's config, whose
    line is a SetEnv line)."""
    n, name, value, file = (raw[9:].split("\t") + ["", "", ""])[:4]
    return {"file": file or "/etc/environment", "line": int(n) if n.isdigit() else None, "name": name, "value": value}


def dirs(path):
    """A PATH-like value's directories, each without its trailing slash."""
    return [p.rstrip("/") or "/" for p in (path or "").split(":") if p]


def tilde(where, home):
    return "~" + where[len(home):] if home and home != "/" and where.startswith(home + "/") else where


def startup_line(changes, entry, home=""):
    """The startup line that left `entry` where it is on LD_LIBRARY_PATH: the last traced change that added it or
    moved it earlier; named as the line a person edits, and the file it led to ("via"). None: no startup line did."""
    entry = entry.rstrip("/") or "/"
    for change in reversed(changes or []):
        after, before = dirs(change.get("after")), dirs(change.get("before"))
        if entry in after and (entry not in before or after.index(entry) < before.index(entry)):
            where = tilde(f"{change['file']}:{change['line']}", home)
            via = change.get("via") or []
            return f"{tilde(via[0], home)} (via {where})" if via else where
    return None


def etc_environment_line(rows, entry):
    """The /etc/environment line (pam_env, for sessions sshd starts) that puts `entry` on LD_LIBRARY_PATH."""
    entry = entry.rstrip("/") or "/"
    for row in rows or []:
        if row.get("name") == "LD_LIBRARY_PATH" and entry in dirs(row.get("value")):
            return f"/etc/environment:{row['line']}"
    return None


def conf_row(rows, directory):
    """The first /etc/ld.so.conf* line (rows {file, line, dir}, in ldconfig's order) naming `directory`."""
    directory = directory.rstrip("/") or "/"
    return next((row for row in rows or [] if (row.get("dir") or "").rstrip("/") == directory), None)
