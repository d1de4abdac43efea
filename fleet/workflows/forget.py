"""`fleet forget`: a pod that is gone, taken out of everything fleet keeps about it.

A rented pod vanishes; `fleet bootstrap` had added it to an inventory, recorded its facts and trusted its host
key. Forgetting it takes out exactly those: its entry in the inventory (as text: every other line, comment and
blank kept byte for byte; the new file validated, then renamed over the old one), its facts record and the
previous one, and its key in fleet's own known_hosts file (only where no other host of the inventory uses the same
address and port; the user's ~/.ssh/known_hosts is never touched). Nothing is contacted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path

from fleet.atomic import write_atomic
from fleet.errors import InputError
from fleet.inventory import Inventory, load_inventory
from fleet.inventory.edit import edit, without_host
from fleet import yamlsrc
from fleet.record import store


@dataclass
class Forgotten:
    name: str
    removed: list[str] = field(default_factory=list)     # what was taken out, one phrase each
    kept: list[str] = field(default_factory=list)        # what was left, and why


def forget(inventory_path: Path, name: str, known_hosts: Path, *, dry_run: bool = False) -> Forgotten:
    inventory = load_inventory(inventory_path, keys_must_exist=False)   # the pod's key may be gone with it
    if name not in inventory.hosts:
        hint = yamlsrc.closest(name, set(inventory.hosts)).replace("valid keys", "hosts")
        raise InputError(f"no host named {name!r} in {inventory_path}: `fleet forget` takes host names from that "
                         f"inventory (--inventory FILE for another){hint}")
    host = inventory.hosts[name]
    groups = sorted(g for g, members in inventory.groups.items() if name in members)
    if groups:
        raise InputError(f"{name!r} is a member of the group(s) {', '.join(groups)} in {inventory_path}; take it out "
                         "of them first (fleet forget removes only a host entry, as fleet bootstrap writes it)")
    done = Forgotten(name)
    edit(inventory_path, lambda text: without_host(text, name, str(inventory_path)),   # under bootstrap's lock
         lambda temp: _still_loads(temp, inventory_path, name), commit=not dry_run)
    done.removed.append(f"its entry in {inventory_path}")
    for previous in (False, True):
        path = store.record_path(inventory.facts_dir, name, previous=previous)
        if path.exists():
            if not dry_run:
                path.unlink()
            done.removed.append(f"its {'previous ' if previous else ''}facts record {path}")
    if host.connection != "ssh":
        return done
    shared = sorted(h.name for h in inventory.hosts.values()
                    if h.name != name and h.connection == "ssh" and (h.address, h.port) == (host.address, host.port))
    shared += _elsewhere(inventory_path, host)
    if shared:
        done.kept.append(f"the host key of {host.address}:{host.port} in {known_hosts}: "
                         f"{', '.join(shared)} uses that address too")
        return done
    count = drop_known_host(known_hosts, host.address, host.port, dry_run=dry_run)
    if count:
        done.removed.append(f"{count} host key line(s) of {host.address}:{host.port} in {known_hosts}")
    return done


def _elsewhere(inventory_path: Path, host) -> list[str]:
    """'NAME in FILE' for each host of another known inventory (fleet/inventory/home.py) at the same address and port:
    its key is theirs too."""
    import os

    from fleet.inventory.home import known_inventories

    found = []
    for path in known_inventories():
        if os.path.realpath(path) == os.path.realpath(inventory_path):
            continue
        try:
            other = load_inventory(path, keys_must_exist=False)
        except (InputError, OSError):
            continue
        found += [f"{h.name} in {path}" for h in other.hosts.values()
                  if h.connection == "ssh" and (h.address, h.port) == (host.address, host.port)]
    return found


def _still_loads(temp: Path, path: Path, name: str) -> None:
    """The file without the host still loads, unless it has no host left (an inventory of pods all gone)."""
    doc = yamlsrc.load(temp).data
    if isinstance(doc, dict) and not doc.get("hosts"):
        return
    try:
        result: Inventory = load_inventory(temp, keys_must_exist=False)
    except InputError as exc:
        raise InputError(f"taking {name!r} out of {path} would break it ({str(exc).replace(str(temp), str(path))}); "
                         "nothing was changed: edit the file by hand") from None
    if name in result.hosts:
        raise InputError(f"{path}: {name!r} is still there after taking its entry out (written twice?); "
                         "nothing was changed: edit the file by hand")


def drop_known_host(path: Path, address: str, port: int, *, dry_run: bool = False) -> int:
    """Take the lines naming address:port (as ssh writes it: `addr` for port 22, else `[addr]:port`; hashed or
    not) out of a known_hosts file; returns how many. Every other line kept."""
    if not path.is_file():
        return 0
    want = address if port == 22 else f"[{address}]:{port}"
    kept, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        fields = line.split()
        names = fields[0].split(",") if fields and not line.lstrip().startswith("#") else []
        if names and names[0].startswith("@"):
            names = fields[1].split(",") if len(fields) > 1 else []
        if any(n == want or _hashed_match(n, want) for n in names):
            dropped += 1
            continue
        kept.append(line)
    if dropped and not dry_run:
        write_atomic(path, "".join(kept).encode("utf-8"), mode=path.stat().st_mode & 0o777)
    return dropped


def _hashed_match(entry: str, host: str) -> bool:
    """`|1|salt|hash` (HashKnownHosts): HMAC-SHA1 of the host name keyed by the salt (sshd(8), known_hosts)."""
    if not entry.startswith("|1|"):
        return False
    try:
        _, _, salt, digest = entry.split("|")
        mac = hmac.new(base64.b64decode(salt), host.encode(), hashlib.sha1).digest()
        return hmac.compare_digest(mac, base64.b64decode(digest))
    except (ValueError, TypeError):
        return False
