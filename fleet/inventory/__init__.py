"""Inventory: YAML -> hosts, groups and variables, every problem reported with file:line and a fix.

    facts_dir: facts
    roles_path: [roles]                             # extra role directories, relative to this file
    roles: [cuda_toolkit, ..., verify]              # the roles every host runs, in order (default: built-in nine)
    store: sqlite:///history.sqlite3                # the history store (fleet/store/), or a mapping:
                                                    # {url: postgresql://fleet@db/fleet, expire_after: 1d, retain: 90d}
    vars: {cuda_version: "13.0"}                    # all hosts
    hosts:
      pod-1: {address: 203.0.113.10, port: 17322, user: root, key: ~/.ssh/id_ed25519, vars: {...}, roles: [...]}
      desk:  {connection: local}
    groups:
      pods: {hosts: [pod-1], vars: {...}, roles: [...]}

Variables merge with precedence host > group > all; so do role lists (the most specific list wins whole).
Nothing here touches the network.
"""

from __future__ import annotations

import fnmatch
import contextvars
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet import yamlsrc
from fleet.errors import InputError

TOP_KEYS = {"facts_dir", "roles_path", "roles", "key", "known_hosts", "keyring_pins", "vars", "hosts", "groups",
            "store"}
HOST_KEYS = {"address", "port", "user", "key", "known_hosts", "connection", "lab", "vars", "roles"}
GROUP_KEYS = {"hosts", "vars", "roles"}
CONNECTIONS = ("ssh", "local")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")
VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
DEFAULT_ROLES_FROM = "the built-in default"


@dataclass
class Host:
    name: str
    address: str | None = None
    port: int = 22
    user: str = "root"
    key: str | None = None
    connection: str = "ssh"
    known_hosts: str | None = None   # a known-hosts file to trust besides ~/.ssh/known_hosts (e.g. the lab's)
    lab: dict[str, Any] | None = None   # settings for fleet_lab (the lab); fleet itself never reads them
    groups: list[str] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    roles: list[str] | None = None                          # None: the built-in nine
    roles_from: str = DEFAULT_ROLES_FROM                    # which level named them (for --check)
    var_where: dict[str, str] = field(default_factory=dict)  # variable -> file:line of the value that won
    # Connection keys the inventory states (address, port, user, key); they win over ~/.ssh/config.
    # None (a Host built in code): all of them count as stated.
    given: frozenset[str] | None = None

    @property
    def target(self) -> str:
        """How a person would write this host on an ssh line."""
        if self.connection == "local":
            return "local"
        port = f":{self.port}" if self.port != 22 else ""
        return f"{self.user}@{self.address}{port}"


@dataclass
class Inventory:
    path: Path
    hosts: dict[str, Host]
    groups: dict[str, list[str]]
    vars: dict[str, Any]
    facts_dir: Path
    roles_path: list[Path] = field(default_factory=list)   # declared extra role directories
    roles: list[str] | None = None                         # top-level `roles:` (None: the built-in nine)
    store: dict = field(default_factory=dict)              # `store:`: {url, expire_after, retain} as given

    def select(self, limit: list[str] | None = None) -> list[Host]:
        """Hosts named in `limit`, in inventory order; all hosts when None.

        Items (comma lists allowed): host or group names, shell globs over both ('pod-*'), and exclusions
        ('!pod-570', '!thor*'). Only exclusions: from all hosts. A name or glob that matches nothing is an
        error (a typo would otherwise quietly select fewer hosts).
        """
        items = [n.strip() for entry in (limit or []) for n in entry.split(",") if n.strip()]
        if limit is not None and not items:
            # `--limit "$POD"` with POD unset would otherwise run on every host
            raise InputError(f"--limit names no host (it is empty: an unset shell variable?); name hosts or groups "
                             f"of {self.path}, or leave --limit out to select every host")
        wanted = [item for item in items if not item.startswith("!")]
        unwanted = [item[1:] for item in items if item.startswith("!")]
        chosen = set(self.hosts) if not wanted else set()
        for item in wanted:
            chosen |= self._matching(item)
        for item in unwanted:
            chosen -= self._matching(item)
        if not chosen and self.hosts:
            raise InputError(f"--limit {','.join(items)!r} selects no host of {self.path}: its exclusions take out "
                             "every host it names; drop an exclusion or name another host")
        return [h for n, h in self.hosts.items() if n in chosen]

    def _matching(self, pattern: str) -> set[str]:
        names = list(self.hosts) + list(self.groups)
        matched = fnmatch.filter(names, pattern) if _is_glob(pattern) else [n for n in names if n == pattern]
        if not matched:
            hint = yamlsrc.closest(pattern, names).replace("valid keys", "hosts and groups")
            what = "glob {!r} matches" if _is_glob(pattern) else "names {!r}, which is"
            raise InputError(f"--limit {what.format(pattern)} neither a host nor a group of {self.path}{hint}")
        found: set[str] = set()
        for name in matched:
            found.update(self.groups.get(name, [name]) if name not in self.hosts else [name])
        return found


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


