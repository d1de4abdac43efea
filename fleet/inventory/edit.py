"""The one writer of inventory text: `fleet bootstrap` adds a host's entry, `fleet forget` takes one out, and
anything else that edits an inventory does it here, through edit(): under one lock (flock on the inventory's
directory: two fleets editing the same inventory take turns, with no stray lock file), the text read inside the
lock, the new text validated and then renamed over the old one (fleet/atomic.py: a crash leaves the old file or
the new one). Edits are made as text, so every other line, comment and blank is kept byte for byte.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, TypeVar

import yaml

from fleet.atomic import write_atomic
from fleet.errors import InputError

T = TypeVar("T")


@contextmanager
def locked(path: Path):
    """Hold the lock of the inventory at `path` (its directory's): every writer of it takes this one."""
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def edit(path: Path, change: Callable[[str], str], validate: Callable[[Path], T], *, commit: bool = True,
         new_file: str = "") -> T:
    """Under the lock: read the text (`new_file` where there is no file yet), change it, write it to a temp file
    that validate(temp) must accept (its answer is returned; an exception leaves the file as it was), rename it
    over the old one. With commit=False only validated: what the edit would make.
    Through a symbolic link, the file it points to is edited and the link kept (a rename over the link would replace
    it with a copy and leave the real inventory as it was)."""
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path):
        exists = path.exists()
        text = path.read_text(encoding="utf-8") if exists else new_file
        mode = path.stat().st_mode & 0o777 if exists else 0o644
        return write_atomic(path, change(text).encode("utf-8"), mode=mode, validate=validate, commit=commit)


def hosts_block(lines: list[str]) -> tuple[int, int] | None:
    """(the line index of the top-level `hosts:`, the index where its block ends), None where there is none."""
    head = next((i for i, line in enumerate(lines) if line.startswith("hosts:")), None)
    if head is None:
        return None
    end = next((i for i in range(head + 1, len(lines))
                if lines[i].strip() and not lines[i][0].isspace() and not lines[i].startswith("#")), len(lines))
    return head, end


# -- a host's entry, as fleet bootstrap writes it ---------------------------------------------------------------

def entry_text(name: str, target, indent: str = "  ", *, when: str | None = None) -> str:
    when = when or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"{indent}{name}:{' ' * max(1, 30 - len(indent) - len(name))}# added by fleet bootstrap, {when}",
             f"{indent * 2}address: {_scalar(target.address)}", f"{indent * 2}port: {target.port}",
             f"{indent * 2}user: {_scalar(target.user)}"]
    if target.key:
        lines.append(f"{indent * 2}key: {_scalar(target.key)}")
    if target.vars or target.pins:   # this pod's own: the other hosts keep theirs (and fleet's pins)
        lines.append(f"{indent * 2}vars:" + ("                  # --set at bootstrap" if target.vars else ""))
        lines += [f"{indent * 3}{name}: {_value(value)}" for name, value in target.vars.items()]
    if target.pins:
        lines.append(f"{indent * 3}cuda_keyring_pins:   # --keyring-pins: this pod's mirror's cuda-keyring .debs, "
                     "by sha256")
        lines += [f"{indent * 4}{_scalar(url)}: {_scalar(digest)}" for url, digest in sorted(target.pins.items())]
    return "\n".join(lines) + "\n"


def _value(value) -> str:
    """A --set value (typed as its default: true/false, a whole number, else text) as YAML that reads back the same."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _scalar(str(value))


def _scalar(value: str) -> str:
    """A YAML scalar that reads back as this very string: bare where safe, else double-quoted."""
    try:
        plain = yaml.safe_load(value) == value and "#" not in value and ": " not in value
    except yaml.YAMLError:
        plain = False
    return value if plain else json.dumps(value)


_HOSTS_LINE = re.compile(r"^hosts:[ \t]*(?P<value>\{[ \t]*\}|~|null)?[ \t]*(?P<comment>#.*)?$")


def insert_host(text: str, name: str, target, *, when: str | None = None, where: str = "the inventory") -> str:
    """`text` with the host appended under `hosts:` (created when absent); every other line kept as it is.
    `target`: what the entry says (address, port, user, key, vars, pins: fleet.workflows.ssh_line.Target)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    block = hosts_block(lines)
    if block is None:
        gap = "\n" if lines and lines[-1].strip() else ""
        return "".join(lines) + gap + "hosts:\n" + entry_text(name, target, when=when)
    head, end = block
    match = _HOSTS_LINE.match(lines[head].rstrip("\n"))
    if not match:
        raise InputError(f"'hosts:' is written on one line ({{...}}); fleet bootstrap appends entries as text to "
                         "keep your comments: write one host per line under 'hosts:'", path=where, line=head + 1)
    if match["value"]:  # hosts: {} or hosts: ~  ->  hosts:
        lines[head] = "hosts:" + (f"  {match['comment']}" if match["comment"] else "") + "\n"
    body = [i for i in range(head + 1, end) if lines[i].strip() and lines[i][0].isspace()]
    last = body[-1] if body else head
    indent = next((lines[i][:len(lines[i]) - len(lines[i].lstrip())] for i in body
                   if not lines[i].lstrip().startswith("#")), "  ")
    lines.insert(last + 1, entry_text(name, target, indent, when=when))
    return "".join(lines)


