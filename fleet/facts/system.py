"""System facts: each is a shell command (run inside one probe section) and a pure parser of its output.

Parsers raise ValueError when the text is not what the command prints; the probe records that and goes on.
"""

from __future__ import annotations

import re
import shlex

from fleet import remote

# ---- uname ------------------------------------------------------------------------------------------

UNAME = "uname -a; uname -m"


def parse_uname(text: str) -> dict:
    """`uname -a; uname -m` -> hostname, kernel, arch.

    uname -a's kernel-version field holds spaces, so the machine comes from the separate `uname -m` line.
        Linux vm 6.18.44-fc-v657-gpu #1 SMP PREEMPT_DYNAMIC @0 x86_64 x86_64 x86_64 GNU/Linux
        x86_64
      -> {"hostname": "vm", "kernel": "6.18.44-fc-v657-gpu", "arch": "x86_64"}
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if (len(lines) != 2 or len(lines[0].split()) < 3 or not re.fullmatch(r"[A-Za-z0-9_]+", lines[1])
            or not lines[0].split()[2][:1].isdigit()):
        raise ValueError("expected `uname -a` then `uname -m`")
    fields = lines[0].split()
    if max(len(fields[1]), len(fields[2]), len(lines[1])) > _UTS_FIELD:
        raise ValueError(f"a uname field longer than the kernel's {_UTS_FIELD} characters: not what uname prints")
    return {"hostname": fields[1], "kernel": fields[2], "arch": lines[-1]}


_UTS_FIELD = 64   # struct utsname's fields are 65 bytes with the NUL (__NEW_UTS_LEN, include/uapi/linux/utsname.h)


# ---- os-release -------------------------------------------------------------------------------------

OS_RELEASE = "cat /etc/os-release 2>/dev/null || cat /usr/lib/os-release"


_OS_RELEASE_VALUE = 256   # os-release(5) names no limit; every distribution's longest value is under 100
_OS_RELEASE_KEYS = 64     # os-release(5) defines about 30 keys
# A value shlex.split (POSIX) reads as one word, its text as it is between the quotes: double-quoted without a
# backslash (the one character escaping there), single-quoted, or bare without a quote, backslash or whitespace
_PLAIN_WORD = re.compile(r'"([^"\\]*)"|\'([^\']*)\'|([^\s"\'\\]*)')


def parse_os_release(text: str) -> dict:
    """os-release(5) KEY=value lines (shell quoting) -> {"ID": "ubuntu", "VERSION_ID": "24.04", ...}.

    A value is kept to its first 256 characters and the file to its first 64 keys (issue 49: a pod's 24 KB
    PRETTY_NAME is noise, not a name)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, raw = line.partition("=")
        if len(values) >= _OS_RELEASE_KEYS and key not in values:
            continue
        raw = raw[:_OS_RELEASE_VALUE + 2]   # its quotes
        plain = _PLAIN_WORD.fullmatch(raw)
        if plain:   # what shlex.split reads as this one word, without its ~25 calls a character
            values[key] = next(word for word in plain.groups() if word is not None)[:_OS_RELEASE_VALUE]
            continue
        try:
            words = shlex.split(raw)
        except ValueError:
            words = [raw.strip("\"'")]
        values[key] = " ".join(words)[:_OS_RELEASE_VALUE]
    if "ID" not in values:
        raise ValueError("no ID= line: not an os-release file")
    return values


# ---- CPUs and memory --------------------------------------------------------------------------------

CPU = (
    "printf 'nproc %s\\n' \"$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)\"\n"
    "while IFS= read -r l; do [[ ${l,,} =~ ^(model\\ name|cpu\\ model)[[:space:]]*: ]] && { printf '%s\\n' \"$l\"; break; }; "
    "done < /proc/cpuinfo"   # grep -m1 -iE's line, read by bash: no process
)


def parse_cpu(text: str) -> dict:
    """`nproc` and /proc/cpuinfo's model line -> {"cpus": 16, "cpu_model": "AMD EPYC 9654 ..." | None}.

        nproc 16
        model name	: AMD EPYC 9654 96-Core Processor
    """
    match = re.search(r"^nproc (\d+)\s*$", text, re.M)
    if not match:
        raise ValueError("no CPU count from nproc")
    # `[ \t]*+` and a strip, not `(.+?)\s*$`: a lazy group before trailing spaces re-reads them at every step
    model = re.search(r"^(?:model name|cpu model)[ \t]*+:[ \t]*+(.*)$", text, re.M | re.I)
    return {"cpus": int(match[1]), "cpu_model": model[1].strip()[:_CPU_MODEL] or None if model else None}


_CPU_MODEL = 256   # the x86 brand string is 48 bytes; Arm's "cpu model" lines are shorter


MEMINFO = ("while IFS= read -r l; do case $l in MemTotal:*|MemAvailable:*) printf '%s\\n' \"$l\";; esac; "
           "done < /proc/meminfo")   # grep's two lines, read by bash: no process