def set_values(words) -> dict[str, str]:
    """--set NAME=VALUE words -> {NAME: VALUE as text}; their checking is the inventory's values' own
    (fleet.inventory.validate: one declaration, one check)."""
    values: dict[str, str] = {}
    for text in words:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise InputError(f"--set {text!r} is not NAME=VALUE: write it like --set cuda_version=13.0")
        values[name.strip()] = value.strip()
    return values


def set_vars(hosts, values: dict) -> None:
    """Each host's variables with the --set ones over them; a later check names the flag, not a file line."""
    for host in hosts:
        host.vars = {**host.vars, **values}
        host.var_where = {**(host.var_where or {}), **{name: f"--set {name}" for name in values}}


def load_inventory(path: str | Path, *, keys_must_exist: bool = True) -> Inventory:
    """Load and validate; raises InputError listing every problem found, each with file:line and a fix.
    keys_must_exist=False: a `key:` file that is gone is no problem (`fleet forget`: the pod and its key may be)."""
    token = _KEYS_MUST_EXIST.set(keys_must_exist)
    try:
        return _load_inventory(path)
    finally:
        _KEYS_MUST_EXIST.reset(token)


_KEYS_MUST_EXIST: contextvars.ContextVar[bool] = contextvars.ContextVar("keys_must_exist", default=True)


def _load_inventory(path: str | Path) -> Inventory:
    loc = yamlsrc.load(path)
    doc = loc.data
    if not isinstance(doc, dict):
        raise InputError("an inventory is a mapping with 'hosts:' (and optionally 'groups:', 'vars:', 'facts_dir:')",
                         path=loc.path, line=1)
    base = Path(path).resolve().parent
    _check_keys(loc, (), doc, TOP_KEYS, "the top level")
    all_vars = _vars(loc, ("vars",), doc.get("vars"))
    hosts = _hosts(loc, doc.get("hosts"), base)
    _connection_defaults(loc, doc, hosts, base)
    _keyring_pins(loc, doc, all_vars, base)
    groups = _groups(loc, doc.get("groups"), hosts)
    facts_dir = doc.get("facts_dir", "facts")
    if not isinstance(facts_dir, str) or not facts_dir:
        loc.problem(("facts_dir",), f"facts_dir must be a directory path, not {yamlsrc.type_name(facts_dir)}; "
                                    "write e.g. 'facts_dir: facts'")
        facts_dir = "facts"
    roles_path = _roles_path(loc, doc.get("roles_path"), base)
    top_roles = _role_lists(loc, doc, hosts, roles_path)
    store = _store(loc, doc.get("store"), base)
    if loc.problems:
        raise InputError("\n".join(loc.problems))
    _merge_vars(loc, hosts, groups, all_vars)
    _merge_roles(loc, hosts, groups, top_roles)
    return Inventory(Path(path), hosts, {g: members for g, (members, _) in groups.items()}, all_vars,
                     (base / os.path.expanduser(facts_dir)).resolve(), roles_path, top_roles, store)


