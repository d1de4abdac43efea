"""A pod's entry in the inventory, as `fleet bootstrap` writes it: the name (derived from the address, or --name,
checked), whether the pod is there already (here, or in another inventory fleet knows: fleet/inventory/home.py), the
entry and later its vars added as text edits (fleet/inventory/edit.py: every other line and comment kept), each
validated by loading the edited file before it is renamed over the original: never a truncated or invalid file."""

from __future__ import annotations

import os
import re
from pathlib import Path

from fleet.errors import InputError
from fleet.inventory import NAME_RE, Host, Inventory, load_inventory
from fleet.inventory.edit import edit, entry_text, insert_host
from fleet.inventory.home import known_inventories
from fleet.workflows.ssh_line import Target

HEADER = "# Pods added by `fleet bootstrap` (one entry each; edit freely: comments are kept).\n"


def derive_name(target: Target, taken) -> str:
    """pod-<last octet>[-<port>] for an IP address, <first label>[-<port>] for a name; unique among `taken`."""
    if re.fullmatch(r"[\d.]+", target.address):
        base = "pod-" + target.address.rsplit(".", 1)[-1]
    elif ":" in target.address:
        base = "pod-" + (target.address.rstrip(":").rsplit(":", 1)[-1] or "v6")
    else:
        base = target.address.split(".")[0]
    base = re.sub(r"[^A-Za-z0-9._-]", "-", base).strip("-.")[:50] or "pod"
    if target.port != 22:
        base += f"-{target.port}"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def load_existing(path: Path) -> Inventory | None:
    """The inventory as it is; None when absent or when it has no hosts yet (load_inventory demands some)."""
    if not path.exists():
        return None
    from fleet import yamlsrc

    doc = yamlsrc.load(path).data
    if isinstance(doc, dict) and not doc.get("hosts"):
        return None
    return load_inventory(path)


def find_pod(inventory: Inventory | None, target: Target) -> Host | None:
    """The host already written for this address and port, if any."""
    for host in (inventory.hosts.values() if inventory else ()):
        if host.connection == "ssh" and host.address == target.address and host.port == target.port:
            return host
    return None


def known_elsewhere(inventory_path: Path, target: Target) -> None:
    """A pod another known inventory (fleet/inventory/home.py) holds by this address and port is named, not added
    twice: two entries would be two names, two facts records and one host key that forgetting either would drop."""
    for path in known_inventories():
        if os.path.realpath(path) == os.path.realpath(inventory_path):
            continue
        try:
            other = find_pod(load_existing(path), target)
        except (InputError, OSError):
            continue     # an inventory that no longer loads holds nothing fleet can name
        if other is not None:
            raise InputError(f"{target.user}@{target.address}:{target.port} is already {other.name!r} in {path}; "
                             f"bootstrap it there (--inventory {path}), or take it out first (fleet forget "
                             f"{other.name} --inventory {path})", path=str(path), line=other.line or None)


def check_name(name: str, inventory: Inventory | None, target: Target) -> None:
    if not NAME_RE.match(name):
        raise InputError(f"--name {name!r} must be letters, digits, '.', '_' or '-' (it names the facts file)")
    if inventory and (name in inventory.hosts or name in inventory.groups):
        raise InputError(f"{name!r} already names another host or group in {inventory.path}; choose another "
                         f"--name, or leave it out for a derived one")


def write_entry(path: Path, name: str, target: Target, *, commit: bool = True) -> Inventory:
    """Add the entry atomically: text edit -> temp file -> load_inventory must accept it -> rename.

    With commit=False the temp file is only validated (and removed): the Inventory the host would be in.
    """
    new = edit(path, lambda text: insert_host(text, name, target, where=str(path)),
               # inside the lock, before the rename: load_existing reads the inventory as it was
               lambda temp: _validated(temp, load_existing(path), name, target, path), commit=commit, new_file=HEADER)
    new.path = path
    return new


def entry_vars(path: Path, name: str) -> dict:
    """The variables the host's own entry sets (not its groups' nor the inventory's)."""
    from fleet import yamlsrc

    entry = ((yamlsrc.load(path).data or {}).get("hosts") or {}).get(name)
    return dict(entry.get("vars") or {}) if isinstance(entry, dict) and isinstance(entry.get("vars"), dict) else {}


def kept_values(pod: str, given: dict, own: dict, lines: dict) -> dict:
    """The --set values (checked) a retried bootstrap writes into the pod's entry: those it does not set yet. A value
    the entry sets otherwise is refused, naming its line: which of the two should last is the person's call."""
    for name, value in given.items():
        if name in own and own[name] != value:
            where = lines.get(name) or f"{pod}'s entry"
            raise InputError(f"{where}: {pod}'s entry sets {name}: {shown(own[name])} and --set says "
                             f"{shown(value)}; edit that line (or leave out --set {name}) and run the bootstrap again")
    return {name: value for name, value in given.items() if name not in own}


def shown(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def write_vars(path: Path, name: str, values: dict) -> Inventory:
    """Add `values` under the host's own vars: in its entry (as text, every other line kept), validated as bootstrap
    validates a new entry: the file loads and the host carries them."""
    from fleet.inventory.edit import with_host_vars

    def check(temp: Path) -> Inventory:
        new = load_inventory(temp)
        if any(new.hosts[name].vars.get(n) != v for n, v in values.items()):
            raise InputError(f"fleet could not add {', '.join(values)} to {name!r}'s vars in {path} as text; "
                             "write them there by hand")
        return new

    return edit(path, lambda text: with_host_vars(text, name, values, str(path)), check)


def _validated(temp: Path, old: Inventory | None, name: str, target: Target, path: Path) -> Inventory:
    manual = f"add it by hand:\n{entry_text(name, target)}"
    try:
        new = load_inventory(temp)
    except InputError as exc:
        raise InputError(f"adding {name!r} to {path} would break it ({str(exc).replace(str(temp), str(path))}); "
                         f"{manual}") from None
    host = new.hosts.get(name)
    kept = all(n in new.hosts and (new.hosts[n].address, new.hosts[n].port) == (h.address, h.port)
               for n, h in (old.hosts.items() if old else ()))
    pins_kept = host and (not target.pins or host.vars.get("cuda_keyring_pins") == target.pins) and all(
        host.vars.get(n) == v for n, v in target.vars.items())
    if not host or (host.address, host.port, host.user) != (target.address, target.port, target.user) or not kept \
            or not pins_kept:
        raise InputError(f"fleet could not add {name!r} to {path} as text without changing other entries; {manual}")
    return new
