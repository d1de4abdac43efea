"""Where an inventory host really is, the way `ssh` would find it: ~/.ssh/config applied to its address.

    Host thor
        HostName 10.20.0.7
        User nvidia
        IdentityFile ~/.ssh/thor_ed25519
        ProxyJump bastion.example.org        # or user@bastion:2222, or a chain: jump1,jump2

    hosts: {thor: {address: thor}}         # fleet reaches 10.20.0.7 as nvidia, through the bastion

Precedence: what the inventory states explicitly (port:, user:, key:) wins over ~/.ssh/config, which wins
over fleet's defaults (port 22, user root). The config is looked up with the inventory's `address:`, as `ssh
ADDRESS` would. Jump hosts get their own config lookup (HostName, Port, User, IdentityFile); a jump's own
ProxyJump is not followed (write the whole chain on the target's line). ProxyCommand is not supported.
fabric's and invoke's config files (~/.fabric.yaml, /etc/invoke.yaml, ...) are never read.

Pure: reads one file, touches no network; imports paramiko only for its SSHConfig parser.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .inventory import Host

DEFAULT_USER = "root"   # fleet's default (pods log in as root); ssh's would be the local user


@dataclass
class Target:
    """One SSH hop: where to connect, as whom, with which keys."""

    alias: str                       # the name it was looked up by (inventory address or jump spec)
    hostname: str
    port: int = 22
    user: str = DEFAULT_USER
    key_files: list[str] = field(default_factory=list)
    jumps: list["Target"] = field(default_factory=list)   # first hop first

    @property
    def via(self) -> str:
        """' via bastion' for messages, or ''."""
        return "".join(f" via {jump.alias}" for jump in self.jumps)


def config_path(path: Path | None = None) -> Path:
    return Path(path) if path else Path(os.path.expanduser("~/.ssh/config"))


def load(path: Path | None = None):
    """The parsed ssh config (empty when the file does not exist)."""
    import paramiko

    path = config_path(path)
    if not path.is_file():
        return paramiko.SSHConfig()
    try:
        return paramiko.SSHConfig.from_path(str(path))
    except Exception as exc:  # paramiko raises plain exceptions for bad lines
        raise InputError(f"cannot read the ssh config: {exc}; fix the file or move it aside", path=str(path)) from None


def resolve(host: Host, path: Path | None = None) -> Target:
    """The target for an inventory host: inventory values that were given > ~/.ssh/config > defaults."""
    config = load(path)
    given = host.given if host.given is not None else {"port", "user", "key"}
    entry = config.lookup(host.address)
    target = _from_entry(host.address, entry, path)
    if "port" in given:
        target.port = host.port
    if "user" in given:
        target.user = host.user
    if "key" in given and host.key:
        target.key_files = [host.key]
    target.jumps = [_jump(spec, config, path) for spec in _jump_specs(entry.get("proxyjump"))]
    return target


def _from_entry(alias: str, entry: dict, path) -> Target:
    port = entry.get("port", "22")
    try:
        port_number = int(port)
    except ValueError:
        raise InputError(f"Port {port!r} for {alias} is not a number", path=str(config_path(path))) from None
    keys = [os.path.expanduser(k) for k in entry.get("identityfile", [])]
    return Target(alias, entry.get("hostname", alias), port_number, entry.get("user", DEFAULT_USER),
                  [k for k in keys if os.path.isfile(k)])


def _jump_specs(value: str | None) -> list[str]:
    if not value or value.strip().lower() == "none":
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


def _jump(spec: str, config, path) -> Target:
    """`[user@]host[:port]`, itself looked up in the config (as ssh does for -J hosts)."""
    user, _, rest = spec.rpartition("@")
    name, port = rest, None
    if rest.count(":") == 1:
        name, _, port = rest.partition(":")
    target = _from_entry(name, config.lookup(name), path)
    target.alias = spec
    if user:
        target.user = user
    if port:
        try:
            target.port = int(port)
        except ValueError:
            raise InputError(f"ProxyJump {spec!r} has a port that is not a number",
                             path=str(config_path(path))) from None
    return target
