"""Whether a path fleet runs from or writes into as root is safe from the host's other users, asked on the host.

What "trusted" means is fleet/remote/trust.sh's fleet_trust (owner, mode, group membership, POSIX ACLs, every parent, a
symlink's target, failing closed); the same function judges each program in the shell that runs it, just before
it runs. The probe asks it of every path here so that the record, `fleet facts` and apply's refusal say why (a venv
under a 1777 /workspace that `nobody` planted, one under a volume shared with setfacl): the refusal is the
controller's account of what the host already refused to run.

    command(paths)    per path: `path<TAB><path><TAB>ok` or `path<TAB><path><TAB><why>`, one line each: the path as
                      the controller escaped it (\\, \n, \t: issue 49, a path with a newline split its line and
                      left no verdict), the why with its newlines made spaces
    parse(text)       -> {path: None (trusted) or "<component> is owned by <owner> with mode <mode>" (or other why)}
"""

from __future__ import annotations

import re
import shlex

from fleet import remote


def command(paths) -> str:
    """Shell printing each path's verdict (fleet/remote/paths.sh); it calls fleet_trust (the shared functions "trust",
    fleet.shell.FUNCTIONS, which its source declares: define them first where it runs alone)."""
    words = " ".join(f"{shlex.quote(path)} {shlex.quote(_escape(path))}" for path in dict.fromkeys(paths))
    return f"set -- {words}\n" + remote.program("paths") + "\n"


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), text)


def reason(line: str) -> str:
    """What fleet_trust printed: the sentence's middle (it is already one)."""
    return line.strip()


def parse(text: str) -> dict:
    """path\t/opt/fleet/venv\tok / path\t/workspace/tmp\t/workspace nobody 1777 ->
    {"/opt/fleet/venv": None, "/workspace/tmp": "/workspace is owned by nobody with mode 1777"}"""
    out: dict = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "path":
            out[_unescape(parts[1])] = None if parts[2] == "ok" else reason(parts[2] or "no verdict")
    if not out:
        raise ValueError("no path lines")
    return out


def refusal(name: str, path: str, why: str) -> str:
    return (f"{name} {path} is not safe to run as root: {why}, so another user could plant what fleet runs there; "
            f"make it and each parent owned by root and not writable by others, or set {name} elsewhere")
