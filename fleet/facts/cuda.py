"""CUDA on disk, cuda-compat and the watched libraries: probe commands and their pure parsers."""

from __future__ import annotations

import re

from fleet import remote

# The libraries users' torch installs fail on, in the order the compare table lists them.
WATCHED_LIBRARIES = (
    "libcuda.so.1",
    "libcudart.so.13",
    "libcublas.so.13",
    "libcudnn.so.9",
    "libcudss.so.0",
    "libnvpl_blas_lp64_gomp.so.0",
    "libnvpl_lapack_lp64_gomp.so.0",
)

# ---- toolkits ---------------------------------------------------------------------------------------

TOOLKITS = "\n" + remote.program("cuda_toolkits") + "\n"   # fleet/remote/cuda_toolkits.sh


def parse_nvcc_version(text: str) -> dict:
    """`nvcc --version` -> {"version": "13.0", "full_version": "13.0.88"}.

        Cuda compilation tools, release 13.0, V13.0.88
    """
    match = re.search(r"release (\d+\.\d+), V(\d+(?:\.\d+)+)", text)
    if not match:
        raise ValueError("no 'release X.Y, VX.Y.Z' line in nvcc --version")
    return {"version": match[1], "full_version": match[2]}


def parse_version_json(line: str) -> dict:
    """The "cuda" entry's version line of <toolkit>/version.json -> {"version": "13.0", "full_version": ...}.

        "version" : "13.0.2"
    """
    match = re.search(r'"version"\s*:\s*"(\d+)\.(\d+)((?:\.\d+)*)"', line)
    if not match:
        raise ValueError(f"no version in version.json line {line.strip()!r}")
    return {"version": f"{match[1]}.{match[2]}", "full_version": f"{match[1]}.{match[2]}{match[3]}"}


def parse_toolkits(text: str) -> dict:
    """The toolkits section -> {"toolkits": [{version, full_version, path, nvcc}], "links", "nvcc_on_path"}.

        link /usr/local/cuda -> /usr/local/cuda-13.0
        toolkit /usr/local/cuda-13.0
        nvcc /usr/local/cuda-13.0/bin/nvcc
        nvcc: NVIDIA (R) Cuda compiler driver ... Cuda compilation tools, release 13.0, V13.0.88 ...
    A directory with neither version.json nor nvcc gets version None (say so, do not guess from its name).
    Where both exist, version.json (the installed packages) wins over nvcc.
    """
    toolkits: list[dict] = []
    links: dict[str, str] = {}
    nvcc_on_path = None
    current: dict | None = None
    path_toolkit: dict | None = None
    nvcc_text: list[str] = []

    def finish():
        if current is not None and nvcc_text and current["version"] is None:
            current.update(parse_nvcc_version("\n".join(nvcc_text)))

    for line in text.splitlines():
        if line.startswith(("toolkit ", "path_toolkit ", "link ", "nvcc_on_path ")):
            finish()
            nvcc_text, current = [], None
        if line.startswith(("toolkit ", "path_toolkit ")):
            kind, _, path = line.partition(" ")
            current = {"version": None, "full_version": None, "path": path, "nvcc": None}
            if kind == "path_toolkit":
                path_toolkit = current
            else:
                toolkits.append(current)
        elif line.startswith("link "):
            source, _, target = line[5:].partition(" -> ")
            links[source] = target
        elif line.startswith("nvcc_on_path "):
            nvcc_on_path = line[13:]
        elif current is not None and line.startswith("version.json "):
            if '"version"' in line:
                current.update(parse_version_json(line))
        elif current is not None and line.startswith("nvcc /"):
            current["nvcc"] = line[5:]
        elif current is not None:
            nvcc_text.append(line)
        elif line.strip():
            raise ValueError(f"unexpected line {line.strip()[:100]!r}")
    finish()
    # An nvcc on PATH outside /usr/local/cuda* (Debian's nvidia-cuda-toolkit) is a toolkit of its own,
    # unless it only wraps one already listed (same full version).
    if path_toolkit and path_toolkit["full_version"] not in {t["full_version"] for t in toolkits}:
        toolkits.append(path_toolkit)
    return {"toolkits": toolkits, "links": links, "nvcc_on_path": nvcc_on_path}


# ---- cuda-compat ------------------------------------------------------------------------------------

COMPAT = "\n" + remote.program("cuda_compat") + "\n"   # fleet/remote/cuda_compat.sh


def compat_version(file_names: list[str]) -> str | None:
    """The compat driver version is in its libcuda's file name: libcuda.so.580.95.05 -> "580.95.05"."""
    for name in file_names:
        match = re.fullmatch(r"libcuda\.so\.(\d+\.\d+(?:\.\d+)?)", name)
        if match:
            return match[1]
    return None


