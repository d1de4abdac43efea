"""`fleet bootstrap`: a new pod, from the SSH line its provider shows to a verified stack, in one shot.

    target = parse_target("ssh root@203.0.113.10 -p 17322 -i ~/.ssh/id_ed25519")
    result = bootstrap(target, inventory_path=default_inventory())   # ~/.config/fleet/pods.yaml

Phases: connect (waiting with backoff for a pod still booting; a new host key is taken on first use and its
fingerprint shown, a CHANGED key is refused as always) -> health -> facts (the engine's observe + plan: facts,
decisions and every check but verify's; nothing changed but fleet's helper programs) -> inventory -> apply
(fleet.engine.converge from that same probe, every role) -> verify (its second observe).

When the host enters the inventory: after the facts phase has shown the pod can be provisioned (reachable,
not refused by the decisions, enough free disk for what will be installed, every check able to run), and
before the first change is applied. A pod that cannot be provisioned is never written; a pod that fleet
starts changing is always written, so that a failed apply (a mirror hiccup, a lost connection) can be
resumed with `fleet apply INVENTORY --limit NAME` or the same bootstrap line, and inspected with `fleet
facts`/`fleet run`. The entry is written once (the same address and port already there: that name is
reused and the file left as it is), as a text edit that keeps every comment, into a temp file that must
load with `load_inventory` before it is renamed over the original: never a truncated or invalid file.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from fleet import parse
from fleet.engine import hostlock
from fleet.errors import AuthRefused, FleetError, InputError
from fleet.inventory import NAME_RE, Host, Inventory, load_inventory
from fleet.inventory.edit import edit, entry_text, insert_host
from fleet.inventory.home import known_inventories, remember

DEFAULT_WAIT = 300.0
# A key the pod refuses is tried again this long: a provider may still be writing authorized_keys as sshd starts
# (seconds, not minutes); past that the -i key is the wrong one, and waiting the whole --wait would cost a renter
# five minutes to learn it.
AUTH_WAIT = 20.0
HEADER = "# Pods added by `fleet bootstrap` (one entry each; edit freely: comments are kept).\n"

# ssh's own flags: those that take a value, and those that do not (man ssh). Only -p -i -l and some -o
# options matter to fleet; the rest are noted and ignored, except a jump host, which fleet cannot follow.
_WITH_VALUE = set("BbcDEeFIiJLlmOoPpQRSWw")
_NO_VALUE = set("46AaCfGgKkMNnqsTtVvXxYy")
_ADDRESS_RE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
                         r"|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)\Z")
_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\Z")
_DEST_RE = re.compile(r"^(?:ssh://)?(?:(?P<user>[^@/]+)@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:/@]+))"
                      r"(?::(?P<port>[^/]*))?/?\Z")

Progress = Callable[[str, str], None]


# -- the SSH line ----------------------------------------------------------------------------------------

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


# -- the inventory entry ---------------------------------------------------------------------------------

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


def _known_elsewhere(inventory_path: Path, target: Target) -> None:
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


def _entry_vars(path: Path, name: str) -> dict:
    """The variables the host's own entry sets (not its groups' nor the inventory's)."""
    from fleet import yamlsrc

    entry = ((yamlsrc.load(path).data or {}).get("hosts") or {}).get(name)
    return dict(entry.get("vars") or {}) if isinstance(entry, dict) and isinstance(entry.get("vars"), dict) else {}


def _kept(pod: str, given: dict, own: dict, lines: dict) -> dict:
    """The --set values (checked) a retried bootstrap writes into the pod's entry: those it does not set yet. A value
    the entry sets otherwise is refused, naming its line: which of the two should last is the person's call."""
    for name, value in given.items():
        if name in own and own[name] != value:
            where = lines.get(name) or f"{pod}'s entry"
            raise InputError(f"{where}: {pod}'s entry sets {name}: {_shown(own[name])} and --set says "
                             f"{_shown(value)}; edit that line (or leave out --set {name}) and run the bootstrap again")
    return {name: value for name, value in given.items() if name not in own}


