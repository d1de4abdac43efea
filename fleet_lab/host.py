"""One lab host: its files under <root>/hosts/<name>/, and the sshd that serves it.

    upper/ work/  the overlay's writable half: starts as a copy of the profile layer plus the host's files
    m/            where the overlay is mounted (inside the host's own mount namespace only)
    proc-driver/  bound read-only on the host's /proc/driver (nvidia/version, nvidia/fleet-lab-gpu)
    hostkey/      the host's ssh key, kept across resets so known_hosts stays valid
    host.json     what is running: pid of the namespace's first process, digest of the spec
    sshd.log      sshd's own log (-e)

The host runs as `unshare -m -u -p --mount-proc --fork` (own mount, UTS and PID namespace: its sshd is PID 1 and
its /proc shows its own processes) in its own session; sshd runs chrooted into the overlay. A multi-GPU fabric host
(fleet_lab/fabric.py) also has its own cgroup namespace (`-C`) and its own /dev. Stopping ends every process of the host's mount namespace (each ssh login's
sshd calls setsid(), so killing the process group alone would leave them running), waits until each has
ended and the address is free (fleet_lab/procs.py), and says which pids did not end.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from fleet.errors import LabError
from . import breakage, fabric, health, layers, procs
from .paths import host_dir
from .profiles import HostSpec

SSHD = "/usr/sbin/sshd"
_CHILDREN: dict[int, subprocess.Popen] = {}   # hosts started by this process: reaped when stopped
SSHD_CONFIG = "/etc/ssh/fleet-lab/sshd_config"
# What a container's processes start with (Docker's defaults for root): the start command and `docker exec`.
CONTAINER_ENV = "HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Where fleet keeps its own state on a host (fleet/engine/hostlock.py, fleet/resources/programs.py, the venv's and
# the checkout's defaults). The overlay's lower layer is this machine's live /, so what fleet run HERE left there (a
# `fleet script` or a local apply as root takes its lock in /var/lib/fleet; a unit test runs one) would show in every
# lab host, which must look as no fleet ever touched it: a whiteout hides each in a fresh host's upper dir (a host
# that then makes one gets an opaque directory, which keeps hiding this machine's).
MACHINE_FLEET_STATE = ("/var/lib/fleet", "/opt/fleet", "/opt/cutlass")


def sshd_config(spec: HostSpec) -> str:
    return (f"# fleet lab host {spec.name} ({spec.profile})\nPort {spec.port}\nListenAddress {spec.address}\n"
            "HostKey /etc/ssh/fleet-lab/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
            "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "AuthorizedKeysFile .ssh/authorized_keys\nPidFile none\nUseDNS no\nPrintMotd no\n"
            "MaxStartups 64:30:128\nMaxSessions 64\nAcceptEnv LANG LC_*\nSubsystem sftp internal-sftp\n"
            # Ubuntu's /etc/environment (pam_env is off here): sbin directories on every user's PATH.
            "SetEnv PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/games:/usr/local/games\n"
            "LogLevel ERROR\n")


class LabHost:
    def __init__(self, name: str, root: Path):
        self.name = name
        self.dir = host_dir(name, root)

    # -- files ---------------------------------------------------------------------------------
    def record(self) -> dict | None:
        try:
            return json.loads((self.dir / "host.json").read_text())
        except (OSError, ValueError):
            return None

    def host_key(self) -> Path:
        key = self.dir / "hostkey" / "ssh_host_ed25519_key"
        if not key.exists():
            key.parent.mkdir(parents=True, exist_ok=True)
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"fleet-lab-{self.name}", "-f", str(key)],
                 "ssh-keygen")
        return key

    def fresh(self) -> bool:
        return not (self.dir / "upper").exists()

    def provision(self, spec: HostSpec, profile_layer: Path, lab_pubkey: str, mirror: Path) -> None:
        """A fresh upper dir: a copy of the profile layer plus this host's own files."""
        layer = self.dir / "upper"
        self.wipe()
        self.dir.mkdir(parents=True, exist_ok=True)
        # cp -a keeps the layer's whiteouts (0/0 devices) and opaque-dir xattrs, which overlayfs reads
        # in an upper dir exactly as in a lower one. (A second lower layer inside / is refused: ELOOP.)
        _run(["cp", "-a", f"{profile_layer}/.", str(layer)], "copying the profile layer")
        hide_machine_state(layer)
        prof = spec.prof
        layers.put(layer, "/etc/hostname", spec.name + "\n")
        hosts = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else "127.0.0.1\tlocalhost\n"
        hosts = hosts.rstrip("\n") + f"\n{spec.address}\t{spec.name}\n"
        if spec.extra.get("mirror_address"):   # the real source hostnames -> the lab's HTTPS mirror
            from . import serve
            hosts += serve.hosts_line(spec.extra["mirror_address"])
        layers.put(layer, "/etc/hosts", hosts)
        key = self.host_key()
        layers.put(layer, "/etc/ssh/fleet-lab/ssh_host_ed25519_key", key.read_bytes(), 0o600)
        layers.put(layer, "/etc/ssh/fleet-lab/ssh_host_ed25519_key.pub", key.with_suffix(".pub").read_bytes())
        layers.put(layer, SSHD_CONFIG, sshd_config(spec))
        layers.put(layer, "/root/.ssh/authorized_keys", lab_pubkey, 0o600)
        os.chmod(layer / "root" / ".ssh", 0o700)
        os.chmod(layer / "root", 0o700)
        from . import mirror as mirror_mod
        # the user-space driver: the kernel module's, unless an upgrade replaced it under the loaded module
        user_space = prof.userspace_driver or spec.driver
        libcuda = mirror_mod.driver_lib(mirror, user_space)
        libdir = prof.driver_libdir
        layers.put(layer, f"{libdir}/libcuda.so.{user_space}", libcuda.read_bytes(), 0o755)
        layers.link(layer, f"{libdir}/libcuda.so.1", f"libcuda.so.{user_space}")
        layers.link(layer, f"{libdir}/libcuda.so", "libcuda.so.1")
        if spec.user != "root":
            from .users import add_sudo_user
            add_sudo_user(layer, spec.user, lab_pubkey)
        self.write_proc_driver(spec)

    def swap_driver(self, spec: HostSpec, mirror: Path) -> None:
        """The user-space driver of `spec.driver` in place of the one the host has (its upper dir, the host
        stopped): what the container runtime mounts into a pod started on a host with that kernel driver."""
        layer = self.dir / "upper"
        libdir = layer / spec.prof.driver_libdir.lstrip("/")
        for old in libdir.glob("libcuda.so.*.*") if libdir.is_dir() else []:
            old.unlink()
        from . import mirror as mirror_mod
        libcuda = mirror_mod.driver_lib(mirror, spec.driver)
        layers.put(layer, f"{spec.prof.driver_libdir}/libcuda.so.{spec.driver}", libcuda.read_bytes(), 0o755)
        link = libdir / "libcuda.so.1"
        if link.is_symlink() or link.exists():
            link.unlink()
        layers.link(layer, f"{spec.prof.driver_libdir}/libcuda.so.1", f"libcuda.so.{spec.driver}")

    def write_proc_driver(self, spec: HostSpec) -> None:
        """What the host's /proc/driver shows: the kernel driver of the profile and the GPU."""
        base = self.dir / "proc-driver"
        shutil.rmtree(base, ignore_errors=True)
        gpu, machine = spec.prof.gpu, spec.prof.machine
        nv = base / "nvidia"
        nv.mkdir(parents=True)
        (nv / "version").write_text(
            f"NVRM version: NVIDIA UNIX Open Kernel Module for {machine}  {spec.driver}  Release Build  "
            f"(fleet-lab@stand-in)  Thu Jan  1 00:00:00 UTC 2026\nGCC version:  gcc version 13.3.0 (fleet lab stand-in)\n")
        uuid = _gpu_uuid(spec.name)
        # one directory per GPU the kernel driver holds (several: the buses nvidia-smi answers for, fabric.BUS_IDS)
        for bus in fabric.BUS_IDS[:spec.prof.gpus] if spec.prof.gpus > 1 else (gpu.bus_id,):
            (nv / "gpus" / bus.lower()).mkdir(parents=True)
            (nv / "gpus" / bus.lower() / "information").write_text(
                f"Model: \t\t {gpu.name}\nIRQ:   \t\t 0\nGPU UUID: \t {uuid}\nVideo BIOS: \t fleet-lab\n"
                f"Bus Type: \t PCIe\nBus Location: \t {bus.lower()[4:]}\n")
        (nv / "fleet-lab-gpu").write_text(
            f"name={gpu.name}\ncompute_cap={gpu.compute_cap}\nmemory_mb={gpu.memory_mb or ''}\n"
            f"cuda_memory_mb={gpu.cuda_memory_mb}\nclass={gpu.forward_compat}\nuuid={uuid}\nbus_id={gpu.bus_id}\n"
            f"note=fleet lab stand-in: written by the lab, read by the stand-in libcuda and nvidia-smi\n"
            + fabric.gpu_lines(spec.prof) + health.gpu_lines(spec))

    # -- process -------------------------------------------------------------------------------
    # A bound for a start that hangs, not a speed expectation: a host answers in under a second on an idle
    # machine, but four hosts starting at once (mounts, `ldconfig -r`, sshd) took more than the 15 s this
    # used to be on a 2-core CI machine at load 26 (issue 17). A start that fails ends its process, and
    # that is seen at once.
    def start(self, spec: HostSpec, mirror: Path, timeout: float = 120.0) -> None:
        d = self.dir
        for sub in ("upper", "work", "m"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        m = d / "m"
        # a small container disk: upper and work on the host's own tmpfs (one mount, as overlayfs needs)
        upper, work = ("disk/upper", "disk/work") if spec.prof.container_disk_gb else ("upper", "work")
        if answers_ssh(spec.address, spec.port):
            self.stop_listener(spec.address, spec.port)   # returns once the address is free again
        if answers_ssh(spec.address, spec.port):
            raise LabError(f"{spec.address}:{spec.port} already answers SSH, so lab host {spec.name} cannot listen "
                           "there (a lab of another FLEET_LAB_ROOT, or this machine's sshd on 0.0.0.0?); stop that "
                           "or give the host another address")
        own = spec.prof.own_dev
        script = "\n".join([
            "set -e",
            f"hostname {spec.name}",
            *breakage.disk_lines(spec.prof, d),
            f"mount -t overlay overlay -o lowerdir=/,upperdir={d / upper},workdir={d / work} {m}",
            # /proc is the host's own PID namespace's (unshare --mount-proc); a fabric host makes its own /dev
            f"for x in proc {'' if own else 'dev '}sys; do mount --rbind /$x {m}/$x; done",
            *(fabric.dev_lines(spec.prof, str(m)) if own else []),
            f"mount -t tmpfs -o mode=1777{f',size={spec.prof.shm_mb}m' if spec.prof.shm_mb else ''} tmpfs {m}/dev/shm",
            f"mount -t tmpfs -o mode=755 tmpfs {m}/run",
            f"mkdir -p {m}/run/sshd {m}/run/lock",
            f"mount --bind -o ro {d / 'proc-driver'} {m}/proc/driver",
            *breakage.boot_lines(spec.prof, d, m),
            f"ldconfig -r {m}",
            *fabric.boot_lines(spec.prof, str(m)),
            # The image's start command, as RunPod's start.sh runs it before its services: /pre_start.sh when
            # the host has one (its output in start.log; a failing one never stops the start).
            f"if [ -f {m}/pre_start.sh ]; then env -i {CONTAINER_ENV} chroot {m} bash /pre_start.sh </dev/null "
            f">{d / 'start.log'} 2>&1 || true; fi",
            f"exec chroot {m} {SSHD} -D -e -f {SSHD_CONFIG}",
        ])
        log = open(d / "sshd.log", "wb")
        # Every host: its own PID namespace, its sshd PID 1 (each host sees its own processes only: a fabric manager
        # in one host is no other's). A fabric host: its own cgroup namespace too, so /proc/1/cgroup shows its root
        # ("0::/") and not where this machine runs it (a /docker/... path would make a bare-metal board a container).
        pid_ns = ["-p", "--mount-proc"] + (["-C"] if own else [])
        proc = subprocess.Popen(["unshare", "-m", "-u", *pid_ns, "--propagation", "private", "--fork", "sh", "-c", script],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
        log.close()
        _CHILDREN[proc.pid] = proc
        record = {"name": spec.name, "address": spec.address, "port": spec.port, "profile": spec.profile,
                  "user": spec.user, "driver": spec.driver, "digest": spec.digest(), "pid": proc.pid,
                  "inventory": spec.inventory, "started": time.time()}
        (d / "host.json").write_text(json.dumps(record, indent=2) + "\n")
        self._wait_ready(spec, proc, timeout)
        # Every process of this host shares this namespace, even after its overlay is detached.
        record["mount_ns"] = _mount_ns(str(proc.pid))
        (d / "host.json").write_text(json.dumps(record, indent=2) + "\n")

    def _wait_ready(self, spec: HostSpec, proc: subprocess.Popen, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            if answers_ssh(spec.address, spec.port):
                return
            time.sleep(0.02)
        log = (self.dir / "sshd.log").read_text(errors="replace").strip().splitlines()[-3:]
        if proc.poll() is None:   # still starting: say what it was doing
            doing = ", ".join(str(p) for p in map(procs.identify, self.pids()) if p)
            log.append(f"still starting after {timeout:g} s: {doing}")
        self.stop()
        hint = ("another sshd already listens there (this machine's own sshd on 0.0.0.0:22?); "
                "stop it or give the lab host another address") if any("in use" in line for line in log) else \
            "see the log above"
        raise LabError(f"lab host {spec.name} did not start sshd on {spec.address}:{spec.port}: "
                       f"{' / '.join(log) or 'no output'}; {hint}")

    def pids(self) -> list[int]:
        """Every process of this host: all in its mount namespace (recorded at start), else (record lost)
        those whose mounts show this host's overlay, plus the namespace's first process."""
        rec = self.record() or {}
        own = _mount_ns("self")
        by_ns: dict[str, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                ns = _mount_ns(entry)
                if ns and ns != own:
                    by_ns.setdefault(ns, []).append(int(entry))
        # the overlay's upper: upper/, or disk/upper on a profile with a small container disk (breakage.disk_lines)
        markers = (f"upperdir={self.dir / 'upper'},", f"upperdir={self.dir / 'disk' / 'upper'},")
        found = []
        recorded = by_ns.get(rec.get("mount_ns"), []) if rec.get("mount_ns") != own else []
        # Namespace numbers are reused: the recorded one counts only if it shows our overlay, or none at all
        # while our own leader still lives in it (the overlay detached). A namespace that shows none and has
        # no leader of ours may be another host's, freshly made by `unshare` and not yet mounted: a stop that
        # took it for ours killed that host as it started (a lab start flake, issue 17).
        leader = rec.get("pid")
        if recorded and (_overlay_of(recorded[0]) in markers or (
                _overlay_of(recorded[0]) is None and leader in recorded and self._is_ours(leader))):
            found = list(recorded)
        for members in by_ns.values():
            if set(members) & set(found):
                continue
            for pid in members:
                try:
                    info = Path(f"/proc/{pid}/mountinfo").read_text(errors="replace")
                    if any(marker in info for marker in markers):
                        found += members
                    break
                except OSError:
                    continue
        for members in by_ns.values():   # a namespace whose first process names this host's overlay dir
            if not set(members) & set(found) and any(self._is_ours(pid) for pid in members):
                found += members
        leader = rec.get("pid")
        if leader and leader not in found and self._is_ours(leader):
            found.append(leader)
        return found

    def exec(self, argv: list[str], timeout: float = 120.0) -> subprocess.CompletedProcess:
        """Run `argv` in the host as `docker exec` runs a process in a container: in the host's mount and UTS
        namespaces and root, with a container's bare environment (CONTAINER_ENV), no shell, no startup file,
        no SSH. What a service, a cron job or a supervised kernel gets from the loader."""
        rec = self.record() or {}
        sshd = self._listener(rec)   # chrooted in the host: its root, cwd and namespaces are the host's
        if not rec or sshd is None:
            raise LabError(f"lab host {self.name} is not running; start it with: fleet lab up --limit {self.name}")
        pid_ns = ["-p"] if _ns(str(sshd), "pid") != _ns("self", "pid") else []   # a fabric host's own PIDs
        done = subprocess.run(["nsenter", "-t", str(sshd), "-m", "-u", *pid_ns, "-r", "-w", "--", "env", "-i",
                               *CONTAINER_ENV.split(), *argv],
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0 and done.stderr.startswith("nsenter: "):
            # never the command's own failure: nsenter could not enter the host, so nothing ran there
            raise LabError(f"lab host {self.name}: could not run {argv[0]} in it: {done.stderr.strip()}")
        return done

    def _listener(self, rec: dict) -> int | None:
        """The host's own sshd, the one that listens: the child of the recorded `unshare` (its PID namespace's
        first process), else of this host's sshds the one that started first. Never the lowest pid: after the
        pids wrap around (32768 on Debian) a session's sshd, ending as its client has, may have it, and nsenter
        into a process that ended runs nothing (a write to the host silently lost: a lab test flake)."""
        found = [pid for pid in self.pids() if _comm(pid) == "sshd"]
        leader = rec.get("pid")
        for pid in found:
            if leader and procs.parent(pid) == leader:
                return pid
        alive = [p for p in map(procs.identify, found) if p]
        return min(alive, key=lambda p: p.start).pid if alive else None

    def stop_listener(self, address: str, port: int) -> None:
        """Last resort for a leftover whose overlay is gone: the lab sshd still bound to the host's address.
        Ends every process of its namespace and returns once the address is free."""
        own = _mount_ns("self")
        for pid in procs.listening_pids(address, port):
            ns = _mount_ns(str(pid))
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
            except OSError:
                continue
            if ns and ns != own and SSHD_CONFIG in cmd:
                what = f"lab host {self.name} (leftover sshd on {address}:{port})"
                procs.end_all(lambda: [int(e) for e in os.listdir("/proc") if e.isdigit() and _mount_ns(e) == ns],
                              what)
                procs.wait_bindable(address, port, what, lambda: procs.listening_pids(address, port))

    def _is_ours(self, pid: int) -> bool:
        try:
            return str(self.dir / "m") in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
        except OSError:
            return False

    def running(self) -> bool:
        rec = self.record()
        return bool(rec) and self._is_ours(rec["pid"])

    def stop(self) -> None:
        """End every process of this host (SIGTERM, then SIGKILL; LabError naming any that outlive the
        bound) and return only once they have ended and the host's address:port is free again."""
        rec = self.record() or {}
        leader, address, port = rec.get("pid"), rec.get("address"), rec.get("port")
        # The host's listener, seen before anything ends (an ended process's socket no longer shows).
        listened = bool(address and port) and bool(set(procs.listening_pids(address, port)) & set(self.pids()))
        what = f"lab host {self.name}"
        procs.end_all(self.pids, what)
        child = _CHILDREN.pop(leader, None) if leader else None
        if child and child.poll() is None:   # normally ended above (a zombie), and poll() reaped it
            procs.end_all(lambda: [child.pid], what)
            child.wait()
        if listened:
            procs.wait_bindable(address, port, what, lambda: procs.listening_pids(address, port))
        (self.dir / "host.json").unlink(missing_ok=True)

    def wipe(self) -> None:
        """Forget everything the host wrote (its upper dir)."""
        for sub in ("upper", "work"):
            shutil.rmtree(self.dir / sub, ignore_errors=True)


def hide_machine_state(layer: Path) -> None:
    """A whiteout in a fresh upper dir for each of MACHINE_FLEET_STATE the profile layer does not provide; the
    directories above it made with this machine's owner and mode (an upper directory lends the merged one both)."""
    for path in MACHINE_FLEET_STATE:
        if os.path.lexists(layer / path.lstrip("/")):
            continue
        parent = Path("/")
        for part in Path(path).parent.parts[1:]:
            parent = parent / part
            made = layer / parent.relative_to("/")
            if not made.is_dir():
                made.mkdir()
                real = os.stat(parent) if parent.is_dir() else None
                if real is not None:
                    os.chmod(made, real.st_mode & 0o7777)
                    os.chown(made, real.st_uid, real.st_gid)
        layers.whiteout(layer, path)


def answers_ssh(address: str, port: int, timeout: float = 10.0) -> bool:
    """Whether an SSH server greets on address:port. Nothing listening is refused at once on loopback; the
    timeout only bounds a server that accepted, whose banner can take over a second on a loaded machine
    (sshd forks a child per connection), and a slow banner is still a banner (issue 17)."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as sock:
            return sock.recv(8).startswith(b"SSH-")
    except OSError:
        return False


def _gpu_uuid(name: str) -> str:
    import hashlib
    h = hashlib.sha256(f"fleet-lab-{name}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _overlay_of(pid: int) -> str | None:
    """The `upperdir=...,` of the overlay a process sees, None when it sees none."""
    try:
        info = Path(f"/proc/{pid}/mountinfo").read_text(errors="replace")
    except OSError:
        return None
    at = info.find("upperdir=")
    return info[at:info.index(",", at) + 1] if at >= 0 else None


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _mount_ns(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def _ns(pid: str, kind: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"{what} failed: {proc.stderr.strip()}")
