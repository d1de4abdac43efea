"""The lab's bandwidth (fleet_lab/bandwidth.py): the stand-ins carry the table's scaled real sizes as payload the
host downloads and verifies, and the mirror tells lab hosts apart to give each its own link.

Rates are never timed here (figures belong in bench/, bench/README.md); the pacing's arithmetic is checked on
its own virtual clock."""

from __future__ import annotations

import socket
import threading

import pytest

from fleet_lab import bandwidth, serve
from helpers import ok
from test_apply_lab import fleet_json

HOST = "pod-570"
VENV = "/opt/fleet/venv"


@pytest.fixture(scope="module", autouse=True)
def fresh_after(lab):
    """The hosts this module writes on are left fresh for the modules after it, whatever it found."""
    yield
    lab.reset([HOST])


@pytest.fixture(scope="module")
def applied(lab, converged_fresh):
    code, doc = converged_fresh(HOST)       # a fresh host converged (conftest.py: shared with other modules)
    assert code == 0, doc
    return lab


def test_toolkit_deb_carries_its_scaled_size_and_dpkg_verifies_it(applied):
    path = bandwidth.PAYLOAD["cuda-toolkit-13-0"]
    out = ok(applied, HOST, f"dpkg -S {path} && stat -c %s {path} && dpkg -V cuda-toolkit-13-0 && echo verified")
    lines = out.split("\n")
    assert lines[0] == f"cuda-toolkit-13-0: {path}"   # the package manager owns it: a real data member
    assert int(lines[1]) == bandwidth.size("cuda-toolkit-13-0") > 0
    assert lines[2] == "verified"                     # dpkg -V: every file's md5sum matches (it prints mismatches)


VERIFY_WHEELS = r"""
import base64, hashlib, importlib.metadata as md, os, sys
names = sys.argv[1].split(",")
for name in names:
    dist = md.distribution(name)
    for f in dist.files:
        if "fleet-lab-payload" in str(f):
            data = open(f.locate(), "rb").read()
            digest = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            print(name, dist.version, len(data), digest == f.hash.mode + "=" + f.hash.value)
"""


def test_torch_and_its_nvidia_wheels_carry_their_sizes_and_match_their_records(applied):
    names = ["torch", *bandwidth.NVIDIA_WHEELS]
    out = ok(applied, HOST, f"{VENV}/bin/python -c '{VERIFY_WHEELS}' {','.join(names)} && "
                            f"{VENV}/bin/python -c 'import torch'")
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert set(rows) == set(names)                    # every wheel installed, each with its payload
    for name in names:
        version, length, verified = rows[name]
        assert int(length) == bandwidth.size(name) > 0, name
        assert verified == "True", name               # the bytes on disk hash to the wheel's RECORD
        if name != "torch":
            assert version == bandwidth.NVIDIA_WHEEL_VERSION


def test_cutlass_clone_carries_its_size_in_a_verified_git_object(applied):
    rel = bandwidth.PAYLOAD["cutlass"]
    out = ok(applied, HOST, f"git -C /opt/cutlass cat-file -s HEAD:{rel} && stat -c %s /opt/cutlass/{rel} && "
                            "git -C /opt/cutlass fsck --no-dangling && echo fsck-ok")
    blob, on_disk, verdict = out.split()
    assert int(blob) == int(on_disk) == bandwidth.size("cutlass") > 0
    assert verdict == "fsck-ok"


def test_the_mirror_tells_lab_hosts_apart_by_their_own_namespace(lab):
    """Two hosts connect to a listener here: the key the mirror would pace each under is the mount namespace
    each host reports for itself, and two hosts never share one."""
    listener = socket.socket()
    listener.bind((f"{lab.inventory.hosts['thor'].address.rsplit('.', 1)[0]}.199", 0))
    listener.listen(4)
    address, port = listener.getsockname()
    keys = {}

    def accept(n):
        for _ in range(n):
            conn, peer = listener.accept()
            keys[conn.recv(64).decode().strip()] = serve.client_host(peer, port)
            conn.close()

    thread = threading.Thread(target=accept, args=(2,), daemon=True)
    thread.start()
    script = (f"python3 -c 'import socket; s = socket.create_connection((\"{address}\", {port})); "
              "s.sendall(open(\"/etc/hostname\").read().encode()); s.recv(1)' && readlink /proc/self/ns/mnt")
    own = {host: ok(lab, host, script).strip() for host in ("thor", "spark")}
    thread.join(30)
    listener.close()
    names = {host: ok(lab, host, "cat /etc/hostname").strip() for host in own}
    assert keys[names["thor"]] == own["thor"]
    assert keys[names["spark"]] == own["spark"]
    assert own["thor"] != own["spark"]


