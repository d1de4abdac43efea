"""Which step of the loader put a process's libcuda.so.1 first (DOMAIN.md: LD_PRELOAD, /etc/ld.so.preload,
LD_LIBRARY_PATH, the ld cache, the default directories), each asked of the host: the process's own environment,
/etc/ld.so.preload, `ldconfig -p` and the /etc/ld.so.conf file naming the directory, and the startup file:line from
fleet's trace of the shells (Run.shell_trace), named by the facts' own rules (fleet/remote/loader_rules.py)."""

import glob
import os
import re
import subprocess

from .. import loader_rules as rules

# The kinds of process verify starts, by the trace's name for each (fleet/remote/trace.py KINDS); a bare process
# reads no startup file, so no trace names its lines.
TRACED = {"ssh": "noninteractive", "interactive": "interactive", "login": "login"}
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


def startup_line(run, kind, directory, trace=None):
    """The startup file:line that left `directory` where it is on this kind's LD_LIBRARY_PATH (the rule the facts
    name it by: loader_rules.startup_line), else the /etc/environment line (not for a bare process)."""
    trace = run.shell_trace() if trace is None else trace
    changes = (trace.get(TRACED.get(kind)) or {}).get("ld_changes")
    found = rules.startup_line(changes, directory, os.environ.get("HOME") or "")
    if found is None and kind != "bare":
        found = rules.etc_environment_line(trace.get("etc_environment"), directory)
    return found


def variable_line(run, kind, name):
    """The startup file:line that last set `name` in this kind (the trace), as a person edits it."""
    if kind == "bare":
        return "the environment of processes that read no startup file (a service's Environment=, a container's ENV)"
    trace = run.shell_trace()
    setter = ((trace.get(TRACED.get(kind)) or {}).get("set_by") or {}).get(name)
    if not setter:
        etc = [e for e in trace.get("etc_environment") or [] if e["name"] == name]
        return (f"{etc[-1]['file']}:{etc[-1]['line']}" + ("" if etc[-1]["file"] in ("/etc/environment",
                "/etc/security/pam_env.conf") or etc[-1]["file"].endswith("/.ssh/environment") else " (SetEnv)")
                if etc else
                "no startup file of this kind (the process's parent: sshd's SetEnv/AcceptEnv, a container's ENV)")
    home = os.environ.get("HOME") or ""
    origin = rules.tilde(f"{setter['file']}:{setter['line']}", home)
    return f"{origin} (read from {rules.tilde(setter['via'][0], home)})" if setter.get("via") else origin


def loader_step(run, r, kind, trace=None, cache=None, conf=None, preload_file="/etc/ld.so.preload"):
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
            where = startup_line(run, kind, directory, trace) if kind in TRACED else None
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
