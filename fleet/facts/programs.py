"""The helper programs the host has installed (fleet/resources/programs.py): the file names under
/var/lib/fleet/bin, each `<name>-<first 16 hex of its sha256>`. The next probe sends a program's text only where
this list lacks its file; the host itself checks each file (owner, mode, digest) before it runs it.

    @@bin /var/lib/fleet/bin
    verify-0123456789abcdef
    fleet-cuda-compat-gate-fedcba9876543210
    -> ["fleet-cuda-compat-gate-fedcba9876543210", "verify-0123456789abcdef"]
"""

from __future__ import annotations

import re

COMMAND = 'echo "@@bin /var/lib/fleet/bin"; for f in /var/lib/fleet/bin/*; do [ -f "$f" ] && echo "${f##*/}"; done; :'
_FILE = re.compile(r"^[a-z][a-z0-9_-]*-[0-9a-f]{16}$")


def parse(text: str) -> list[str]:
    """The listing -> the program files, sorted (other names under the directory are not fleet's: left out);
    ValueError without the listing's first line (the source did not run)."""
    lines = [line.strip() for line in text.splitlines()]
    if "@@bin /var/lib/fleet/bin" not in lines:
        raise ValueError("no listing of /var/lib/fleet/bin")
    return sorted({line for line in lines if _FILE.match(line)})
