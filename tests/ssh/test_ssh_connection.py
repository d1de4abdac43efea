"""The SSH connection against an in-process SSH server (mockserver.py): commands, files, host keys, reachability."""

import os
import stat
import threading

import paramiko
import pytest
from mockserver import (booting_later, SENTINEL_EXIT, SentinelHandler, fleet_known_hosts, free_port, host_key_line, record_known,
                        serving, ssh_host)
from mockssh.server import SERVER_KEY_PATH

from fleet.connection import ConnectOptions, connect
from fleet.shell import stdin_for, wrap_bash, write_file_script
from fleet.errors import HostError, HostKeyError
from fleet.connection.hostkeys import fingerprint
from fleet.connection.ssh import SSHConnection

SERVER_FP = fingerprint(paramiko.RSAKey(filename=SERVER_KEY_PATH))


def client_transports() -> list:
    """paramiko client sessions still alive in this process (each a thread with a socket)."""
    return [t for t in threading.enumerate() if isinstance(t, paramiko.Transport) and not t.server_mode and t.active]


@pytest.fixture
def conn(server, known):
    connection = connect(ssh_host(server.port), ConnectOptions(connect_timeout=5))
    yield connection
    connection.close()


def test_run_stdout_exit_status_and_count(server, conn):
    assert isinstance(conn, SSHConnection)
    res = conn.run(server.allow("echo hello; echo world"))
    assert (res.exit, res.stdout, res.stderr) == (0, "hello\nworld\n", "")
    assert conn.run(server.allow("exit 7")).exit == 7
    assert conn.remote_commands == 2


def test_stderr_is_kept_apart(server, conn):
    res = conn.run(server.allow("echo out; echo err >&2; exit 1"))
    assert (res.exit, res.stdout, res.stderr) == (1, "out\n", "err\n")


def test_env_values_travel_literally(server, conn):
    env = {"SPACES": "a b  c", "QUOTES": "it's \"q\"", "DOLLAR": "$HOME $(id -u) `id -u`"}
    script = 'printf "%s|" "$SPACES" "$QUOTES" "$DOLLAR"'
    res = conn.run(server.allow(script, env=env), env=env)
    assert res.stdout == "a b  c|it's \"q\"|$HOME $(id -u) `id -u`|"


def test_a_command_reading_stdin_gets_end_of_file(server, conn):
    res = conn.run(server.allow("cat; echo done"), timeout=20)
    assert (res.exit, res.stdout) == (0, "done\n")


def test_the_sentinel_refuses_what_the_test_did_not_allow(server, conn):
    res = conn.run("echo not allowed")
    assert res.exit == SENTINEL_EXIT and "sentinel" in res.stderr
    assert server.escaped == [wrap_bash("echo not allowed", remote=True)]
    server.escaped.clear()  # seen, and expected here


def test_timeout_exits_124(server, conn):
    res = conn.run(server.allow("echo started; sleep 30"), timeout=0.5)
    assert res.exit == 124
    assert res.stdout == "started\n"
    assert "timed out after 0.5s" in res.stderr


def test_timeout_exits_124_while_the_timer_thread_is_still_in_kill(server, conn, monkeypatch):
    """invoke asks whether its timer thread has ended; the command returns as soon as kill() has closed the
    channel, so a loaded machine saw that thread still alive and the timeout came back as paramiko's -1."""
    from fabric.runners import Remote
    plain_kill = Remote.kill

    def slow_kill(self):
        plain_kill(self)
        threading.Event().wait(1.0)   # the timer thread is still alive when the command returns

    monkeypatch.setattr(Remote, "kill", slow_kill)
    res = conn.run(server.allow("echo started; sleep 30"), timeout=0.5)
    assert (res.exit, res.stdout) == (124, "started\n")
    assert "timed out after 0.5s" in res.stderr


def test_on_output_streams_lines(server, conn, tmp_path):
    go = tmp_path / "go"
    seen = []

    def on_line(line):
        seen.append(line)
        if line == "waiting":
            go.touch()  # the command ends only after this: lines arrive while it runs

    script = server.allow(f"echo waiting; for i in $(seq 100); do [ -e {go} ] && break; sleep 0.1; done; "
                          f"[ -e {go} ]; printf last")
    res = conn.run(script, on_output=on_line)
    assert (res.exit, res.stdout) == (0, "waiting\nlast")
    assert seen == ["waiting", "last"]


