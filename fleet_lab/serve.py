"""The mirror over HTTPS under the real source hostnames: one server per lab, on <lab subnet>.254:443 (and
:80 for the distribution's archive, which Ubuntu's sources name with http://).

Every lab host's /etc/hosts sends developer.download.nvidia.com, repo.download.nvidia.com, download.pytorch.org,
pypi.jetson-ai-lab.io, pypi.org, files.pythonhosted.org and github.com here; the server picks the site by the Host header and
maps the real URL paths onto the built mirror (SITES). Anything else is a 404, as a missing file is there.

    ensure(root, mirror, address)   start it (or keep the one running with the same mirror and address)
    stop(root)                      stop it (lab down, once no host is left)

Run as `python -m fleet_lab.serve MIRROR ADDRESS PORT [RATE]` in its own session; its pid is in <root>/mirror.json.

RATE (bytes/s per lab host, 0: none; fleet_lab/bandwidth.py picks it from FLEET_LAB_RATE): every response is paced
by two buckets, the connection's (bandwidth.CONNECTION_SHARE of RATE) and the host's, which all of one host's
connections share. Lab hosts share the machine's network (their connections all come from 127.0.0.1), so the
host is told by the client process's mount namespace (each lab host has its own, fleet_lab/host.py).
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

from fleet.errors import LabError
from . import bandwidth, tls
from .procs import listening_pids

# (hostname, URL path prefix) -> directory of the built mirror (fleet_lab/mirror.py). The prefixes are the
# real ones the default variables produce (fleet/decide/variables.py and the roles' defaults).
SITES = {
    "developer.download.nvidia.com": [("/compute/cuda/repos/ubuntu2404/", "apt/ubuntu2404/"),
                                      ("/compute/cuda/repos/debian13/", "apt/debian13/"),
                                      ("/compute/cuda/repos/ubuntu2204/arm64/", "apt/ubuntu2204/arm64/"),
                                      ("/compute/nvpl/redist/", "redist/nvpl/"),
                                      ("/compute/cudss/redist/", "redist/cudss/")],
    "download.pytorch.org": [("/whl/cu130/", "whl/cu130/"), ("/whl/cpu/", "whl/cpu/")],
    "pypi.jetson-ai-lab.io": [("/sbsa/cu130/", "whl/jetson-cu130/"), ("/jp6/cu126/", "whl/jetson-jp6-cu126/")],
    "repo.download.nvidia.com": [("/jetson/", "apt/jetson/")],   # JetPack's apt repository (fleet_lab/jetpack.py)
    "pypi.org": [("/simple/", "whl/pypi/")],
    "files.pythonhosted.org": [("/packages/", "whl/pypi/")],
    "github.com": [("/NVIDIA/cutlass.git/", "git/cutlass.git/"), ("/NVIDIA/cutlass/", "git/cutlass.git/")],
    "archive.ubuntu.com": [("/ubuntu/", "apt/ubuntu/")],   # over plain HTTP too, as Ubuntu's sources name it
}
PORT = 443
HTTP_PORT = 80   # Ubuntu's own archive is http:// in its sources (apt checks the signatures, not TLS)
RECORD = "mirror.json"


def address_for(root: Path, mirror: Path, first_host: str) -> str:
    """One server per lab root: the running one's address, else the highest free one of .254-.200 in the
    /24 of the inventory's first lab host (lab hosts take the low numbers)."""
    rec = record(root)
    if _alive(rec) and rec["mirror"] == str(mirror):
        return rec["address"]
    net = first_host.rsplit(".", 1)[0]
    for last in range(254, 199, -1):   # another lab (its own root) may serve this /24 already
        if not _answers(f"{net}.{last}"):
            return f"{net}.{last}"
    raise LabError(f"no free address for the lab's mirror server in {net}.200-254 (port {PORT})")


def hosts_line(address: str) -> str:
    return f"{address}\t{' '.join(tls.SOURCE_HOSTNAMES)}   # fleet lab: the stand-in mirror\n"


class Pace:
    """A byte budget at `rate` bytes/s: take(n) returns when the n bytes may go (a virtual clock, thread-safe)."""

    def __init__(self, rate: float):
        self.rate, self.clock, self.lock = rate, 0.0, threading.Lock()

    def reserve(self, n: int) -> float:
        with self.lock:
            now = time.monotonic()
            self.clock = max(self.clock, now) + n / self.rate
            return self.clock


_host_paces: dict[str, Pace] = {}
_host_lock = threading.Lock()
CHUNK = 64 * 1024


def _host_pace(key: str, rate: int) -> Pace:
    with _host_lock:
        return _host_paces.setdefault(key, Pace(rate))


def client_host(peer: tuple, server_port: int) -> str:
    """Which lab host a connection comes from: the mount namespace of the process holding its client end
    (falls back to the peer's address, one bucket for all, where /proc cannot tell)."""
    want = f":{peer[1]:04X}"
    inode = None
    try:
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            parts = line.split()
            if parts[1].endswith(want) and parts[2].endswith(f":{server_port:04X}"):
                inode = parts[9]
                break
    except OSError:
        pass
    if inode:
        target = f"socket:[{inode}]"
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        return os.readlink(f"/proc/{pid}/ns/mnt")
            except OSError:
                continue
    return str(peer[0])