def _store(loc, value, base: Path) -> dict:
    """`store: URL` or `store: {url:, expire_after:, retain:}` -> {url (a SQLite path made absolute from this
    file's directory), expire_after and retain in seconds}; a URL with a password is refused (fleet.store)."""
    from fleet import parse

    if value is None:
        return {}
    given = {"url": value} if isinstance(value, str) else value
    if not isinstance(given, dict):
        loc.problem(("store",), "store is a URL (sqlite:///PATH or postgresql://USER@HOST/DB) or a mapping with "
                                "url:, expire_after:, retain:")
        return {}
    out: dict = {}
    for key, item in given.items():
        keys = ("store",) if isinstance(value, str) else ("store", key)
        try:
            if key == "url":
                try:
                    url = parse.store_url(str(item))
                except parse.Rejected as exc:
                    loc.problem(keys, str(exc))
                    continue
                if url.startswith("sqlite:///") and not url.startswith("sqlite:////"):
                    url = f"sqlite:///{(base / url[len('sqlite:///'):]).resolve()}"
                out["url"] = url
            elif key in ("expire_after", "retain"):
                out[key] = parse.duration(item)
            else:
                loc.problem(keys, f"store has no setting {key!r}; it has url, expire_after and retain")
        except InputError as exc:
            loc.problem(keys, str(exc).replace("store: ", "", 1))
        except parse.Rejected as exc:
            loc.problem(keys, f"store {key}: {exc}")
    return out


def _key_file(loc, keys, value: str, base: Path, whose: str) -> str:
    resolved = (base / os.path.expanduser(value)).resolve()
    if not resolved.is_file() and _KEYS_MUST_EXIST.get():
        loc.problem(keys, f"key file {value!r} {whose} does not exist ({resolved}); "
                          "fix the path or remove 'key:' to use your ssh-agent")
    return str(resolved)


def _connection_defaults(loc, doc: dict, hosts: dict[str, Host], base: Path) -> None:
    """Top-level `key:` and `known_hosts:` apply to every host without its own (the lab writes them)."""
    for name in ("key", "known_hosts"):
        value = doc.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            loc.problem((name,), f"{name} must be a file path, not {yamlsrc.type_name(value)}")
            continue
        path = _key_file(loc, (name,), value, base, "at the top level") if name == "key" else \
            str((base / os.path.expanduser(value)).resolve())
        for host in hosts.values():
            if getattr(host, name) is None:
                setattr(host, name, path)
                if name == "key":   # given in the inventory: it wins over ~/.ssh/config's IdentityFile
                    host.given = (host.given or frozenset()) | {"key"}


