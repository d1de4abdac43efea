"""What a failure needs: one sentence per class of failure, with the exact command to run, printed once per host.

    fix_for(reason, host="pod-a", inventory=None) -> "... then `fleet apply --limit pod-a` ..."

The class is read from the failure's own words (apt's, dpkg's, pip's, uv's, the engine's, verify's), first match
wins; the commands name the host and, where it is not the default one (fleet/inventory/home.py), the inventory.
"""

from __future__ import annotations

import re
import shlex

# (pattern, fix): {apply}, {verify}, {forget}, {run} are the host's commands
_FIXES = (
    (r"connection lost during this task|not run: the connection was lost|the connection was lost",
     "the connection to {host} was lost mid-apply: once it answers again (`{run} -- true`), run `{apply}`: what "
     "finished is checked, not redone; a pod that is gone for good: `{forget}`"),
    (r"sha256 of \S*keyring\S* is \w+, expected",
     "the cuda-keyring .deb {host} downloaded is not the one fleet pins: where its mirror serves its own keyring, "
     "pin that one for this host (its vars: cuda_keyring_pins, or bootstrap's --keyring-pins FILE), then `{apply}`; "
     "anywhere else the download was altered on its way: do not install it"),
    # what a user's own startup line makes python3/pip resolve to (issue 45: fleet/remote/resolve_rules.py's causes):
    # fleet's hook does not rewrite it, so apply again would change nothing
    (r"an alias: `alias |a shell function defined at |hashed to \S+ by |PYTHONPATH=.*\(set at |"
     r"PYTHONHOME=.*\(set at |a \.pth file site\.py reads|the user site \S+ holds a torch|activated at .*"
     r"\((?:VIRTUAL_ENV|CONDA_PREFIX);|(?:VIRTUAL_ENV|CONDA_PREFIX)=\S+ \(set at .* while `python3`",
     "a line of {host}'s own startup files (named above, with the fix of that cause) decides which python a shell "
     "runs: fleet leaves lines it does not own to you (a second apply changes nothing there); edit that line, then "
     "`{verify}`"),
    (r"torch_imports|torch_installed|no torch in|No module named|ModuleNotFoundError|cannot import name",
     "a package verify imports is gone from {host}'s venv (removed or broken by hand): `{apply}` installs it again "
     "and verifies"),
    (r"\bstale\b|fingerprint (?:changed|differs)",
     "what verify proved has changed since it passed (torch, the driver, a variable it reads): `{verify}` runs it "
     "again"),
    (r"Temporary failure resolving|Could not resolve|Failed to fetch|Connection timed out|Network is unreachable",
     "the host cannot reach a package server: check its DNS and network (`{run} -- getent hosts "
     "developer.download.nvidia.com`), then `{apply}`"),
    (r"NO_PUBKEY|not signed|EXPKEYSIG|The following signatures",
     "an apt source's key is missing or expired: the cuda_toolkit role installs NVIDIA's keyring; remove a stale "
     "source under /etc/apt/sources.list.d that names another key, then `{apply}`"),
    (r"Unable to locate package|has no installation candidate|No matching distribution|No solution found|"
     r"Could not find a version",
     "the package or version is not offered to this host: check the variable that names it (fleet decide "
     "facts/HOST.json says which source and version fleet chose) and give it with `--set NAME=VALUE`, then "
     "`{apply}`"),
    (r"No space left on device|exit 28\)|GB needed",
     "the disk is full: free space, or point the venv and pip's cache at a bigger volume "
     "(`{apply} --set python_env=/workspace/venv --set pip_cache_dir=/workspace/cache`)"),
    (r"dpkg was interrupted|dpkg --configure -a|held broken packages|unmet dependencies",
     "apt is in a broken state: `{run} -- 'dpkg --configure -a && apt-get -f install -y'`, then `{apply}`"),
    (r"not run: it needs '",
     "fix the task it needs (above); this one runs on the next `{apply}`"),
    (r"Permission denied|sudo: a password is required|not in the sudoers",
     "the user cannot do this: connect as root, or give the user passwordless sudo, then `{apply}`"),
)
_GENERIC = ("read the task's output above (-v shows it whole); once the cause is fixed, `{apply}`: the tasks that "
            "finished are checked, not redone")


def commands(host: str | None, inventory: str | None = None) -> dict[str, str]:
    """The host's commands, as a person types them (the inventory named only where it is not the default)."""
    inv = f" {shlex.quote(str(inventory))}" if inventory and not _default(inventory) else ""
    limit = f" --limit {shlex.quote(host)}" if host else " --limit HOST"
    forget = (f"fleet forget {shlex.quote(host) if host else 'HOST'}"
              + (f" --inventory {shlex.quote(str(inventory))}" if inv else ""))
    return {"host": host or "the host", "apply": f"fleet apply{inv}{limit}", "verify": f"fleet verify{inv}{limit}",
            "run": f"fleet run{inv}{limit}", "forget": forget}


def fix_for(reason: str, host: str | None = None, inventory: str | None = None) -> str:
    """One sentence on what a failure needs; where fleet cannot tell from the output, where to look."""
    words = commands(host, inventory)
    for pattern, fix in _FIXES:
        if re.search(pattern, reason or ""):
            return fix.format(**words)
    return _GENERIC.format(**words)


def _default(inventory: str) -> bool:
    import os

    from fleet.inventory.home import default_inventory

    return os.path.realpath(os.path.expanduser(str(inventory))) == os.path.realpath(default_inventory())
