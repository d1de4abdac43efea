"""torch.cuda of the fleet lab stand-in: the CUDA driver is found and asked the way the real torch
does it, through the dynamic loader (libcuda.so.1, so LD_LIBRARY_PATH and cuda-compat count)."""

import ctypes
import time
import warnings

import torch

# this build's CUDA runtime (13.0 -> 13000, JetPack 6's 12.6 -> 12060), as cudaRuntimeGetVersion encodes it
_RUNTIME_CUDA = (lambda v: int(v.split(".")[0]) * 1000 + int(v.split(".")[1]) * 10)(torch.version.cuda or "0.0")
_state = None           # (device_count, error message or None), probed once like the real torch

_TOO_OLD = ("The NVIDIA driver on your system is too old (found version {found}). Please update your GPU driver "
            "by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
            "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with "
            "your version of the CUDA driver.")
_NO_DRIVER = ("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
              "driver from http://www.nvidia.com/Download/index.aspx")


def _driver():
    return ctypes.CDLL("libcuda.so.1")


def _error_text(lib, code):
    text = ctypes.c_char_p()
    lib.cuGetErrorString(code, ctypes.byref(text))
    return (text.value or b"unknown error").decode()


def _probe():
    if torch.version.cuda is None:   # a CPU build never looks for a driver
        return 0, None
    try:
        lib = _driver()
    except OSError:
        return 0, _NO_DRIVER
    version = ctypes.c_int(0)
    lib.cuDriverGetVersion(ctypes.byref(version))
    code = lib.cuInit(0)
    if code == 100:
        return 0, None
    if code != 0:
        return 0, ("Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling "
                   f"NumCudaDevices() that might have already set an error? Error {code}: {_error_text(lib, code)}")
    if version.value < _RUNTIME_CUDA:
        return 0, _TOO_OLD.format(found=version.value)
    count = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(count))
    return count.value, None


def _get_state():
    global _state
    if _state is None:
        _state = _probe()
        if _state[1]:
            warnings.warn(f"CUDA initialization: {_state[1]} (Triggered internally at fleet lab stand-in)",
                          UserWarning, stacklevel=3)
    return _state


def is_available():
    return _get_state()[0] > 0


def device_count():
    return _get_state()[0]


def _lazy_init():
    if torch.version.cuda is None:
        raise AssertionError("Torch not compiled with CUDA enabled")
    count, error = _get_state()
    if error:
        raise RuntimeError(error)
    if count == 0:
        raise RuntimeError("No CUDA GPUs are available")


def is_initialized():
    return _state is not None and _state[0] > 0


def current_device():
    _lazy_init()
    return _current


_busy_until = 0.0   # when the work queued on the "GPU" (torch.distributed's collectives) ends, time.perf_counter()


def _enqueue(seconds):
    """Queue `seconds` of GPU work: as the real torch's kernels, it runs while the caller goes on, and
    synchronize() waits for it."""
    global _busy_until
    _busy_until = max(_busy_until, time.perf_counter()) + seconds


def synchronize(device=None):
    _lazy_init()
    time.sleep(max(0.0, _busy_until - time.perf_counter()))


_current = 0


def set_device(device):
    global _current
    _, _current = _device_query(device)


def _index(device):
    if isinstance(device, str):
        return torch.device(device).index or 0
    if isinstance(device, torch.device):
        return device.index or 0
    return device or 0


def _device_query(device):
    _lazy_init()
    index = _index(device)
    if not 0 <= index < device_count():
        raise RuntimeError("CUDA error: invalid device ordinal")
    return _driver(), index


def get_device_name(device=None):
    lib, index = _device_query(device)
    name = ctypes.create_string_buffer(256)
    lib.cuDeviceGetName(name, 256, index)
    return name.value.decode()


def get_device_capability(device=None):
    lib, index = _device_query(device)
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, index)
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, index)
    return major.value, minor.value


def can_device_access_peer(device, peer):
    """cuDeviceCanAccessPeer, as the real torch asks it (cudaDeviceCanAccessPeer): over the NVSwitch fabric."""
    lib, index = _device_query(device)
    _, other = _device_query(peer)
    can = ctypes.c_int(0)
    code = lib.cuDeviceCanAccessPeer(ctypes.byref(can), index, other)
    if code != 0:
        raise RuntimeError(f"CUDA error: {_error_text(lib, code)}")
    return bool(can.value)


# No mem_get_info: verify's perf smoke (it would time matmuls whose values the stand-in computes only when read:
# no GPU's figures) and its all-reduce stop at its absence, which tests/lab/test_verify_stale_lab.py and
# test_shells_lab.py take as the lab's failing perf smoke.


class _DeviceProperties:
    def __init__(self, name, major, minor, total_memory):
        self.name, self.major, self.minor, self.total_memory = name, major, minor, total_memory

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB)")


def get_device_properties(device=None):
    lib, index = _device_query(device)
    total = ctypes.c_size_t()
    lib.cuDeviceTotalMem_v2(ctypes.byref(total), index)
    return _DeviceProperties(get_device_name(device), *get_device_capability(device), total.value)


def get_arch_list():
    if not is_available():
        return []
    return torch._C._cuda_getArchFlags().split()
