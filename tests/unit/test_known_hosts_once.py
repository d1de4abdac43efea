"""A known_hosts file is parsed once per run even when every host opens its connection at the same instant (issue 46
item 4: at 1,000 hosts each thread that found no parse yet parsed the file itself, quadratic in the fleet's size)."""

import threading
import time

from fleet.connection import hostkeys


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
