"""Multi-GPU lab hosts (issue 28): an HGX H100 8-GPU NVSwitch baseboard, its fabric manager as hosts have it, and
a container pod whose fabric is the provider's. The profiles are in profiles.py (`gpus`, `fabric`, `fm`,
`off_fabric`); this module holds what makes them real:

- The stand-in packages NVIDIA's CUDA apt repository serves per driver branch (github.com/NVIDIA/apt-packaging-
  fabric-manager): `nvidia-fabricmanager-<branch>` (/usr/bin/nv-fabricmanager, its config, its systemd unit) and
  `libnvidia-nscq-<branch>` (libnvidia-nscq.so.<version>), at FM_VERSIONS, so fleet's role installs, holds and
  starts them from the lab mirror as from NVIDIA's.
- The stand-in daemon `nv-fabricmanager` (FM_SCRIPT): as NVIDIA's, it refuses to start unless it is exactly the
  kernel driver's version, with NVIDIA's own message ("fabric manager NVIDIA GPU driver interface version X don't
  match with driver version Y. Please update with matching NVIDIA driver package.", exit 1, as journal lines quoted
  in NVIDIA/gpu-operator#544, siderolabs/pkgs#720 show it), and logs to /var/log/fabricmanager.log. Started, it
  daemonizes (DAEMONIZE=1 in NVIDIA's fabricmanager.cfg), its process named `nv-fabricmanage` (the 15-character
  comm of the real one), and sets the fabric up: it writes FABRIC_STATE on the host's own /run.
- FABRIC_STATE is what the host's stand-in libcuda (cuInit: 802 CUDA_ERROR_SYSTEM_NOT_READY until it exists) and
  nvidia-smi (Fabric State In Progress until then, Completed after) read. It lives on the host's /run (a tmpfs of
  its own): set up once, the fabric stays up until the host restarts (a reboot), whatever the daemon does then.
- Every lab host has its own PID namespace (host.py), so a fabric manager's process is seen by its host only; a
  fabric host also has its own cgroup namespace and /dev (profiles.py `own_dev`): /dev/nvidia-nvswitch* (stand-in
  device files, as the probe looks for them) on the NVSwitch boards only. A container pod sees no NVSwitch device and shows /.dockerenv; a bare-metal host hides
  this machine's /.dockerenv.
- The boards with systemd (profiles.py `systemd`) get a stand-in systemctl (SYSTEMCTL_SCRIPT) and start their
  enabled units at boot, so fleet's systemd path (`systemctl enable`, `restart`, `is-active`) meets what it would on
  a real board; the others take fleet's path for a host without systemd.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from . import layers
from .debs import Deb

FABRIC_STATE = "/run/fleet-lab/fabric-ready"   # native/libcuda.c and native/nvidia_smi.c read it (FABRIC_STATE)
FM_BIN = "/usr/bin/nv-fabricmanager"
VENV = "/opt/fleet/venv"   # the fabric hosts' python_env (inventories/lab-fabric.yaml): the system torch, seen
FM_CONFIG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
FM_LOG = "/var/log/fabricmanager.log"
# The drivers the lab builds (the HGX profiles run 580.159.04) and for each an earlier release of its branch (the
# one `behind` preinstalls): the versions the mirror serves, as NVIDIA's repository keeps old releases.
FM_BEHIND = {"570.133.20": "570.124.06", "580.159.04": "580.126.09"}
FM_VERSIONS = ("570.124.06", "570.133.20", "580.126.09", "580.159.04")
# DGX H100's eight GPUs (nvidia-smi -q "GPU 00000000:18:00.0" ...), NUMA node 0: the first four
BUS_IDS = ("00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
           "00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0")
NVSWITCHES = 4   # an HGX H100 8-GPU baseboard carries four third-generation NVSwitch chips
# NVSwitch generation 4 (issue 48): a B200 board's marker (what the real fabric manager learns from its NVSwitches),
# the stand-in NVLink Subnet Manager's package, and the kernel modules the stand-in modprobe "loads": a file each
# on the host's own /run (this machine's kernel is never touched; a reboot of the host forgets them, as a real one)
GEN4_MARKER = "/etc/fleet-lab/nvswitch-generation-4"
NVLSM_BIN = "/opt/nvidia/nvlsm/sbin/nvlsm"
NVLSM_VERSION = "2025.06.3-1"
MODULES_DIR = "/run/fleet-lab/modules/"
MODPROBE_SCRIPT = f"""#!/bin/sh
# fleet lab stand-in for modprobe(8): NOT kmod's. Knows ib_umad only (a fourth-generation NVSwitch board's); loading it
# marks it in this host's own /run ({MODULES_DIR}), which the stand-in lsmod lists. This machine's kernel is untouched.
for m in "$@"; do case $m in -*) ;; ib_umad) mkdir -p {MODULES_DIR} && : > {MODULES_DIR}ib_umad ;;
  *) echo "modprobe: FATAL: Module $m not found in directory /lib/modules/$(uname -r)" >&2; exit 1 ;; esac; done
