"""Tensors of the fleet lab stand-in torch: nested Python lists of floats, on "cpu" or "cuda:N".
Moving to CUDA goes through torch.cuda's real driver checks; the arithmetic itself is pure Python."""


class dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


float16, float32, bfloat16, float64 = dtype("float16"), dtype("float32"), dtype("bfloat16"), dtype("float64")


class device:
    def __init__(self, spec, index=None):
        spec = str(spec)
        kind, _, idx = spec.partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {spec}")
        self.type = kind
        self.index = int(idx) if idx else index
        if kind == "cuda" and self.index is None:
            self.index = 0

    def __eq__(self, other):
        return str(self) == str(other)

    def __str__(self):
        return self.type if self.type == "cpu" else f"cuda:{self.index}"

    __repr__ = lambda self: f"device(type='{self.type}'" + ("" if self.type == "cpu" else f", index={self.index}") + ")"


def _map(data, fn):
    return [_map(x, fn) for x in data] if isinstance(data, list) else fn(data)


def _zip(a, b, fn):
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            raise RuntimeError("The size of tensor a must match the size of tensor b")
        return [_zip(x, y, fn) for x, y in zip(a, b)]
    return fn(a, b)


def _flat(data):
    return [v for x in data for v in _flat(x)] if isinstance(data, list) else [data]


class Tensor:
    def __init__(self, data, dtype=None, device_="cpu"):
        self._data = _map(data.tolist() if isinstance(data, Tensor) else data, float)
        self.dtype = dtype or float32
        self.device = device(device_)

    @property
    def shape(self):
        dims, d = [], self._data
        while isinstance(d, list):
            dims.append(len(d))
            d = d[0] if d else None
        return tuple(dims)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    def numel(self):
        return len(_flat(self._data))

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def to(self, target=None, *args, dtype=None, non_blocking=False, **_):
        if isinstance(target, dtype_cls):
            return Tensor(self._data, target, str(self.device))
        if target is None:
            return Tensor(self._data, dtype or self.dtype, str(self.device))
        dev = device(target)
        if dev.type == "cuda":
            from torch import cuda
            cuda._lazy_init()
            if dev.index >= cuda.device_count():
                raise RuntimeError("CUDA error: invalid device ordinal")
        return Tensor(self._data, dtype or self.dtype, str(dev))

    def cuda(self, index=None, non_blocking=False):
        return self.to("cuda" if index is None else f"cuda:{index}")

    def cpu(self):
        return self.to("cpu")

    def float(self):
        return self.to(float32)

    def half(self):
        return self.to(float16)

    def bfloat16(self):
        return self.to(bfloat16)

    def tolist(self):
        return _map(self._data, lambda v: v)

    def item(self):
        values = _flat(self._data)
        if len(values) != 1:
            raise RuntimeError(f"a Tensor with {len(values)} elements cannot be converted to Scalar")
        return values[0]

    def _same_device(self, other, op):
        if isinstance(other, Tensor) and other.device != self.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{self.device} and {other.device}! (when checking argument for {op})")

    def _binary(self, other, fn, op):
        self._same_device(other, op)
        if isinstance(other, Tensor):
            return Tensor(_zip(self._data, other._data, fn), self.dtype, str(self.device))
        return Tensor(_map(self._data, lambda v: fn(v, other)), self.dtype, str(self.device))

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b, "add")

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b, "sub")

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b, "mul")

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, other):
        self._same_device(other, "mm")
        a, b = self._data, other._data
        if self.dim() != 2 or other.dim() != 2 or len(a[0]) != len(b):
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape} and {other.shape})")
        cols = list(zip(*b))
        return Tensor([[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a],
                      self.dtype, str(self.device))

    def sum(self):
        return Tensor(sum(_flat(self._data)), self.dtype, str(self.device))

    def abs(self):
        return Tensor(_map(self._data, abs), self.dtype, str(self.device))

    def max(self):
        return Tensor(max(_flat(self._data)), self.dtype, str(self.device))

    def allclose(self, other, rtol=1e-05, atol=1e-08):
        self._same_device(other, "allclose")
        pairs = zip(_flat(self._data), _flat(other._data))
        return self.shape == other.shape and all(abs(x - y) <= atol + rtol * abs(y) for x, y in pairs)

    def __repr__(self):
        suffix = "" if self.device.type == "cpu" else f", device='{self.device}'"
        return f"tensor({self._data}{suffix})"


dtype_cls = dtype
