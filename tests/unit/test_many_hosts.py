"""The controller at 1,000 hosts (issue 46 item 4): what every host shares is done once, handshakes are bounded so
none times out for the controller's own load, and the cycle collector does not walk every host's data again and
again."""

import gc
import threading
import time

from fleet.connection import hostkeys, ssh
from fleet.connection.base import ConnectOptions
from fleet.connection.parallel import GC_THRESHOLD, on_hosts
from fleet.inventory import load_inventory


def test_hosts_starting_together_parse_the_file_once(tmp_path, monkeypatch):
    path = tmp_path / "known_hosts"
    path.write_text("[127.0.0.1]:2200 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    real, calls = hostkeys.read_known_hosts, []

    def slow_read(p):
        calls.append(p)
        time.sleep(0.3)      # a long parse: every other host reaches known_hosts() meanwhile
        return real(p)

    monkeypatch.setattr(hostkeys, "read_known_hosts", slow_read)
    monkeypatch.setattr(hostkeys, "_files", {})
    start, found = threading.Barrier(16), []

    def one():
        start.wait()
        found.append(hostkeys.known_hosts(path))

    threads = [threading.Thread(target=one) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [path]
    assert len(found) == 16 and all(parsed is found[0] for parsed in found)
    assert [where for _key, where in found[0].listed("[127.0.0.1]:2200")] == [f"{path}:1"]


def test_no_more_handshakes_at_once_than_the_bound_whatever_the_hosts(monkeypatch):
    """20 hosts opening at once with a bound of 3: at most 3 handshakes run together, and each host still opens."""
    monkeypatch.setattr(ssh, "_handshakes", threading.BoundedSemaphore(3))
    lock, running, most, opened = threading.Lock(), [0], [0], []

    def handshake(self):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)        # a handshake's time: the other hosts arrive meanwhile
        with lock:
            running[0] -= 1
            opened.append(self)

    monkeypatch.setattr(ssh.SSHConnection, "_open_once", handshake)
    conns = []
    for _ in range(20):
        conn = object.__new__(ssh.SSHConnection)
        conn.options = ConnectOptions()
        conns.append(conn)
    threads = [threading.Thread(target=conn.open) for conn in conns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 3 and len(opened) == 20


def test_the_collector_skips_what_existed_before_the_hosts_and_is_set_back_after(tmp_path):
    inventory = tmp_path / "inv.yaml"
    inventory.write_text("hosts:\n  a: {connection: local}\n  b: {connection: local}\n")
    hosts = list(load_inventory(inventory).hosts.values())
    before = gc.get_threshold()
    seen = on_hosts(hosts, lambda conn, host: (gc.get_threshold(), gc.get_freeze_count()))
    for outcome in seen.values():
        threshold, frozen = outcome.value
        assert threshold == GC_THRESHOLD and frozen > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
