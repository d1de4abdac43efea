"""What one process sees of CUDA, asked of the driver API itself. Runs in `ssh host cmd` (with torch) and, as the
program's `--cuda-probe NEED`, in each other kind of process (kinds.py).

Error codes: CUDA driver API reference, CUresult (docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html):
34 STUB_LIBRARY, 35 INSUFFICIENT_DRIVER, 46 DEVICES_UNAVAILABLE, 100 NO_DEVICE, 802 SYSTEM_NOT_READY (an NVSwitch
fabric not up), 803 SYSTEM_DRIVER_MISMATCH, 804 COMPAT_NOT_SUPPORTED_ON_DEVICE, 999 UNKNOWN. Without torch it asks
what torch.cuda.is_available() asks (the libcuda the loader picks, cuInit, a device, a driver API at least the
wheel's CUDA: `need`), in a few ms instead of a torch import (~1.5 s on an H100 host).
"""

import ctypes
import os
import re
import warnings

from .. import loader_rules as rules


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
         "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "device_order": os.environ.get("CUDA_DEVICE_ORDER"),
         "nccl": {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")}}   # the all-reduce's kinds
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


def need_of(torch_cuda):
    """torch.version.cuda "13.0" -> the driver API version it needs (13000)."""
    found = re.match(r"(\d+)\.(\d+)", str(torch_cuda or ""))
    return int(found.group(1)) * 1000 + int(found.group(2)) * 10 if found else 0


def kernel_driver():
    """The loaded kernel module's version (/proc/driver/nvidia/version), or None."""
    try:
        with open("/proc/driver/nvidia/version") as fh:
            found = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", fh.read())
        return found.group(1) if found else None
    except OSError:
        return None
