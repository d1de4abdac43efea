"""fleet's verify program: the host side of the verify role, a plain stdlib Python file run on the host.

It proves the GPU stack works in every kind of process (they read different startup files, or none, and may load
a different libcuda.so.1: issues 11, 23) and prints ONE JSON line as its last line:

    {"passed", "checks": [{"name", "passed", "detail"}], "missing_libraries", "torch", "cuda", "kinds", "perf",
     "bandwidth", "load", "gpus", "links", "python"}

exiting 0 only when every check passed. It runs in the shell `ssh host cmd` gives (torch, every GPU, perf), and
asks CUDA again in each other kind of process (KINDS: bare, interactive, login) by starting itself there
(`--cuda-probe NEED`); a failed kind names the libcuda and the loader's step that put it first.

Run as (fleet/resources/verify.py renders the command; nothing in this file is templated):

    python3 verify_host.py CONFIG_JSON          # the checks, in order (STEPS)
    python3 verify_host.py --cuda-probe NEED    # one kind of process: `@@fleet-cuda {...}` (cuda_report)
    python3 verify_host.py --allreduce          # one rank of the all-reduce (RANK, WORLD_SIZE, FLEET_AR_ELEMS)

CONFIG_JSON, one JSON object (every key optional; the verify role's templates/verify.json.j2 writes it):

    perf          bool    the perf smoke and the all-reduce run (never in --check)         default false
    gpu_expected  bool    the platform has an NVIDIA GPU (false: verified on the CPU)     default true
    perf_table    list    [{match, peak, matmul_floor, attention_floor} (TFLOP/s), memory_tbs, memory_floor_tbs,
                          host_gbs, host_floor_gbs (the bandwidth floors; 0: none)], first match wins
    memory_share  float   of the FREE GPU memory the perf tensors may take                default 0.1
    busy_share    float   memory used by others above this share of the total: busy       default 0.1
    toolkit       str     the decided toolkit's directory (decisions.cuda.path): its nvcc and CUDA_HOME in
                          every kind of shell (issue 35); "" or absent: not checked
    venv_first    bool    fleet's venv first on PATH (env_hooks_venv_on_path: first): python3, python and pip
                          in every kind of shell are the venv's, with the torch verified here  default false

What a libcuda path is and which file:line put it first are fleet/remote/loader_rules.py's rules, the facts' own:
the installed program carries that module's text (fleet/resources/verify.py: verify_program).

The environment may carry FLEET_VERIFY_TRACE: fleet.facts.shells' trace of the startup files (a bash command),
run only where a kind of process failed through LD_LIBRARY_PATH, to name the startup file:line that set it.

Adding a check: write `def my_check(ctx)` that calls `check(name, passed, detail)` once per verdict (and may put
data in OUT["..."]), and put it in STEPS where it belongs. Steps run in order with one shared `ctx` dict (what an
earlier step found: "torch", "look", "here"); a step that returns STOP ends the run (the later steps depend on
what it could not prove). An exception in a step is the check `verify_ran` failing with the exception's text.
Keep this file stdlib-only at import (torch is imported inside the steps that need it) and templating-free: it
is installed on the host by the digest of its text.
"""

import ctypes
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import warnings

# Set by configure() from CONFIG_JSON; the defaults are what an empty config gives.
PERF = False              # the perf smoke and the all-reduce (never in --check / a look phase)
GPU_EXPECTED = True       # the platform row's (decisions.platform): False verifies on the CPU
TABLE = []                # perf rows: {match, peak, matmul_floor, attention_floor}
MEMORY_SHARE = 0.1        # of FREE memory the perf tensors may take
BUSY_SHARE = 0.1          # memory used by others above this share of total: busy
TOOLKIT = ""              # the decided toolkit (its nvcc and CUDA_HOME in every kind of shell)
VENV_FIRST = False        # python3/python/pip in every kind of shell are this venv's
CHECKS, OUT = [], {}
PROGRAM = os.path.abspath(__file__) if globals().get("__file__") else None   # this file: started in other kinds


def _bundled(name):
    """A module the installed program carries (_BUNDLED, put before this text by fleet/resources/verify.py);
    KeyError where it runs from fleet's own source (tests), which imports it from fleet.remote instead."""
    import types

    source = globals().get("_BUNDLED", {})[name]
    module = types.ModuleType(name)
    exec(compile(source, f"<fleet {name}>", "exec"), module.__dict__)
    return module


try:
    rules = _bundled("loader_rules")           # the loader's rules, the very text the facts parse with
except KeyError:
    from fleet.remote import loader_rules as rules
STOP = object()           # a step's answer that ends the run


def configure(config):
    """Take CONFIG_JSON's values (a dict) and start a fresh result."""
    global PERF, GPU_EXPECTED, TABLE, MEMORY_SHARE, BUSY_SHARE, TOOLKIT, VENV_FIRST
    TOOLKIT = str(config.get("toolkit") or "").rstrip("/")
    VENV_FIRST = bool(config.get("venv_first", False))
    PERF = bool(config.get("perf", False))
    GPU_EXPECTED = bool(config.get("gpu_expected", True))
    TABLE = list(config.get("perf_table") or [])
    MEMORY_SHARE = float(config.get("memory_share", 0.1))
    BUSY_SHARE = float(config.get("busy_share", 0.1))
    CHECKS.clear()
    OUT.clear()
    OUT.update({"missing_libraries": [], "torch": None, "cuda": {}, "perf": None, "gpus": []})