def test_pacing_reserves_each_chunk_after_the_last_on_its_own_clock():
    pace = serve.Pace(rate=1)          # 1 byte/s: the second reservation is 1000 s after the first
    first = pace.reserve(1000)
    second = pace.reserve(500)
    assert second - first == pytest.approx(500)


def test_the_pod_rate_is_the_pod_link_scaled_in_bytes_and_time(monkeypatch):
    monkeypatch.setenv("FLEET_LAB_SCALE", "100")
    assert bandwidth.host_rate("pod") == 125_000_000 * bandwidth.TIME // 100
    assert bandwidth.host_rate("off") == 0
    assert bandwidth.size("cuda-toolkit-13-0") == 30_000_000
    assert bandwidth.connection_rate(1000) == 400


# -- uv (fleet/resources/pip.py, installer: auto) ---------------------------------------------------------------

SITE = f"{VENV}/lib/python3*/site-packages"


def test_torch_comes_through_uv_from_the_decided_index_with_its_cache_on_the_volume(lab):
    lab.reset([HOST])
    code, doc = fleet_json("apply", str(lab.inventory_path), "--limit", HOST, "--set", "pip_cache_dir=/workspace/cache")
    assert code == 0, doc
    out = ok(lab, HOST, f"{VENV}/bin/python -c 'import torch; print(torch.__version__)' && "
                        f"cat {SITE}/torch-*.dist-info/INSTALLER | tr -d '\\n' && echo && {VENV}/bin/uv --version && "
                        "ls /workspace/cache/uv | head -n 1 | grep -c . && "
                        f"cat {SITE}/torch-*.dist-info/direct_url.json 2>/dev/null | wc -c")
    version, installer, uv_version, cache_entries, direct = out.split("\n")[:5]
    assert version == "2.11.0+cu130"          # the cu130 index's build (the decided index; no other index has it)
    assert installer == "uv"                  # written by the installer itself into the dist-info
    assert uv_version.startswith("uv ")
    assert cache_entries == "1"               # uv's cache is on the volume, beside pip's
    assert direct == "0"                      # from an index, not a URL or a path
    torch_task = [t for t in doc["hosts"][HOST]["tasks"] if t["role"] == "torch" and t["status"] == "changed"]
    assert torch_task, doc["hosts"][HOST]["tasks"]
    # a second apply: in state, one remote command, nothing installed again
    code, again = fleet_json("apply", str(lab.inventory_path), "--limit", HOST, "--set", "pip_cache_dir=/workspace/cache")
    assert code == 0 and again["hosts"][HOST]["changed"] == 0
    assert again["stats"][HOST]["remote_commands"] == 1


def test_without_pypi_the_torch_install_falls_back_to_pip(lab):
    """A host that cannot reach PyPI (files.pythonhosted.org, where uv's wheel is) but reaches the torch index:
    the host's own dist-info names pip as torch's installer, and the venv has no uv."""
    lab.reset([HOST])
    ok(lab, HOST, "sed -i '/files.pythonhosted.org/s/files.pythonhosted.org//' /etc/hosts && "
                  "echo '127.0.0.9 files.pythonhosted.org' >> /etc/hosts")
    code, doc = fleet_json("apply", str(lab.inventory_path), "--limit", HOST)
    assert code == 0, doc
    out = ok(lab, HOST, f"{VENV}/bin/python -c 'import torch; print(torch.__version__)' && "
                        f"cat {SITE}/torch-*.dist-info/INSTALLER | tr -d '\\n' && echo && test ! -e {VENV}/bin/uv && echo no-uv")
    assert out.split("\n")[:3] == ["2.11.0+cu130", "pip", "no-uv"]
