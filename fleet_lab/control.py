"""up / down / status / reset of the lab hosts named by an inventory."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from fleet.atomic import write_atomic

from fleet.errors import InputError, LabError
from . import mirror, paths, serve, served
from .profile_layer import build_profile_layer
from .host import SSHD, LabHost
from .profiles import HostSpec, spec_for


@dataclass
class HostState:
    name: str
    address: str
    port: int
    profile: str
    driver: str
    state: str          # started | already up | restarted | stopped | running | not answering
    seconds: float = 0.0


def check_machine() -> None:
    """One sentence and the fix when this machine cannot run the lab."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (it mounts overlays and starts sshd in its own namespaces); "
                       "run it as root, e.g. sudo fleet lab up")
    if not os.path.exists(SSHD):
        raise LabError(f"the lab serves each host with OpenSSH's sshd, and {SSHD} is missing; "
                       "run: apt-get install openssh-server")
    for tool, package in (("unshare", "util-linux"), ("ssh-keygen", "openssh-client")):
        if not shutil.which(tool):
            raise LabError(f"the lab needs {tool}, which is missing; run: apt-get install {package}")


def _load(inventory):
    if isinstance(inventory, (str, Path)):
        from fleet.inventory import load_inventory
        served.drop_stale(Path(inventory))
        return load_inventory(inventory)
    return inventory


def lab_specs(inventory, names=None) -> list[HostSpec]:
    inv = _load(inventory)
    hosts = [h for h in inv.select(names) if h.lab]
    if not hosts:
        raise InputError(f"{inv.path} has no host with a 'lab:' profile{' among ' + ', '.join(names) if names else ''}; "
                         "add e.g. 'lab: h100-pod' to a host with a 127.0.1.x address")
    specs, seen = [], {}
    for host in hosts:
        try:
            spec = spec_for(host)
        except InputError as exc:
            raise InputError(str(exc), path=str(inv.path), line=host.line) from None
        spec.inventory = str(Path(inv.path).resolve())
        where = (spec.address, spec.port)
        if where in seen:
            raise InputError(f"lab hosts {seen[where]!r} and {spec.name!r} share {spec.address}:{spec.port}; "
                             "give each its own 127.0.x.y address", path=str(inv.path), line=host.line)
        seen[where] = spec.name
        specs.append(spec)
    return specs


def ensure_lab_key(root: Path) -> str:
    key = paths.lab_key(root)
    if not key.exists():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fleet-lab", "-f", str(key)],
                       check=True, capture_output=True)
    return key.with_name(key.name + ".pub").read_text()