def without_host(text: str, name: str, where: str) -> str:
    """The inventory's text without the host's entry under the top-level `hosts:` (its lines up to the next entry
    or top-level key); every other line kept as it was."""
    lines = text.splitlines(keepends=True)
    start, end, _ = _entry_span(lines, name, where, "take it out by hand")
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1                                         # the blank lines after it stay
    return "".join(lines[:start] + lines[end:])


def with_host_vars(text: str, name: str, values: dict, where: str) -> str:
    """The inventory's text with `values` added under the host's own `vars:` (made where it has none): a retried
    `fleet bootstrap --set` keeps what it was given. Names the entry already sets are the caller's to refuse."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    fix = f"write them under its vars: by hand ({', '.join(f'{n}: {_value(v)}' for n, v in values.items())})"
    start, end, depth = _entry_span(lines, name, where, fix)
    body = [i for i in range(start + 1, end) if lines[i].strip() and not lines[i].lstrip().startswith("#")]
    if not body:
        raise InputError(f"{name!r} is written on one line; fleet adds --set values as text: {fix}", path=where,
                         line=start + 1)
    child = lines[body[0]][:len(lines[body[0]]) - len(lines[body[0]].lstrip())]
    head = next((i for i in body if lines[i].startswith(child + "vars:")), None)
    if head is None:
        new = [f"{child}vars:                  # --set at bootstrap\n"]
        new += [f"{child}{child[depth:] or '  '}{n}: {_value(v)}\n" for n, v in values.items()]
        return "".join(lines[:body[-1] + 1] + new + lines[body[-1] + 1:])
    if lines[head].split(":", 1)[1].split("#", 1)[0].strip():
        raise InputError(f"{name!r}'s vars: are written on one line; fleet adds --set values as text: {fix}",
                         path=where, line=head + 1)
    after = [i for i in body if i > head]
    stop = next((i for i in after if len(lines[i]) - len(lines[i].lstrip()) <= len(child)), end)
    block = [i for i in after if i < stop]
    last = block[-1] if block else head
    indent = lines[block[0]][:len(lines[block[0]]) - len(lines[block[0]].lstrip())] if block else child * 2
    new = [f"{indent}{n}: {_value(v)}   # --set at bootstrap\n" for n, v in values.items()]
    return "".join(lines[:last + 1] + new + lines[last + 1:])


def _entry_span(lines: list[str], name: str, where: str, fix: str) -> tuple[int, int, int]:
    """(the index of the host's `NAME:` line under `hosts:`, the index where its entry ends, the entries' indent)."""
    block = hosts_block(lines)
    if block is None:
        raise InputError(f"{where}: no top-level 'hosts:' block holding {name!r}; {fix}")
    head, stop = block
    entries = [i for i in range(head + 1, stop) if lines[i].strip() and not lines[i].lstrip().startswith("#")]
    depth = min((len(lines[i]) - len(lines[i].lstrip()) for i in entries), default=0)   # the entries' own indent
    start = next((i for i in entries if len(lines[i]) - len(lines[i].lstrip()) == depth and ":" in lines[i]
                  and lines[i].split(":", 1)[0].strip().strip("'\"") == name), None)
    if start is None:
        raise InputError(f"{where}: {name!r} is not written as its own entry under 'hosts:' (one host per line, "
                         f"as fleet bootstrap writes them); {fix}")
    # the next entry, a comment beside it, or the block's end
    end = next((i for i in range(start + 1, stop)
                if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= depth), stop)
    return start, end, depth