def test_write_file(server, conn, tmp_path):
    path = str(tmp_path / "etc" / "profile.d" / "fleet.sh")
    server.allow_write(path, "export A=1\n", mode=0o600)
    conn.write_file(path, "export A=1\n", mode=0o600)
    assert open(path).read() == "export A=1\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.listdir(tmp_path / "etc" / "profile.d") == ["fleet.sh"]
    assert conn.remote_commands == 1


def test_write_large_file_over_stdin(server, conn, tmp_path):
    data = bytes(range(256)) * 1200  # 300 kB: travels on stdin, not as an argument
    path = str(tmp_path / "big.bin")
    assert stdin_for(write_file_script(path, data)) is not None
    server.allow_write(path, data)
    conn.write_file(path, data)
    assert open(path, "rb").read() == data


def test_write_failure_is_a_host_error(server, conn, tmp_path):
    (tmp_path / "file").write_text("")
    path = str(tmp_path / "file" / "below")
    server.allow_write(path, "x")
    with pytest.raises(HostError, match="could not write"):
        conn.write_file(path, "x")


# -- host keys -------------------------------------------------------------------------------------------

def test_unknown_host_key_is_refused(server):
    with pytest.raises(HostKeyError) as exc:
        connect(ssh_host(server.port), ConnectOptions(connect_timeout=5))
    message = str(exc.value)
    assert SERVER_FP in message and "--accept-new-host-keys" in message
    assert f"[127.0.0.1]:{server.port}" in message
    assert not fleet_known_hosts().exists()
    assert client_transports() == []  # the refused session was closed, not left running


def test_unknown_host_key_accepted_when_asked(server):
    told = []
    options = ConnectOptions(accept_new_host_keys=True, connect_timeout=5, on_new_host_key=told.append)
    with connect(ssh_host(server.port), options) as conn:
        assert conn.run(server.allow("echo in")).stdout == "in\n"
    assert fleet_known_hosts().read_text() == host_key_line(server.port)
    assert len(told) == 1 and SERVER_FP in told[0] and str(fleet_known_hosts()) in told[0]
    # recorded: the next connection needs no flag
    with connect(ssh_host(server.port), ConnectOptions(connect_timeout=5)) as again:
        assert again.run(server.allow("echo in")).exit == 0


def test_key_known_from_the_users_known_hosts(server):
    ssh_dir = os.path.join(os.environ["HOME"], ".ssh")
    os.makedirs(ssh_dir)
    with open(os.path.join(ssh_dir, "known_hosts"), "w") as fh:
        fh.write(host_key_line(server.port))
    with connect(ssh_host(server.port), ConnectOptions(connect_timeout=5)) as conn:
        assert conn.run(server.allow("true")).exit == 0


def test_a_changed_host_key_is_always_refused(other_key, server, known):
    class RebuiltPod(SentinelHandler):
        host_key_path = other_key

    new_fp = fingerprint(paramiko.RSAKey(filename=other_key))
    with serving(RebuiltPod) as rebuilt:
        recorded = host_key_line(rebuilt.port)  # what we recorded: the key before the rebuild
        known.write_text(recorded)
        for accept in (False, True):  # even --accept-new-host-keys does not override a changed key
            with pytest.raises(HostKeyError) as exc:
                connect(ssh_host(rebuilt.port), ConnectOptions(accept_new_host_keys=accept, connect_timeout=5))
            message = str(exc.value)
            assert "HOST KEY CHANGED" in message and "restarted" in message
            assert f"{known}:1 lists {SERVER_FP}, the host offers {new_fp}" in message
            assert f"ssh-keygen -R '[127.0.0.1]:{rebuilt.port}' -f {known})" in message
    assert known.read_text() == recorded  # nothing was recorded over it


