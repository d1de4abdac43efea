"""What a connection to the lab's hosts needs, written into the inventory the lab serves: top-level `key:` (the
lab's login key), `known_hosts:` (the host keys the lab generated) and `keyring_pins:` (the sha256 of the
lab's own cuda-keyring .debs, which it serves at NVIDIA's URLs). fleet reads them as it reads any
inventory's, so it has no lab branch. `up` writes them; `down`, once the key is gone, takes them out.

The rest of the file (comments, order) is kept; the write is atomic.
"""

from __future__ import annotations

import re
from pathlib import Path

from fleet.atomic import write_atomic

MARK = "# written by fleet lab up"
_LINE = re.compile(r"^(key|known_hosts|keyring_pins):.*\n?", re.M)


def write_connection(inventory: Path, root: Path, keyring_pins: Path | None = None) -> None:
    from . import paths

    lines = [f"key: {paths.lab_key(root)}                  {MARK}\n",
             f"known_hosts: {paths.lab_known_hosts(root)}   {MARK}\n"]
    if keyring_pins is not None:   # the digests of the lab's own cuda-keyring .debs (fleet/decide/keyring.py)
        lines.append(f"keyring_pins: {keyring_pins}   {MARK}\n")
    _rewrite(Path(inventory), lines)


def remove_connection(inventory: Path) -> None:
    _rewrite(Path(inventory), [])


def drop_stale(inventory: Path) -> None:
    """Take out lines an earlier lab wrote whose key is gone (that lab was taken down)."""
    for line in Path(inventory).read_text().splitlines():
        if line.startswith("key:") and MARK in line and not Path(line[4:].split("#")[0].strip()).exists():
            remove_connection(inventory)
            return


def _rewrite(inventory: Path, lines: list[str]) -> None:
    text = inventory.read_text()
    # ours go; on writing, a hand-written top-level key/known_hosts goes too (YAML allows one of each)
    body = "".join(line for line in text.splitlines(keepends=True)
                   if not (_LINE.match(line) and (MARK in line or lines)))
    # after the leading comment block, so the file still opens with what it is
    head = re.match(r"(?:[ \t]*#.*\n|[ \t]*\n)*", body).end()
    new = body[:head] + "".join(lines) + body[head:]
    if new != text:
        write_atomic(inventory, new.encode(), mode=inventory.stat().st_mode & 0o777)
