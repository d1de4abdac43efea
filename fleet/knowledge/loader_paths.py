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

# The directories' patterns (COMPAT_DIR_ERE, STUB_DIR_ERE, is_compat, is_stub) live in fleet/remote/loader_rules.py,
# a stdlib module below every fleet package that the verify program carries to the host: read from there.

KINDS = ("bare", "ssh", "interactive", "login")