def test_a_changed_key_from_the_inventory_s_known_hosts_names_that_file_and_line(other_key, server, tmp_path):
    """The old key listed in the inventory's own `known_hosts:` file (not fleet's): the refusal names that file
    and line, and the command it prints, run as printed, is the fix (the next connection offers the new key)."""
    import shlex
    import subprocess

    class RebuiltPod(SentinelHandler):
        host_key_path = other_key

    with serving(RebuiltPod) as rebuilt:
        listed = tmp_path / "inventory_known_hosts"
        listed.write_text("# the lab's keys\n" + host_key_line(rebuilt.port))
        host = ssh_host(rebuilt.port)
        host.known_hosts = str(listed)
        with pytest.raises(HostKeyError) as exc:
            connect(host, ConnectOptions(connect_timeout=5))
        message = str(exc.value)
        assert f"{listed}:2 lists {SERVER_FP}" in message, message
        assert str(fleet_known_hosts()) not in message, message
        command = message.split("remove the old key (", 1)[1].split(") and run again", 1)[0]
        subprocess.run(shlex.split(command), check=True, capture_output=True)
        with connect(host, ConnectOptions(accept_new_host_keys=True, connect_timeout=5)) as conn:
            assert conn.run(rebuilt.allow("true")).exit == 0


def _hashed(line: str) -> str:
    """The line as `ssh-keygen -H` writes it: the host name replaced by |1|salt|hmac."""
    name, rest = line.split(" ", 1)
    return f"{paramiko.HostKeys.hash_host(name)} {rest}"


def test_a_hashed_known_hosts_entry_is_found(server):
    """HashKnownHosts yes (Debian's and Ubuntu's default) writes names hashed: the key is still found."""
    fleet_known_hosts().parent.mkdir(parents=True, exist_ok=True)
    fleet_known_hosts().write_text(host_key_line(server.port + 1) + _hashed(host_key_line(server.port)))
    with connect(ssh_host(server.port), ConnectOptions(connect_timeout=5)) as conn:
        assert conn.run(server.allow("true")).exit == 0


def test_a_hashed_entry_with_another_key_is_a_changed_key(other_key, server):
    fleet_known_hosts().parent.mkdir(parents=True, exist_ok=True)
    fleet_known_hosts().write_text(_hashed(host_key_line(server.port, other_key)))
    with pytest.raises(HostKeyError) as exc:
        connect(ssh_host(server.port), ConnectOptions(accept_new_host_keys=True, connect_timeout=5))
    assert "HOST KEY CHANGED" in str(exc.value)


def test_a_known_hosts_file_that_changed_is_read_again(server):
    """known_hosts files are parsed once per run for every host, and again once one changes: a key accepted (or
    removed with ssh-keygen -R) a moment ago counts for the next connection."""
    path = fleet_known_hosts()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(host_key_line(server.port + 1))
    with pytest.raises(HostKeyError, match="unknown host key"):
        connect(ssh_host(server.port), ConnectOptions(connect_timeout=5))
    with open(path, "a") as fh:
        fh.write(host_key_line(server.port))
    with connect(ssh_host(server.port), ConnectOptions(connect_timeout=5)) as conn:
        assert conn.run(server.allow("true")).exit == 0
    path.write_text(host_key_line(server.port + 1))
    with pytest.raises(HostKeyError, match="unknown host key"):
        connect(ssh_host(server.port), ConnectOptions(connect_timeout=5))


# -- credentials and reachability -------------------------------------------------------------------------

def test_wrong_user_key_is_a_host_error(server, known, other_key):
    with pytest.raises(HostError) as exc:
        connect(ssh_host(server.port, key=other_key), ConnectOptions(connect_timeout=5))
    assert not isinstance(exc.value, HostKeyError)
    assert "refused our credentials" in str(exc.value) and "'key:'" in str(exc.value)
    assert client_transports() == []


def test_connection_refused_is_a_host_error():
    with pytest.raises(HostError) as exc:
        connect(ssh_host(free_port()), ConnectOptions(connect_timeout=5))
    assert "connection refused" in str(exc.value) and "--wait" in str(exc.value)


def test_wait_retries_until_the_host_is_up():
    port = free_port()
    record_known(port)
    with booting_later(port, "echo up") as up:
        with connect(ssh_host(port), ConnectOptions(wait=20, connect_timeout=5)) as conn:
            assert up.is_set()
            assert conn.run("echo up").stdout == "up\n"