class Server(http.server.ThreadingHTTPServer):
    """A thread per connection, as before, with a real mirror's front (nginx: a listen backlog of 511, TLS in its
    workers). 30 pods' first applies at once (issue 46) met two limits here: socketserver's listen queue of 5, whose
    overflow the kernel drops, so a client's SYN was retried for ~130 s and given up ("connection timed out", curl
    after 133 s, a git clone reset); and the TLS handshake done inside accept(), in the one accepting thread, so a
    slow handshake on a loaded machine held every other connection behind it. Now the queue holds 1,024 and each
    connection's handshake runs in its own thread (`context`: the TLS one; None: plain HTTP)."""
    daemon_threads = True
    request_queue_size = 1024
    context: ssl.SSLContext | None = None

    def get_request(self):
        sock, peer = self.socket.accept()
        if self.context is not None:
            sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, peer

    def handle_error(self, request, client_address):   # a client gone mid-handshake or mid-transfer: quiet
        if not isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):
            super().handle_error(request, client_address)


HANDSHAKE_SECONDS = 60   # a client that opens a connection and says nothing frees its thread after this


class Handler(http.server.SimpleHTTPRequestHandler):
    mirror = "/nonexistent"
    protocol_version = "HTTP/1.1"   # keep-alive: apt and pip reuse one connection
    rate = 0                        # bytes/s per lab host; 0: no limit

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):   # the handshake, in this connection's own thread
            self.request.settimeout(HANDSHAKE_SECONDS)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def copyfile(self, source, outputfile):
        if not self.rate:
            return super().copyfile(source, outputfile)
        if not hasattr(self, "_paces"):   # one handler per connection: its bucket, and its host's
            host = client_host(self.client_address, self.server.server_address[1])
            self._paces = (Pace(bandwidth.connection_rate(self.rate)), _host_pace(host, self.rate))
        while True:
            chunk = source.read(CHUNK)
            if not chunk:
                break
            # uv's wheel is real (not a scaled stand-in): its bytes count at the scale the stand-ins' do
            n = len(chunk) / bandwidth.scale() if "/uv-" in self.path else len(chunk)
            due = max(p.reserve(n) for p in self._paces)
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            outputfile.write(chunk)

    def translate_path(self, path: str) -> str:
        site = (self.headers.get("Host") or "").split(":")[0].lower()
        url_path = path.split("?", 1)[0].split("#", 1)[0]
        for prefix, sub in SITES.get(site, []):
            if url_path.startswith(prefix) or url_path + "/" == prefix:
                rest = url_path[len(prefix):]
                return super().translate_path("/" + sub + rest)
        return os.path.join(self.mirror, ".no-such-site", site or "none")

    def list_directory(self, path):   # real indexes serve index.html or nothing
        self.send_error(404, "Not Found")
        return None

    def log_message(self, format, *args):   # quiet: hosts fetch a lot
        pass


def serve(mirror: str, address: str, port: int, rate: int = 0) -> None:
    tls_dir = tls.tls_dir(Path(mirror))
    Handler.rate = rate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_dir / "server.pem", tls_dir / "server.key")
    Handler.mirror = mirror
    handler = lambda *a, **kw: Handler(*a, directory=mirror, **kw)  # noqa: E731
    server = Server((address, port), handler)
    server.context = context
    try:
        plain = Server((address, HTTP_PORT), handler)
        threading.Thread(target=plain.serve_forever, daemon=True).start()
    except OSError as exc:   # only slim images' apt sources need it: serve HTTPS anyway, and say so in the log
        print(f"fleet lab mirror: no plain HTTP on {address}:{HTTP_PORT} ({exc}); archive.ubuntu.com unreachable",
              file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.serve_forever()


# -- managed by the lab ------------------------------------------------------------------------------

def record(root: Path) -> dict | None:
    try:
        return json.loads((root / RECORD).read_text())
    except (OSError, ValueError):
        return None


def _alive(rec: dict | None) -> bool:
    if not rec:
        return False
    try:
        return "fleet" in Path(f"/proc/{rec['pid']}/cmdline").read_text() and \
            ".serve" in Path(f"/proc/{rec['pid']}/cmdline").read_text()
    except OSError:
        return False


def ensure(root: Path, mirror: Path, address: str, rate: int | None = None) -> dict:
    rate = bandwidth.host_rate() if rate is None else rate
    rec = record(root)
    if _alive(rec) and rec["mirror"] == str(mirror) and rec["address"] == address and rec.get("rate", 0) == rate \
            and _answers(address):
        return rec
    stop(root)
    log = open(root / "mirror.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", __name__, str(mirror), address, str(PORT), str(rate)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd="/", env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                                                  "PYTHONPATH": _import_root()})
    log.close()
    rec = {"pid": proc.pid, "mirror": str(mirror), "address": address, "port": PORT, "rate": rate}
    deadline = time.monotonic() + 10
    while proc.pid not in listening_pids(address, PORT):   # ours, not another lab's server
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(root)
            out = (root / "mirror.log").read_text(errors="replace").strip().splitlines()[-2:]
            raise LabError(f"the lab's mirror server did not start on {address}:{PORT}: "
                           f"{' / '.join(out) or 'no output'}; is something else listening there?")
        time.sleep(0.02)
    (root / RECORD).write_text(json.dumps(rec) + "\n")
    return rec


def stop(root: Path) -> None:
    rec = record(root)
    if _alive(rec):
        try:
            os.killpg(rec["pid"], signal.SIGKILL)
        except OSError:
            pass
        deadline = time.monotonic() + 5
        while _alive(rec) and time.monotonic() < deadline:
            try:   # our own child: reap it; another process's: wait for init to
                os.waitpid(rec["pid"], os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.01)
    (root / RECORD).unlink(missing_ok=True)
    (root / "mirror.log").unlink(missing_ok=True)


def _answers(address: str) -> bool:
    try:
        with socket.create_connection((address, PORT), timeout=0.5):
            return True
    except OSError:
        return False


def _import_root() -> str:
    """The directory holding the lab's package, so `python -m` finds it without an installed copy."""
    return str(Path(__file__).resolve().parents[1])


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 0)
