"""Array adapters: torch tensors, CuPy arrays and any object exposing ``__cuda_array_interface__``.

Everything gemmlab needs from an array is a :class:`View`: pointer, shape, strides in elements,
the device it lives on and the framework that made it (to allocate outputs of the same kind and
to find the caller's current stream).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import ArgumentError, ArgumentTypeError


@dataclass
class View:
    obj: object
    kind: str            # "torch", "cupy" or "cai"
    ptr: int
    shape: tuple
    strides: tuple       # elements
    device: int | None   # None: not known without asking the driver
    readonly: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def span_bytes(self) -> tuple[int, int]:
        """[first byte, one past the last byte] this view can touch."""
        if any(s == 0 for s in self.shape):
            return self.ptr, self.ptr
        lo = self.ptr + 4 * sum(st * (n - 1) for st, n in zip(self.strides, self.shape) if st < 0)
        hi = self.ptr + 4 * sum(st * (n - 1) for st, n in zip(self.strides, self.shape) if st > 0) + 4
        return lo, hi


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "data_ptr")


def _is_cupy(x) -> bool:
    return type(x).__module__.split(".")[0] == "cupy"


def view(x, arg: str) -> View:
    """Describe ``x`` (argument ``arg``) or raise ArgumentTypeError/ArgumentError naming it."""
    if _is_torch(x):
        import torch

        if x.dtype != torch.float32:
            raise ArgumentTypeError(f"{arg}: dtype {x.dtype}, gemmlab computes float32 only; convert with .float()")
        if not x.is_cuda:
            raise ArgumentError(f"{arg}: a host (CPU) tensor; move it to the GPU first (.cuda())")
        return View(x, "torch", x.data_ptr(), tuple(x.shape), tuple(x.stride()), x.device.index)
    if hasattr(x, "__cuda_array_interface__"):
        cai = x.__cuda_array_interface__
        if not (isinstance(cai, dict) and "shape" in cai and isinstance(cai.get("data"), (tuple, list))):
            raise ArgumentTypeError(f"{arg}: its __cuda_array_interface__ lacks 'shape' or 'data' (version 3 "
                                    "of the interface has both)")
        typestr = cai.get("typestr", "")
        if typestr not in ("<f4", "=f4", "f4"):
            raise ArgumentTypeError(f"{arg}: dtype {typestr!r}, gemmlab computes float32 ('<f4') only")
        shape = tuple(int(s) for s in cai["shape"])
        ptr, readonly = cai["data"]
        strides = cai.get("strides")
        if strides is None:
            strides_e, acc = [], 1
            for n in reversed(shape):
                strides_e.append(acc)
                acc *= n
            strides_e = tuple(reversed(strides_e))
        else:
            if any(s % 4 for s in strides):
                raise ArgumentError(f"{arg}: strides {strides} (bytes) are not whole float32 elements")
            strides_e = tuple(int(s) // 4 for s in strides)
        if _is_cupy(x):
            return View(x, "cupy", int(ptr or 0), shape, strides_e, int(x.device.id), bool(readonly))
        return View(x, "cai", int(ptr or 0), shape, strides_e, getattr(x, "gemmlab_device", None), bool(readonly))
    if hasattr(x, "__array_interface__") or hasattr(x, "__array__"):
        raise ArgumentError(f"{arg}: a host array ({type(x).__name__}); gemmlab needs a GPU array "
                         "(torch CUDA tensor, CuPy array, or anything with __cuda_array_interface__)")
    raise ArgumentTypeError(f"{arg}: {type(x).__name__} is not an array gemmlab understands "
                    "(torch CUDA tensor, CuPy array, or __cuda_array_interface__)")


def pointer_device(ptr: int) -> int:
    """The device ordinal of a device pointer (asks the driver; NoGPUError without a GPU)."""
    from . import device
    from .errors import NoGPUError

    if not device.has_gpu():
        raise NoGPUError("no CUDA GPU is available: gemm, matmul and gemm_batched need one "
                         "(the models, sass and explain do not)")
    from cuda.bindings import driver

    attr = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    err, dev = driver.cuPointerGetAttribute(attr, ptr)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise ArgumentError(f"pointer {ptr:#x} is not device memory gemmlab can use ({err})")
    return int(dev)


def current_stream(v: View, device: int) -> int:
    """The stream the caller's framework is using now on ``device``."""
    if v.kind == "torch":
        import torch

        return int(torch.cuda.current_stream(device).cuda_stream)
    if v.kind == "cupy":
        import cupy

        with cupy.cuda.Device(device):
            return int(cupy.cuda.get_current_stream().ptr)
    return 0  # the legacy default stream; pass stream= to choose


def stream_handle(stream) -> int:
    """Accept an int handle, an object with __cuda_stream__, torch/CuPy streams."""
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            h = getattr(stream, attr)
            return int(h)
    raise ArgumentTypeError(f"stream: {type(stream).__name__} is not a CUDA stream")


def empty_like_kind(v: View, shape: tuple, device: int):
    """A new float32 array of ``shape``, same kind as ``v``, on ``device``."""
    if v.kind == "torch":
        import torch

        return torch.empty(shape, dtype=torch.float32, device=f"cuda:{device}")
    if v.kind == "cupy":
        import cupy

        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype=cupy.float32)
    raise ArgumentError("out= is required when the inputs are neither torch tensors nor CuPy arrays "
                       "(gemmlab allocates outputs with the inputs' framework)")
