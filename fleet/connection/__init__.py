"""Connections: one interface, two kinds (SSH over fabric/paramiko, and this machine).

- base.py: Result, ConnectOptions and the Connection interface (imports neither kind);
- capture.py: the bounded sink a command's output goes into;
- local.py: LocalConnection (this machine, through a child bash);
- ssh.py and hostkeys.py: SSHConnection and host-key checking, over fabric/paramiko.

fabric and paramiko are imported only when an SSH connection opens (`connect` imports ssh.py then), so local
runs, `--help` and `fleet decide` work where only PyYAML, Jinja2 and Rich are installed.
"""

from __future__ import annotations

from typing import Callable

from fleet.inventory import Host
from fleet.connection.base import DEAD_AFTER, ConnectOptions, Connection, Result, dead_after_default
from fleet.connection.capture import MAX_CAPTURE, TAIL, TRUNCATED, Capture, OutputCallback
from fleet.connection.local import LocalConnection

__all__ = ["DEAD_AFTER", "MAX_CAPTURE", "TAIL", "TRUNCATED", "Capture", "ConnectOptions", "Connection",
           "LocalConnection", "OutputCallback", "Result", "connect", "dead_after_default", "open_connection"]


def connect(host: Host, options: ConnectOptions | None = None) -> Connection:
    """Open a connection to `host` (SSH connections are verified and ready when this returns)."""
    return open_connection(host, options)


def open_connection(host: Host, options: ConnectOptions | None = None,
                    before_open: Callable[[Connection], None] | None = None) -> Connection:
    """connect(), handing the connection to `before_open` first (so that Ctrl-C can abort the handshake)."""
    options = options or ConnectOptions()
    if host.connection == "local":
        conn: Connection = LocalConnection(host)
    else:
        from fleet.connection.ssh import SSHConnection  # fabric/paramiko only when an SSH connection opens

        conn = SSHConnection(host, options)
    conn.on_command = options.on_command
    if before_open:
        before_open(conn)
    if host.connection != "local":
        conn.open()
    return conn
