"""The kinds of process whose libcuda.so.1 fleet asks the loader for, and the two kinds of directory that matter on
the way (shared/DOMAIN.md, "Forward compatibility" and "Seen on a real H100").

    bare         `env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=$HOME`, no startup file (services, cron)
    ssh          `ssh host cmd`: the non-interactive bash sshd starts
    interactive  `bash -i`
    login        `bash -l`

A cuda-compat directory is where NVIDIA's cuda-compat package puts its libcuda (/usr/local/cuda-13.0/compat, NGC's
/usr/local/cuda/compat/lib); a stub directory (.../lib64/stubs, targets/x86_64-linux/lib/stubs) holds the link-time
libcuda.so that answers CUDA_ERROR_STUB_LIBRARY (34) at run time. fleet/facts/loader.py names what it sees with
these; fleet/decide/loader.py judges which of them harm this host.
"""
from __future__ import annotations

import posixpath
import re

KINDS = ("bare", "ssh", "interactive", "login")

# As ERE, for the host's grep/awk too (the ld_aside resource matches with them on the host itself).
COMPAT_DIR_ERE = r"/cuda[^/:]*/compat(/lib([.]real)?)?"
STUB_DIR_ERE = r"/stubs"
_COMPAT_DIR = re.compile(f"{COMPAT_DIR_ERE}/?$")
_STUB_DIR = re.compile(f"{STUB_DIR_ERE}/?$")


def is_compat(path: str | None) -> bool:
    """A path inside a cuda-compat directory (or that directory itself)."""
    if not path:
        return False
    return bool(_COMPAT_DIR.search(path.rstrip("/")) or _COMPAT_DIR.search(posixpath.dirname(path)))


def is_stub(path: str | None) -> bool:
    """A path inside a stubs directory (or that directory): CUDA_ERROR_STUB_LIBRARY (34) when it is the libcuda."""
    if not path:
        return False
    return bool(_STUB_DIR.search(path.rstrip("/")) or _STUB_DIR.search(posixpath.dirname(path)))
