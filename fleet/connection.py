"""Connections: one interface, two kinds (SSH over fabric/paramiko, and this machine).

Every `run` is one remote command and is counted: round trips are what fleet economises. A script runs in
bash started the way `ssh host cmd` starts it, so the user's shell hooks apply as they do for real users.
fabric and paramiko are imported only when an SSH connection opens, so local runs, `--help` and `fleet
decide` work where only PyYAML, Jinja2 and Rich are installed.
"""

from __future__ import annotations

import base64
import os
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .errors import HostError
from .inventory import Host

OutputCallback = Callable[[str], None]
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

    def fleet_known_hosts(self) -> Path:
        if self.known_hosts:
            return Path(self.known_hosts)
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        return Path(base) / "fleet" / "known_hosts"


class Connection:
    """The interface. Subclasses implement `_exec`."""

    def __init__(self, host: Host):
        self.host = host
        self.remote_commands = 0

    @property
    def is_root(self) -> bool:
        return self.host.user == "root"

    def run(self, script: str, *, env: dict[str, str] | None = None, sudo: bool = False,
            timeout: float | None = None, on_output: OutputCallback | None = None) -> Result:
        """Run a bash script; never raises for a non-zero exit (see Result.exit)."""
        body = _exports(env) + script
        command = wrap_bash(body, sudo=sudo and not self.is_root)
        self.remote_commands += 1
        return self._exec(command, timeout=timeout, on_output=on_output)

    def write_file(self, path: str, content: str | bytes, *, mode: int = 0o644, sudo: bool = False,
                   owner: str | None = None) -> Result:
        """Replace `path` atomically (temp file in the same directory, fsync, rename): one remote command."""
        result = self.run(write_file_script(path, content, mode=mode, owner=owner), sudo=sudo)
        if not result.ok:
            raise HostError(f"{self.host.name}: could not write {path}: {result.stderr.strip() or result.stdout.strip()}")
        return result

    def close(self) -> None:
        pass

    def _exec(self, command: str, *, timeout, on_output) -> Result:
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
    """The command line that runs `script` in bash (under `sudo -n` when asked), every byte quoted."""
    prefix = "sudo -n -H " if sudo else ""
    if len(script) <= _ARG_LIMIT:
        return f"{prefix}bash -c {shlex.quote(script)}"
    packed = base64.b64encode(script.encode()).decode()
    # Too long for one argument: it goes through a file the script removes first.
    return (f"f=$(mktemp) && printf %s {packed} | base64 -d > \"$f\" && "
            f"{prefix}bash -c 'rm -f -- \"$1\"; . /dev/stdin' fleet \"$f\" < \"$f\"")


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


class LocalConnection(Connection):
    """This machine, through a child bash. `sudo` applies only when fleet itself is not root."""

    @property
    def is_root(self) -> bool:
        return os.geteuid() == 0

    def _exec(self, command: str, *, timeout, on_output) -> Result:
        proc = subprocess.Popen(["bash", "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
        out: list[str] = []
        err: list[str] = []
        readers = [threading.Thread(target=_pump, args=(proc.stdout, out, on_output), daemon=True),
                   threading.Thread(target=_pump, args=(proc.stderr, err, None), daemon=True)]
        for reader in readers:
            reader.start()
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            for reader in readers:
                reader.join()
            return Result(124, "".join(out), "".join(err) + f"\nfleet: timed out after {timeout:g}s\n")
        for reader in readers:
            reader.join()
        return Result(code, "".join(out), "".join(err))


def _pump(stream, sink: list[str], on_output: OutputCallback | None) -> None:
    for line in stream:
        sink.append(line)
        if on_output:
            on_output(line.rstrip("\n"))
    stream.close()


def connect(host: Host, options: ConnectOptions | None = None) -> Connection:
    """Open a connection to `host` (SSH connections are verified and ready when this returns)."""
    options = options or ConnectOptions()
    if host.connection == "local":
        return LocalConnection(host)
    from .ssh import SSHConnection  # fabric/paramiko only when needed

    conn = SSHConnection(host, options)
    conn.open()
    return conn


@dataclass
class Timer:
    started: float = field(default_factory=time.monotonic)

    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 3)