def _shown(value) -> str:
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


def _refused(host: Host, target: Target, waited: float) -> str:
    """The sentence for a key the pod refused: the -i key is what to fix, not an inventory the pod is not in yet."""
    key = f"the key -i {target.key}" if target.key else "the keys offered (no -i given: ssh-agent's and ~/.ssh/id_*)"
    fix = ("give -i the private key whose public half is in the pod's settings at the provider (its SSH public key "
           "field)") if target.key else "add -i KEY, the private key whose public half the provider has"
    return (f"{host.name}: {host.target} refused {key} (tried for {waited:g}s, as long as a provider may still be "
            f"installing keys); {fix}, then run the bootstrap again")


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


# -- the phases ------------------------------------------------------------------------------------------

@dataclass
class BootstrapResult:
    name: str
    inventory: Path
    target: Target
    existing: bool = False            # the inventory already held this pod: left as it was
    added: bool = False               # this run wrote the entry
    host_key: str | None = None       # "accepted ... SHA256:..." when the key was taken on first use
    phases: dict[str, float] = field(default_factory=dict)
    facts: dict | None = None
    health: object = None             # the GPU health verdict read first (fleet.decide.health.HealthVerdict)
    report: object = None             # the apply's fleet.engine.HostReport
    vars: dict = field(default_factory=dict)   # the host's variables as the apply resolved them (python_env, ...)
    kept: dict = field(default_factory=dict)   # --set values of a retried bootstrap written into the pod's entry
    error: str | None = None
    remote_commands: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> list:
        return [t for t in (self.report.tasks if self.report else []) if t.status == "changed"]

    @property
    def verify(self) -> dict | None:
        return (self.facts or {}).get("verify")

    @property
    def ok(self) -> bool:
        return (self.error is None and self.report is not None and not self.report.failed
                and bool((self.verify or {}).get("passed")))


def _no_credentials(overrides: dict, inventory_path: Path) -> None:
    """--set values become the new pod's entry in the inventory, a file anyone may read or commit: one holding a
    password or token (a URL's user:password@, a token shape the scrubber knows) is refused, nothing written."""
    from fleet.facts.scrub import scrub_text

    for name, value in overrides.items():
        texts = [value] if isinstance(value, str) else [str(v) for v in (value.values() if isinstance(value, dict)
                                                                          else value if isinstance(value, list) else [])]
        for text in texts:
            masked = scrub_text(text)
            if masked != text:
                raise InputError(
                    f"--set {name}={masked}: the value holds a credential, and bootstrap writes --set values into "
                    f"{inventory_path}; give the URL without it and put the password where pip and git find it on "
                    "the pod: ~/.netrc (machine HOST login USER password PASSWORD, mode 0600), or the pod's "
                    "environment (PIP_INDEX_URL in its template's secrets)")


