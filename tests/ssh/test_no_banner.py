"""An SSH endpoint that sends no banner (a TCP port that accepts and says nothing, or says something else): one
line per host naming ADDR:PORT, no paramiko traceback, no "No existing session", exit 1, the other hosts served.

fleet runs as a separate process here, as a user runs it: paramiko's tracebacks went to stderr through Python's
last-resort logging handler, which pytest's own log capture would hide in-process (issue 26).
"""

import contextlib
import os
import socket
import subprocess
import sys
import threading

import pytest
from mockserver import USER_KEY


@contextlib.contextmanager
def listener(answer: bytes | None):
    """A TCP port that accepts every connection and sends `answer` (None: nothing), then holds it open."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    held, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            held.append(conn)
            if answer:
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        sock.shutdown(socket.SHUT_RDWR)   # wakes the accept() the serving thread waits in (close alone does not)
        sock.close()
        for conn in held:
            conn.close()
        thread.join(5)


def fleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fleet", *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, COLUMNS="400"))


@pytest.mark.parametrize("command", [["run", "--", "echo", "hi"], ["facts"], ["apply"]])
def test_a_port_without_an_ssh_banner_is_one_line_per_host(server, known, tmp_path, command):
    server.allow("echo hi")
    with listener(None) as silent, listener(b"HTTP/1.1 400 Bad Request\r\n\r\n" + b"\x00\xff" * 64) as garbage:
        inventory = tmp_path / "pods.yaml"
        hosts = (f"  silent: {{address: 127.0.0.1, port: {silent}, key: {USER_KEY}}}\n"
                 f"  garbage: {{address: 127.0.0.1, port: {garbage}, key: {USER_KEY}}}\n")
        if command[0] == "run":   # a good host beside them: served as if they were not there
            hosts += f"  good: {{address: 127.0.0.1, port: {server.port}, key: {USER_KEY}}}\n"
        inventory.write_text("hosts:\n" + hosts)
        res = fleet(command[0], str(inventory), "--connect-timeout", "2", "--wait", "0", *command[1:])
    text = res.stdout + res.stderr
    assert res.returncode == 1, text
    for name, port in (("silent", silent), ("garbage", garbage)):
        line = (f"{name}: no SSH banner from 127.0.0.1:{port} within 2s: not an SSH server, or still booting")
        assert line in text, text
    assert "Traceback" not in text and "No existing session" not in text and "Exception (client)" not in text, text
    assert "protocol banner" not in text, text
    if command[0] == "run":
        assert "hi\n" in res.stdout and "good" in res.stdout


@contextlib.contextmanager
def closing_listener():
    """A TCP port that accepts every connection and closes it at once, as sshd drops one past its MaxStartups."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        thread.join(5)


def test_a_server_that_closes_before_its_banner_is_named_so_not_a_timeout(tmp_path):
    """Closed at once, long before --connect-timeout: the line says the server closed it (an sshd refusing new
    connections, MaxStartups), not that no banner came within the timeout."""
    with closing_listener() as port:
        inventory = tmp_path / "pods.yaml"
        inventory.write_text(f"hosts:\n  dropped: {{address: 127.0.0.1, port: {port}, key: {USER_KEY}}}\n")
        res = fleet("run", str(inventory), "--connect-timeout", "30", "--wait", "0", "--", "true")
    text = res.stdout + res.stderr
    assert res.returncode == 1, text
    assert (f"dropped: 127.0.0.1:{port} closed the connection before its SSH banner: an sshd refusing new "
            "connections (too many not yet logged in: its MaxStartups)") in text, text
    assert "within 30s" not in text and "Traceback" not in text, text
