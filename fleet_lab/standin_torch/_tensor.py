"""Tensors of the fleet lab stand-in torch: nested Python lists of floats, on "cpu" or "cuda:N".
Moving to CUDA goes through torch.cuda's real driver checks; the arithmetic itself is pure Python.

A tensor's values are computed when they are first read (tolist, item, .cpu() then read, allclose, sum ...),
not when it is made: the real torch queues a CUDA kernel and returns at once ("By default, GPU operations are
asynchronous", PyTorch's CUDA semantics), and a result is seen only when read back. Every value read is exact;
what is never read (verify's load, 4096x4096 matmuls on every GPU that it only counts) is never computed, which
pure Python could not do in the seconds a GPU takes. Shapes, devices and the driver are checked when the op is
called, as the real torch checks them."""


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


def _settle(tensor):
    """A tensor read while torch.distributed still holds collectives on it: settled first (the real torch waits for
    the GPU's queued work before a value is read back)."""
    import sys
    distributed = sys.modules.get("torch.distributed")
    if distributed is not None and any(e[0] is tensor for e in distributed._pending):
        distributed._resolve()


class Tensor:
    _constant = None   # every value this one number (ones, zeros, full): sliced and reduced without being listed

    def __init__(self, data, dtype=None, device_="cpu"):
        self._values = _map(data.tolist() if isinstance(data, Tensor) else data, float)
        self._shape, self._compute = None, None
        self.dtype = dtype or float32
        self.device = device(device_)

    @classmethod
    def _deferred(cls, shape, compute, dtype=None, device_="cpu"):
        """A tensor of `shape` whose values `compute()` gives (nested lists) when first read."""
        t = cls.__new__(cls)
        t._values, t._shape, t._compute = None, tuple(shape), compute
        t.dtype = dtype or float32
        t.device = device(device_)
        return t

    @property
    def _data(self):
        _settle(self)
        if self._values is None:
            self._values, self._compute = _map(self._compute(), float), None
        return self._values

    @property
    def shape(self):
        if self._shape is not None:
            return self._shape
        dims, d = [], self._data
        while isinstance(d, list):
            dims.append(len(d))
            d = d[0] if d else None
        return tuple(dims)

    @classmethod
    def _filled(cls, shape, value, dtype=None, device_="cpu"):
        """A tensor of `shape` whose every value is `value` (listed only when read whole)."""
        shape = tuple(shape)

        def values(dims=shape):
            return [values(dims[1:]) for _ in range(dims[0])] if len(dims) > 1 else [float(value)] * dims[0]

        t = cls._deferred(shape, values, dtype, device_)
        t._constant = float(value)
        return t

    def _like(self, dtype=None, device_=None):
        """The same values (computed once, when either is read) under another dtype or device."""
        if self._constant is not None:
            return Tensor._filled(self.shape, self._constant, dtype or self.dtype, device_ or str(self.device))
        return Tensor._deferred(self.shape, lambda: self._data, dtype or self.dtype, device_ or str(self.device))

    def __getitem__(self, index):
        """A slice of the first dimension (what verify reads of an all-reduce's result: x[:8])."""
        _settle(self)
        if not isinstance(index, slice):
            raise TypeError("the fleet lab stand-in tensor takes a slice of its first dimension only")
        length = len(range(*index.indices(self.shape[0])))
        if self._constant is not None:
            return Tensor._filled((length, *self.shape[1:]), self._constant, self.dtype, str(self.device))
        return Tensor(self._data[index], self.dtype, str(self.device))

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    def numel(self):
        count = 1
        for n in self.shape:   # from the shape: a 1 GiB tensor's values are never listed to count them
            count *= n
        return count

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def to(self, target=None, *args, dtype=None, non_blocking=False, **_):
        if isinstance(target, dtype_cls):
            return self._like(target)
        if target is None:
            return self._like(dtype)
        dev = device(target)
        if dev.type == "cuda":
            from torch import cuda
            cuda._lazy_init()
            if dev.index >= cuda.device_count():
                raise RuntimeError("CUDA error: invalid device ordinal")
        return self._like(dtype, str(dev))

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
        if self.dim() != 2 or other.dim() != 2 or self.shape[1] != other.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape} and {other.shape})")

        def product():
            cols = list(zip(*other._data))
            return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in self._data]

        return Tensor._deferred((self.shape[0], other.shape[1]), product, self.dtype, str(self.device))

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
