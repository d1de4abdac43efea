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
A line ssh could not read, a bad Port or a ProxyJump that is not [user@]host[:port] (or ssh://...) is bad
input naming the config's file:line; `check` finds it for every host before any is contacted.
fabric's and invoke's config files (~/.fabric.yaml, /etc/invoke.yaml, ...) are never read.

Pure: reads one file, touches no network; imports paramiko only for its SSHConfig parser.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from fleet.errors import InputError
from fleet.inventory import Host

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


class Config:
    """The parsed file, and where each of its lines is: a bad value is named by file:line, as ssh would."""

    def __init__(self, parsed, path: Path, lines: list[str]):
        self.parsed, self.path, self.lines = parsed, path, lines

    def lookup(self, name: str) -> dict:
        return self.parsed.lookup(name)

    def error(self, keyword: str, value: str, message: str) -> InputError:
        """InputError at the first line setting `keyword` to `value` (the one `lookup` took: first wins)."""
        for number, text in enumerate(self.lines, 1):
            words = re.match(r"^\s*(\w+)(?:\s*=\s*|\s+)(.+?)\s*$", text)
            if words and words[1].lower() == keyword and words[2].strip('"') == value:
                return InputError(message, path=str(self.path), line=number)
        return InputError(message, path=str(self.path))


def load(path: Path | None = None) -> Config:
    """The parsed ssh config (empty when the file does not exist); a line ssh could not read either is an
    InputError naming file:line, raised before any host is contacted."""
    import paramiko

    path = config_path(path)
    if not path.is_file():
        return Config(paramiko.SSHConfig(), path, [])
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InputError(f"cannot read the ssh config ({reason}): fix the file or move it aside",
                         path=str(path)) from None
    for number, line in enumerate(lines, 1):
        # paramiko's errors are about one line but do not say which: parse line by line to name it.
        try:
            paramiko.SSHConfig().parse([line])
        except paramiko.ssh_exception.ConfigParseError as exc:
            raise InputError(_unreadable(line.strip(), str(exc)), path=str(path), line=number) from None
    parsed = paramiko.SSHConfig()
    parsed.parse(lines)
    return Config(parsed, path, lines)


def _unreadable(line: str, reason: str) -> str:
    if reason.startswith("Unparsable line"):
        return (f"`{line}` is not a `Keyword value` line: give it its value (e.g. `Port 2222`), "
                "or delete the line")
    return f"`{line}` cannot be read ({reason}): fix it as ssh_config(5) describes, or delete the line"


def check(hosts: list[Host], path: Path | None = None) -> None:
    """Resolve every SSH host now: a bad ~/.ssh/config is bad input (exit 2) found before any host is
    contacted, never one failed host per worker thread."""
    ssh_hosts = [host for host in hosts if host.connection != "local"]
    if ssh_hosts:
        config = load(path)
        for host in ssh_hosts:
            resolve(host, path, config=config)


def resolve(host: Host, path: Path | None = None, *, config: Config | None = None) -> Target:
    """The target for an inventory host: inventory values that were given > ~/.ssh/config > defaults."""
    config = config or load(path)
    given = host.given if host.given is not None else {"port", "user", "key"}
    entry = config.lookup(host.address)
    target = _from_entry(host.address, entry, config)
    if "port" in given:
        target.port = host.port
    if "user" in given:
        target.user = host.user
    if "key" in given and host.key:
        target.key_files = [host.key]
    jumps = entry.get("proxyjump")
    target.jumps = [_jump(spec, config, jumps, host.address) for spec in _jump_specs(jumps)]
    for hop in [target, *target.jumps]:
        for key in hop.key_files:
            _key_mode_ok(key, host.name)
    return target


def _key_mode_ok(path: str, host: str) -> None:
    """Refuse a private key others may read, as ssh does (OpenSSH sshkey_perm_ok: a key file of this user's with
    any group or other permission bit is "UNPROTECTED PRIVATE KEY FILE!" and is not used)."""
    try:
        st = os.stat(os.path.expanduser(path))
    except OSError:
        return   # a missing key is the inventory's error (or ssh's), said where it is read
    if st.st_uid == os.getuid() and st.st_mode & 0o077:
        raise InputError(f"{host}: private key {path} is readable by others (mode {stat.S_IMODE(st.st_mode):04o}); "
                         f"ssh refuses such a key (UNPROTECTED PRIVATE KEY FILE), and so does fleet: chmod 600 {path}")


def _from_entry(alias: str, entry: dict, config: Config) -> Target:
    port = entry.get("port", "22")
    if not (port.isdigit() and 0 < int(port) < 65536):
        raise config.error("port", port, f"Port {port!r} (for {alias}) is not a port number: write one from 1 to "
                                         "65535, e.g. Port 2222")
    keys = [os.path.expanduser(k) for k in entry.get("identityfile", [])]
    return Target(alias, entry.get("hostname", alias), int(port), entry.get("user", DEFAULT_USER),
                  [k for k in keys if os.path.isfile(k)])


def _jump_specs(value: str | None) -> list[str]:
    if not value or value.strip().lower() == "none":
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


# ssh(1) -J and ssh_config(5) ProxyJump: [user@]host[:port], or an ssh URI ssh://[user@]host[:port];
# an IPv6 address with a port is written in brackets ([2001:db8::1]:2222).
_JUMP = re.compile(r"^(?:ssh://)?(?:(?P<user>[^@/\s:]+)@)?"
                   r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]"                                  # [v6]
                   r"|(?P<name>[A-Za-z0-9_][A-Za-z0-9_.%-]*"                         # a name or IPv4
                   r"|[0-9A-Fa-f]*:[0-9A-Fa-f]*:[0-9A-Fa-f:.]*))"                    # a bare v6 (no port)
                   r"(?::(?P<port>\d+))?/?$")


def _jump(spec: str, config: Config, value: str, alias: str) -> Target:
    """One hop, itself looked up in the config (as ssh does for -J hosts)."""
    match = _JUMP.match(spec)
    port = match and match["port"]
    if not match or (port and not 0 < int(port) < 65536):
        raise config.error("proxyjump", value, f"ProxyJump {spec!r} (for {alias}) is not a jump host ssh can read: "
                                               "write [user@]host[:port] (several: comma-separated), e.g. "
                                               "ProxyJump admin@bastion.example.org:2222")
    name = match["v6"] or match["name"]
    target = _from_entry(name, config.lookup(name), config)
    target.alias = spec
    if match["user"]:
        target.user = match["user"]
    if port:
        target.port = int(port)
    return target
