"""The lab: simulated Thor, Spark and H100 hosts over real SSH (see README.md beside this file).

    up(inventory, names=None, root=None)   start (or keep) one host per inventory host with `lab:`
    down(inventory=None, root=None)        stop them; no process, mount or state file stays behind
    status(root=None)                      what runs
    reset(inventory, names, root=None)     fresh hosts: stop, forget their writes, start

`inventory` is an Inventory or the path of one; `up` writes the lab's `key:` and `known_hosts:` into a path.
A sibling package of fleet: it uses fleet (inventory, errors), fleet never imports it. Needs root and
OpenSSH's sshd (LabError otherwise).
"""

from __future__ import annotations

from .control import down, reset, status, up

__all__ = ["up", "down", "status", "reset"]