def bootstrap(target: Target, *, inventory_path: Path, name: str | None = None, wait: float = DEFAULT_WAIT,
              connect_timeout: float = 10.0, known_hosts: Path | None = None,
              progress: Progress | None = None, overrides: dict | None = None,
              on_task=None, ignore_health: bool = False) -> BootstrapResult:
    """Connect, gather facts, add to the inventory, apply every role, verify. Input errors raise (nothing
    touched); a pod that cannot be provisioned or fails comes back with `error` set (one sentence).
    `overrides`: variables (--set), over the inventory's: written into the entry of a pod this run adds, and added to
    the entry of a pod already there (a retry) unless that entry sets them otherwise (refused, naming its line), so
    the summary's `fleet apply --limit NAME` keeps them. A key the pod refuses is retried for AUTH_WAIT seconds only
    and named as the -i key.
    The GPUs' health is read first: a pod to return stops there, nothing installed and nothing written, unless
    `ignore_health`."""
    from fleet.connection import ConnectOptions, connect
    from fleet.engine import session

    progress = progress or (lambda host, msg: None)
    old = load_existing(inventory_path)
    present = find_pod(old, target)
    if present is None:
        _known_elsewhere(inventory_path, target)
        name = name or derive_name(target, set(old.hosts) | set(old.groups) if old else set())
        check_name(name, old, target)
        _no_credentials(overrides or {}, inventory_path)
        target.vars = dict(overrides or {})   # the settings it is provisioned with stay with it
        inventory = write_entry(inventory_path, name, target, commit=False)   # validated, not yet written
    else:
        inventory = old
    host = inventory.hosts[present.name if present else name]
    own = _entry_vars(inventory_path, present.name) if present and overrides else {}
    own_where = dict(host.var_where)     # file:line of each, before --set stands over them
    if overrides:
        host.vars = {**host.vars, **overrides}
        host.var_where = {**host.var_where, **{n: f"--set {n}" for n in overrides}}
    result = BootstrapResult(host.name, inventory_path, target, existing=present is not None)
    if present and name and name != present.name:
        progress(host.name, f"already in {inventory_path} as {present.name!r}; --name {name!r} not used")
    if present and target.pins and host.vars.get("cuda_keyring_pins") != target.pins:
        # the entry is left as it was (as for every other setting): the pins serve this run only
        host.vars = {**host.vars, "cuda_keyring_pins": dict(target.pins)}
        host.var_where = {**host.var_where, "cuda_keyring_pins": "--keyring-pins"}
        progress(host.name, f"--keyring-pins used for this run only: {present.name}'s entry in {inventory_path} is "
                            "left as it was (add them under its vars: cuda_keyring_pins to keep them)")
    roles = session.roles_of([host], inventory.roles_path)[host.name]   # bad roles and variables stop here
    if present is None:   # the entry keeps the values as checked: --set verify_perf=off is written false
        target.vars = {name: host.vars[name] for name in target.vars}
    else:                 # a retry keeps its --set too: the summary's `fleet apply --limit NAME` must run the same
        result.kept = _kept(present.name, {n: host.vars[n] for n in overrides or {}}, own, own_where)
    result.vars = dict(host.vars)

    def on_key(message: str) -> None:
        result.host_key = message.split(": ", 1)[-1]
        progress(host.name, message.split(": ", 1)[-1])

    # A second bootstrap of this pod, or of a pod deriving the same name, stops here: before contacting it.
    claim = hostlock.reserve(inventory_path, host.name, (target.address, target.port))
    options = ConnectOptions(accept_new_host_keys=True, connect_timeout=connect_timeout, wait=wait,
                             auth_wait=min(wait, AUTH_WAIT), known_hosts=known_hosts, on_new_host_key=on_key)
    started = time.monotonic()
    conn = None
    try:
        with _phase(result, "connect"):
            progress(host.name, f"connecting to {host.target} (waiting up to {wait:g}s for a pod still booting; a "
                                f"refused key is tried for {min(wait, AUTH_WAIT):g}s while the provider may still "
                                "be installing it)")
            try:
                conn = connect(host, options)
            except AuthRefused:
                raise AuthRefused(_refused(host, target, min(wait, AUTH_WAIT))) from None
        if _healthy_enough(conn, host, result, progress, ignore_health):
            _provision(conn, host, inventory, roles, result, progress, on_task)
    except FleetError as exc:
        if isinstance(exc, InputError):
            raise
        result.error = str(exc) + (_resume_note(result) if result.added else "")
    finally:
        if conn is not None:
            result.remote_commands = conn.remote_commands
            conn.close()
        claim.close()
        result.seconds = round(time.monotonic() - started, 3)
    return result


def _healthy_enough(conn, host: Host, result: BootstrapResult, progress: Progress, ignore_health: bool) -> bool:
    """The health check alone (one read-only command, fleet.workflows.health) before anything is installed: a pod
    whose verdict is "return this pod" (a fault only its provider can fix) is not worth the gigabytes."""
    from fleet.workflows import health

    with _phase(result, "health"):
        verdict, _ = health.check(conn, host)
    result.health = verdict
    progress(host.name, f"GPU health: {verdict.reason}")
    if verdict.verdict != "return" or ignore_health:
        return True
    result.error = (f"{host.name}: {verdict.reason}. Nothing was installed: {verdict.way_out}; or run the same "
                    "bootstrap with --ignore-health to provision it anyway")
    return False


