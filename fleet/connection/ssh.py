"""SSH connections over fabric/paramiko (imported only when an SSH connection opens).

- Host keys are checked by hostkeys.py: unknown keys refused unless --accept-new-host-keys, @revoked honoured; a
  changed key is always refused here, with both fingerprints and how to accept a new one deliberately.
- A host still booting (connection refused, timeout) is retried with backoff up to `wait` seconds.
- Where the host is comes from ~/.ssh/config as ssh would read it (fleet/connection/ssh_config.py: HostName, Port, User,
  IdentityFile, ProxyJump; the inventory's own values win). fabric's and invoke's config files are never read.
- A host that stops answering (no output, no reply to keep-alives for `dead_after` seconds) is given up.
- A login shell that never starts fleet's command (a startup file blocked on a dead mount) is given up after
  FIRST_OUTPUT seconds, naming the startup files: every command's first line (shell.STARTED) says it started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import socket
import threading
import time
from pathlib import Path

import paramiko
from fabric import Config
from fabric import Connection as FabricConnection
from fabric.runners import Remote
from invoke.exceptions import CommandTimedOut

from fleet.errors import AuthRefused, FleetError, HostError, HostKeyError
from fleet.inventory import Host
from fleet.connection.ssh_config import Target, resolve
from fleet.connection.base import Connection, ConnectOptions, Result
from fleet.connection.capture import Capture
from fleet.shell import STARTED
from fleet.connection.hostkeys import Policy, _warn_once, fingerprint, host_key_name, known_hosts

__all__ = ["SSHConnection"]

KEEPALIVE_SECONDS = 15
# SSH handshakes in progress at once, whatever the number of hosts. A handshake is CPU on this side (key exchange,
# host-key check, the key's signature, paramiko's packets in Python: ~10 ms a host); 1,000 begun at once on a 2-core
# controller all progressed together, each past paramiko's banner/auth timeouts (--connect-timeout, 10 s), and
# hundreds of hosts failed at "0 cmd" for the controller's own load (issue 46). The time a host waits for its turn
# is no part of its timeout; 64 at once still overlap the network's round trips of a far fleet.
HANDSHAKES = 64
# How often an open connection's paramiko thread wakes with nothing to read (paramiko's own: 0.1 s), to see whether a
# keep-alive is due. Each wake is a Python exception raised and handled, and the GIL taken back from the other hosts'
# threads: 1,000 hosts open for a minute woke 600,000 times, ~7 ms of the controller's CPU a host (issue 46); once a
# second, 1,000 idle connections still cost 0.090 ms a connection-second, 0.055 at 5 s (bench/idle_connections.py).
# Every 5 s still sends paramiko's keep-alive within 5 s of KEEPALIVE_SECONDS, and the watchdog asks
# on its own clock; closing does not wait for it (paramiko's close marks the packetizer closed, and the thread
# ends at its next wake).
IDLE_WAKE = 5.0
_handshakes = threading.BoundedSemaphore(HANDSHAKES)
# Handshakes in progress at once with one SSH server (its address and port): OpenSSH's sshd drops new connections at
# random once 10 are not yet authenticated (MaxStartups 10:30:100), before it sends its banner. Hosts behind one jump
# host all begin with a handshake with it: 200 replayed hosts behind a real sshd lost 45-60 of them a run, each
# "UNREACHABLE", to fleet's own 64 at once (issue 46). One server's handshakes wait their turn under its default,
# with room for its other clients and for sshd's own lag: it counts a login done a moment after the client does. A
# hop reached through another (the second jump host of a chain) counts from the channel that opens its TCP
# connection: with its slot taken after the channel, the hosts waiting for it each held a connection open to the
# second jump host, and it dropped some.
STARTUPS_PER_SERVER = 6
_startups: dict[tuple[str, int], threading.BoundedSemaphore] = {}
_startups_guard = threading.Lock()


def _startup_slot(hostname: str, port: int) -> threading.BoundedSemaphore:
    with _startups_guard:
        return _startups.setdefault((hostname, port), threading.BoundedSemaphore(STARTUPS_PER_SERVER))
# Seconds the login shell may take to start fleet's command (its startup files: conda's init, an NFS home): past
# them the command is given up, naming the startup files (ssh._exec); wrap_bash's first line ends the wait.
FIRST_OUTPUT = 120.0

# paramiko logs every failed handshake with its traceback to the 'paramiko.transport' logger, which Python's
# last-resort handler prints to stderr (two tracebacks per host that sends no banner): fleet reports the failure
# itself, one line per host. A handler here stops the last resort; logging a user configures still gets them.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
_RETRYABLE = (ConnectionRefusedError, ConnectionResetError, socket.timeout, TimeoutError,
              paramiko.ssh_exception.NoValidConnectionsError, EOFError)


_AuthRefused = AuthRefused   # retried within --wait (and options.auth_wait): a booting pod may not have it yet


class _NoBanner(HostError):
    """TCP connected but no SSH banner came (not an SSH server, or one still starting): retried within --wait."""


class SSHConnection(Connection):
    def __init__(self, host: Host, options: ConnectOptions):
        super().__init__(host)
        self.options = options
        self._fabric: FabricConnection | None = None
        self._jumps: list[FabricConnection] = []
        self._watchdog: _Watchdog | None = None
        self.ssh_target: Target = resolve(host, options.ssh_config)
        self.revoked: dict[str, str] = {}   # base64 key -> "file:line" of its @revoked line
        self._listed_at: dict[str, list[str]] = {}   # base64 key -> the "file:line"s that list it for this host

    # -- opening ---------------------------------------------------------------------------------
    def open(self) -> None:
        deadline = time.monotonic() + max(self.options.wait, 0)
        delay, refused = 0.5, None     # refused: (when a key was first refused, the latest refusal)
        while True:
            try:
                with _handshakes:
                    self._open_once()
                return
            except _AuthRefused as exc:
                refused, failure = (refused[0] if refused else time.monotonic(), exc), exc
            except (*_RETRYABLE, _NoBanner) as exc:
                failure = exc
            except OSError as exc:  # name resolution, no route: waiting will not help
                raise HostError(f"{self.host.name}: cannot reach {self.host.target}: {_describe(exc)}") from None
            # A booting pod may refuse TCP, accept it before its sshd answers (a container's port proxy) or before
            # its authorized_keys is in place: within --wait, try again. Once a key was refused, only within
            # auth_wait, whatever the later tries meet (OpenSSH's PerSourcePenalties drops the connections of a
            # source that failed to log in): a provider installs keys in seconds, past that the key is wrong.
            left = deadline - time.monotonic()
            if refused and self.options.auth_wait is not None:
                left = min(left, refused[0] + self.options.auth_wait - time.monotonic())
                failure = refused[1] if left <= 0 else failure
            if left <= 0:
                if isinstance(failure, _RETRYABLE):
                    raise HostError(f"{self.host.name}: cannot reach {self.host.target}: {_describe(failure)}; check "
                                    "the address and port, or pass --wait SECONDS for a host still booting") from None
                raise failure
            # Never sleep past the deadline: one last try at the end of `wait`, not a give-up before it.
            time.sleep(min(delay, left))
            delay = min(delay * 2, 15)

    def _open_once(self) -> None:
        target = self.ssh_target
        try:
            hops = target.jumps + [target]
            fab = None
            for before, hop in zip([None, *hops], hops):
                # each hop's handshake is one of its server's startups from the moment its TCP connection opens
                # (ours, or the direct-tcpip channel the hop before opens to it) until we are logged in
                with _startup_slot(hop.hostname, hop.port):
                    sock = None if before is None else self._through(self._jumps[-1], before, hop)
                    fab = self._open_fabric(hop, sock)
                if hop is not target:
                    self._jumps.append(fab)
        except BaseException:
            self._close_jumps()
            raise
        transport = fab.client.get_transport()
        transport.set_keepalive(KEEPALIVE_SECONDS)
        for hop in [transport] + [j.client.get_transport() for j in self._jumps]:
            if isinstance(hop.sock, socket.socket):
                hop.sock.settimeout(IDLE_WAKE)
        # Each exec costs a round trip of small packets; Nagle's algorithm adds delay to every one.
        if not target.jumps:
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._fabric = fab
        self._watchdog = _Watchdog([transport] + [j.client.get_transport() for j in self._jumps],
                                   self.options.dead_after)
        self._watchdog.start()

    def _open_fabric(self, target: Target, sock) -> FabricConnection:
        """One verified, authenticated SSH hop (over `sock`, a channel through the previous hop, if given)."""
        host, opts = self.host, self.options
        connect_kwargs = {"banner_timeout": opts.connect_timeout, "auth_timeout": opts.connect_timeout}
        keys = target.key_files
        if keys:
            connect_kwargs.update(_key_kwargs(keys))
        if sock is not None:
            connect_kwargs["sock"] = sock
        # lazy=True: no ~/.fabric.yaml, /etc/fabric.yaml, invoke files nor ssh config read by fabric itself
        # (a user's fabric settings, such as agent forwarding, must not reach a rented pod by surprise).
        # _BoundedRemote: output reaches only fleet's bounded sinks (no quadratic joins, no unbounded buffers).
        config = Config(lazy=True, overrides={"load_ssh_configs": False, "run": {"hide": True, "warn": True},
                                              "runners": {"remote": _BoundedRemote}})
        fab = FabricConnection(target.hostname, user=target.user, port=target.port, config=config,
                               connect_timeout=opts.connect_timeout, connect_kwargs=connect_kwargs,
                               gateway=False, forward_agent=False)
        client = fab.client
        self._load_known_hosts(client, host_key_name(target.hostname, target.port))
        client.set_missing_host_key_policy(Policy(self))
        where = f"{target.user}@{target.hostname}:{target.port}{target.via}"
        transport = None
        began = time.monotonic()
        try:
            try:
                fab.open()
            except BaseException:
                # fabric's close() does nothing until open() has succeeded, yet paramiko's transport thread
                # and socket already run: close them here or they linger (paramiko warns of hangs at exit).
                transport = client.get_transport()
                client.close()
                raise
        except FleetError:
            raise
        except paramiko.BadHostKeyException as exc:
            raise self._changed_key(exc, target) from None
        except paramiko.AuthenticationException as exc:
            raise _AuthRefused(f"{host.name}: {where} refused our credentials ({exc}); check 'user:' and "
                               "'key:' in the inventory (or User/IdentityFile in ~/.ssh/config), or load the key "
                               "into ssh-agent") from None
        except paramiko.SSHException as exc:
            if transport is not None and not transport.remote_version:
                # no "SSH-2.0-..." line came: paramiko says "Error reading SSH protocol banner", or, where the
                # peer sent other bytes and closed, "No existing session"; neither names the cause
                if time.monotonic() - began < min(opts.connect_timeout, 10) / 2:
                    # closed well before the banner's deadline: a server that refused the connection as it came
                    raise _NoBanner(f"{host.name}: {target.hostname}:{target.port}{target.via} closed the connection "
                                    "before its SSH banner: an sshd refusing new connections (too many not yet "
                                    "logged in: its MaxStartups), a firewall, or a host still booting; pass --wait "
                                    "SECONDS to try again meanwhile") from None
                raise _NoBanner(f"{host.name}: no SSH banner from {target.hostname}:{target.port}{target.via} within "
                                f"{opts.connect_timeout:g}s: not an SSH server, or still booting; check the port, "
                                "or pass --wait SECONDS for a host still booting") from None
            raise HostError(f"{host.name}: SSH to {where} failed: {exc}") from None
        return fab

    def _through(self, jump_fab: FabricConnection, jump: Target, dest: Target):
        """A direct-tcpip channel from the jump host to the next hop (ssh -J does the same)."""
        try:
            return jump_fab.client.get_transport().open_channel(
                "direct-tcpip", (dest.hostname, dest.port), ("", 0), timeout=self.options.connect_timeout)
        except paramiko.ChannelException as exc:
            raise HostError(f"{self.host.name}: jump host {jump.alias} could not reach {dest.hostname}:{dest.port} "
                            f"({exc.text}); check HostName and ProxyJump in ~/.ssh/config") from None
        except paramiko.SSHException as exc:
            raise HostError(f"{self.host.name}: jump host {jump.alias} failed to open a channel to "
                            f"{dest.hostname}:{dest.port}: {exc}") from None

    def _close_jumps(self) -> None:
        for fab in reversed(self._jumps):
            fab.close()
        self._jumps = []

    def _load_known_hosts(self, client: paramiko.SSHClient, name: str) -> None:
        """The keys the known_hosts files list for `name` (how paramiko names this hop: host, or [host]:port)."""
        files = [Path(os.path.expanduser("~/.ssh/known_hosts"))]
        if self.host.known_hosts:   # e.g. the lab's, which generated its hosts' keys and vouches for them
            files.append(Path(self.host.known_hosts))
        files.append(self.options.fleet_known_hosts())
        found = []
        for path in files:
            parsed = known_hosts(path)
            for key, where in parsed.listed(name):
                found.append(key)
                self._listed_at.setdefault(key.get_base64(), []).append(where)
            self.revoked.update(parsed.revoked)
            for problem in parsed.problems:
                _warn_once(self.options, problem)
        keys = client.get_host_keys()
        for key in found:
            if key.get_base64() in self.revoked:
                continue  # a revoked key is never a known one: the policy refuses it
            keys.add(name, key.get_name(), key)

    def _changed_key(self, exc: paramiko.BadHostKeyException, target: Target) -> HostKeyError:
        """The refusal names each file:line that lists the old key (the user's, the inventory's known_hosts:, or
        fleet's own), and the command that removes it from that file."""
        name = host_key_name(target.hostname, target.port)
        where = self._listed_at.get(exc.expected_key.get_base64()) or [str(self.options.fleet_known_hosts())]
        files = list(dict.fromkeys(w.rsplit(":", 1)[0] if w[-1:].isdigit() else w for w in where))
        remove = " and ".join(f"ssh-keygen -R '{name}' -f {shlex.quote(f)}" for f in files)
        return HostKeyError(
            f"{self.host.name}: HOST KEY CHANGED for {name}: {', '.join(where)} lists "
            f"{fingerprint(exc.expected_key)}, the host offers {fingerprint(exc.key)}; refusing to connect. A "
            "restarted cloud pod regenerates its key; if you know that happened, remove the old key "
            f"({remove}) and run again with --accept-new-host-keys")

    # -- running ---------------------------------------------------------------------------------
    def _exec(self, command: str, *, stdin: str | None, timeout, on_output, on_error=None) -> Result:
        assert self._fabric is not None, "open() first"
        started, never = threading.Event(), threading.Event()
        killed = {"done": False}

        def err_line(line: str) -> None:
            if not started.is_set() and line == STARTED:
                started.set()
            elif on_error:
                on_error(line)

        def give_up() -> None:
            if not started.is_set():
                never.set()
                # the blocked shell and what it started, on the host (where sshd lets it be signalled)
                killed["done"] = _kill_session(_RUNNING.get(id(self._fabric)))
                self.abort()

        out, err = Capture(on_output), Capture(err_line)
        # the first-output deadline: a login shell whose startup file blocks (a dead mount in ~/.bashrc) never
        # starts fleet's command, and would hold the run until its own deadline (20 minutes for an apply)
        first = threading.Timer(FIRST_OUTPUT, give_up)
        first.daemon = True
        # Always a stdin that ends: a command that reads stdin gets end-of-file (as under `ssh -n`), not a hang.
        # Output reaches only our bounded sinks (see _BoundedRemote).
        kwargs = {"hide": False, "warn": True, "in_stream": _Feed(stdin or ""), "timeout": timeout,
                  "out_stream": out, "err_stream": err}
        first.start()
        try:
            with self._watchdog.asking() if self._watchdog is not None else contextlib.nullcontext():
                res = self._fabric.run(command, **kwargs)
        except CommandTimedOut:
            return Result(124, out.text(), err.text() + f"\nfleet: timed out after {timeout:g}s\n")
        except (OSError, EOFError, paramiko.SSHException) as exc:
            if never.is_set():
                first.join(10)   # give_up's answer from sshd, which may come after the channel closed
                return Result(124, out.text(), err.text() + "\n" + self._never_started(killed["done"]))
            self._raise_if_dead()
            raise HostError(f"{self.host.name}: connection lost while running a command: {_describe(exc)}") from None
        finally:
            first.cancel()
            out.finish()
            err.finish()
        if never.is_set():
            first.join(10)
            return Result(124, out.text(), err.text() + "\n" + self._never_started(killed["done"]))
        self._raise_if_dead()
        if res.exited in (None, -1) and not self._alive():
            # paramiko answers -1 for a channel closed without an exit status: the host went away mid-command
            raise HostError(f"{self.host.name}: connection lost while running a command (no exit status)")
        return Result(res.exited if res.exited is not None else 255, out.text(), err.text())

    def _never_started(self, killed: bool) -> str:
        return (f"fleet: the login shell of {self.host.user}@{self.host.name} did not start fleet's command within "
                f"{FIRST_OUTPUT:g}s: a startup file (~/.bashrc, ~/.profile, /etc/bash.bashrc, /etc/profile.d) blocks, "
                "on a dead mount or waiting for input; `ssh` to the host and fix it (fleet's command never ran; "
                + ("the shell and what it started were killed on the host, through sshd)\n" if killed else
                   "sshd refused to signal that shell (OpenSSH does for a root login), so it and what it started may "
                   "still be running there: end them once you can log in)\n"))

    def _alive(self) -> bool:
        transport = self._fabric.client.get_transport() if self._fabric else None
        return bool(transport and transport.is_active())

    def _raise_if_dead(self) -> None:
        if self._watchdog and self._watchdog.dead:
            raise HostError(f"{self.host.name}: stopped answering: no reply to SSH keep-alives for "
                            f"{self.options.dead_after:g}s (the host, or the network to it, is gone or frozen); "
                            "raise --dead-after if it is only slow")

    def abort(self) -> None:
        """Ctrl-C from another thread: close the transports; the running command returns at once."""
        for fab in [self._fabric, *self._jumps]:
            transport = fab.client.get_transport() if fab is not None else None
            if transport is not None:
                transport.close()

    def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.stop()
            self._watchdog = None
        if self._fabric is not None:
            self._fabric.close()
            self._fabric = None
        self._close_jumps()


class _Feed:
    """stdin for invoke, which asks a file-like object for one byte per read and naps 10 ms between reads:
    hand it big chunks whatever it asks for, then "" (end-of-file, which invoke forwards to the remote)."""

    CHUNK = 1 << 16

    def __init__(self, data: str):
        self.data, self.pos = data, 0

    def read(self, _size: int = -1) -> str:
        chunk = self.data[self.pos:self.pos + self.CHUNK]
        self.pos += len(chunk)
        return chunk


# The channel of the command each fabric connection runs (id(connection) -> channel), for the first-output deadline.
_RUNNING: dict = {}


def _kill_session(channel, wait: float = 5.0) -> bool:
    """KILL the session's process group on the host: an SSH "signal" channel request (RFC 4254 6.9), which OpenSSH's
    sshd turns into killpg() of the session's shell; closing the connection alone leaves a login shell blocked in a
    startup file, and what it started, running (issue 49). True when sshd says it did. OpenSSH refuses it for a
    root login ("session signalling requires privilege separation": a root session runs in sshd's monitor), and so
    do servers without the request. paramiko has no call for it: the request is written as its own are."""
    if channel is None or channel.closed:
        return False
    from paramiko.common import cMSG_CHANNEL_REQUEST
    from paramiko.message import Message

    message = Message()
    message.add_byte(cMSG_CHANNEL_REQUEST)
    message.add_int(channel.remote_chanid)
    message.add_string("signal")
    message.add_boolean(True)        # want a reply: success, or failure (paramiko then closes the channel)
    message.add_string("KILL")
    try:
        channel.event_ready = False
        channel.event.clear()
        channel.transport._send_user_message(message)
    except (OSError, EOFError, paramiko.SSHException):
        return False   # the connection went meanwhile: nothing more to ask of it
    channel.event.wait(wait)
    return bool(channel.event_ready)


class _BoundedRemote(Remote):
    """fabric's runner, minus two costs: invoke keeps every byte of output in a list and joins that whole list
    again for each chunk that arrives (for its autoresponders, which fleet does not use): unbounded memory and
    quadratic time on a host that floods. Output goes to our bounded Capture sinks instead."""

    def start(self, command, shell, env, timeout=None):
        super().start(command, shell, env, timeout=timeout)
        _RUNNING[id(self.context)] = self.channel

    def stop(self):
        _RUNNING.pop(id(self.context), None)
        super().stop()

    def _handle_output(self, buffer_, hide, output, reader) -> None:
        for data in self.read_proc_output(reader):
            output.write(data)

    # invoke's timed_out asks whether its timer thread has ended; that thread is the one running kill(), which
    # closes the channel and so lets the command return while the thread may still be alive: a timed-out
    # command then came back as paramiko's -1 for a closed channel instead of CommandTimedOut (exit 124).
    # Whether the timer fired is what kill() records first.
    _killed = False

    def kill(self) -> None:
        self._killed = True
        try:
            super().kill()
        except (EOFError, OSError, paramiko.SSHException):
            # paramiko marks the channel closed before it sends the close, and the wait (below) returns on that
            # mark: the command and then its connection may be closed by the caller while this timer thread is
            # still sending. The connection gone is what kill() wants; it is not the timer thread's exception.
            pass

    @property
    def timed_out(self) -> bool:
        return self._killed or super().timed_out

    # A command that ends before reading all of its stdin (it exited, or a server refused it) closes the channel
    # under invoke's stdin thread, whose write then raises "Socket is closed" and came back as a ThreadException
    # instead of the command's own exit status and output (seen once in twenty runs of the sentinel test).
    # The same with the connection closed between paramiko's check and its send (EOFError, as in kill() below).
    def write_proc_stdin(self, data) -> None:
        try:
            super().write_proc_stdin(data)
        except (OSError, EOFError):
            pass

    def close_proc_stdin(self) -> None:
        try:
            super().close_proc_stdin()
        except (OSError, EOFError):
            pass

    # invoke polls: its stdin thread and its wait() each wake every 10 ms (Runner.input_sleep) for as long as the
    # command runs, the stdin thread long after its input ended. 1,000 hosts' commands in flight at once woke 200,000
    # times a second, each wake a GIL handoff that every other thread paid for (issue 46). fleet's stdin is all in
    # memory (_Feed): it is written and ended at once and the thread ends; the wait blocks on paramiko's event, set
    # when the exit status comes or the channel closes (invoke's timeout closes it: kill()), and looks at the reader
    # threads once a second as invoke's loop did every 10 ms (a reader that died ends the wait, as there).
    def handle_stdin(self, input_, output, echo=False) -> None:
        if not isinstance(input_, _Feed):
            return super().handle_stdin(input_, output, echo)
        while chunk := input_.read():
            self.write_proc_stdin(chunk)
        self.close_proc_stdin()

    def wait(self) -> None:
        while not self.channel.status_event.wait(1.0) and not self.has_dead_threads:
            pass


class _Watchdog(threading.Thread):
    """Asks the server for an answer (an SSH global request it must reply to, as OpenSSH's
    ServerAliveInterval does) every `interval` while a command runs (`asking`); no answer within `dead_after`:
    close the connection, so the running command returns and the host fails, while the other hosts carry on. A
    busy server still answers, so a long quiet command (pip downloading torch) is never cut off.
    Between commands nothing waits on the host, so nothing is asked: a host gone meanwhile is found by the next
    command (asked within `interval` of its start). Each ask is a thread and two packets through paramiko's Python:
    at 1,000 hosts open for a converged apply, whose connections wait mostly on the controller's own work, the asks
    were most of what idle connections cost (bench/idle_connections.py); paramiko's own keep-alive
    (KEEPALIVE_SECONDS) still keeps an idle connection's NAT entries."""

    def __init__(self, transports: list, dead_after: float):
        super().__init__(name="fleet-alive", daemon=True)
        self.transports, self.dead_after = transports, dead_after
        self.interval = min(max(dead_after / 4, 0.5), 15.0)
        self._stop, self.dead = threading.Event(), False
        self._running, self._lock = 0, threading.Lock()

    def stop(self) -> None:
        self._stop.set()

    @contextlib.contextmanager
    def asking(self):
        """While a command runs on the host: the server is asked every `interval`."""
        with self._lock:
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1

    def run(self) -> None:
        main = self.transports[0]
        while not self._stop.wait(self.interval) and main.is_active():
            if not self._running:
                continue
            answered = threading.Event()
            threading.Thread(target=self._ask, args=(main, answered), daemon=True).start()
            if not answered.wait(self.dead_after) and not self._stop.is_set():
                self.dead = True
                for transport in self.transports:
                    transport.close()
                return

    @staticmethod
    def _ask(transport, answered: threading.Event) -> None:
        try:
            # OpenSSH answers an unknown request with a failure message: any answer proves it is alive.
            transport.global_request("keepalive@openssh.com", wait=True)
        except Exception:  # the transport closed meanwhile: the loop sees that
            pass
        answered.set()


def _key_kwargs(paths: list[str]) -> dict:
    """The key as a loaded key where we can: given only a file name, paramiko tries it as each key type in turn
    and, when the server refuses it, reports the last type's parse error ("encountered RSA key, expected OPENSSH
    key") instead of the refusal. Several keys (IdentityFile lines): paramiko tries each in turn."""
    if len(paths) == 1:
        try:
            return {"pkey": paramiko.PKey.from_path(paths[0])}
        except (paramiko.SSHException, OSError, ValueError):
            pass  # a passphrase (the agent may hold the key) or a format from_path does not know: let paramiko try
    return {"key_filename": list(paths)}


def _describe(exc: BaseException) -> str:
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        return "connection refused"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out"
    return str(exc) or type(exc).__name__

