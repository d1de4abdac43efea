"""Host keys, checked the way a careful person checks them (the policy SSHConnection opens hops with).

- Known keys come from the user's ~/.ssh/known_hosts, fleet's own known-hosts file, and the host's
  `known_hosts:` file from the inventory (the lab writes its own there: it generated its hosts' keys).
- An unknown key is refused unless --accept-new-host-keys; then it is recorded in fleet's file and its
  fingerprint printed. (A changed key is refused by SSHConnection, with both fingerprints.)
- known_hosts files are read line by line: a line fleet cannot use (`@cert-authority`, a line truncated by a
  crash) is skipped with a warning naming file:line, never an error for every host; a key marked `@revoked`
  is refused even where another line lists it (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT": @revoked wins).
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from pathlib import Path

import paramiko

from fleet.errors import HostKeyError
from fleet.connection.base import ConnectOptions


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def host_key_name(address: str, port: int) -> str:
    return address if port == 22 else f"[{address}]:{port}"


class Policy(paramiko.MissingHostKeyPolicy):
    """Unknown key: refuse, or (when the user said so) record it in fleet's known-hosts file."""

    def __init__(self, conn):
        self.conn = conn

    def missing_host_key(self, client, hostname, key):
        opts, host = self.conn.options, self.conn.host
        fp = fingerprint(key)
        revoked = self.conn.revoked.get(key.get_base64())
        if revoked:
            raise HostKeyError(f"{host.name}: the host key of {hostname} ({key.get_name()} {fp}) is marked @revoked "
                               f"in {revoked}; refusing to connect. Find out why it was revoked before trusting it")
        if not opts.accept_new_host_keys:
            raise HostKeyError(
                f"{host.name}: unknown host key for {hostname} ({key.get_name()} {fp}); check it and run again "
                "with --accept-new-host-keys to trust it")
        path = opts.fleet_known_hosts()
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            fh.flush()
            os.fsync(fh.fileno())
        client.get_host_keys().add(hostname, key.get_name(), key)
        if opts.on_new_host_key:
            opts.on_new_host_key(f"{host.name}: accepted new host key {key.get_name()} {fp} for {hostname} "
                                 f"(recorded in {path})")


def read_known_hosts(path: Path) -> tuple[list, dict[str, str], list[str]]:
    """(usable (entry, line number)s, {revoked base64 key: "file:line"}, warnings) of one known_hosts file; never raises for a
    bad line. A missing or unreadable file is no keys (and, when unreadable, a warning)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []
    except OSError as exc:
        return [], {}, [f"cannot read {path} ({exc}); its host keys are not used"]
    entries, revoked, problems = [], {}, []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        marker = line.split(None, 1)[0] if line.startswith("@") else None
        if marker not in (None, "@revoked"):
            problems.append(f"{where}: {marker} lines are not supported by fleet; skipped (host certificates "
                            "are not checked: list the host's own key instead)")
            continue
        entry = _entry(line.split(None, 1)[1] if marker and " " in line else ("" if marker else line), number)
        if entry is None:
            problems.append(f"{where}: unreadable known_hosts line skipped (truncated?); remove or fix it with "
                            f"ssh-keygen -R HOST -f {path}")
        elif marker == "@revoked":
            revoked[entry.key.get_base64()] = where
        else:
            entries.append((entry, number))
    return entries, revoked, problems


class KnownHosts:
    """One known_hosts file, read once: its usable entries indexed by plain host name (hashed names apart),
    its revoked keys and its warnings. `listed(name)` is what one connection needs: the keys listed for that
    name, plain or hashed, as paramiko would find them (exact names; no wildcards in either), each with its line."""

    def __init__(self, path: Path):
        self.path = path
        entries, self.revoked, self.problems = read_known_hosts(path)
        self.plain: dict[str, list[tuple[paramiko.PKey, int]]] = {}
        self.hashed: list[tuple[str, paramiko.PKey, int]] = []
        for entry, number in entries:
            for name in entry.hostnames:
                if name.startswith("|1|"):
                    self.hashed.append((name, entry.key, number))
                else:
                    self.plain.setdefault(name, []).append((entry.key, number))

    def listed(self, name: str) -> list[tuple[paramiko.PKey, str]]:
        """The keys listed for `name`, each with the file:line that lists it (what a refusal names)."""
        found = [(key, f"{self.path}:{number}") for key, number in self.plain.get(name, ())]
        for hashed, key, number in self.hashed:
            salt = hashed.split("|")[2]
            if paramiko.HostKeys.hash_host(name, salt) == hashed:
                found.append((key, f"{self.path}:{number}"))
        return found


_files: dict[Path, tuple[tuple | None, KnownHosts]] = {}
_files_lock = threading.Lock()
_parsing: dict[Path, threading.Lock] = {}   # per file: held while one thread parses it


def known_hosts(path: Path) -> KnownHosts:
    """The file's KnownHosts, read again only when it changed (inode, size, mtime): parsed once per run for every
    host rather than once per connection, which at 1,000 hosts made opening connections quadratic (and each
    parsed line takes the logging module's global lock in paramiko)."""
    try:
        st = path.stat()
        signature: tuple | None = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        signature = None
    with _files_lock:
        cached = _files.get(path)
        if cached and cached[0] == signature:
            return cached[1]
        parsing = _parsing.setdefault(path, threading.Lock())
    # One thread parses while the others wait for it: 1,000 hosts start at once, and each one that found no
    # parse yet parsed the file itself (the cache above missed for most of them: quadratic again).
    with parsing:
        with _files_lock:
            cached = _files.get(path)
            if cached and cached[0] == signature:
                return cached[1]
        parsed = KnownHosts(path)
        with _files_lock:
            _files[path] = (signature, parsed)
    return parsed


def _entry(line: str, number: int):
    try:
        return paramiko.hostkeys.HostKeyEntry.from_line(line, number)
    except Exception:  # paramiko raises InvalidHostKey, SSHException, struct/index errors on damaged keys
        return None


_warned: set[str] = set()
_warned_lock = threading.Lock()


def _warn_once(options: ConnectOptions, message: str) -> None:
    """A bad line is the same for every host: say it once per run."""
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    if options.on_warning:
        options.on_warning(message)