def _provision(conn, host: Host, inventory: Inventory, roles, result: BootstrapResult, progress: Progress,
               on_task=None) -> None:
    from fleet.engine import Setup, converge

    setup = Setup(roles, facts_dir=inventory.facts_dir, progress=progress, on_task=on_task)
    with _phase(result, "facts"):
        observed, planned = _preview(conn, host, setup, result)
    problem = _cannot_provision(observed, planned)
    if problem:
        result.error = f"{host.name} cannot be provisioned: {problem}"
        return
    if not result.existing:
        write_entry(result.inventory, host.name, result.target)
        result.added = True
        remember(result.inventory)    # a known inventory: forget and the next bootstrap look there too
        progress(host.name, f"added to {result.inventory}")
    elif result.kept:
        write_vars(result.inventory, host.name, result.kept)
        progress(host.name, f"kept in its entry in {result.inventory}: "
                            + ", ".join(f"{n}={_shown(v)}" for n, v in result.kept.items()))
    report = converge(conn, host, setup, observed)   # the preview's probe is the apply's: the pod is asked once
    result.report, result.facts = report, report.facts
    from fleet.engine import session
    result.vars = session.variables(report.facts, host.vars)   # where the pod's volume put the venv, if it did
    result.phases["apply"] = round(report.phases.get("probe", 0) + report.phases.get("apply", 0), 3)
    result.phases["verify"] = report.phases.get("verify", 0.0)
    failed = [t for t in report.tasks if t.status == "failed"]
    if report.error or failed:
        what = report.error or f"{failed[0].role}: {failed[0].task}: {failed[0].reason}"
        result.error = f"{host.name}: {what}" + _resume_note(result)


def _preview(conn, host: Host, setup, result: BootstrapResult):
    """The facts phase: the apply's own first probe and plan (nothing changed on the pod but fleet's helper
    programs, installed by digest as any apply's probe installs them), the facts recorded as a --check would. The
    apply goes on from this very probe (converge's `first`): one probe, not two. verify is left out of it
    (without_records): after any change it runs again anyway, so it runs once, after the changes."""
    from fleet.engine import final_facts, judge, last_facts, observe, plan, session

    observed = observe(conn, host, setup, last_facts(setup, host), without_records=True)
    if observed.refuse:
        result.facts = observed.facts
        session.record(setup.facts_dir, host.name, observed.facts)
        return observed, None
    result.facts = final_facts(observed, judge(observed, check_mode=True))
    session.record(setup.facts_dir, host.name, result.facts)
    return observed, plan(observed)


def _resume_note(result: BootstrapResult) -> str:
    return (f"; it stays in {result.inventory} as {result.name}: fix the cause and run the same bootstrap again "
            "(what is done is not redone)")


def _cannot_provision(observed, planned) -> str | None:
    """Why this pod cannot be provisioned, from the check-mode preview (refused, disk, a check that cannot run)."""
    if observed.refuse:
        return observed.refuse
    broken = [t for t in planned.entries if t.status == "failed"]
    if broken:
        return f"{broken[0].role}: {broken[0].task}: {broken[0].reason}"
    system = observed.facts.get("system") or {}
    free = system.get("disk_free_gb")
    if free is None:
        return None
    for task in planned.to_apply:                # the plan's changing tasks, as decided once for these facts
        need = task.resource.p.get("min_free_gb")
        if need and float(free) < float(need):
            return (f"only {float(free):g} GB free at {system.get('disk_path') or '/'}, and {task.spec.role} needs "
                    f"{float(need):g} GB; free space, or point python_env at a bigger volume")
    return None


@contextmanager
def _phase(result: BootstrapResult, name: str):
    started = time.monotonic()
    try:
        yield
    finally:
        result.phases[name] = round(time.monotonic() - started, 3)