def parse_compat(text: str) -> dict | None:
    """The compat section -> {path, version, in_use, first_on_ld_library_path, registered} | None.

        compat /usr/local/cuda-13.0/compat
        file libcuda.so.580.95.05
        ld_library_path /usr/local/nvidia/lib64
        ldconfig libcuda.so.1 (libc6,x86-64) => /usr/local/cuda-13.0/compat/libcuda.so.1
    "In use" = the loader would find it: on this shell's LD_LIBRARY_PATH or registered with ldconfig.
    With several compat directories, the one in use (else the newest) is reported; all are listed.
    """
    dirs: list[dict] = []
    ld_path: list[str] = []
    ldconfig: list[str] = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "compat":
            dirs.append({"path": rest, "files": []})
        elif kind == "file" and dirs:
            dirs[-1]["files"].append(rest)
        elif kind == "ld_library_path":
            ld_path.append(rest.rstrip("/"))
        elif kind == "ldconfig":
            ldconfig.append(rest)
        elif line.strip():
            raise ValueError(f"unexpected line {line.strip()[:100]!r}")
    if not dirs:
        return None
    found = [_compat_entry(d, ld_path, ldconfig) for d in dirs]
    in_use = [entry for entry in found if entry["in_use"]]
    return {**(in_use or found)[-1], "all": [entry["path"] for entry in found]}


def _compat_entry(found: dict, ld_path: list[str], ldconfig: list[str]) -> dict:
    path = found["path"].rstrip("/")
    registered = any(f"=> {path}/" in line for line in ldconfig)
    on_path = path in ld_path
    return {
        "path": path,
        "version": compat_version(found["files"]),
        "in_use": on_path or registered,
        "on_ld_library_path": on_path,
        "first_on_ld_library_path": bool(ld_path) and ld_path[0] == path,
        "registered_ldconfig": registered,
    }


# ---- where the loader finds each watched library ----------------------------------------------------

def libraries_command(sonames=WATCHED_LIBRARIES) -> str:
    names = " ".join(sonames)
    pattern = "|".join(re.escape(name) for name in sonames)
    return (
        "LDC=ldconfig; hash ldconfig 2>/dev/null || LDC=/sbin/ldconfig\n"   # hash: command -v without a process
        f"\"$LDC\" -p 2>/dev/null | grep -E '^[[:space:]]({pattern}) '\n"
        "set -f; IFS=:\n"
        f"for so in {names}; do\n"
        "  for e in ${LD_LIBRARY_PATH-}; do\n"
        "    if [ -n \"$e\" ] && [ -e \"$e/$so\" ]; then printf 'ld_library_path %s %s\\n' \"$so\" \"$e/$so\"; break; fi\n"
        "  done\n"
        "done\n"
        "true"
    )


_LDCONFIG_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S.*?)\s*$")
_ARCH_FLAG = {"x86_64": "x86-64", "aarch64": "AArch64"}


def parse_ldconfig(text: str, arch: str | None = None) -> dict[str, str]:
    """`ldconfig -p` lines -> {soname: path}: the first entry per soname, preferring this arch's.

        libcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1
        libcuda.so.1 (libc6,x86-64) => /lib/libcuda.so.1
      -> {"libcuda.so.1": "/usr/local/nvidia/lib64/libcuda.so.1"}
    The cache lists entries in the loader's preference order, so the first match is the one it uses.
    """
    first: dict[str, str] = {}
    first_for_arch: dict[str, str] = {}
    flag = _ARCH_FLAG.get(arch or "")
    for line in text.splitlines():
        match = _LDCONFIG_LINE.match(line)
        if not match:
            continue
        soname, flags, path = match.groups()
        first.setdefault(soname, path)
        if flag and flag in flags:
            first_for_arch.setdefault(soname, path)
    return {**first, **first_for_arch}


def parse_libraries(text: str, arch: str | None = None, sonames=WATCHED_LIBRARIES) -> dict:
    """The libraries section -> {"libraries": {soname: path | None}, "sources": {soname: how found}}.

    LD_LIBRARY_PATH is searched before the ldconfig cache, so a hit there wins.
    """
    cache = parse_ldconfig(text, arch)
    env_hits = dict(re.findall(r"^ld_library_path (\S+) (.+)$", text, re.M))
    strange = [line for line in text.splitlines()
               if line.strip() and not line.startswith("ld_library_path ") and not _LDCONFIG_LINE.match(line)]
    if strange:
        raise ValueError(f"unexpected line {strange[0].strip()[:100]!r}")
    libraries, sources = {}, {}
    for soname in sonames:
        if soname in env_hits:
            libraries[soname], sources[soname] = env_hits[soname], "LD_LIBRARY_PATH"
        elif soname in cache:
            libraries[soname], sources[soname] = cache[soname], "ldconfig"
        else:
            libraries[soname], sources[soname] = None, None
    return {"libraries": libraries, "sources": sources}