# What one process sees of CUDA, asked of the driver API itself. Runs here (`ssh host cmd`, with torch) and, as its
# own program, in each other kind of process (KINDS). Error codes: CUDA driver API reference, CUresult
# (docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html): 34 STUB_LIBRARY, 35 INSUFFICIENT_DRIVER, 46
# DEVICES_UNAVAILABLE, 100 NO_DEVICE, 802 SYSTEM_NOT_READY (an NVSwitch fabric not up), 803 SYSTEM_DRIVER_MISMATCH, 804 COMPAT_NOT_SUPPORTED_ON_DEVICE, 999 UNKNOWN.
# Without torch it asks what torch.cuda.is_available() asks (the libcuda the loader picks, cuInit, a device, a
# driver API at least the wheel's CUDA: `need`), in a few ms instead of a torch import (~1.5 s on an H100 host).
class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def answered_by(lib):
    """The file whose cuInit answered (dladdr on the symbol the loader bound), its real path; None if unknown.
    With several libcuda files mapped (a preload beside the path's), this is the one that decided."""
    try:
        dladdr = ctypes.CDLL(None).dladdr        # libc (glibc >= 2.34) or libdl, which python links before
        info = _DlInfo()
        if dladdr(ctypes.cast(lib.cuInit, ctypes.c_void_p), ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    except (AttributeError, OSError, ValueError):
        pass
    return None


def cuda_report(with_torch=True, need=0):
    r = {"ld_library_path": os.environ.get("LD_LIBRARY_PATH"), "ld_preload": os.environ.get("LD_PRELOAD"),
         "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "device_order": os.environ.get("CUDA_DEVICE_ORDER")}
    if with_torch:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                import torch
                r["torch_available"] = bool(torch.cuda.is_available())
            r["torch_warning"] = " ".join(str(w.message) for w in caught)[:400] or None
        except Exception as exc:
            r["torch_available"], r["torch_error"] = False, f"{type(exc).__name__}: {exc}"[:400]
    try:
        lib = ctypes.CDLL("libcuda.so.1")   # the one torch loaded, if it did: same soname, same handle
    except OSError as exc:
        r["load_error"] = str(exc)[:300]
        return r
    def call(fn, *args):   # a stub or a broken libcuda may lack a symbol: that is an answer, not a crash
        try:
            return getattr(lib, fn)(*args)
        except AttributeError:
            r.setdefault("missing_symbols", []).append(fn)
            return None

    r["code"] = call("cuInit", 0)
    if r["code"] is None:
        r["load_error"] = "libcuda.so.1 has no cuInit"
        return r
    text = ctypes.c_char_p()
    for key, fn in (("name", "cuGetErrorName"), ("text", "cuGetErrorString")):
        text.value = None
        call(fn, r["code"], ctypes.byref(text))
        r[key] = (text.value or b"").decode() or None
    version, count = ctypes.c_int(0), ctypes.c_int(0)
    call("cuDriverGetVersion", ctypes.byref(version))
    r["driver_api"] = version.value
    if r["code"] == 0:
        call("cuDeviceGetCount", ctypes.byref(count))
        r["devices"] = count.value
    r["libcuda"] = answered_by(lib)
    if r["libcuda"] is None:
        with open("/proc/self/maps") as maps:   # the libcuda this process mapped (one, unless preloads add more)
            paths = {line.split()[-1] for line in maps if "/libcuda.so" in line}
        r["libcuda"] = sorted(paths)[0] if paths else None
    if r["libcuda"]:
        real = os.path.realpath(r["libcuda"])
        r["libcuda_real"] = real
        r["libcuda_version"] = rules.version_of(real)
        r["stub"] = r["code"] == 34 or rules.is_stub(real)
    if not with_torch:   # what torch.cuda.is_available() decides from
        r["need"] = need
        r["available"] = r["code"] == 0 and r.get("devices", 0) > 0 and r["driver_api"] >= need
    return r

# Each kind of process, as it starts (issue 23): the probe runs in each, all inside verify's one command.
#   ssh          `ssh host cmd`: this very process (a non-interactive bash that read ~/.bashrc); the full check
#   bare         no startup file at all (services, cron, a supervised kernel, `docker exec`): env -i
#   interactive  `bash -i` from the fresh environment sshd + PAM give a session
#   login        `bash -l` from that environment (/etc/profile, then the first of ~/.bash_profile, ~/.bash_login,
#                ~/.profile)
KINDS = {"ssh": "in `ssh host cmd`", "bare": "in a bare process (env -i: services, cron, docker exec)",
         "interactive": "in an interactive shell (bash -i)", "login": "in a login shell (bash -l)"}
CHECK_NAMES = {"ssh": "cuda_available", "bare": "cuda_available_bare", "interactive": "cuda_available_interactive",
               "login": "cuda_available_login"}
TRACED = {"ssh": "noninteractive", "interactive": "interactive", "login": "login"}   # fleet.facts.shells.KINDS
# fleet.facts.shells.TRACKED, in its order (the trace's @@set lines name them by position; tests/unit prove they agree)
TRACKED = ("PATH", "CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
           "NVIDIA_VISIBLE_DEVICES", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
           "VIRTUAL_ENV", "CONDA_PREFIX", "PYTORCH_NVML_BASED_CUDA_CHECK")
# What takes each mechanism out of effect: env_hooks' ld_aside task does it for the ld cache and preload entries
# decide.loader finds harmful under this driver (the same rule as the compat decision).
LD_CACHE_FIX = ("move {conf} aside (out of /etc/ld.so.conf.d, not deleted) and run ldconfig: fleet apply does so "
                "(env_hooks' ld_aside, to /var/lib/fleet/aside) wherever this directory is harmful under the driver")
PRELOAD_FIX = ("take {entry} out of {file}: fleet apply comments the line out (env_hooks' ld_aside) wherever it is "
               "harmful under the driver")
# The cuda_compat role's own drop-in, which its gate keeps only while the kernel driver needs compat and
# re-checks at every start: found at fault, the gate has not run since the driver changed.
FLEET_COMPAT_CONF = "/etc/ld.so.conf.d/000-fleet-cuda-compat.conf"
FLEET_COMPAT_FIX = ("it is fleet's gated compat drop-in and the kernel driver changed since its gate last ran: run "
                    "/usr/local/sbin/fleet-cuda-compat-gate (it runs at every start; fleet apply runs it too)")
STARTUP_FIX = ("take {d} off LD_LIBRARY_PATH at that line (delete it, or guard it by the driver); "
               "`fleet apply --check` names each startup line fleet neutralizes")


def check(name, passed, detail=""):
    CHECKS.append({"name": name, "passed": bool(passed), "detail": str(detail)[:900]})
    return passed


def kernel_driver():
    try:
        with open("/proc/driver/nvidia/version") as fh:
            found = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", fh.read())
        return found.group(1) if found else None
    except OSError:
        return None


# --- which step of the loader put that libcuda first (DOMAIN.md: LD_PRELOAD, LD_LIBRARY_PATH, the ld cache, the
# default directories), each asked of the host: the process's own environment, /etc/ld.so.preload, `ldconfig -p`
# and the /etc/ld.so.conf file naming the directory, the startup file:line from fleet's trace of the shells.

def _same(path, real):
    return bool(path) and os.path.realpath(path) == real


def ld_conf_lines(path="/etc/ld.so.conf", depth=0):
    """[(file, line, directory)] in ldconfig's order: /etc/ld.so.conf and what it includes (globs, sorted)."""
    out = []
    try:
        with open(path) as fh:
            text = fh.read().splitlines()
    except OSError:
        return out
    for n, line in enumerate(text, 1):
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("hwcap "):
            continue
        if line.startswith("include") and depth < 4:
            for pattern in line.split()[1:]:
                pattern = pattern if pattern.startswith("/") else os.path.join(os.path.dirname(path), pattern)
                for name in sorted(glob.glob(pattern)):
                    out += ld_conf_lines(name, depth + 1)
            continue
        for directory in re.split(r"[:,\s]+", line):
            if directory:
                out.append((path, n, directory.rstrip("/") or "/"))
    return out


def ld_cache_entries(text=None):
    """`ldconfig -p`'s libcuda.so.1 entries, in the cache's order: [(flags, path)]."""
    if text is None:
        ldconfig = next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), "ldconfig")
        try:
            text = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            text = ""
    return re.findall(r"^\s*libcuda\.so\.1 \(([^)]*)\) => (\S+)", text, re.M)


_TRACE = {}


def shell_trace():
    """fleet.facts.shells' trace of the startup files (its command, handed over by the verify resource in
    FLEET_VERIFY_TRACE), run once, only when a failure needs it -> {kind: {"changes": [...], "etc": [...]}}."""
    if "parsed" in _TRACE:
        return _TRACE["parsed"]
    command, text = os.environ.get("FLEET_VERIFY_TRACE"), ""
    if command:
        try:
            text = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120,
                                  stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"}).stdout
        except (OSError, subprocess.TimeoutExpired):
            text = ""
    _TRACE["parsed"] = parse_trace(text)
    return _TRACE["parsed"]


def parse_trace(text):
    """The lines of fleet.facts.shells.command() this needs, read by the rules its parse() reads them by
    (loader_rules: parse_etcenv, parse_change) -> {"etc": [/etc/environment rows], KIND: [changes]}."""
    out, kind = {"etc": []}, None
    for raw in text.splitlines():
        if raw.startswith("@@etcenv "):
            row = rules.parse_etcenv(raw)
            out["etc"].append(row)
            out.setdefault("etc_vars", []).append({"name": row["name"], "line": row["line"]})
        elif raw.startswith("@@shell "):
            kind = raw[8:].strip()
            out[kind] = []
            out.setdefault("env", {})[kind] = {"values": {}, "set": {}, "commands": {}, "pythons": {}}
        elif raw.startswith("@@set\t") and kind:
            index, depth, file, line, cmd, via = (raw.split("\t") + [""] * 7)[1:7]
            if index.isdigit() and 1 <= int(index) <= len(TRACKED):
                out["env"][kind]["set"][TRACKED[int(index) - 1]] = {
                    "file": file, "line": int(line) if line.isdigit() else None, "via": [v for v in via.split(">") if v]}
        elif raw.startswith("@@value ") and kind:
            name, _, value = raw[8:].partition("=")
            out["env"][kind]["values"][name] = value
        elif raw.startswith("@@cmd ") and kind:
            name, path, real, extra = (raw[6:].split("\t") + [""] * 4)[:4]
            out["env"][kind]["commands"][name] = {"path": path or None, "real": real or None, "extra": extra or None}
        elif raw.startswith("@@py ") and kind:
            exe, _, answer = raw[5:].partition("\t")
            prefix, torch, managed = (answer.strip().split("\t") + ["", "", ""])[:3]
            out["env"][kind]["pythons"][exe] = {"prefix": prefix or None, "torch": None if torch in ("", "-") else torch,
                                                "externally_managed": managed == "1"}
        elif raw.startswith("@@change\t") and kind:
            out[kind].append(rules.parse_change(raw))
    return out