def test_an_idle_connection_wakes_every_five_seconds_not_ten_times_a_second(server, conn, monkeypatch):
    """paramiko's thread wakes every 0.1 s to look for a keep-alive due; at 1,000 open hosts those wakes were ~7 ms
    of the controller's CPU a host (issue 46). Once connected it wakes every 5 s, and commands still run."""
    import time

    from fleet.connection.ssh import IDLE_WAKE

    transport = conn._fabric.client.get_transport()
    assert transport.sock.gettimeout() == IDLE_WAKE == 5.0
    wakes, real = [], paramiko.packet.Packetizer._check_keepalive

    def counted(self):
        if self is transport.packetizer:
            wakes.append(1)
        return real(self)

    monkeypatch.setattr(paramiko.packet.Packetizer, "_check_keepalive", counted)
    time.sleep(7.5)                   # idle: nothing to read (at 0.1 s: 75 wakes)
    assert 1 <= len(wakes) <= 2, len(wakes)
    assert conn.run(server.allow("echo still here")).stdout == "still here\n"


def test_the_watchdog_asks_the_server_only_while_a_command_runs(server, known, monkeypatch):
    """Each keep-alive ask is a thread and two packets through paramiko's Python: between commands nothing waits on
    the host, so nothing is asked (at 1,000 hosts of a converged apply the connections wait mostly on the
    controller); while a command runs the server is asked every dead_after / 4 (0.5 s here)."""
    import time

    asked = []
    real = paramiko.Transport.global_request

    def counted(self, kind, data=None, wait=True):
        if kind == "keepalive@openssh.com":
            asked.append(time.monotonic())
        return real(self, kind, data, wait)

    monkeypatch.setattr(paramiko.Transport, "global_request", counted)
    with connect(ssh_host(server.port), ConnectOptions(connect_timeout=5, dead_after=2)) as conn:
        time.sleep(2.5)                  # connected, no command: five intervals, no ask
        assert asked == []
        started = time.monotonic()
        assert conn.run(server.allow("sleep 3; echo done")).stdout == "done\n"
        during = [t for t in asked if t >= started]
        assert len(during) >= 2, during  # ~6 at one every 0.5 s; at least 2 under any load
        after = len(asked)
        time.sleep(2.5)
        assert len(asked) <= after + 1   # an ask begun as the command ended, then none


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_timeout_whose_connection_closed_before_its_kill_raises_nothing_in_the_timer_thread(server, conn,
                                                                                           monkeypatch):
    """paramiko marks a channel closed before it sends the close, and the command's wait returns on that mark: under
    load the caller had returned and closed the connection while invoke's timer thread was still in kill(), whose
    send then raised EOFError in that thread (seen twice in a fresh-clone run). The connection gone is what kill()
    wants: nothing is raised there, and the command still comes back."""
    from fabric.runners import Remote

    from fleet.errors import HostError

    plain_kill, killed, timer = Remote.kill, threading.Event(), []
    real_send = paramiko.packet.Packetizer.send_message

    def kill_after_the_connection_closed(self):
        transport = self.channel.get_transport()

        def closed_first(this, data):   # past the transport's own check: the caller closes the connection now
            if this is transport.packetizer and threading.current_thread() is me:
                transport.close()
            return real_send(this, data)

        me = threading.current_thread()
        timer.append(me)
        monkeypatch.setattr(paramiko.packet.Packetizer, "send_message", closed_first)
        try:
            plain_kill(self)
        finally:
            killed.set()

    monkeypatch.setattr(Remote, "kill", kill_after_the_connection_closed)
    try:
        res = conn.run(server.allow("echo started; sleep 30"), timeout=0.5)
        assert res.exit == 124, res
    except HostError as exc:                      # or the connection is named lost: either way, it came back
        assert "connection lost" in str(exc) or "stopped answering" in str(exc), exc
    assert killed.wait(10)
    timer[0].join(10)                             # its end (and any exception) inside this test


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_connection_closed_while_its_stdin_is_sent_comes_back_as_connection_lost(server, conn, monkeypatch):
    """The same race on the stdin side: the connection closed between paramiko's check and its send of the script
    on stdin. The command comes back as the lost connection fleet names, never as invoke's ThreadException."""
    from fleet.errors import HostError

    real_send = paramiko.packet.Packetizer.send_message
    transport = conn._fabric.client.get_transport()

    def closed_first(this, data):
        if this is transport.packetizer and "handle_stdin" in threading.current_thread().name:
            transport.close()
        return real_send(this, data)

    monkeypatch.setattr(paramiko.packet.Packetizer, "send_message", closed_first)
    with pytest.raises(HostError, match="connection lost|stopped answering"):
        conn.run(server.allow("cat >/dev/null; echo done"), timeout=20)