def profile_layer(spec: HostSpec, mirror_dir: Path, root: Path) -> Path:
    """The shared, read-only layer of a profile (built once per mirror and profile)."""
    layer = root / "layers" / f"{mirror_dir.name}-{spec.layer_key()}"
    done = layer.with_name(layer.name + ".complete")
    if done.exists():
        return layer
    for old in layer.parent.glob("*") if layer.parent.is_dir() else []:
        if not old.name.startswith((mirror_dir.name, ".")):   # built from older sources
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
    shutil.rmtree(layer, ignore_errors=True)
    building = layer.with_name(f".{layer.name}.{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    try:
        build_profile_layer(building, spec.prof, mirror_dir, spec.compat_installed, spec.driver)
        building.rename(layer)
        done.write_text("ok\n")
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return layer


def up(inventory, names=None, root=None) -> list[HostState]:
    check_machine()
    root = paths.lab_root(root)
    specs = lab_specs(inventory, names)   # bad input: nothing written, no host touched
    root.mkdir(parents=True, exist_ok=True)
    pubkey = ensure_lab_key(root)
    mirror_dir = mirror.ensure(root)
    pins = paths.lab_keyring_pins(root)
    write_atomic(pins, (mirror_dir / mirror.KEYRING_PINS).read_bytes(), mode=0o644)
    if isinstance(inventory, (str, Path)):   # fleet finds the key, host keys and keyring digests there
        served.write_connection(Path(inventory), root, pins)
    mirror_address = serve.address_for(root, mirror_dir, lab_specs(inventory)[0].address)
    for spec in specs:   # hosts built from older stand-ins are rebuilt
        spec.extra["mirror"] = mirror_dir.name
        spec.extra["mirror_address"] = mirror_address
    serve.ensure(root, mirror_dir, mirror_address)
    stop_strays(root, keep={s.name for s in specs})
    layer_of = {s.name: profile_layer(s, mirror_dir, root) for s in specs}
    with ThreadPoolExecutor(max_workers=max(1, len(specs))) as pool:
        states = list(pool.map(lambda s: _up_one(s, layer_of[s.name], mirror_dir, pubkey, root), specs))
    write_known_hosts(root)
    return states


def _up_one(spec: HostSpec, layer: Path, mirror_dir: Path, pubkey: str, root: Path) -> HostState:
    started = time.monotonic()
    host = LabHost(spec.name, root)
    rec = host.record()
    state = "started"
    if host.running() and rec and rec.get("digest") == spec.digest():
        from .host import answers_ssh
        if answers_ssh(spec.address, spec.port):
            return _state(spec, "already up", started)
    if rec:
        host.stop()
        state = "restarted"
    host.stop()              # leftovers of a killed run (processes still rooted in its overlay)
    if host.fresh() or not rec or rec.get("digest") != spec.digest():
        # new, or built from another profile or driver: its writes no longer fit
        host.provision(spec, layer, pubkey, mirror_dir)
    host.write_proc_driver(spec)
    host.start(spec, mirror_dir)
    return _state(spec, state, started)


def _state(spec: HostSpec, state: str, started: float) -> HostState:
    return HostState(spec.name, spec.address, spec.port, spec.profile, spec.driver, state,
                     round(time.monotonic() - started, 3))


def stop_strays(root: Path, keep: set[str]) -> None:
    """Processes left in overlays of hosts that have no record (a killed earlier run): stop them."""
    hosts = paths.hosts_dir(root)
    if not hosts.is_dir():
        return
    for entry in hosts.iterdir():
        host = LabHost(entry.name, root)
        if entry.name not in keep and not host.running():
            host.stop()


def write_known_hosts(root: Path) -> None:
    lines = []
    hosts = paths.hosts_dir(root)
    for entry in sorted(hosts.iterdir()) if hosts.is_dir() else []:
        rec = LabHost(entry.name, root).record()
        pub = entry / "hostkey" / "ssh_host_ed25519_key.pub"
        if rec and pub.exists():
            name = rec["address"] if rec["port"] == 22 else f"[{rec['address']}]:{rec['port']}"
            keytype, keydata = pub.read_text().split()[:2]
            lines.append(f"{name} {keytype} {keydata}\n")
    target = paths.lab_known_hosts(root)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text("".join(lines))
    tmp.rename(target)


def down(inventory=None, root=None, purge: bool = False) -> list[HostState]:
    """Stop the inventory's lab hosts (every host of the lab when inventory is None) and remove their
    files; when no host is left, remove the lab's state too. `purge` also removes the build caches."""
    check_machine()
    root = paths.lab_root(root)
    hosts = paths.hosts_dir(root)
    names = [s.name for s in lab_specs(inventory)] if inventory is not None else \
        ([e.name for e in hosts.iterdir()] if hosts.is_dir() else [])

    def down_one(name: str) -> HostState | str | None:
        host = LabHost(name, root)
        rec = host.record() or {}
        if not host.dir.exists():
            return None
        try:
            host.stop()   # returns once every process of the host has ended and its address is free
        except LabError as err:   # keep its files (the overlay may still be in use); stop the others
            return str(err)
        shutil.rmtree(host.dir, ignore_errors=True)
        return HostState(name, rec.get("address", "?"), rec.get("port", 22), rec.get("profile", "?"),
                         rec.get("driver", "?"), "stopped")

    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:   # each host on its own, as up() starts them
        done = list(pool.map(down_one, names))
    stopped = [d for d in done if isinstance(d, HostState)]
    failed = [d for d in done if isinstance(d, str)]
    if hosts.is_dir() and not any(hosts.iterdir()):
        hosts.rmdir()
    if not hosts.exists():
        serve.stop(root)
        if isinstance(inventory, (str, Path)):
            served.remove_connection(Path(inventory))
        for path in (paths.lab_key(root), paths.lab_key(root).with_name("id_ed25519.pub"), paths.lab_known_hosts(root),
                     paths.lab_keyring_pins(root)):
            path.unlink(missing_ok=True)
        if purge:
            shutil.rmtree(root, ignore_errors=True)
    elif root.exists():
        write_known_hosts(root)
    if failed:
        raise LabError("; ".join(failed))
    return stopped


def status(root=None) -> list[HostState]:
    from .host import answers_ssh
    root = paths.lab_root(root)
    hosts = paths.hosts_dir(root)
    out = []
    for entry in sorted(hosts.iterdir()) if hosts.is_dir() else []:
        host = LabHost(entry.name, root)
        rec = host.record()
        if not rec:
            continue
        if not host.running():
            state = "stopped"
        else:
            state = "running" if answers_ssh(rec["address"], rec["port"]) else "not answering"
        out.append(HostState(rec["name"], rec["address"], rec["port"], rec["profile"], rec["driver"], state))
    return out


def reset(inventory, names, root=None) -> list[HostState]:
    """Fresh hosts: stop each named host, forget everything it wrote, start it again."""
    check_machine()
    root = paths.lab_root(root)
    specs = lab_specs(inventory, list(names))
    for spec in specs:
        host = LabHost(spec.name, root)
        host.stop()
        host.wipe()
    return up(inventory, [s.name for s in specs], root)


def snapshot(inventory, names, to: Path, root=None) -> list[HostState]:
    """Keep what each named host wrote (its upper dir) in `to`/NAME, and its kernel driver in `to`/NAME.driver, for
    restore(): the host stopped for the copy (nothing writes while it is taken) and started again as restart()
    starts it."""
    def keep(host: LabHost, spec: HostSpec) -> None:
        shutil.rmtree(to / host.name, ignore_errors=True)
        (to / host.name).mkdir(parents=True)
        _run_cp(host.dir / "upper", to / host.name)
        (to / f"{host.name}.driver").write_text(spec.driver + "\n")
    return _restart(inventory, names, None, root, keep)


def restore(inventory, names, kept: Path, root=None) -> list[HostState]:
    """Each named host as snapshot() kept it: stopped, everything it wrote since replaced by the kept writes, and
    started again on the kernel driver it had then, as restart() starts it (nothing re-applied)."""
    def put_back(host: LabHost, spec: HostSpec) -> None:
        host.wipe()
        (host.dir / "upper").mkdir(parents=True)
        _run_cp(kept / host.name, host.dir / "upper")
    states = []
    for name in names:
        if not (kept / f"{name}.driver").is_file():
            raise LabError(f"no snapshot of lab host {name} in {kept}: take one with snapshot() first")
        driver = (kept / f"{name}.driver").read_text().strip()
        states += _restart(inventory, [name], driver, root, put_back)
    return states


def _run_cp(src: Path, dst: Path) -> None:
    # cp -a keeps whiteouts and opaque-dir xattrs, as LabHost.provision copies a profile layer
    done = subprocess.run(["cp", "-a", f"{src}/.", str(dst)], capture_output=True, text=True)
    if done.returncode != 0:
        raise LabError(f"copying {src} to {dst} failed: {done.stderr.strip()[:300]}")


def restart(inventory, names, driver: str | None = None, root=None) -> list[HostState]:
    """Stop each named host and start it again KEEPING what it wrote (its upper dir), as a pod restarts; with
    `driver`, on a host of that kernel driver: /proc/driver/nvidia/version and the user-space libcuda (which the
    container runtime mounts from the host) change, nothing else, and nothing is re-applied. The start runs the
    host's /pre_start.sh when it has one (the image's start command, as RunPod's start.sh does), then sshd. The
    host's record then holds that driver: the next `up` from the inventory makes it afresh with its own."""
    if driver is not None and not re.fullmatch(r"[0-9]+(\.[0-9]+){1,3}", driver):
        raise InputError(f"--driver {driver!r} is not a driver version such as 580.159.04")
    return _restart(inventory, names, driver, root)


def _restart(inventory, names, driver: str | None, root, stopped=None) -> list[HostState]:
    """restart(), with `stopped(host, spec)` run on each host while it is down (snapshot, restore)."""
    check_machine()
    root = paths.lab_root(root)
    specs = lab_specs(inventory, list(names))
    mirror_dir = mirror.ensure(root)
    mirror_address = serve.address_for(root, mirror_dir, lab_specs(inventory)[0].address)
    serve.ensure(root, mirror_dir, mirror_address)
    states = []
    for spec in specs:
        started = time.monotonic()
        host = LabHost(spec.name, root)
        rec = host.record()
        if host.fresh() or not rec:
            raise LabError(f"lab host {spec.name} is not up, so there is nothing to restart; start it with: "
                           f"fleet lab up --limit {spec.name}")
        spec.extra["mirror"] = mirror_dir.name
        spec.extra["mirror_address"] = mirror_address
        spec = dataclasses.replace(spec, driver=driver or rec.get("driver") or spec.driver)
        if stopped and spec.prof.container_disk_gb:
            raise LabError(f"lab host {spec.name} keeps its writes on its own tmpfs (a small container disk): "
                           "they end with it, so there is nothing to snapshot or restore")
        host.stop()
        if stopped:
            stopped(host, spec)
        if spec.driver != rec.get("driver"):
            host.swap_driver(spec, mirror_dir)
        host.write_proc_driver(spec)
        host.start(spec, mirror_dir)
        states.append(_state(spec, "restarted", started))
    write_known_hosts(root)
    return states