def startup_line(kind, directory, trace=None):
    """The startup file:line that left `directory` where it is on this kind's LD_LIBRARY_PATH (the rule the facts
    name it by: loader_rules.startup_line), else the /etc/environment line (not for a bare process)."""
    trace = shell_trace() if trace is None else trace
    found = rules.startup_line(trace.get(TRACED.get(kind), []), directory, os.environ.get("HOME") or "")
    if found is None and kind != "bare":
        found = rules.etc_environment_line(trace.get("etc"), directory)
    return found


def loader_step(r, kind, trace=None, cache=None, conf=None, preload_file="/etc/ld.so.preload"):
    """Which step of the loader gave this process its libcuda.so.1: {"mechanism", "says", "fix"}; None when
    nothing was loaded. The loader's order: LD_PRELOAD, /etc/ld.so.preload, LD_LIBRARY_PATH, the ld cache, the
    default directories (DOMAIN.md, forward compatibility)."""
    lib = r.get("libcuda")
    if not lib:
        return None
    real = r.get("libcuda_real") or os.path.realpath(lib)
    for entry in re.split(r"[:\s]+", r.get("ld_preload") or ""):
        if entry and (_same(entry, real) or "libcuda" in os.path.basename(entry)):
            return {"mechanism": "LD_PRELOAD", "says": f"LD_PRELOAD={r['ld_preload']} preloads {entry}",
                    "fix": f"unset LD_PRELOAD (or take {entry} out of it) where this kind of process gets it"}
    try:
        with open(preload_file) as fh:
            lines = fh.read().splitlines()
    except OSError:
        lines = []
    for n, line in enumerate(lines, 1):
        for entry in line.split("#", 1)[0].split():
            if _same(entry, real) or "libcuda" in os.path.basename(entry):
                return {"mechanism": "ld.so.preload", "says": f"{preload_file}:{n} preloads {entry}",
                        "fix": PRELOAD_FIX.format(entry=entry, file=preload_file)}
    for directory in rules.dirs(r.get("ld_library_path")):
        candidate = os.path.join(directory, "libcuda.so.1")
        if os.path.exists(candidate):
            if not _same(candidate, real):
                break   # the first directory holding libcuda.so.1 is the one the loader takes
            where = startup_line(kind, directory, trace) if kind in TRACED else None
            says = (f"{where} puts {directory} first on LD_LIBRARY_PATH" if where else
                    f"LD_LIBRARY_PATH={r['ld_library_path']} puts {directory} first (no startup file of this "
                    "kind sets it: the process's parent does, e.g. a container's ENV or a service's Environment=)")
            return {"mechanism": "LD_LIBRARY_PATH", "where": where, "directory": directory, "says": says,
                    "fix": STARTUP_FIX.format(d=directory) if where else
                    f"take {directory} off LD_LIBRARY_PATH where this kind of process is started"}
    entries = ld_cache_entries() if cache is None else cache
    entry = next((p for _flags, p in entries if _same(p, real)), None)
    if entry:
        directory = os.path.dirname(entry)
        rows = [{"file": f, "line": n, "dir": d} for f, n, d in (ld_conf_lines() if conf is None else conf)]
        named = rules.conf_row(rows, directory)
        if named:
            return {"mechanism": "ld cache", "conf": named["file"], "directory": directory,
                    "says": f"{named['file']}:{named['line']} puts {directory} in the ld cache (ldconfig -p: "
                            f"libcuda.so.1 => {entry})", "fix": FLEET_COMPAT_FIX if named["file"] == FLEET_COMPAT_CONF
                    else LD_CACHE_FIX.format(conf=named["file"])}
        return {"mechanism": "ld cache", "directory": directory,
                "says": f"the ld cache (/etc/ld.so.cache) lists libcuda.so.1 => {entry}, and no /etc/ld.so.conf "
                        "file names its directory any more", "fix": "run ldconfig"}
    return {"mechanism": "default", "says": f"{lib} is in none of LD_PRELOAD, /etc/ld.so.preload, LD_LIBRARY_PATH "
                                           "and the ld cache: the loader's default directories or the program's RPATH",
            "fix": None}


def explain(r, step=None):
    """A failed CUDA start in words: the driver API's code and name, the libcuda loaded, the cause, the step of
    the loader that put it first (loader_step) and the fix of that step."""
    if r.get("load_error"):
        return (f"libcuda.so.1 could not be loaded ({r['load_error']}): the driver's user-space library is not on "
                "the loader path; fix: install the NVIDIA driver's libraries (or run the container with --gpus)")
    code, lib = r.get("code"), r.get("libcuda") or "libcuda.so.1"
    real, ver = r.get("libcuda_real") or lib, r.get("libcuda_version")
    head = f"CUDA error {code} {r.get('name') or ''} ({r.get('text') or 'no text'}) from {real}"
    kd = kernel_driver()
    compat = "/compat/" in real or "/compat/" in lib
    stub = r.get("stub") or code == 34
    where = os.path.dirname(lib)
    put = f"; loaded because {step['says']}" if step and step.get("mechanism") != "default" else ""
    by_step = step.get("fix") if step and step.get("mechanism") != "default" else None
    anyway = (f"find what puts {where} first (LD_PRELOAD, /etc/ld.so.preload, LD_LIBRARY_PATH, the ld cache) and "
              "take it out")
    if code == 803 and compat:
        cause = (f"the cuda-compat libcuda {ver} was loaded over kernel driver {kd}; compat works only from an older "
                 "kernel driver (NVIDIA forward compatibility guide)")
        fix = by_step or anyway
    elif code == 803:
        cause = (f"the user-space driver library {ver} does not match the loaded kernel module {kd}: the driver was "
                 "upgraded without a reboot")
        fix = "reboot, or reload the nvidia kernel modules (rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia; modprobe nvidia)"
    elif code == 802 and any(os.path.exists(m) for m in ("/.dockerenv", "/run/.containerenv")):
        # a container: its GPUs' fabric is set up by the provider's host (NVIDIA Fabric Manager User Guide)
        cause = (f"the NVSwitch fabric is not up (kernel driver {kd}) and this is a container: the fabric manager "
                 "runs on the provider's host, not in this pod")
        fix = "the provider's: ask them, or restart the pod on a healthy host (nothing in the pod can set it up)"
    elif code == 802:   # cudaErrorSystemNotReady / CUDA_ERROR_SYSTEM_NOT_READY (NVIDIA Fabric Manager User Guide)
        cause = (f"the NVSwitch fabric is not up (kernel driver {kd}): the fabric manager is missing, stopped, or not "
                 "the driver's exact version")
        fix = "apply role fabric_manager (nvidia-fabricmanager at the driver's version, service running)"
    elif code == 804:
        cause = "forward compatibility (cuda-compat) was attempted on a GPU that does not support it"
        fix = by_step or anyway
    elif stub:
        head = f"CUDA error {code} {r.get('name') or ''} ({r.get('text') or 'no text'}) from the stub {real}"
        cause = "a stub libcuda (the toolkit's link-time stand-in, lib64/stubs) was loaded instead of the driver's"
        fix = by_step or anyway
    elif code == 35:
        cause = f"the driver (libcuda {ver}, kernel {kd}) is older than this CUDA runtime needs"
        fix = "on a data-center GPU let fleet put cuda-compat first (role cuda_compat); else upgrade the driver"
    elif code == 999:
        cause = "CUDA_ERROR_UNKNOWN: usually nvidia_uvm is not loaded, or the GPU is in a bad state (Xid in dmesg)"
        fix = "modprobe nvidia_uvm; if that does not help, reboot"
    elif code == 100 and r.get("visible_devices") is not None:
        # visibility, not the loader: the libcuda is the right one and the driver hides every GPU from it
        where = variable_line(r.get("kind"), "CUDA_VISIBLE_DEVICES")
        n = host_gpu_count()
        return (f"{head}: CUDA_VISIBLE_DEVICES={r['visible_devices']!r} leaves none of the host's "
                f"{n if n is not None else '?'} GPU(s) visible (empty: none; the list stops at its first entry that "
                f"names no GPU here), set at {where}; fix: correct or remove CUDA_VISIBLE_DEVICES at {where} (fleet "
                "leaves it to you: a deliberate partition looks the same)")
    elif code == 100:
        n = host_gpu_count()
        cause = ("no CUDA device is visible to this process, and CUDA_VISIBLE_DEVICES is not set: "
                 + (f"the kernel driver lists {n} GPU(s) (nvidia-smi)" if n else "nvidia-smi lists no GPU either"))
        fix = "check that the container was started with GPUs (--gpus all) and the device nodes (/dev/nvidia*)"
        put = ""
    elif code == 46:
        cause = "every GPU is in exclusive-process mode and taken"
        fix = "wait for the other process, or nvidia-smi -c DEFAULT"
    elif code == 0 and "torch_available" in r:
        why = r.get("torch_error") or r.get("torch_warning") or "torch.cuda.is_available() is False"
        return f"cuInit succeeded through {real}, but torch says: {why}"
    elif code == 0 and not r.get("devices"):
        return f"cuInit succeeded through {real}, but no CUDA device is visible to this process"
    elif code == 0:
        need = r.get("need") or 0
        return (f"cuInit succeeded through {real}, but its driver API {r.get('driver_api')} (libcuda {ver}) is "
                f"older than the wheel's CUDA {need // 1000}.{need % 1000 // 10} needs: this kind of process does not "
                "get cuda-compat; fix: on a data-center GPU compat must reach it too (the ld cache, an "
                "/etc/ld.so.conf.d drop-in re-checked at every start), else upgrade the driver")
    else:
        cause, fix = "an error fleet has no rule for", "see the CUDA driver API reference for this code"
    return f"{head}: {cause}{put}; fix: {fix}"


