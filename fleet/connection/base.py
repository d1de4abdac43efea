"""The connection interface: Result, ConnectOptions and the Connection base class (imports neither kind).

Every `run` is one remote command and is counted: round trips are what fleet economises. A script runs in
bash started the way `ssh host cmd` starts it, so the user's shell hooks apply as they do for real users.
"""

from __future__ import annotations

import base64
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import HostError
from ..inventory import Host
from .capture import OutputCallback

# Linux caps one argument at 128 KiB (MAX_ARG_STRLEN); above this a script travels on stdin instead.
_ARG_LIMIT = 100_000


@dataclass
class Result:
    exit: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit == 0


@dataclass
class ConnectOptions:
    accept_new_host_keys: bool = False
    connect_timeout: float = 10.0
    wait: float = 0.0                 # keep retrying a host that is still booting for this many seconds
    known_hosts: Path | None = None   # fleet's own known-hosts file (default ~/.config/fleet/known_hosts)
    on_new_host_key: OutputCallback | None = None
    # A host that answers neither output nor an SSH keep-alive for this long is given up (see DEAD_AFTER).
    dead_after: float = 0.0
    on_command: Callable[[str, str], None] | None = None   # -v: (host, line) per remote command
    ssh_config: Path | None = None    # default ~/.ssh/config
    on_warning: OutputCallback | None = None   # e.g. an unusable known_hosts line, skipped

    def __post_init__(self):
        if not self.dead_after:
            self.dead_after = dead_after_default()

    def fleet_known_hosts(self) -> Path:
        if self.known_hosts:
            return Path(self.known_hosts)
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        return Path(base) / "fleet" / "known_hosts"


# Why a "no answer" deadline rather than a total one: a first apply runs commands that take many minutes
# and print nothing for long stretches (pip downloading a 900 MB torch wheel); a vanished pod (container
# stopped, network gone) leaves the TCP connection open with nobody behind it. The SSH server answers
# keep-alives while its command is busy, so "no answer to keep-alives for N seconds" tells the two apart,
# as OpenSSH's ServerAliveInterval x ServerAliveCountMax does.
DEAD_AFTER = 60.0


def dead_after_default() -> float:
    """FLEET_DEAD_AFTER (seconds) when set to a positive number, else DEAD_AFTER."""
    try:
        value = float(os.environ.get("FLEET_DEAD_AFTER", ""))
    except ValueError:
        return DEAD_AFTER
    return value if value > 0 else DEAD_AFTER


class Connection:
    """The interface. Subclasses implement `_exec`."""

    def __init__(self, host: Host):
        self.host = host
        self.remote_commands = 0
        self.on_command: Callable[[str, str], None] | None = None

    @property
    def is_root(self) -> bool:
        return self.host.user == "root"

    def run(self, script: str, *, env: dict[str, str] | None = None, sudo: bool = False,
            timeout: float | None = None, on_output: OutputCallback | None = None) -> Result:
        """Run a bash script; never raises for a non-zero exit (see Result.exit)."""
        body = _exports(env) + script
        command = wrap_bash(body, sudo=sudo and not self.is_root)
        self.remote_commands += 1
        started = time.monotonic()
        result = self._exec(command, stdin=stdin_for(body), timeout=timeout, on_output=on_output)
        if self.on_command:
            self.on_command(self.host.name, f"remote command {self.remote_commands}: exit {result.exit} in "
                            f"{time.monotonic() - started:.2f}s ({len(body)} bytes of script)")
        return result

    def write_file(self, path: str, content: str | bytes, *, mode: int = 0o644, sudo: bool = False,
                   owner: str | None = None) -> Result:
        """Replace `path` atomically (temp file in the same directory, fsync, rename): one remote command."""
        result = self.run(write_file_script(path, content, mode=mode, owner=owner), sudo=sudo)
        if not result.ok:
            raise HostError(f"{self.host.name}: could not write {path}: {result.stderr.strip() or result.stdout.strip()}")
        return result

    def close(self) -> None:
        pass

    def abort(self) -> None:
        """Ctrl-C, from another thread: end whatever runs now, close the session. Default: close()."""
        self.close()

    def _exec(self, command: str, *, stdin: str | None, timeout, on_output) -> Result:
        """Run `command`; `stdin` (when not None) is fed to it, then end-of-file."""
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _exports(env: dict[str, str] | None) -> str:
    if not env:
        return ""
    for name in env:
        if not name.isidentifier():
            raise ValueError(f"environment variable name {name!r} is not valid")
    return "".join(f"export {name}={shlex.quote(str(value))}\n" for name, value in env.items())


def wrap_bash(script: str, *, sudo: bool = False) -> str:
    """The command line that runs `script` in bash (under `sudo -n` when asked), every byte quoted.

    A long script cannot travel as an argument (one argument is capped at 128 KiB, and sshd hands the command
    line to the login shell as one): it travels on stdin instead (see `stdin_for`), base64-encoded so no
    locale can mangle it, ending in a marker so a script cut short in transit is refused, never run.
    """
    prefix = "sudo -n -H " if sudo else ""
    if _fits(script):
        return f"{prefix}bash -c {shlex.quote(script)}"
    packed_len = len(stdin_for(script))
    # head -c: the payload's exact length, so this never waits for an end-of-file that may not come.
    reader = ('s=$(cat) && [ "${s%' + _END_MARK + '}" != "$s" ] || '
              '{ echo "fleet: the script arrived truncated; not running it" >&2; exit 125; }; eval "$s"')
    return f"head -c {packed_len} | base64 -d | {prefix}bash -c {shlex.quote(reader)}"


_END_MARK = "# fleet: end of script"


def _fits(script: str) -> bool:
    # Measured quoted and in bytes: quotes expand to '"'"' and a non-ASCII character is several bytes.
    return len(shlex.quote(script).encode()) <= _ARG_LIMIT


def stdin_for(script: str) -> str | None:
    """What `wrap_bash(script)` expects on stdin: None for a short script, else the script in base64."""
    if _fits(script):
        return None
    return base64.encodebytes(f"{script}\n{_END_MARK}\n".encode()).decode()


def write_file_script(path: str, content: str | bytes, *, mode: int = 0o644, owner: str | None = None) -> str:
    data = content.encode() if isinstance(content, str) else content
    packed = base64.b64encode(data).decode()
    q = shlex.quote(path)
    chown = f'chown {shlex.quote(owner)} "$tmp"\n' if owner else ""
    return (
        "set -e\n"
        f"d=$(dirname -- {q}); mkdir -p -- \"$d\"\n"
        f"tmp=$(mktemp \"$d/.fleet-write.XXXXXX\")\n"
        "trap 'rm -f -- \"$tmp\"' EXIT\n"
        f"printf %s {shlex.quote(packed)} | base64 -d > \"$tmp\"\n"
        f"chmod {mode:o} \"$tmp\"\n{chown}"
        "sync -- \"$tmp\" 2>/dev/null || sync\n"
        f"mv -f -- \"$tmp\" {q}\n"
        "trap - EXIT\n"
    )