def parse_meminfo(text: str) -> dict:
    """/proc/meminfo lines -> MiB.

        MemTotal:       131915848 kB
        MemAvailable:   120001000 kB
      -> {"mem_total_mb": 128824, "mem_available_mb": 117188}
    """
    found = {key: int(kb) // 1024 for key, kb in re.findall(r"^(\w+):\s+(\d+) kB", text, re.M)}
    if "MemTotal" not in found:
        raise ValueError("no MemTotal line")
    return {"mem_total_mb": found["MemTotal"], "mem_available_mb": found.get("MemAvailable")}


# ---- identity: who we are and what kind of machine runs us ------------------------------------------

IDENTITY = remote.program("identity")   # fleet/remote/identity.sh


def parse_identity(text: str) -> dict:
    """`id`, systemd and container markers, /workspace, git -> {"user": "root", "uid": 0, "systemd": False,
    "container": True, "workspace": True, "git": True}.

    Cloud pods are containers with no systemd: roles must not call systemctl there.
    """
    pairs = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
    if "uid" not in pairs or not pairs["uid"].strip().isdigit():
        raise ValueError("no uid from `id -u`")
    return {
        "user": pairs.get("user", "").strip() or None,
        "uid": int(pairs["uid"]),
        "systemd": pairs.get("systemd", "").strip() == "yes",
        "container": pairs.get("container", "").strip() == "yes",
        "workspace": pairs.get("workspace", "").strip() == "yes",
        "git": {"yes": True, "no": False}.get(pairs.get("git", "").strip()),   # None: an older probe's record
    }


# ---- free disk where the roles write ----------------------------------------------------------------

def df_command(dirs: list[str]) -> str:
    """df of each dir, or of its nearest existing ancestor (the venv may not exist yet)."""
    return f"set -- {' '.join(shlex.quote(d) for d in dirs)}\n" + remote.program("df")   # fleet/remote/df.sh


_UNITS = {"K": 1 / 1024 ** 2, "M": 1 / 1024, "G": 1.0, "T": 1024.0, "P": 1024.0 ** 2}


def _size_gib(value: str, *, kib: bool) -> float:
    """"64G" (df -h) or "67108864" (df -Pk, KiB) -> GiB."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTP]?)", value)
    if not match:
        raise ValueError(f"not a df size: {value!r}")
    number, unit = float(match[1]), match[2]
    if unit:
        return number * _UNITS[unit]
    return number / 1024 ** 2 if kib else number / 1024 ** 3


def parse_df_line(line: str) -> dict:
    """One df data line (POSIX -Pk, or -h as captured) -> {"filesystem", "mount", "size_gb", "free_gb"}.

        /dev/vda        252G   17G   64G  21% /
      -> {"filesystem": "/dev/vda", "mount": "/", "size_gb": 252.0, "free_gb": 64.0}
    Sizes are GiB (what df -h calls G).
    """
    fields = line.split()
    if len(fields) < 6 or not fields[4].endswith("%"):
        raise ValueError(f"not a df line: {line!r}")
    kib = fields[1].isdigit()
    return {
        "filesystem": fields[0],
        "mount": " ".join(fields[5:]),
        "size_gb": round(_size_gib(fields[1], kib=kib), 1),
        "free_gb": round(_size_gib(fields[3], kib=kib), 1),
    }


def parse_df(text: str) -> list[dict]:
    """`dir PATH` headers each followed by one df line -> [{"path", "mount", "free_gb", ...}], in order."""
    disks, path = [], None
    for line in text.splitlines():
        if line.startswith("dir "):
            path = line[4:]
        elif line.strip() and path is not None:
            disks.append({"path": path, **parse_df_line(line)})
            path = None
    if not disks:
        raise ValueError("no df output")
    return disks


# ---- what a job takes from the pod: /dev/shm, the session's limits, the container's memory limit ------------------

RESOURCES = remote.program("pod_resources")   # fleet/remote/pod_resources.sh

# cgroup v1 writes "no limit" as the largest page-aligned 64-bit value (9223372036854771712); v2 as "max"
_NO_LIMIT_BYTES = 2 ** 62


def _limit(value: str) -> int | str:
    """`ulimit` prints a number or "unlimited"."""
    value = value.strip()
    if value == "unlimited":
        return value
    if not value.isdigit():
        raise ValueError(f"not a ulimit value: {value!r}")
    return int(value)


def parse_resources(text: str) -> dict:
    """fleet/remote/pod_resources.sh -> {"shm": {"filesystem", "size_mb", "free_mb"} | None, "memlock_kb": 8192 |
    "unlimited", "nofile": 1048576 | "unlimited", "memory_limit_mb": 16384 | None (no limit), "memory_limit_file"}.

        shm tmpfs                65536     0     65536       0% /dev/shm
        memlock 8192
        nofile 1048576
        memory_limit max /sys/fs/cgroup/memory.max
    """
    out: dict = {"shm": None, "memlock_kb": None, "nofile": None, "memory_limit_mb": None, "memory_limit_file": None}
    seen = False
    for line in text.splitlines():
        key, _, rest = line.partition(" ")
        if key == "shm":
            seen = True
            if rest.strip() != "none":
                fields = rest.split()
                if len(fields) < 6 or not fields[1].isdigit() or not fields[3].isdigit():
                    raise ValueError(f"not a df -Pk line: {rest!r}")
                out["shm"] = {"filesystem": fields[0], "size_mb": int(fields[1]) // 1024,
                              "free_mb": int(fields[3]) // 1024}
        elif key in ("memlock", "nofile"):
            out["memlock_kb" if key == "memlock" else "nofile"] = _limit(rest)
        elif key == "memory_limit":
            value, _, where = rest.strip().partition(" ")
            if value != "max" and not value.isdigit():
                raise ValueError(f"not a cgroup memory limit: {value!r}")
            out["memory_limit_file"] = where or None
            out["memory_limit_mb"] = None if value == "max" or int(value) >= _NO_LIMIT_BYTES else int(value) // 2 ** 20
    if not seen:
        raise ValueError("no shm line")
    return out
