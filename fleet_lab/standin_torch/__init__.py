"""fleet lab stand-in for torch: NOT PyTorch. It imports through a real native extension (torch._C,
linked against torch/lib/*.so), finds CUDA through the real loader (libcuda.so.1: cuInit,
cuDriverGetVersion) and computes small tensor arithmetic in pure Python, so that installs, imports and
driver checks fail and succeed where the real torch would."""

import random as _random

from torch._C import *  # noqa: F401,F403  (the real torch does this too; the loader resolves _C here)
from torch import _C  # noqa: E402
from torch import version  # noqa: E402
from torch.version import __version__  # noqa: E402
from torch._tensor import Tensor, device, dtype, float16, float32, bfloat16, float64  # noqa: E402
from torch import cuda  # noqa: E402

float = float32
half = float16
double = float64
FLEET_LAB_STANDIN = True


def manual_seed(seed):
    _random.seed(seed)


def _shape(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)


def _fill(shape, make):
    if len(shape) == 1:
        return [make() for _ in range(shape[0])]
    return [_fill(shape[1:], make) for _ in range(shape[0])]


def _new(size, make, device=None, dtype=None):
    """`make(rng)` for each value, drawn when first read from an RNG seeded now from the global one (so
    manual_seed makes the same tensors again, whatever order they are read in)."""
    shape, seed = _shape(size), _random.getrandbits(64)

    def values():
        rng = _random.Random(seed)
        return _fill(shape, lambda: make(rng))

    t = Tensor._deferred(shape, values, dtype=dtype)
    return t.to(device) if device is not None else t


def randn(*size, device=None, dtype=None, **_):
    return _new(size, lambda rng: rng.gauss(0.0, 1.0), device, dtype)


def rand(*size, device=None, dtype=None, **_):
    return _new(size, lambda rng: rng.random(), device, dtype)


def full(size, fill_value, device=None, dtype=None, **_):
    t = Tensor._filled(_shape((size,)), fill_value, dtype=dtype)
    return t.to(device) if device is not None else t


def zeros(*size, device=None, dtype=None, **_):
    return full(_shape(size), 0.0, device, dtype)


def ones(*size, device=None, dtype=None, **_):
    return full(_shape(size), 1.0, device, dtype)


def tensor(data, device=None, dtype=None, **_):
    t = Tensor(data, dtype=dtype)
    return t.to(device) if device is not None else t


def matmul(a, b):
    return a @ b


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return a.allclose(b, rtol=rtol, atol=atol)