def read_keyring_pins(path: Path, *, fix: str) -> dict[str, str]:
    """A `keyring_pins` file (`sha256sum`'s lines: DIGEST  URL; blank lines and # comments skipped) -> {URL: digest}.
    Raises InputError naming the file (and line) and `fix` where it cannot be read."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read keyring_pins file {path} ({exc.strerror}); {fix}") from None
    pins = {}
    for number, line in enumerate(lines, 1):
        digest, _, url = line.strip().partition(" ")
        url = url.strip().lstrip("*")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not re.fullmatch(r"[0-9a-fA-F]{64}", digest) or not url.startswith("https://"):
            raise InputError(f"{path}:{number} is not 'SHA256  https://URL' (sha256sum's form); fix or remove that "
                             "line")
        pins[url] = digest.lower()
    return pins


def _keyring_pins(loc, doc: dict, all_vars: dict, base: Path) -> None:
    """Top-level `keyring_pins: FILE` (`sha256sum`'s lines: DIGEST  URL): the digests of keyring .debs a mirror
    serves at NVIDIA's URLs (the lab writes it, as it writes known_hosts), the variable cuda_keyring_pins
    (fleet/decide/keyring.py). A `cuda_keyring_pins:` in the top-level vars wins, URL by URL."""
    value = doc.get("keyring_pins")
    if value is None:
        return
    if not isinstance(value, str) or not value:
        loc.problem(("keyring_pins",), f"keyring_pins must be a file path, not {yamlsrc.type_name(value)}")
        return
    path = (base / os.path.expanduser(value)).resolve()
    try:
        pins = read_keyring_pins(path, fix="fix the path or remove the line")
    except InputError as exc:
        loc.problem(("keyring_pins",), str(exc))
        return
    given = all_vars.get("cuda_keyring_pins")
    all_vars["cuda_keyring_pins"] = {**pins, **given} if isinstance(given, dict) else (given or pins)


def _roles_path(loc, value, base: Path) -> list[Path]:
    """Declared role directories: roles load from these and the package, never from wherever fleet runs."""
    if value is None:
        return []
    entries = [value] if isinstance(value, str) else value
    if not isinstance(entries, list) or not all(isinstance(e, str) and e for e in entries):
        loc.problem(("roles_path",), "roles_path is a directory or a list of directories, relative to the "
                                     "inventory; write e.g. 'roles_path: [roles]'")
        return []
    out = []
    for i, entry in enumerate(entries):
        path = (base / os.path.expanduser(entry)).resolve()
        if not path.is_dir():
            keys = ("roles_path",) if isinstance(value, str) else ("roles_path", i)
            loc.problem(keys, f"roles_path {entry!r} is not a directory ({path}); create it or fix the path")
        out.append(path)
    return out


def _check_keys(loc, keys, mapping, allowed, where) -> None:
    for key in mapping:
        if key not in allowed:
            loc.problem(keys + (key,), f"unknown key {key!r} in {where}{yamlsrc.closest(key, allowed)}")


def _vars(loc, keys, value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        loc.problem(keys, f"'vars' must be a mapping of NAME: VALUE, not {yamlsrc.type_name(value)}")
        return {}
    for name in value:
        if not isinstance(name, str) or not VAR_RE.match(name):
            loc.problem(keys + (name,), f"variable name {name!r} must be letters, digits and _, "
                                        "not starting with a digit (e.g. cuda_version)")
    return dict(value)


def _hosts(loc, section, base: Path) -> dict[str, Host]:
    if section is None:
        loc.problem((), "the inventory has no 'hosts:' section; add one, e.g. 'hosts: {pod-1: {address: 203.0.113.10}}'")
        return {}
    if not isinstance(section, dict):
        loc.problem(("hosts",), f"'hosts' must be a mapping of NAME: SETTINGS, not {yamlsrc.type_name(section)}")
        return {}
    hosts = {}
    folded: dict[str, str] = {}   # lower-cased name -> the name as written: facts files must not collide
    for name, spec in section.items():
        host = _host(loc, name, spec or {}, base)
        if host and _name_collides(loc, name, host.name, folded):
            continue
        if host:
            hosts[host.name] = host
    return hosts


def _name_collides(loc, key, name: str, folded: dict[str, str]) -> bool:
    """Two names whose facts files would be one file: `Pod` and `pod` on a case-insensitive filesystem (macOS,
    a Windows share), or `pod.prev`, whose record is `pod`'s previous one (facts/pod.prev.json)."""
    if name.lower().endswith(".prev"):
        loc.problem(("hosts", key), f"host name {name!r} ends in '.prev', which names the previous facts record "
                                    f"of host {name[:-5]!r}; rename it (e.g. {name[:-5] + '-prev'!r})")
        return True
    other = folded.setdefault(name.lower(), name)
    if other != name:
        loc.problem(("hosts", key), f"host name {name!r} differs from {other!r} (line {loc.line('hosts', other)}) "
                                    "only in case: their facts files collide on a case-insensitive filesystem; "
                                    "rename one of them")
        return True
    return False


def _host(loc, key, spec, base: Path) -> Host | None:
    keys = ("hosts", key)  # the key as YAML read it (7, not "7"), so its line is found
    name = str(key)
    if not NAME_RE.match(name):
        loc.problem(keys, f"host name {name!r} must be letters, digits, '.', '_' or '-' (it names the facts file)")
        return None
    if not isinstance(spec, dict):
        loc.problem(keys, f"host {name!r} must be a mapping such as '{{address: 203.0.113.10, port: 22}}', "
                          f"not {yamlsrc.type_name(spec)}")
        return None
    _check_keys(loc, keys, spec, HOST_KEYS, f"host {name!r}")
    host = Host(name=name, line=loc.line(*keys))
    host.connection = _choice(loc, keys + ("connection",), spec.get("connection", "ssh"), CONNECTIONS)
    host.lab = spec.get("lab")
    if host.lab is not None and not isinstance(host.lab, dict):
        loc.problem(keys + ("lab",), f"lab settings of host {name!r} are a mapping such as "
                                     "'{profile: h100-pod, driver: 570.133.20}', not " + yamlsrc.type_name(host.lab))
    for key in ("address", "user", "key", "known_hosts"):
        value = spec.get(key)
        if value is not None and not isinstance(value, str):
            loc.problem(keys + (key,), f"{key} of host {name!r} must be a string, not {yamlsrc.type_name(value)}; "
                                       f"quote it")
        elif value is not None and re.search(r"[\x00-\x1f\x7f]", value):   # "10.0.0.1\n" is no address
            loc.problem(keys + (key,), f"{key} of host {name!r} holds a control character ({value!r}); "
                                       "remove it (a newline inside quotes, a tab)")
            setattr(host, key, value.strip())   # said once: not "has no address" as well
        elif value is not None:
            setattr(host, key, value)
    if host.connection == "ssh" and not host.address:
        loc.problem(keys, f"host {name!r} has no address; add 'address: <ip or hostname>' "
                          "(or 'connection: local' for this machine)")
    host.port = _port(loc, keys + ("port",), spec.get("port", 22), name)
    if host.key:
        host.key = _key_file(loc, keys + ("key",), host.key, base, f"of host {name!r}")
    if host.known_hosts:
        host.known_hosts = str((base / os.path.expanduser(host.known_hosts)).resolve())
    host.vars = _vars(loc, keys + ("vars",), spec.get("vars"))
    host.given = frozenset(k for k in ("address", "port", "user", "key") if k in spec)
    return host


def _choice(loc, keys, value, choices):
    if value not in choices:
        loc.problem(keys, f"{keys[-1]} is {value!r}; write one of: {', '.join(choices)}")
        return choices[0]
    return value


def _port(loc, keys, value, name) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        loc.problem(keys, f"port of host {name!r} must be a number from 1 to 65535, not {yamlsrc.type_name(value)}")
        return 22
    if not 1 <= value <= 65535:
        loc.problem(keys, f"port {value} of host {name!r} is out of range; use a number from 1 to 65535")
        return 22
    return value


def _groups(loc, section, hosts) -> dict[str, tuple[list[str], dict]]:
    if section is None:
        return {}
    if not isinstance(section, dict):
        loc.problem(("groups",), f"'groups' must be a mapping of NAME: {{hosts: [...]}}, "
                                 f"not {yamlsrc.type_name(section)}")
        return {}
    groups = {}
    for name, spec in section.items():
        keys = ("groups", name)
        if str(name) in hosts:
            loc.problem(keys, f"group {name!r} has the same name as a host; rename one of them")
        if isinstance(spec, list):
            spec = {"hosts": spec}
        if not isinstance(spec, dict):
            loc.problem(keys, f"group {name!r} must be a mapping such as '{{hosts: [pod-1]}}'")
            continue
        _check_keys(loc, keys, spec, GROUP_KEYS, f"group {name!r}")
        members = spec.get("hosts") or []
        if not isinstance(members, list):
            loc.problem(keys + ("hosts",), f"'hosts' of group {name!r} must be a list of host names")
            members = []
        for i, member in enumerate(members):
            if not isinstance(member, str) or member not in hosts:  # a mapping or list here is unhashable
                hint = yamlsrc.closest(member, hosts).replace("valid keys", "hosts")
                loc.problem(keys + ("hosts", i), f"group {name!r} names unknown host {member!r}{hint}")
        groups[str(name)] = ([m for m in members if isinstance(m, str) and m in hosts],
                             _vars(loc, keys + ("vars",), spec.get("vars")))
    return groups


def _merge_vars(loc, hosts: dict[str, Host], groups, all_vars: dict) -> None:
    """host > group > all; each host remembers the file:line of every value that won (validation names it)."""
    where = lambda *keys: f"{loc.path}:{loc.line(*keys)}"  # noqa: E731
    for host in hosts.values():
        merged = dict(all_vars)
        host.var_where = {name: where("vars", name) for name in all_vars}
        for gname, (members, gvars) in groups.items():
            if host.name in members:
                host.groups.append(gname)
                merged.update(gvars)
                host.var_where.update({name: where("groups", gname, "vars", name) for name in gvars})
        merged.update(host.vars)
        host.var_where.update({name: where("hosts", host.name, "vars", name) for name in host.vars})
        host.vars = merged


# -- roles: which roles each host runs ---------------------------------------------------------------

def _role_lists(loc, doc: dict, hosts: dict[str, Host], roles_path: list[Path]) -> list[str] | None:
    """Check every `roles:` list (top, group, host) names roles that exist; returns the top-level one."""
    from fleet.roles import available_roles   # jinja2 is needed only once roles are in play

    known = available_roles(roles_path)
    top = _role_list(loc, ("roles",), doc.get("roles"), known, roles_path)
    for name, spec in _mapping(doc.get("groups")).items():
        if isinstance(spec, dict):
            _role_list(loc, ("groups", name, "roles"), spec.get("roles"), known, roles_path)
    for name, spec in _mapping(doc.get("hosts")).items():
        if isinstance(spec, dict) and str(name) in hosts:
            hosts[str(name)].roles = _role_list(loc, ("hosts", name, "roles"), spec.get("roles"), known, roles_path)
    return top


def _role_list(loc, keys: tuple, value, known: dict[str, str], roles_path: list[Path]) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        loc.problem(keys, f"'roles' must be a non-empty list of role names, not {yamlsrc.type_name(value)}; "
                          "write e.g. 'roles: [cuda_toolkit, torch, verify]'")
        return None
    for i, name in enumerate(value):
        if name not in known:
            hint = yamlsrc.closest(name, known).replace("valid keys", "roles")
            loc.problem(keys + (i,), f"no role named {name!r} (built-in, or in roles_path: "
                                     f"{', '.join(map(str, roles_path)) or 'none declared'})"
                                     f"{hint}")
        elif name in value[:i]:
            loc.problem(keys + (i,), f"role {name!r} is named twice in this list; keep one")
    return list(value)


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _merge_roles(loc, hosts: dict[str, Host], groups, top: list[str] | None) -> None:
    """host > group > top: the most specific list wins whole. Two groups of one host disagreeing is an error."""
    raw = _mapping(loc.data.get("groups"))
    for host in hosts.values():
        if host.roles is not None:
            host.roles_from = f"host {host.name} ({loc.path}:{loc.line('hosts', host.name, 'roles')})"
            continue
        named = [(g, raw[g]["roles"]) for g in host.groups
                 if isinstance(raw.get(g), dict) and raw[g].get("roles") is not None]
        if len({tuple(r) for _, r in named}) > 1:
            (g1, _), (g2, _) = named[0], next(n for n in named if n[1] != named[0][1])
            loc.problem(("hosts", host.name), f"host {host.name!r} is in groups {g1!r} and {g2!r}, which name "
                                              "different roles; give the host its own 'roles:'")
        elif named:
            host.roles = list(named[0][1])
            host.roles_from = f"group {named[0][0]} ({loc.path}:{loc.line('groups', named[0][0], 'roles')})"
        elif top is not None:
            host.roles, host.roles_from = list(top), f"the inventory ({loc.path}:{loc.line('roles')})"
    if loc.problems:
        raise InputError("\n".join(loc.problems))