"""
LSMOD_SCRIPT = f"""#!/bin/sh
# fleet lab stand-in for lsmod(8): NOT kmod's. The modules the stand-in modprobe loaded on this host.
echo 'Module                  Size  Used by'
for f in {MODULES_DIR}*; do [ -e "$f" ] && printf '%-24s%6s  %s\\n' "${{f##*/}}" 45056 0; done
true
"""

FM_SCRIPT = '''#!/usr/bin/python3
"""fleet lab stand-in for NVIDIA Fabric Manager (nv-fabricmanager): NOT NVIDIA's. Version {version}.
Refuses to start unless the kernel driver is exactly its version (NVIDIA's message, exit 1); else daemonizes
and sets the host's NVSwitch fabric up (writes {state}, which the stand-in libcuda and nvidia-smi read)."""
import os, sys, time

VERSION = "{version}"
STATE = "{state}"
LOG = "{log}"
GEN4 = "{gen4}"
NVLSM = "{nvlsm}"
MODULES = "{modules}"


def log(level, text):
    try:
        with open(LOG, "a") as fh:
            fh.write(time.strftime("[%b %d %Y %H:%M:%S] ") + f"[{{level}}] [tid {{os.getpid()}}] {{text}}\\n")
    except OSError:
        pass


def kernel_driver():
    try:
        line = open("/proc/driver/nvidia/version").readline()
    except OSError:
        return None
    words = line.split("Module for ", 1)[1].split() if "Module for " in line else []
    return words[1] if len(words) > 1 else None


if "-v" in sys.argv or "--version" in sys.argv:
    print(f"Fabric Manager version is : {{VERSION}}")
    sys.exit(0)
driver = kernel_driver()
if driver is None:
    print("fabric manager failed to open NVIDIA GPU driver interface: is the NVIDIA driver loaded?", file=sys.stderr)
    log("ERROR", "failed to open NVIDIA GPU driver interface")
    sys.exit(1)
if driver != VERSION:
    text = (f"fabric manager NVIDIA GPU driver interface version {{VERSION}} don't match with driver version "
            f"{{driver}}. Please update with matching NVIDIA driver package.")
    print(text, file=sys.stderr)
    log("ERROR", text)
    sys.exit(1)
if not any(name.startswith("nvidia-nvswitch") for name in os.listdir("/dev")):
    text = "fabric manager: no NVSwitch device found (/dev/nvidia-nvswitch*): nothing to manage"
    print(text, file=sys.stderr)
    log("ERROR", text)
    sys.exit(1)
if os.path.exists(GEN4):   # a fourth-generation NVSwitch board: NVLSM and ib_umad first (FM user guide)
    missing = [what for what, there in (("the NVLink Subnet Manager (nvlsm)", os.path.exists(NVLSM)),
                                        ("the ib_umad kernel module", os.path.exists(MODULES + "ib_umad")))
               if not there]
    if missing:
        text = "fabric manager: NVSwitch generation 4 needs " + " and ".join(missing) + ": not starting"
        print(text, file=sys.stderr)
        log("ERROR", text)
        sys.exit(1)
read, write = os.pipe()
if os.fork():   # DAEMONIZE=1: the parent returns once the fabric is set up, as the service's start does
    os.close(write)
    sys.exit(0 if os.read(read, 1) == b"1" else 1)
os.close(read)
os.setsid()
with open("/proc/self/comm", "w") as fh:
    fh.write("nv-fabricmanage")
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
log("INFO", f"Fabric Manager version {{VERSION}} is running with the following configuration options")
os.makedirs(os.path.dirname(STATE), exist_ok=True)
with open(STATE + ".tmp", "w") as fh:
    fh.write(f"pid={{os.getpid()}}\\nversion={{VERSION}}\\n")
os.rename(STATE + ".tmp", STATE)
log("INFO", "Successfully configured all the available NVSwitches to route GPU NVLink traffic.")
os.write(write, b"1")
os.close(write)
while True:
    time.sleep(3600)
'''

FM_CFG = """# fleet lab stand-in for NVIDIA Fabric Manager's config (the keys the real one starts with)
LOG_LEVEL=4
LOG_FILE_NAME=/var/log/fabricmanager.log
DAEMONIZE=1
BIND_INTERFACE_IP=127.0.0.1
STARTING_TCP_PORT=16000
FABRIC_MODE=0
"""

FM_UNIT = f"""[Unit]
Description=NVIDIA fabric manager service (fleet lab stand-in)

[Service]
User=root
PrivateTmp=false
Type=forking
ExecStart={FM_BIN} -c {FM_CONFIG}
LimitCORE=infinity

[Install]
WantedBy=multi-user.target
"""


SYSTEMCTL = "/usr/bin/systemctl"
WANTS = "/etc/systemd/system/multi-user.target.wants"
FM_SERVICE = "nvidia-fabricmanager.service"
# systemd as the fabric hosts that have it need it (bare metal and VMs run it; pods do not): units from the unit
# directories, `enable` as the [Install] symlink, Type=forking services started and their daemon followed by pid,
# the states and exit codes of systemctl(1) (is-active: 0 active, 3 otherwise; is-enabled: 0 enabled, 1 not).
# The host's boot starts every enabled unit (boot_lines), as systemd does at multi-user.target.
SYSTEMCTL_SCRIPT = '''#!/usr/bin/python3
"""fleet lab stand-in for systemctl: NOT systemd's. enable/disable, start/stop/restart, is-active, is-enabled,
status and daemon-reload for Type=forking services (the daemon: the process the start left behind under PID 1);
state in /run/fleet-lab/systemd (lost at a reboot, as systemd's is)."""
import os, shlex, signal, subprocess, sys, time

UNIT_DIRS = ("/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")
WANTS = "{wants}"
STATE = "/run/fleet-lab/systemd"
LOG = "/var/log/fleet-lab-systemd.log"
args = [a for a in sys.argv[1:] if not a.startswith("-")]
quiet = "--quiet" in sys.argv or "-q" in sys.argv


def say(text, err=False):
    if not quiet or err:
        print(text, file=sys.stderr if err else sys.stdout)


def unit(name):
    name = name if "." in name else name + ".service"
    path = next((os.path.join(d, name) for d in UNIT_DIRS if os.path.isfile(os.path.join(d, name))), None)
    return name, path


def pids():
    return {{int(p) for p in os.listdir("/proc") if p.isdigit()}}


def stat(pid):
    try:
        return open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid):
    st = stat(pid)
    return bool(st) and st[0] not in ("Z", "X")


