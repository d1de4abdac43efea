"""One home for pods: the inventory every command uses when none is named, and the inventories fleet knows of.

    default_inventory()   $FLEET_INVENTORY, else ~/.config/fleet/pods.yaml ($XDG_CONFIG_HOME/fleet/pods.yaml)
    known_inventories()   that one, plus every inventory `fleet bootstrap` has written a pod into
    remember(path)        add an inventory to that list (<config>/fleet/inventories, one absolute path a line)

Why a user-level file and not inventories/pods.yaml under the current directory: pods are the renter's, not a
checkout's; bootstrap, apply, facts, validate and forget run from anywhere and must find the same pods (a pod
bootstrapped from one directory and applied from another landed in two inventories, and following the README
inside a clone wrote pods into the clone). Why a list of known inventories: `fleet forget` keeps a host key another
inventory still uses, and bootstrap names a pod already known by its address instead of adding it twice.
"""

from __future__ import annotations

import os
from pathlib import Path

from fleet.atomic import write_atomic


def config_dir() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "fleet"


def default_inventory(cwd: Path | None = None) -> Path:
    named = os.environ.get("FLEET_INVENTORY")
    if named:
        return (cwd or Path.cwd()) / os.path.expanduser(named)
    return config_dir() / "pods.yaml"


def shown(path: Path) -> str:
    """A path as a person types it: ~/... under the home directory."""
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if home != "/" and (text == home or text.startswith(home + "/")) else text


def _listing() -> Path:
    return config_dir() / "inventories"


def known_inventories() -> list[Path]:
    """The default inventory and every one bootstrap wrote into that still exists, each once."""
    paths = [default_inventory()]
    try:
        paths += [Path(line) for line in _listing().read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        pass
    seen, found = set(), []
    for path in paths:
        key = os.path.realpath(path)
        if key not in seen and path.is_file():
            seen.add(key)
            found.append(path)
    return found


def remember(path: Path) -> None:
    from fleet.inventory.edit import locked

    listing = _listing()
    absolute = os.path.abspath(path)
    listing.parent.mkdir(parents=True, exist_ok=True)
    with locked(listing):    # two bootstraps at once both keep theirs
        try:
            lines = listing.read_text(encoding="utf-8").splitlines()
        except OSError:
            lines = []
        if absolute not in lines:
            write_atomic(listing, "".join(f"{line}\n" for line in [*lines, absolute]).encode("utf-8"), mode=0o600)