def fresh_env():
    """The environment sshd and PAM give a new session (as the facts' shells section builds it)."""
    env = {"HOME": os.environ.get("HOME", "/root"), "TERM": "dumb", "SHELL": "/bin/bash",
           "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
    for key in ("USER", "LOGNAME", "SSH_CLIENT", "SSH_CONNECTION", "FLEET_REMOTE"):   # FLEET_REMOTE: fleet.shell
        if key in os.environ:
            env[key] = os.environ[key]
    try:
        for line in open("/etc/environment"):
            line = line.strip().removeprefix("export ")
            key, eq, value = line.partition("=")
            if eq and re.fullmatch(r"[A-Za-z_]\w*", key):
                env[key] = value.strip().strip('"').strip("'")
    except OSError:
        pass
    return env


def kind_command(kind, need):
    """argv and environment that start this program's CUDA probe (`python PROGRAM --cuda-probe NEED`) as this kind
    of process starts."""
    if kind == "bare":
        return (["env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"HOME={os.environ.get('HOME', '/root')}",
                 sys.executable, PROGRAM, "--cuda-probe", str(need)], None)
    flags = ["+m", "-i"] if kind == "interactive" else ["-l"]
    return (["bash", *flags, "-c", 'exec "$0" "$1" --cuda-probe "$2"', sys.executable, PROGRAM, str(need)],
            fresh_env())


def other_kinds(need):
    """The probe in bare, interactive and login processes at once -> {kind: report}."""
    procs, out = {}, {}
    if not PROGRAM:
        return {kind: {"run_error": "the verify program was not run from a file"} for kind in ("bare", "interactive", "login")}
    for kind in ("bare", "interactive", "login"):
        argv, env = kind_command(kind, int(need))
        try:
            procs[kind] = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as exc:
            out[kind] = {"run_error": f"{type(exc).__name__}: {exc}"}
    for kind, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=120)   # a startup file that waits (for a terminal, a prompt)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, 9)   # its own session (start_new_session): the shell and what it started
            except OSError:
                proc.kill()
            stdout, stderr = proc.communicate()
            out[kind] = {"run_error": "no answer in 120 s (does a startup file of this kind wait for something?): "
                                      + (stderr or stdout or "").strip()[-200:]}
            continue
        answer = next((line for line in reversed(stdout.splitlines()) if line.startswith("@@fleet-cuda ")), None)
        out[kind] = (json.loads(answer[len("@@fleet-cuda "):]) if answer else
                     {"run_error": f"no answer (exit {proc.returncode}): {(stderr or stdout).strip()[-300:]}"})
    return out


_GPUS = {}


def host_gpu_count():
    """The GPUs the kernel driver has (nvidia-smi: it ignores CUDA_VISIBLE_DEVICES), once; None when unknown."""
    if "n" not in _GPUS:
        rows = smi("--query-gpu=index")
        _GPUS["n"] = len(rows) if rows is not None else None
    return _GPUS["n"]


def variable_line(kind, name):
    """The startup file:line that last set `name` in this kind (the trace), as a person edits it."""
    if kind == "bare":
        return "the environment of processes that read no startup file (a service's Environment=, a container's ENV)"
    env = (shell_trace().get("env") or {}).get(TRACED.get(kind), {})
    setter = env.get("set", {}).get(name)
    if not setter:
        etc = [e for e in shell_trace().get("etc_vars", []) if e["name"] == name]
        return (f"/etc/environment:{etc[-1]['line']}" if etc else
                "no startup file of this kind (the process's parent: sshd's SetEnv/AcceptEnv, a container's ENV)")
    home = os.environ.get("HOME") or ""
    origin = rules.tilde(f"{setter['file']}:{setter['line']}", home)
    return f"{origin} (read from {rules.tilde(setter['via'][0], home)})" if setter.get("via") else origin


def hidden_gpus(kind, r):
    """A kind whose CUDA comes up but sees fewer of the host's GPUs than it has, because of CUDA_VISIBLE_DEVICES:
    the sentence naming it; None where it sees them all (or the count is unknown)."""
    n, seen = host_gpu_count(), r.get("devices")
    if r.get("visible_devices") is None or n is None or seen is None or seen >= n:
        return None
    where = variable_line(kind, "CUDA_VISIBLE_DEVICES")
    return (f"sees {seen} of the host's {n} GPUs: CUDA_VISIBLE_DEVICES={r['visible_devices']!r} set at {where}; fix: "
            f"correct or remove it there (fleet leaves CUDA_VISIBLE_DEVICES to you)")


def user_commands(ctx):
    """What the user types in each kind of shell reaches what this verify proves (issue 35): python3, python and
    pip are the venv's and find this torch (where venv_first), nvcc and CUDA_HOME are the decided toolkit's; from
    fleet.facts.shells' trace of each kind (the commands resolved there, each python asked where torch is)."""
    if not (VENV_FIRST or TOOLKIT) or not os.environ.get("FLEET_VERIFY_TRACE"):
        return None
    torch_dir = os.path.dirname(ctx["torch"].__file__) if ctx.get("torch") is not None else None
    env_of = shell_trace().get("env") or {}
    OUT["commands"] = {}
    for kind in ("ssh", "interactive", "login"):
        env = env_of.get(TRACED[kind])
        if env is None:
            check(f"user_commands_{kind}", False, f"{KINDS[kind]}: the startup files' trace gave no answer")
            continue
        wrong, cmds, values = [], env["commands"], env["values"]
        where_path = variable_line(kind, "PATH")
        if VENV_FIRST:
            for name in ("python3", "python"):
                got = cmds.get(name) or {}
                found = (env["pythons"].get(got.get("path") or "") or {}).get("torch")
                if not got.get("path") or found != torch_dir:
                    wrong.append(f"`{name}` is {got.get('path') or 'not found'}"
                                 + (f" (its torch: {found or 'none'}, not {torch_dir})" if got.get("path") else ""))
            pip, venv_bin = cmds.get("pip") or {}, os.path.dirname(sys.executable)
            if importlib.util.find_spec("pip") is None:
                wrong.append(f"`pip` is {pip.get('path') or 'not found'}: the venv has no pip module (made without it, "
                             f"as uv makes them); run {sys.executable} -m ensurepip --default-pip")
            elif not os.path.exists(os.path.join(venv_bin, "pip")):
                wrong.append(f"`pip` is {pip.get('path') or 'not found'}: the venv has pip's module but no {venv_bin}/pip "
                             f"(fleet apply writes it: the env_hooks role)")
            elif not pip.get("path") or not pip["path"].startswith(venv_bin + "/"):
                wrong.append(f"`pip` is {pip.get('path') or 'not found'}, not {venv_bin}/pip")
        if TOOLKIT and os.path.exists(os.path.join(TOOLKIT, "bin", "nvcc")):
            nvcc = cmds.get("nvcc") or {}
            real = nvcc.get("real") or ""
            if not real.startswith(TOOLKIT + "/"):
                wrong.append(f"`nvcc` is {real or 'not found'}" + (f" (CUDA {nvcc['extra']})" if nvcc.get("extra") else "")
                             + f", not {TOOLKIT}/bin/nvcc")
            for name in ("CUDA_HOME", "CUDA_PATH"):
                value = values.get(name)
                if (name == "CUDA_HOME" or value is not None) and (value or "").rstrip("/") != TOOLKIT:
                    wrong.append(f"{name}={value!r} (set at {variable_line(kind, name)}), not {TOOLKIT}")
        OUT["commands"][kind] = {name: (cmds.get(name) or {}).get("path") for name in ("python3", "python", "pip", "nvcc")}
        detail = (f"{KINDS[kind]}: " + "; ".join(wrong) + f" (PATH last set at {where_path}); fix: let fleet's env hook "
                  "run last there (fleet apply), or set env_hooks_venv_on_path") if wrong else \
            f"{KINDS[kind]}: python3, pip and nvcc reach this venv's torch and {TOOLKIT or 'the system'}'s toolkit"
        check(f"user_commands_{kind}", not wrong, detail)
    return None