def state(name):
    try:
        words = open(f"{{STATE}}/{{name}}").read().split()
    except OSError:
        return "inactive"
    if words[0] == "active":
        return "active" if words[1:] and any(alive(int(p)) for p in words[1:]) else "failed"
    return words[0]


def record(name, *words):
    os.makedirs(STATE, exist_ok=True)
    with open(f"{{STATE}}/{{name}}", "w") as fh:
        fh.write(" ".join(map(str, words)) + "\\n")


def start(name, path):
    if state(name) == "active":
        return 0
    cmd = next(line.split("=", 1)[1].strip() for line in open(path) if line.startswith("ExecStart="))
    before = pids()
    with open(LOG, "a") as log:
        rc = subprocess.call(shlex.split(cmd), stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    main = sorted(p for p in pids() - before if alive(p) and stat(p)[1] == "1")   # daemonized: under PID 1
    if rc != 0 or not main:
        record(name, "failed")
        say(f"Job for {{name}} failed because the control process exited with error code.\\nSee \\"systemctl status "
            f"{{name}}\\" and \\"journalctl -xeu {{name}}\\" for details.", err=True)
        return 1
    record(name, "active", *main)
    return 0


def stop(name):
    try:
        words = open(f"{{STATE}}/{{name}}").read().split()
    except OSError:
        return 0
    main = [int(p) for p in words[1:] if alive(int(p))]
    for pid in main:
        os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 10
    while any(alive(p) for p in main) and time.time() < deadline:
        time.sleep(0.02)
    record(name, "inactive")
    return 0


def main():
    if not args:
        say("fleet lab stand-in systemctl: list-units is not simulated", err=True)
        return 1
    verb, names = args[0], args[1:]
    if verb == "daemon-reload":
        return 0
    rc = 0
    for given in names:
        name, path = unit(given)
        wanted = os.path.join(WANTS, name)
        if verb == "is-active":
            now = state(name)
            say(now)
            rc = rc or (0 if now == "active" else 3)
        elif verb == "is-enabled":
            if not path:
                say(f"Failed to get unit file state for {{name}}: No such file or directory", err=True)
                rc = 1
            else:
                say("enabled" if os.path.islink(wanted) else "disabled")
                rc = rc or (0 if os.path.islink(wanted) else 1)
        elif path is None:
            say(f"Failed to {{verb}} unit: Unit {{name}} not found." if verb != "enable" else
                f"Failed to enable unit: Unit file {{name}} does not exist.", err=True)
            rc = 5 if verb in ("start", "restart", "stop", "status") else 1
        elif verb == "enable":
            if not os.path.islink(wanted):
                os.makedirs(WANTS, exist_ok=True)
                os.symlink(path, wanted)
                say(f"Created symlink {{wanted}} \\u2192 {{path}}.", err=True)
            if "--now" in sys.argv:
                rc = rc or start(name, path)
        elif verb == "disable":
            if os.path.islink(wanted):
                os.unlink(wanted)
                say(f"Removed \\"{{wanted}}\\".", err=True)
        elif verb == "start":
            rc = rc or start(name, path)
        elif verb == "stop":
            rc = rc or stop(name)
        elif verb == "restart":
            stop(name)
            rc = rc or start(name, path)
        elif verb == "status":
            now = state(name)
            say(f"* {{name}} (fleet lab stand-in)\\n     Loaded: loaded ({{path}}; "
                f"{{'enabled' if os.path.islink(wanted) else 'disabled'}})\\n     Active: {{now}}")
            rc = rc or (0 if now == "active" else 3)
        else:
            say(f"fleet lab stand-in systemctl: {{verb}} is not simulated", err=True)
            return 1
    return rc


sys.exit(main())
'''


def debs(multiarch: str, nscq_lib: Path) -> list[Deb]:
    """nvidia-fabricmanager-<branch> and libnvidia-nscq-<branch> at every FM_VERSIONS release."""
    out = []
    for version in FM_VERSIONS:
        branch = version.split(".")[0]
        out.append(Deb(f"nvidia-fabricmanager-{branch}", f"{version}-1",
                       f"NVIDIA Fabric Manager {version} (nv-fabricmanager: refuses any other driver version)",
                       files={FM_BIN: FM_SCRIPT.format(version=version, state=FABRIC_STATE, log=FM_LOG, gen4=GEN4_MARKER,
                                                       nvlsm=NVLSM_BIN, modules=MODULES_DIR).encode(),
                              FM_CONFIG: FM_CFG.encode(),
                              "/lib/systemd/system/nvidia-fabricmanager.service": FM_UNIT.encode()},
                       executables={FM_BIN}))
        lib = f"/usr/lib/{multiarch}/libnvidia-nscq.so.{version}"
        out.append(Deb(f"libnvidia-nscq-{branch}", f"{version}-1", f"NVSwitch Configuration and Query library {version}",
                       files={lib: nscq_lib}, links={f"/usr/lib/{multiarch}/libnvidia-nscq.so.2": f"libnvidia-nscq.so.{version}"},
                       triggers="activate-noawait ldconfig"))
    out.append(Deb("nvlsm", NVLSM_VERSION, "NVIDIA NVLink Subnet Manager (fleet lab stand-in: not NVIDIA's)",
                   files={NVLSM_BIN: b"#!/bin/sh\necho 'fleet lab stand-in for nvlsm: NOT NVIDIA NVLink Subnet Manager'\n"},
                   executables={NVLSM_BIN}))
    return out


def gen4(profile) -> bool:
    """A fourth-generation NVSwitch board (HGX B200): what fleet's decision reads from the GPUs' name."""
    return bool(profile.fabric == "managed" and "B200" in profile.gpu.name)


def preinstalled(profile, driver: str) -> str | None:
    """The fabric manager release the host comes with: the driver's, one behind it, or none."""
    if not profile.fm:
        return None
    return FM_BEHIND[driver] if profile.fm == "behind" else driver


def to_layer(layer: Path, profile, driver: str, mirror: Path, repo_in_host: str) -> None:
    """The profile's part of its layer: /.dockerenv as the profile is a container or not, the fabric manager
    packages as the host comes (installed by dpkg, held with the driver as an admin leaves them)."""
    if profile.container is True:   # (None: not a fabric host, as this machine is)
        layers.put(layer, "/.dockerenv", "")
    elif profile.container is False and Path("/.dockerenv").exists():
        layers.whiteout(layer, "/.dockerenv")   # this machine is a container; the bare-metal host is not
    if not profile.fabric:
        return
    steps = []
    if profile.system_torch:   # a venv seeing the system torch, as an admin leaves one (the inventory's python_env)
        steps.append(f"python3 -m venv --without-pip --system-site-packages {VENV}")
    version = preinstalled(profile, driver)
    if version:
        branch = version.split(".")[0]
        names = [f"nvidia-fabricmanager-{branch}", f"libnvidia-nscq-{branch}"]
        # from NVIDIA's CUDA repository, so its cuda-keyring (the source) came first
        files = [f"{repo_in_host}/cuda-keyring_1.1-1_all.deb"] + [f"{repo_in_host}/{n}_{version}-1_all.deb" for n in names]
        steps += ["dpkg -i " + " ".join(files), "apt-mark hold " + " ".join(names)]
    if steps:   # one throw-away namespace for all of it
        layers.dpkg_in_layer(layer, mirror, ["sh", "-c", shlex.quote(" && ".join(steps))])
    if gen4(profile):
        layers.put(layer, GEN4_MARKER, "4\n")
        layers.put(layer, "/usr/sbin/modprobe", MODPROBE_SCRIPT, 0o755)
        layers.put(layer, "/usr/bin/lsmod", LSMOD_SCRIPT, 0o755)
    if profile.systemd:
        layers.put(layer, SYSTEMCTL, SYSTEMCTL_SCRIPT.format(wants=WANTS), 0o755)
        layers.opaque_dir(layer, "/etc/systemd/system")   # this machine's enabled units are not the host's
        if profile.fm in ("running", "behind"):   # enabled, as `systemctl enable` leaves it: started at each boot
            layers.link(layer, f"{WANTS}/{FM_SERVICE}", f"/lib/systemd/system/{FM_SERVICE}")


def dev_lines(profile, merged: str) -> list[str]:
    """A /dev of the host's own (instead of this machine's): the usual nodes bound from this machine's, a devpts
    of its own, and the GPUs' and NVSwitches' device files as stand-ins (plain files: the probe asks whether
    they exist; nothing opens them)."""
    m = shlex.quote(merged)
    lines = [f"mount -t tmpfs -o mode=755,nosuid tmpfs {m}/dev"]
    for node in ("null", "zero", "full", "random", "urandom", "tty"):
        lines.append(f"touch {m}/dev/{node} && mount --bind /dev/{node} {m}/dev/{node}")
    lines += [f"mkdir {m}/dev/pts {m}/dev/shm",
              f"mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts {m}/dev/pts",
              f"ln -s pts/ptmx {m}/dev/ptmx", f"ln -s /proc/self/fd {m}/dev/fd",
              f"ln -s /proc/self/fd/0 {m}/dev/stdin", f"ln -s /proc/self/fd/1 {m}/dev/stdout",
              f"ln -s /proc/self/fd/2 {m}/dev/stderr"]
    files = ["nvidiactl", "nvidia-uvm"] + [f"nvidia{i}" for i in range(profile.gpus)]
    if profile.fabric == "managed":   # a container is not given the NVSwitches (the provider's host keeps them)
        files += ["nvidia-nvswitchctl"] + [f"nvidia-nvswitch{i}" for i in range(NVSWITCHES)]
    lines.append("for f in " + " ".join(files) + f"; do : > {m}/dev/$f; done")
    return lines


def boot_lines(profile, merged: str) -> list[str]:
    """What the host's init does at boot: systemd (where the host has it) starts every enabled unit, so an enabled
    nvidia-fabricmanager runs, or fails with its message in /var/log/fabricmanager.log when left behind the driver;
    without systemd an init script starts the daemon of a host whose fabric manager runs."""
    m = shlex.quote(merged)
    if profile.systemd:
        # (wants entries are symlinks to unit paths inside the host: -L, not -e, from out here); the modules named
        # in /etc/modules-load.d load first, as systemd-modules-load does
        modules = ([f"for f in {m}/etc/modules-load.d/*.conf; do [ -f \"$f\" ] && chroot {m} sh -c "
                    "'grep -v \"^#\" \"$1\" | xargs -r /usr/sbin/modprobe' sh \"${f#"
                    f"{m}}}\" </dev/null >/dev/null 2>&1; done; true"] if gen4(profile) else [])
        return [*modules, f"mkdir -p {m}/run/systemd/system",   # what fleet's probe (and sd_booted) take for systemd
                f"for u in {m}{WANTS}/*.service; do if [ -L \"$u\" ]; then chroot {m} {SYSTEMCTL} start "
                "\"${u##*/}\" </dev/null >/dev/null 2>&1 || true; fi; done"]
    if profile.fm not in ("running", "behind"):
        return []
    return [f"chroot {m} {FM_BIN} -c {FM_CONFIG} </dev/null >/dev/null 2>&1 || true"]


def gpu_lines(profile) -> str:
    """The multi-GPU part of /proc/driver/nvidia/fleet-lab-gpu (host.py writes it; libcuda and nvidia-smi read)."""
    if profile.gpus <= 1 and not profile.fabric:
        return ""
    return (f"gpus={profile.gpus}\nbus_ids={' '.join(BUS_IDS[:profile.gpus])}\nfabric={profile.fabric or ''}\n"
            f"off_fabric={' '.join(map(str, profile.off_fabric))}\n")
