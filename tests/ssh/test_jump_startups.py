"""Many hosts behind one jump host: every one of them begins with a handshake with the same sshd, and OpenSSH's sshd
drops new connections at random, before its banner, once 10 are not yet logged in (MaxStartups 10:30:100, its
default). fleet began 64 at once: 200 replayed hosts behind a real sshd lost 45-60 of them a run as UNREACHABLE, for
fleet's own load (issue 46). Here a real sshd with its defaults is the jump host of 40 replayed hosts
(bench/_replay.py), reached through ProxyJump in ~/.ssh/config as `ssh -J` would: every host runs its command, as
the hosts themselves count."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import controller  # noqa: E402
from test_replay_bench import _free_ports  # noqa: E402

HOSTS = 40


@pytest.fixture
def jump_sshd(tmp_path):
    """Real OpenSSH sshds on 127.0.0.1 with their default MaxStartups, taking the key written into the file given
    back: `start()` -> (port, its known_hosts line); ended with the test."""
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    folder = tmp_path / "sshd"
    folder.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / "host_key")], check=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)    # sshd's privilege separation directory
    (folder / "authorized_keys").write_text("")
    kind, key = (folder / "host_key.pub").read_text().split()[:2]
    running = []

    def start() -> tuple[int, str]:
        for attempt in range(10):   # a port another test took between our look and sshd's bind: another one
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            config = folder / f"sshd_config_{port}"
            config.write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
                              f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
                              "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                              "StrictModes no\nAllowTcpForwarding yes\nPidFile none\n")
            log = folder / f"log_{port}"
            proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stderr=open(log, "w"))
            running.append(proc)
            if _listening(proc, port):
                return port, f"[127.0.0.1]:{port} {kind} {key}\n"
            proc.wait(30)
        raise AssertionError("sshd did not listen: " + log.read_text()[-2000:])

    try:
        yield start, folder / "authorized_keys"
    finally:
        for proc in running:
            proc.terminate()
            proc.wait(30)


def _listening(proc: subprocess.Popen, port: int) -> bool:
    """Whether sshd takes connections on `port` (False: it ended, e.g. the port was taken)."""
    deadline = time.monotonic() + 30
    while proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                return conn.recv(64).startswith(b"SSH-2.0-OpenSSH") and proc.poll() is None
        except OSError:
            assert time.monotonic() < deadline, "sshd neither listened nor ended"
            time.sleep(0.05)
    return False


def _behind(tmp_path, jump_sshd, jumps: int) -> tuple[subprocess.CompletedProcess, dict]:
    """`fleet run -- true` on HOSTS replayed hosts behind a chain of `jumps` real sshds -> (the run, what the
    hosts' server counted)."""
    start, authorized = jump_sshd
    (tmp_path / "lab").mkdir()
    lab = controller.Lab(tmp_path / "lab", HOSTS, "127.0.0.1", _free_ports(HOSTS), controller.RECORDING)
    try:
        started = [start() for _ in range(jumps)]
        authorized.write_text((lab.workdir / "id_ed25519.pub").read_text())
        with open(lab.workdir / "known_hosts", "a") as known:
            known.writelines(line for _, line in started)
        home = tmp_path / "home"
        (home / ".ssh").mkdir(parents=True, mode=0o700)
        chain = ",".join(f"root@127.0.0.1:{port}" for port, _ in started)
        (home / ".ssh" / "config").write_text(
            f"Host 127.0.0.1\n    ProxyJump {chain}\n    IdentityFile {lab.workdir / 'id_ed25519'}\n")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "XDG_STATE_HOME": str(tmp_path),
               "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-m", "fleet", "run", str(lab.inventory), "--", "true"],
                              capture_output=True, text=True, env=env, timeout=600)
    finally:
        answered = lab.stop()
    return proc, answered


@pytest.mark.parametrize("jumps", [1, 2], ids=["one-jump-host", "a-chain-of-two"])
def test_hosts_behind_jump_hosts_are_all_reached(tmp_path, jump_sshd, jumps):
    """One jump host, and a chain of two, whose second meets every host's handshake through the first."""
    proc, answered = _behind(tmp_path, jump_sshd, jumps)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "UNREACHABLE" not in proc.stdout
    # the hosts' own count: each was reached through the jump hosts and ran the command once
    assert (answered["connections"], answered["commands"], answered["unknown"]) == (HOSTS, HOSTS, 0)