def judge_kind(kind, r):
    """One kind's entry of OUT["kinds"] and its check: passed, the libcuda (path, version, stub), and on failure
    the step of the loader that put it first and the explanation."""
    passed = r.get("torch_available") if kind == "ssh" else r.get("available")
    r = {**r, "kind": kind}
    entry = {"passed": bool(passed), **{k: r.get(k) for k in (
        "code", "name", "libcuda", "libcuda_real", "libcuda_version", "stub", "driver_api", "devices",
        "ld_library_path", "ld_preload", "run_error", "load_error", "visible_devices") if r.get(k) is not None}}
    fewer = hidden_gpus(kind, r) if passed else None
    if fewer:
        passed = entry["passed"] = False
        entry["explain"] = detail = f"{KINDS[kind]}: {fewer}"
    elif passed:
        detail = f"{KINDS[kind]}: CUDA up through {r.get('libcuda_real')}"
    elif r.get("run_error"):
        detail = f"{KINDS[kind]}: {r['run_error']}"
    else:
        step = loader_step(r, kind)
        entry["step"] = step
        detail = f"{KINDS[kind]}: {explain(r, step)}"
        entry["explain"] = detail
    check(CHECK_NAMES[kind], passed, detail)
    return entry


def need_of(torch_cuda):
    """torch.version.cuda "13.0" -> the driver API version it needs (13000)."""
    found = re.match(r"(\d+)\.(\d+)", str(torch_cuda or ""))
    return int(found.group(1)) * 1000 + int(found.group(2)) * 10 if found else 0


