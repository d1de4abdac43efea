"""An SSH server in the test process (mockssh) that runs only what the test allowed.

mockssh's own handler runs every exec request on this machine through a shell. Ours runs a command only if it
is exactly what `fleet.shell.wrap_bash` makes of a script the test chose; anything else is refused with
exit 97 and recorded, and the fixture fails the test (the sentinel habit of fabric's tests). It also does what
mockssh's handler does not and sshd does: forwards stdin with its end-of-file, and kills the command when the
client closes the channel (a timeout).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from queue import Queue

import mockssh
import paramiko
from mockssh.server import SERVER_KEY_PATH, Handler

from fleet.shell import exports, wrap_bash, write_file_script
from fleet.inventory import Host



def _owner_only_copy(path: Path) -> str:
    """mockssh ships its sample key 0644: ssh, and fleet with it, refuse a private key others may read."""
    import shutil
    import tempfile

    copy = Path(tempfile.mkdtemp(prefix="fleet-test-key-")) / path.name
    shutil.copyfile(path, copy)
    copy.chmod(0o600)
    return str(copy)


USER_KEY = _owner_only_copy(Path(mockssh.__file__).parent / "sample-user-key")
SENTINEL_EXIT = 97


class SentinelHandler(Handler):
    host_key_path = SERVER_KEY_PATH

    def __init__(self, server, client_conn):  # mockssh's, with a host key chosen by the class
        self.server = server
        self.command_queues = {}
        client, _ = client_conn
        self.transport = paramiko.Transport(client)
        self.transport.add_server_key(paramiko.RSAKey(filename=self.host_key_path))

    def run(self):
        try:
            self.transport.start_server(server=self)
        except (OSError, EOFError, paramiko.SSHException):
            return  # the client hung up during the handshake (a refused host key)
        while (channel := self.transport.accept()) is not None:
            self.command_queues.setdefault(channel.chanid, Queue())
            threading.Thread(target=self.handle_client, args=(channel,), daemon=True).start()

    def handle_client(self, channel):
        command = self.command_queues[channel.chanid].get().decode()
        try:
            if command in self.server.allowed:
                code = self._execute(channel, command)
            else:
                self.server.escaped.append(command)
                channel.sendall_stderr(b"mockssh sentinel: the test did not allow this command\n")
                code = SENTINEL_EXIT
            channel.send_exit_status(code)
        except (OSError, EOFError, paramiko.SSHException):
            pass  # the client went away (a timeout): nothing to report to
        finally:
            channel.close()

    def _execute(self, channel, command: str) -> int:
        env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "LC_ALL": "C.UTF-8"}
        # /bin/sh, as sshd would use a login shell that need not be bash: wrap_bash must not rely on it.
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
        pumps = [threading.Thread(target=_copy, args=(proc.stdout.read1, channel.sendall), daemon=True),
                 threading.Thread(target=_copy, args=(proc.stderr.read1, channel.sendall_stderr), daemon=True)]
        feeder = threading.Thread(target=_feed, args=(channel, proc.stdin), daemon=True)
        for thread in pumps + [feeder]:
            thread.start()
        while True:
            try:
                code = proc.wait(timeout=0.02)
                code = 128 - code if code < 0 else code  # killed by a signal, as a shell reports it
                break
            except subprocess.TimeoutExpired:
                if channel.closed:  # the client gave up (timeout): as sshd would, end the command
                    os.killpg(proc.pid, signal.SIGKILL)
        for thread in pumps:
            thread.join(timeout=10)
        return code


def _copy(read, send) -> None:
    try:
        for chunk in iter(lambda: read(65536), b""):
            send(chunk)
    except (OSError, EOFError):
        pass


def _feed(channel, stdin) -> None:
    try:
        for chunk in iter(lambda: channel.recv(65536), b""):
            stdin.write(chunk)
            stdin.flush()
    except (OSError, EOFError):
        pass
    finally:
        try:
            stdin.close()  # the client's end-of-file reaches the command
        except OSError:
            pass


class SentinelServer(mockssh.Server):
    handler_cls = SentinelHandler

    def __init__(self, users, *, port: int = 0):
        super().__init__(users)
        self.fixed_port = port
        self.allowed: set[str] = set()
        self.escaped: list[str] = []

    def allow(self, script: str, *, env: dict | None = None) -> str:
        """Let the command that Connection.run(script, env=env) sends run, and the one `fleet run -- SCRIPT` sends
        (behind its watchdog, fleet.commands.run.remote_script); returns the script."""
        from fleet.commands.run import remote_script

        self.allowed.add(wrap_bash(exports(env) + script, remote=True))
        if not env:
            self.allowed.add(wrap_bash(remote_script(script, sudo=False, user_is_root=True), remote=True))
        return script

    def allow_write(self, path: str, content, mode: int = 0o644) -> None:
        self.allowed.add(wrap_bash(write_file_script(path, content, mode=mode), remote=True))

    # mockssh's, with a fixed port possible and no deprecated setDaemon
    def __enter__(self):
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((self.host, self.fixed_port))
        self._socket.listen(5)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        sock = self._socket
        while True:
            try:
                conn, addr = sock.accept()
            except OSError:
                return  # closed by __exit__
            handler = self.handler_cls(self, (conn, addr))
            threading.Thread(target=handler.run, daemon=True).start()

    def __exit__(self, *exc_info):
        try:
            self._socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._socket.close()


@contextmanager
def serving(handler_cls=SentinelHandler, port: int = 0):
    server = SentinelServer({"root": USER_KEY}, port=port)
    server.handler_cls = handler_cls
    with server:
        yield server
    assert not server.escaped, f"commands escaped the mocks: {server.escaped}"


def host_key_line(port: int, key_path: str = SERVER_KEY_PATH) -> str:
    key = paramiko.RSAKey(filename=key_path)
    return f"[127.0.0.1]:{port} {key.get_name()} {key.get_base64()}\n"


def fleet_known_hosts() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "fleet" / "known_hosts"


def record_known(port: int, key_path: str = SERVER_KEY_PATH) -> Path:
    """The key recorded in fleet's known-hosts file (as after --accept-new-host-keys)."""
    path = fleet_known_hosts()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(host_key_line(port, key_path))
    return path


def ssh_host(port: int, name: str = "mock", key: str = USER_KEY) -> Host:
    return Host(name, address="127.0.0.1", port=port, user="root", key=key)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def booting_later(port: int, allowed: str, delay: float = 0.3):
    """A host that starts answering on `port` only after `delay` (still booting when fleet first knocks).

    Yields an Event set once it is up; the server stops when the block ends."""
    up, stop = threading.Event(), threading.Event()

    def boot():
        time.sleep(delay)
        with serving(port=port) as booted:
            booted.allow(allowed)
            up.set()
            stop.wait(30)

    thread = threading.Thread(target=boot, daemon=True)
    thread.start()
    try:
        yield up
    finally:
        stop.set()
        thread.join(10)
