"""The connection interface: Result, ConnectOptions and the Connection base class (imports neither kind).

Every `run` is one remote command and is counted: round trips are what fleet economises. A script runs in
bash started the way `ssh host cmd` starts it, so the user's shell hooks apply as they do for real users.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fleet import parse
from fleet.errors import HostError
from fleet.inventory import Host
from fleet.shell import NO_GZIP, STARTED, exports, needs_sudo, stdin_for, user_is_root, wrap_bash, write_file_script
from fleet.connection.capture import OutputCallback


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
    auth_wait: float | None = None    # a refused key: retried this long from the first refusal (None: all of wait)
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
    """FLEET_DEAD_AFTER (seconds, at least 1) when set, else DEAD_AFTER; another value is an InputError (exit 2)
    raised where the connection options are made, before any host."""
    return parse.from_env("FLEET_DEAD_AFTER", parse.seconds, DEAD_AFTER, least=1)


def _without_started(on_error: OutputCallback) -> OutputCallback:
    """`on_error` minus wrap_bash's first line (shell.STARTED), which is fleet's, not the command's."""
    seen = []

    def line(text: str) -> None:
        if not seen and text == STARTED:
            seen.append(True)
        else:
            on_error(text)
    return line


class Connection:
    """The interface. Subclasses implement `_exec`."""

    def __init__(self, host: Host):
        self.host = host
        self.remote_commands = 0
        self.gzip = True    # long scripts travel gzipped until the host says it has no gzip
        self.on_command: Callable[[str, str], None] | None = None

    @property
    def is_root(self) -> bool:
        return user_is_root(self.host)

    def run(self, script: str, *, env: dict[str, str] | None = None, sudo: bool = False,
            timeout: float | None = None, on_output: OutputCallback | None = None,
            on_error: OutputCallback | None = None) -> Result:
        """Run a bash script; never raises for a non-zero exit (see Result.exit). `sudo`: the script wants root
        (it runs under sudo only where shell.needs_sudo says so: not when the user is root already)."""
        body = exports(env) + script
        root = needs_sudo(sudo, self.is_root)
        self.remote_commands += 1
        started = time.monotonic()
        streams = {"on_error": _without_started(on_error)} if on_error else {}   # stderr's lines as they come
        result = self._exec(wrap_bash(body, sudo=root, remote=True, compress=self.gzip),
                            stdin=stdin_for(body, compress=self.gzip), timeout=timeout, on_output=on_output, **streams)
        if result.exit == 125 and self.gzip and NO_GZIP in result.stderr:
            # it stopped before reading the script: send it again as it is, and so from now on to this host
            self.gzip = False
            self.remote_commands += 1
            result = self._exec(wrap_bash(body, sudo=root, remote=True, compress=False),
                                stdin=stdin_for(body, compress=False), timeout=timeout, on_output=on_output,
                                **streams)
        if STARTED in result.stderr:    # wrap_bash's first line, for the first-output deadline: not the command's
            result = Result(result.exit, result.stdout, result.stderr.replace(STARTED + "\n", "", 1))
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