def smi(*args):
    try:
        proc = subprocess.run(["nvidia-smi", *args, "--format=csv,noheader,nounits"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [[part.strip() for part in line.split(",")] for line in proc.stdout.splitlines() if line.strip()]


def busy_look():
    """Before this process touches the GPU: other compute processes, memory in use, utilization."""
    gpus = smi("--query-gpu=index,memory.used,memory.total,utilization.gpu")
    apps = smi("--query-compute-apps=pid,process_name,used_memory")
    if gpus is None:
        return {"known": False}
    used = sum(float(g[1]) for g in gpus if re.fullmatch(r"[\d.]+", g[1]))
    total = sum(float(g[2]) for g in gpus if re.fullmatch(r"[\d.]+", g[2]))
    util = max((float(g[3]) for g in gpus if re.fullmatch(r"[\d.]+", g[3])), default=0.0)
    procs = [a for a in (apps or []) if a and a[0].isdigit() and int(a[0]) != os.getpid()]
    look = {"known": True, "processes": len(procs), "used_mb": used, "total_mb": total, "utilization": util,
            "names": [a[1] for a in procs][:5]}
    reasons = []
    if procs or (total and used > BUSY_SHARE * total) or util > 10:
        n = len(procs)
        reasons.append(f"{n} process{'es' if n != 1 else ''}, {used / 1024:.0f} GB in use"
                       + (f", {util:.0f} % busy" if util > 10 else ""))
    look["busy"] = reasons[0] if reasons else None
    return look


def missing_libraries():
    """ldd over every shared object of the torch package: all undeclared dependencies at once."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return None
    root = os.path.dirname(spec.origin)
    missing = set()
    for so in glob.glob(os.path.join(root, "*.so*")) + glob.glob(os.path.join(root, "lib", "*.so*")):
        try:
            out = subprocess.run(["ldd", so], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        missing.update(m.group(1) for m in re.finditer(r"^\s*(\S+) => not found", out, re.M))
    return sorted(missing)


def arch_covers(arch_list, cap):
    major, minor = cap
    for arch in arch_list:
        m = re.match(r"(sm|compute)_(\d+)(\d)a?$", arch)
        if not m:
            continue
        a_major, a_minor = int(m.group(2)), int(m.group(3))
        if m.group(1) == "sm" and a_major == major and a_minor <= minor:
            return True, arch
        if m.group(1) == "compute" and (a_major, a_minor) <= (major, minor):
            return True, arch + " (PTX, JIT)"
    return False, None


def every_gpu(torch):
    """Every GPU, not GPU 0 alone: its architecture in the wheel and a matmul against the CPU."""
    arch_list = list(torch.cuda.get_arch_list())
    OUT["torch"]["arch_list"] = arch_list
    x, y = torch.randn(64, 32), torch.randn(32, 16)
    want = x @ y
    bad_arch, bad_math = [], []
    for i in range(torch.cuda.device_count()):
        cap = tuple(torch.cuda.get_device_capability(i))
        name = torch.cuda.get_device_name(i)
        ok, via = arch_covers(arch_list, cap)
        got = (x.to(f"cuda:{i}") @ y.to(f"cuda:{i}")).cpu()
        good = bool(torch.allclose(got, want, rtol=1e-3, atol=1e-3))
        OUT["gpus"].append({"index": i, "name": name, "capability": f"{cap[0]}.{cap[1]}", "runs": via,
                            "matmul_ok": good})
        if not ok:
            bad_arch.append(f"GPU {i} {name} is sm_{cap[0]}{cap[1]}")
        if not good:
            bad_math.append(f"GPU {i} {name}")
    gpus = OUT["gpus"]
    first = gpus[0]
    OUT["torch"].update(capability=first["capability"], device=first["name"])
    differ = [g for g in gpus if (g["name"], g["capability"]) != (first["name"], first["capability"])]
    label = f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}: {first['name']} ({first['capability']})"
    if differ:
        label += "; differ from GPU 0: " + ", ".join(f"GPU {g['index']} {g['name']} ({g['capability']})" for g in differ)
    check("wheel_supports_gpu", not bad_arch, f"{label}; runs {first['runs']}" if not bad_arch else
          "; ".join(bad_arch) + f": the wheel carries {' '.join(arch_list)}")
    check("matmul_matches_cpu", not bad_math, f"64x32 @ 32x16 on each of {len(gpus)} GPU(s) vs the CPU"
          if not bad_math else "wrong result on " + ", ".join(bad_math))


def timed(torch, fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def mig_share(name):
    """A MIG slice 'MIG 3g.40gb' has 3 of the GPU's 7 compute slices (NVIDIA MIG user guide, supported
    profiles on A100/H100): its peak and floors are that share of the whole GPU's."""
    found = re.search(r"MIG (\d+)g\.\d+gb", name)
    return int(found.group(1)) / 7 if found else 1.0


def perf(torch, name):
    """bf16 matmul and causal attention, sized to MEMORY_SHARE of the free memory (the standard case fits
    in 10 % of an idle 80 GB H100), judged against the floor and the peak, scaled for a MIG slice."""
    row = next((dict(r) for r in TABLE if r["match"] in name), None)
    share = mig_share(name)
    if row and share < 1:
        row = {k: (v * share if k != "match" else v) for k, v in row.items()}
    free, _total = torch.cuda.mem_get_info()
    budget = MEMORY_SHARE * free
    n = min(8192, int((budget / 6) ** 0.5) // 256 * 256)          # three bf16 n*n tensors
    B, H, S, D = 16, 96, 4096, 128
    B = min(B, int(budget // (4 * H * S * D * 2)))                 # q, k, v, out in fp16
    if n < 1024 or B < 1:
        OUT["perf"] = {"skipped": f"perf skipped: {free / 2**30:.0f} GB free is too little for a fair test"}
        check("perf", True, OUT["perf"]["skipped"])
        return
    full = n == 8192 and B == 16
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t_mm = timed(torch, lambda: a @ b, 20)
    mm_tflops = 2 * n ** 3 / t_mm / 1e12
    del a, b
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    t_at = timed(torch, lambda: sdpa(q, k, v, is_causal=True), 10)
    del q, k, v
    flops = 4 * B * H * S * S * D / 2  # causal: half the score matrix is masked out (flash-attention benchmarks)
    at_tflops = flops / t_at / 1e12
    OUT["perf"] = {"gpu": name, "matmul_bf16_n": n, "matmul_ms": round(t_mm * 1e3, 3), "matmul_tflops": round(mm_tflops, 1),
                   "attention_case": f"B={B} H={H} S={S} D={D} fp16 causal", "attention_flops": flops,
                   "attention_ms": round(t_at * 1e3, 3), "attention_tflops": round(at_tflops, 1),
                   "peak_tflops": row and row["peak"], "matmul_floor": row and row["matmul_floor"],
                   "attention_floor": row and row["attention_floor"], "mig_share": round(share, 3),
                   "free_gb": round(free / 2**30, 1), "full_size": full}
    for what, value in (("matmul", mm_tflops), ("attention", at_tflops)):
        if row and value > row["peak"]:
            check(f"perf_{what}", False, f"{value:.0f} TFLOP/s is above the {name} dense peak of {row['peak']:.0f}: "
                                         "a FLOP-counting error, not a fast GPU")
        elif row and full and value < row[f"{what}_floor"]:
            check(f"perf_{what}", False, f"{value:.0f} TFLOP/s is under the floor of {row[what + '_floor']:.0f} for {name}")
        else:
            check(f"perf_{what}", True, f"{value:.0f} TFLOP/s" + ("" if row else " (no floor known for this GPU)")
                  + ("" if full else " (smaller than the standard case: no floor applied)"))


# ---- GPU health under load (issue 36): clock-event reasons and the PCIe link sampled while every GPU works, and
# the bandwidths a pod sells: device memory, host to device, device to host ----
# nvidia-smi's fields (nvidia-smi --help-query-gpu): an idle link drops its PCIe generation to save power and the
# clocks show their limits only at work, so they are read under load. nvmlClocksEventReasons bits (nvml.h).
LOAD_FIELDS = ("index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
               "clocks_event_reasons.active,clocks.sm,clocks.max.sm,temperature.gpu,power.draw")
EVENT_BITS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
              0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
              0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
LOAD_SECONDS = 2.0        # matmuls on every GPU this long; sampled at 1/3 and 2/3 of it
BANDWIDTH_BYTES = 1 << 30  # at most 1 GiB a copy (pinned host memory, two device buffers), within MEMORY_SHARE


def _number(text):
    return float(text) if re.fullmatch(r"-?\d+(\.\d+)?", text or "") else None


def load_sample(rows):
    """nvidia-smi's LOAD_FIELDS rows -> [{index, gen, gen_max, width, width_max, events, sm_mhz, sm_max_mhz,
    temperature, power_w}]."""
    out = []
    for row in rows or []:
        if len(row) != len(LOAD_FIELDS.split(",")) or not row[0].isdigit():
            continue
        mask = int(row[5], 16) if re.fullmatch(r"0x[0-9a-fA-F]+", row[5]) else 0
        out.append({"index": int(row[0]), "gen": _number(row[1]), "gen_max": _number(row[2]),
                    "width": _number(row[3]), "width_max": _number(row[4]),
                    "events": [name for bit, name in EVENT_BITS.items() if mask & bit],
                    "sm_mhz": _number(row[6]), "sm_max_mhz": _number(row[7]), "temperature": _number(row[8]),
                    "power_w": _number(row[9])})
    return out


def load_summary(samples):
    """Every sample of a GPU folded: its lowest PCIe generation and width under load, every clock-event reason seen
    (idle left out: the GPU was working), the hottest reading. -> [{index, gen, gen_max, width, width_max, events,
    temperature}]"""
    by_gpu = {}
    for sample in samples:
        for g in sample:
            seen = by_gpu.setdefault(g["index"], {"index": g["index"], "gen": g["gen"], "gen_max": g["gen_max"],
                                                  "width": g["width"], "width_max": g["width_max"], "events": [],
                                                  "temperature": g["temperature"], "sm_mhz": g["sm_mhz"]})
            for key in ("gen", "width"):
                if g[key] is not None and (seen[key] is None or g[key] < seen[key]):
                    seen[key] = g[key]
            seen["events"] = sorted(set(seen["events"]) | {e for e in g["events"] if e != "gpu_idle"})
            seen["temperature"] = max(t for t in (seen["temperature"], g["temperature"], -1) if t is not None)
            seen["sm_mhz"] = max(t for t in (seen["sm_mhz"], g["sm_mhz"], -1) if t is not None)
    return [by_gpu[i] for i in sorted(by_gpu)]


def under_load(torch, seconds=LOAD_SECONDS):
    """bf16 matmuls on every GPU for `seconds` (a thread per GPU: torch releases the GIL), nvidia-smi sampled while
    they run. Checks: no hardware or thermal slowdown under load, each link at its maximum generation and width."""
    import threading

    stop = threading.Event()
    batches, errors = {}, {}

    def work(device):
        try:
            a = torch.randn(4096, 4096, device=f"cuda:{device}", dtype=torch.bfloat16)
            b = torch.randn(4096, 4096, device=f"cuda:{device}", dtype=torch.bfloat16)
            while not stop.is_set():
                for _ in range(20):
                    a @ b
                torch.cuda.synchronize(device)
                batches[device] = batches.get(device, 0) + 1
        except Exception as exc:   # the load never reached this GPU: its readings prove nothing
            errors[device] = f"{type(exc).__name__}: {str(exc)[:200]}"

    devices = list(range(torch.cuda.device_count()))
    threads = [threading.Thread(target=work, args=(d,), daemon=True) for d in devices]
    started = time.perf_counter()
    for t in threads:
        t.start()
    samples = []
    for at in (seconds / 3, 2 * seconds / 3):
        time.sleep(max(0.0, started + at - time.perf_counter()))
        samples.append(load_sample(smi("--query-gpu=" + LOAD_FIELDS)))
    loaded = dict(batches)          # what had finished by the last sample
    stop.set()
    for t in threads:               # a batch is milliseconds on a GPU; a thread still inside one is left (daemon)
        t.join(timeout=5)
    summary = load_summary(samples)
    OUT["load"] = {"seconds": round(time.perf_counter() - started, 2), "gpus": summary, "samples": samples,
                   "batches": {str(d): loaded.get(d, 0) for d in devices}}
    idle = [d for d in devices if not loaded.get(d)]
    if errors or idle:
        check("under_load", False, "; ".join(
            [f"GPU {d}: the load did not run ({errors[d]})" for d in sorted(errors)] +
            [f"GPU {d}: no matmul finished in the {seconds:g} s sampled, so its readings are not under load"
             for d in idle if d not in errors]))
        return
    judge_load(summary)


def judge_load(summary):
    if not summary:
        check("under_load", True, "nvidia-smi gave no reading under load: not judged")
        return
    slow = [f"GPU {g['index']}: {', '.join(e for e in g['events'] if e in SLOWDOWNS)}" for g in summary
            if any(e in SLOWDOWNS for e in g["events"])]
    check("clocks_under_load", not slow, "; ".join(slow) + ": hardware or thermal slowdown while working "
          "(cooling or power: the provider's)" if slow else
          "no hardware or thermal slowdown under load (" + ", ".join(
              f"GPU {g['index']} {g['sm_mhz']:.0f} MHz {g['temperature']:.0f} C" for g in summary
              if g["sm_mhz"] is not None and g["temperature"] is not None) + ")")
    down = [f"GPU {g['index']}: Gen{g['gen']:.0f} x{g['width']:.0f} of Gen{g['gen_max']:.0f} x{g['width_max']:.0f}"
            for g in summary if None not in (g["gen"], g["gen_max"], g["width"], g["width_max"])
            and (g["gen"] < g["gen_max"] or g["width"] < g["width_max"])]
    check("pcie_under_load", not down, "; ".join(down) + ": the PCIe link runs below its maximum under load "
          "(the slot, riser or BIOS: the provider's)" if down else "every PCIe link at its maximum under load")


def judge_bandwidth(figures, row):
    """The measured bandwidths against the row's floors (0 or absent: no floor, figures recorded only)."""
    row = row or {}
    for name, value, floor, unit in (
            ("bandwidth_memory", figures["d2d_traffic_gbs"] / 1000, row.get("memory_floor_tbs"), "TB/s"),
            ("bandwidth_h2d", figures["h2d_gbs"], row.get("host_floor_gbs"), "GB/s"),
            ("bandwidth_d2h", figures["d2h_gbs"], row.get("host_floor_gbs"), "GB/s")):
        sheet = row.get("memory_tbs" if unit == "TB/s" else "host_gbs")
        of = f" of the datasheet's {sheet:g} {unit}" if sheet else ""
        if floor and value < floor:
            check(name, False, f"{value:.2f} {unit}{of} is under the floor of {floor:.2f} {unit}"
                  + (": a link trained down or slowed" if unit == "GB/s" else ": memory clocks held down"))
        else:
            check(name, True, f"{value:.2f} {unit}{of}" + ("" if floor else " (no floor known for this GPU)"))


def bandwidth(torch, name):
    """Pinned host-to-device and device-to-host copies, and a device-to-device copy (traffic = read + write), on
    GPU 0, each timed after a warm-up, sized within MEMORY_SHARE of the free memory."""
    row = next((dict(r) for r in TABLE if r["match"] in name), None)
    free, _total = torch.cuda.mem_get_info()
    size = min(BANDWIDTH_BYTES, int(MEMORY_SHARE * free / 2)) // (1 << 20) * (1 << 20)
    if size < (64 << 20):
        OUT["bandwidth"] = {"skipped": f"bandwidth skipped: {free / 2**30:.0f} GB free is too little"}
        check("bandwidth", True, OUT["bandwidth"]["skipped"])
        return
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(size, dtype=torch.uint8, device="cuda")
    h2d = size / timed(torch, lambda: dev.copy_(host, non_blocking=True), 5) / 1e9
    d2h = size / timed(torch, lambda: host.copy_(dev, non_blocking=True), 5) / 1e9
    other = torch.empty_like(dev)
    d2d = size / timed(torch, lambda: other.copy_(dev), 10) / 1e9
    del host, dev, other
    figures = {"gpu": name, "bytes": size, "h2d_gbs": round(h2d, 1), "d2h_gbs": round(d2h, 1),
               "d2d_copy_gbs": round(d2d, 1), "d2d_traffic_gbs": round(2 * d2d, 1),
               "memory_tbs": row and row.get("memory_tbs"), "memory_floor_tbs": row and row.get("memory_floor_tbs"),
               "host_gbs": row and row.get("host_gbs"), "host_floor_gbs": row and row.get("host_floor_gbs")}
    OUT["bandwidth"] = figures
    judge_bandwidth(figures, row)


# ---- several GPUs: the links between them (issue 28) ----
# Bus bandwidth (NCCL's busbw = algbw * 2(n-1)/n for all-reduce: nccl-tests doc/PERFORMANCE.md) a large all-reduce
# should reach over each kind of link, GB/s. NVLink4 (H100 SXM, 18 links, 900 GB/s per GPU both ways: H100 data
# sheet): nccl-tests on 8-GPU HGX H100 report ~450-480 GB/s busbw (NVIDIA's DGX H100 figures); NVLink3 (A100 SXM,
# 600 GB/s both ways) ~230; PCIe Gen5 x16 64 GB/s per direction, ~50 achieved; Gen4 ~25. Judged against half of
# it, so only a lost link (NVLink traffic gone to PCIe), not a slow run, fails.
LINK_BUSBW = {"nvlink4": 450.0, "nvlink3": 230.0, "nvlink": 100.0, "pcie": 25.0}
LINK_FLOOR_SHARE = 0.5
ALLREDUCE_TIMEOUT = 180   # seconds for the whole spawned all-reduce (NCCL init, warm-up, timing)


def allreduce_worker():
    """One rank of the all-reduce (`python PROGRAM --allreduce`, RANK/WORLD_SIZE/FLEET_AR_ELEMS in the environment):
    rank 0 prints `@@fleet-allreduce {bytes, seconds, algbw, busbw, correct}`."""
    import datetime

    import torch
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=120))
    x = torch.ones(int(os.environ["FLEET_AR_ELEMS"]), device="cuda", dtype=torch.float32)
    for _ in range(3):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    iters = 10
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t = (time.perf_counter() - start) / iters
    ok = bool(torch.allclose(x[:8], torch.full((8,), float(world) ** (3 + iters), device="cuda")))
    if rank == 0:
        size = x.numel() * 4
        algbw = size / t / 1e9
        print("@@fleet-allreduce " + json.dumps({"bytes": size, "seconds": t, "algbw": algbw,
                                                 "busbw": algbw * 2 * (world - 1) / world, "correct": ok}))
    dist.destroy_process_group()


def topology():
    """`nvidia-smi topo -m` as the host says it now -> {(i, j): "NV18" | "PIX" | ...} for i < j, or None."""
    try:
        out = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", out)   # the real one underlines its header even into a pipe
    lines = [line for line in out.splitlines() if line.strip()]
    header = next((line for line in lines if re.match(r"^\s+GPU0\b", line)), None)
    if header is None:
        return None
    cols = [i for i, name in enumerate(header.split()) if re.fullmatch(r"GPU\d+", name)]
    pairs = {}
    for line in lines:
        cells = line.split()
        if line is header or not cells or not re.fullmatch(r"GPU\d+", cells[0]):
            continue
        row = int(cells[0][3:])
        for col_index, i in enumerate(cols):
            if i + 1 < len(cells) and col_index > row:
                pairs[(row, col_index)] = cells[i + 1]
    return pairs


def link_kind(name, cells):
    """What the links should give: "nvlink4" (H100/H200/H800 over NVLink), "nvlink3" (A100), "nvlink", or "pcie"."""
    if cells and all(c.startswith("NV") for c in cells):
        if re.search(r"H100|H200|H800|H20\b|GH200", name):
            return "nvlink4"
        return "nvlink3" if "A100" in name else "nvlink"
    return "pcie"


def links(torch, look, allreduce=True):
    """Peer access between every pair the topology links, then an all-reduce over every GPU (NCCL) judged against
    what the topology should give. One GPU: nothing to link."""
    n = torch.cuda.device_count()
    OUT["links"] = {"gpus": n}
    if n <= 1:
        check("gpu_links", True, "one GPU: no links to check")
        return
    topo = topology() or {}
    OUT["links"]["topology"] = {f"{i}-{j}": c for (i, j), c in sorted(topo.items())}
    nv = {p for p, c in topo.items() if c.startswith("NV")}
    no_peer, pcie_on_nv, unexpected = [], [], []
    for i in range(n):
        for j in range(i + 1, n):
            cell = topo.get((i, j))
            if not torch.cuda.can_device_access_peer(i, j):
                if cell is None or cell.startswith("NV") or not nv:
                    no_peer.append(f"GPU {i}-{j} ({cell or 'link unknown'})")
                else:   # a PCIe pair on an NVSwitch board: not expected to peer (nvlink_topology names why)
                    unexpected.append(f"{i}-{j}")
            if nv and cell and not cell.startswith("NV"):
                pcie_on_nv.append((i, j, cell))
    cause = "a GPU off the fabric or the fabric manager not running"
    reached = (f"every pair of {n} GPUs reaches its peer" if not unexpected else
               f"every NVLink pair of {n} GPUs reaches its peer; the {len(unexpected)} PCIe pair(s) "
               f"{', '.join(unexpected[:7])}{' ...' if len(unexpected) > 7 else ''} do not (see nvlink_topology)")
    check("peer_access", not no_peer, reached if not no_peer else
          "no peer access between " + ", ".join(no_peer) + f": {cause}")
    if pcie_on_nv:   # an NVSwitch pod where some pairs are PCIe: the GPU in every such pair left the fabric
        counts = {}
        for i, j, _ in pcie_on_nv:
            counts[i], counts[j] = counts.get(i, 0) + 1, counts.get(j, 0) + 1
        off = sorted(g for g, c in counts.items() if c == n - 1) or sorted(counts)
        check("nvlink_topology", False, f"GPU {', '.join(map(str, off))}: its pairs are PCIe "
              f"({', '.join(f'{i}-{j} {c}' for i, j, c in pcie_on_nv[:6])}) while the others are NVLink: "
              "off the fabric (nvidia-smi -q, Fabric State/Status), its NVLink peers lost")
    if not allreduce:
        return
    if look and look.get("busy"):
        OUT["links"]["allreduce"] = {"skipped": f"all-reduce skipped: {look['busy']}"}
        check("allreduce", True, OUT["links"]["allreduce"]["skipped"])
        return
    name = torch.cuda.get_device_name(0)
    kind = link_kind(name, [topo.get((i, j)) for i in range(n) for j in range(i + 1, n)] if topo else [])
    free = min(torch.cuda.mem_get_info(i)[0] for i in range(n))
    elems = max(1 << 20, min(1 << 28, int(MEMORY_SHARE * free / 4)))   # up to 1 GiB fp32, within the share
    procs, env = [], {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29500 + os.getpid() % 1000),
                      "WORLD_SIZE": str(n), "FLEET_AR_ELEMS": str(elems)}
    for rank in range(n):
        procs.append(subprocess.Popen([sys.executable, PROGRAM, "--allreduce"], env={**env, "RANK": str(rank)},
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    deadline, outs = time.time() + ALLREDUCE_TIMEOUT, []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(1, deadline - time.time()))[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            check("allreduce", False, f"all-reduce over {n} GPUs did not finish in {ALLREDUCE_TIMEOUT} s: {cause}")
            return
    found = re.search(r"^@@fleet-allreduce (.*)$", outs[0] or "", re.M)
    if not found or any(p.returncode for p in procs):
        tail = " ".join((outs[0] or "").strip().splitlines()[-2:])[:300]
        check("allreduce", False, f"all-reduce over {n} GPUs failed: {tail}")
        return
    result = json.loads(found.group(1))
    expect = LINK_BUSBW[kind]
    floor = expect * LINK_FLOOR_SHARE
    result.update(kind=kind, expected_busbw=expect, floor=floor)
    OUT["links"]["allreduce"] = result
    busbw = result["busbw"]
    size = f"{result['bytes'] / 2**20:.0f} MiB"
    if not result["correct"]:
        check("allreduce", False, f"all-reduce of {size} over {n} GPUs gave a wrong sum")
    elif busbw < floor:
        why = ("PCIe-level: NVLink traffic fell back to PCIe (" + cause + ")" if kind.startswith("nvlink")
               else "under what PCIe should give")
        check("allreduce", False, f"all-reduce of {size} over {n} GPUs: bus bandwidth {busbw:.0f} GB/s, under "
              f"{floor:.0f} (half the ~{expect:.0f} {kind} gives): {why}")
    else:
        check("allreduce", True, f"all-reduce of {size} over {n} GPUs: bus bandwidth {busbw:.0f} GB/s "
              f"(~{expect:.0f} expected over {kind})")




# ---- the steps, in order: one function per check (see the module's docstring: adding a check) ----

def libraries(ctx):
    """ldd over torch's shared objects: every missing library at once (before the import, which names one)."""
    ctx["look"] = busy_look() if (PERF and GPU_EXPECTED) else None
    missing = missing_libraries()
    if missing is None:
        check("torch_installed", False, f"no torch in {sys.executable}")
        return STOP
    OUT["missing_libraries"] = missing
    check("libraries_resolve", not missing, "all resolve" if not missing else "not found: " + ", ".join(missing))
    return None


def torch_imports(ctx):
    try:
        import torch
    except Exception as exc:  # the loader's error names the first missing library
        check("torch_imports", False, f"{type(exc).__name__}: {exc}")
        return STOP
    check("torch_imports", True, f"torch {torch.__version__} from {os.path.dirname(torch.__file__)}")
    OUT["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda}
    ctx["torch"] = torch
    return None


def cpu_only(ctx):
    """A platform without an NVIDIA GPU: a small matmul on the CPU against plain Python, and nothing after it."""
    if GPU_EXPECTED:
        return None
    torch = ctx["torch"]
    x, y = torch.randn(64, 32), torch.randn(32, 16)
    a, b, got = x.tolist(), y.tolist(), (x @ y).tolist()
    want = [[sum(a[i][k] * b[k][j] for k in range(32)) for j in range(16)] for i in range(64)]
    ok = all(abs(got[i][j] - want[i][j]) <= 1e-3 + 1e-3 * abs(want[i][j]) for i in range(64) for j in range(16))
    check("cpu_matmul", ok, "no NVIDIA GPU on this host: CUDA checks skipped; 64x32 @ 32x16 on the CPU "
          "matches plain Python")
    return STOP


def cuda_kinds(ctx):
    """CUDA in every kind of process: here (with torch) and in a bare, an interactive and a login process."""
    torch = ctx["torch"]
    here = cuda_report()
    others = other_kinds(need_of(torch.version.cuda))
    OUT["cuda"] = {"noninteractive": here, "interactive": others["interactive"]}   # as before; every kind: "kinds"
    OUT["kinds"] = {kind: judge_kind(kind, here if kind == "ssh" else others[kind]) for kind in KINDS}
    return None if here.get("torch_available") else STOP


def gpus(ctx):
    every_gpu(ctx["torch"])


def gpu_links(ctx):
    links(ctx["torch"], ctx.get("look"), allreduce=PERF)   # like perf, the all-reduce never runs in --check


def perf_smoke(ctx):
    if not PERF:
        return STOP
    look = ctx.get("look")
    if look and look.get("busy"):
        OUT["perf"] = {"skipped": f"perf skipped: {look['busy']}", "look": look}
        check("perf", True, OUT["perf"]["skipped"])
        return STOP
    torch = ctx["torch"]
    for name, step in (("perf", perf), ("bandwidth", bandwidth), ("under_load", under_load)):
        try:
            step(torch, torch.cuda.get_device_name(0)) if step is not under_load else step(torch)
        except Exception as exc:
            check(name, False, f"{type(exc).__name__}: {exc}")
    return None


# The checks, in the order they run. Add yours where it belongs (see the docstring).
STEPS = [libraries, torch_imports, cpu_only, cuda_kinds, user_commands, gpus, gpu_links, perf_smoke]


def run(config):
    """Every step with this config -> OUT (with "passed", "checks", "python"). Never raises."""
    configure(config)
    ctx = {}
    try:
        for step in STEPS:
            if step(ctx) is STOP:
                break
    except Exception as exc:
        check("verify_ran", False, f"{type(exc).__name__}: {exc}")
    OUT.update(passed=bool(CHECKS) and all(c["passed"] for c in CHECKS), checks=CHECKS, python=sys.executable)
    return OUT


def main(argv):
    if argv[:1] == ["--cuda-probe"]:
        print("@@fleet-cuda " + json.dumps(cuda_report(False, int(argv[1]) if len(argv) > 1 else 0)))
        return 0
    if argv[:1] == ["--allreduce"]:
        allreduce_worker()
        return 0
    try:
        config = json.loads(argv[0]) if argv else {}
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        print(json.dumps({"passed": False, "checks": [{"name": "verify_ran", "passed": False,
                                                       "detail": f"bad config {argv[0][:200]!r}: {exc}"}]}))
        return 1
    out = run(config)
    print(json.dumps(out))
    return 0 if out["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
