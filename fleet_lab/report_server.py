"""A real `fleet serve` process on a free loopback port, started and stopped (SIGKILL: a crash) by a test or a
benchmark: the lab's pods reach it there (they share the loopback network with the controller)."""

import os
import signal
import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServeProcess:
    def __init__(self, store_url: str, token: str, port: int | None = None, cwd=None, tls: tuple | None = None):
        self.store_url, self.token, self.port, self.cwd = store_url, token, port or free_port(), cwd
        self.tls = tls            # (certificate, key) PEM paths
        self.proc = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1/reports"

    def start(self) -> "ServeProcess":
        env = {**os.environ, "FLEET_SERVE_TOKEN": self.token}
        self.proc = subprocess.Popen([sys.executable, "-m", "fleet", "serve", "--store", self.store_url,
                                      "--listen", f"127.0.0.1:{self.port}",
                                      *(["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
                                        if self.tls else [])], env=env, cwd=self.cwd,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        while True:   # until it listens, or it has died saying why
            if self.proc.poll() is not None:
                raise RuntimeError(f"fleet serve ended: {self.proc.stdout.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        self.proc = None
