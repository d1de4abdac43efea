"""The SSH line a provider shows for a pod (`ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519`, `-o` options,
`user@host:port`, `host`) read as ssh reads it: the Target that `fleet bootstrap` connects to and writes into the
inventory. Bad input is an InputError naming what to fix; what ssh would do that fleet does not (a jump host, a proxy,
RunPod's proxied line) is refused, an option fleet leaves to ssh is noted.

    target = parse_target("ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519")
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from fleet import parse
from fleet.errors import InputError

# ssh's own flags: those that take a value, and those that do not (man ssh). Only -p -i -l and some -o
# options matter to fleet; the rest are noted and ignored, except a jump host, which fleet cannot follow.
_WITH_VALUE = set("BbcDEeFIiJLlmOoPpQRSWw")
_NO_VALUE = set("46AaCfGgKkMNnqsTtVvXxYy")
_ADDRESS_RE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
                         r"|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)\Z")
_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\Z")
_DEST_RE = re.compile(r"^(?:ssh://)?(?:(?P<user>[^@/]+)@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:/@]+))"
                      r"(?::(?P<port>[^/]*))?/?\Z")


@dataclass
class Target:
    user: str
    address: str
    port: int
    key: str | None = None            # as written (~ kept), or absolute
    notes: list[str] = field(default_factory=list)
    # --keyring-pins FILE: {keyring URL: sha256} of the keyring .debs this pod's mirror serves at NVIDIA's URLs (a
    # lab's, a site mirror's); written into THIS pod's entry only (its vars: cuda_keyring_pins), never the others'
    pins: dict[str, str] = field(default_factory=dict)
    # --set NAME=VALUE of the bootstrap that adds the pod: the settings it was provisioned with, written into its
    # entry's vars so that `fleet apply INVENTORY --limit NAME` (the summary's "next") keeps them
    vars: dict = field(default_factory=dict)

    def ssh_line(self) -> str:
        """The line to connect with, in the form providers show it."""
        parts = ["ssh", f"{self.user}@{self.address}", "-p", str(self.port)] + (["-i", self.key] if self.key else [])
        return " ".join(p if p.startswith("~/") and shlex.quote(p[2:]) == p[2:] else shlex.quote(p) for p in parts)


def parse_target(line: str, *, port: int | None = None, key: str | None = None, cwd: Path | None = None) -> Target:
    """An SSH line as pasted (`ssh root@IP -p PORT -i KEY`, `-o` options, `user@host:port`, `host`) -> Target.

    `port` and `key` are fleet's own -p/-i; they may repeat the line's, never contradict it.
    """
    try:
        words = shlex.split(line.replace("\\\n", " ").strip().lstrip("$ "))  # a line pasted with continuations
    except ValueError as exc:
        raise InputError(f"cannot read the SSH line ({exc}); paste it inside single quotes") from None
    if words and (words[0] == "ssh" or words[0].endswith("/ssh")):
        words = words[1:]
    found: dict[str, str] = {}
    notes: list[str] = []
    dests: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1 and len(dests) < 2:  # as ssh: options around the host
            i = _flag(words, i, found, notes)
            continue
        dests.append(word)
        i += 1
    if not dests:
        raise InputError("no host in the SSH line; write it as the provider shows it, e.g. "
                         "'ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519'")
    if len(dests) > 1:
        raise InputError(f"the SSH line runs a command ({' '.join(dests[1:])!r}) after the host; paste only the "
                         "connection part, e.g. 'ssh root@203.0.113.10 -p 17322'")
    user, address, dest_port = _destination(dests[0])
    _refuse_proxied(address)
    user = _agree_all("user", [("the SSH line's -l", found.get("user")), ("user@host", user)]) or "root"
    ports = [("the SSH line's -p", found.get("port")), ("host:port", dest_port),
             ("-p", None if port is None else str(port))]
    port_text = _agree_all("port", ports)
    key = _agree_all("key", [("the SSH line's -i", found.get("key")), ("-i", key)])
    if not _USER_RE.match(user):
        raise InputError(f"user {user!r} in the SSH line is not a user name; write e.g. root@203.0.113.10")
    return Target(user, address, _port("22" if port_text is None else port_text), _key(key, cwd) if key else None, notes)


def _refuse_proxied(address: str) -> None:
    """RunPod's basic SSH goes through its proxy (POD-ID@ssh.runpod.io): an interactive shell only, no SCP/SFTP
    and no `ssh host cmd`, which is how fleet runs everything (docs.runpod.io/pods/configuration/use-ssh:
    "Basic SSH ... SCP/SFTP support: No"; "Full SSH (public IP) ... Yes")."""
    if address.lower().rstrip(".") == "ssh.runpod.io" or address.lower().endswith(".ssh.runpod.io"):
        raise InputError("this is RunPod's proxied SSH line (...@ssh.runpod.io), which gives an interactive shell "
                         "only: fleet needs to run commands. Use the pod's 'SSH over exposed TCP' line instead "
                         "(ssh root@IP -p PORT -i KEY; expose TCP port 22 in the pod's settings if it is missing)")


def _flag(words: list[str], i: int, found: dict, notes: list[str]) -> int:
    """Read one ssh option cluster at words[i] (e.g. -p 22, -p22, -tt, -oPort=22); returns the next index."""
    word = words[i]
    for pos in range(1, len(word)):
        letter = word[pos]
        if letter in _NO_VALUE:
            notes.append(f"ssh option -{letter} ignored")
            continue
        if letter not in _WITH_VALUE:
            raise InputError(f"unknown ssh option -{letter} in the SSH line; remove it")
        value = word[pos + 1:]
        if not value:
            if i + 1 >= len(words):
                raise InputError(f"ssh option -{letter} in the SSH line has no value; e.g. -p 17322")
            i, value = i + 1, words[i + 1]
        _option(letter, value, found, notes)
        break
    return i + 1


def _option(letter: str, value: str, found: dict, notes: list[str]) -> None:
    named = {"p": "port", "i": "key", "l": "user"}
    if letter in named:
        _set(found, named[letter], value)
    elif letter == "J":
        raise InputError(f"the SSH line goes through a jump host (-J {value}), which fleet does not take from the "
                         f"line: {_VIA_CONFIG}")
    elif letter == "o":
        name, _, setting = value.replace("=", " ", 1).partition(" ")
        lowered = name.strip().lower()
        honoured = {"port": "port", "user": "user", "identityfile": "key"}.get(lowered)
        if lowered in _ROUTE_OPTIONS:
            # these change where ssh connects: ignoring them would connect straight to the address and trust
            # whatever key answers there (issue 26)
            raise InputError(f"the SSH line sets -o {value}, which changes where ssh connects and fleet does not take "
                             f"from the line: {_VIA_CONFIG}")
        if honoured:
            _set(found, honoured, setting.strip())
        else:
            notes.append(f"ssh option -o {value} ignored (fleet checks host keys itself)")
    else:
        notes.append(f"ssh option -{letter} {value} ignored")


# ssh options that route the connection elsewhere than the line's address (ssh_config(5))
_ROUTE_OPTIONS = ("proxyjump", "proxycommand", "hostname")
_VIA_CONFIG = ("put the route in ~/.ssh/config (Host NAME, with HostName and ProxyJump, which fleet honours) and "
               "bootstrap 'ssh root@NAME -p PORT'")


def _set(found: dict, what: str, value: str) -> None:
    if found.get(what, value) != value:
        raise InputError(f"the SSH line gives two {what}s ({found[what]!r} and {value!r}); keep one")
    found[what] = value


def _destination(dest: str) -> tuple[str | None, str, str | None]:
    if dest.count(":") > 1 and "[" not in dest and not dest.startswith("ssh://"):
        user, _, address = dest.rpartition("@")         # a bare IPv6 address: its colons are not a port
        return user or None, _address(address), None
    match = _DEST_RE.match(dest)
    if not match:
        raise InputError(f"cannot read {dest!r} as a host; write user@host, user@host:port or host")
    return match["user"], _address(match["v6"] or match["host"]), match["port"]


def _address(address: str) -> str:
    if not address or not _ADDRESS_RE.match(address):
        raise InputError(f"{address!r} is not a host name or IP address; copy the address from the provider's "
                         "SSH line")
    return address


def _agree_all(what: str, sources: list[tuple[str, str | None]]) -> str | None:
    given = [(where, value) for where, value in sources if value is not None]
    for where, value in given[1:]:
        if value != given[0][1]:
            raise InputError(f"{given[0][0]} says {what} {given[0][1]!r} but {where} says {value!r}; give one")
    return given[0][1] if given else None


def _port(text: str) -> int:
    try:
        return parse.count(text, most=65535)   # what -p and the inventory's port: take
    except parse.Rejected:
        raise InputError(f"port {text!r} in the SSH line is not a number from 1 to 65535") from None


def _key(key: str, cwd: Path | None) -> str:
    """Keep ~/ as the user wrote it (the inventory expands it); make a relative path absolute."""
    path = Path(os.path.expanduser(key))
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
        key = str(path)
    if not path.is_file():
        raise InputError(f"key file {key!r} does not exist ({path}); fix the -i path")
    return key
