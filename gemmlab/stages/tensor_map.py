"""Host side of s11: TMA tensor maps (CUtensorMap) for the A and B operands.

The rules of ``cuTensorMapEncodeTiled`` are checked here first (``problems``), in plain Python,
so a stage can decide without a GPU whether a problem can use TMA (and hand it to s10 if not).
The descriptor itself is built by cuda.core (``TensorMapDescriptor``, the object its ``launch``
accepts as a 128-byte ``__grid_constant__`` kernel argument) from a view of the raw pointer.

Shapes and strides here are outermost first (row-major order, like the arrays): a 3-D map is
``(batch, outer, inner)`` with the inner dimension contiguous; the driver's order is reversed.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

ELEMENT_BYTES = 4  # float32
MAX_BOX = 256
MAX_DIM = 2**32
MAX_STRIDE_BYTES = 2**40
SWIZZLE_BYTES = (0, 32, 64, 128)


def problems(ptr: int, shape, strides, box, swizzle_bytes: int = 0) -> list[str]:
    """Messages for every rule of cuTensorMapEncodeTiled (and of cuda.core's encoder, which also
    wants each box dimension no larger than the tensor's) the map would break (empty: encodable).

    ``shape``/``strides``/``box`` are outermost first; strides in elements, the innermost must be 1.
    """
    out = []
    if len(shape) != len(strides) or len(shape) != len(box) or not 1 <= len(shape) <= 5:
        return [f"rank: shape {shape}, strides {strides} and box {box} must have the same length, 1..5"]
    if ptr % 16:
        out.append(f"global address {ptr:#x} is not 16-byte aligned")
    if strides[-1] != 1:
        out.append(f"innermost stride is {strides[-1]} elements; TMA needs a unit innermost stride")
    for d, n in enumerate(shape):
        if not 1 <= n <= MAX_DIM:
            out.append(f"dimension {d} has size {n}; TMA needs 1..2^32")
    for d, s in enumerate(strides[:-1]):
        b = s * ELEMENT_BYTES
        if b <= 0 or b % 16 or b >= MAX_STRIDE_BYTES:
            out.append(f"stride of dimension {d} is {b} bytes; TMA needs a positive multiple of 16 below 2^40")
    for d, (n, size) in enumerate(zip(box, shape)):
        if not 1 <= n <= MAX_BOX:
            out.append(f"box dimension {d} is {n}; TMA needs 1..256")
        elif n > size:
            # The driver would zero-fill the overhang, but cuda.core's encoder (CCCL's
            # make_tma_descriptor) requires box <= size; boxes only hang off the far edge here.
            out.append(f"box dimension {d} is {n}, larger than the tensor's {size}")
    inner_bytes = box[-1] * ELEMENT_BYTES
    if inner_bytes % 16:
        out.append(f"box inner dimension is {inner_bytes} bytes; TMA needs a multiple of 16")
    if swizzle_bytes not in SWIZZLE_BYTES:
        out.append(f"swizzle {swizzle_bytes} B: TMA has 0 (none), 32, 64 or 128")
    elif swizzle_bytes and inner_bytes > swizzle_bytes:
        out.append(f"box inner dimension is {inner_bytes} bytes, wider than the {swizzle_bytes}-byte swizzle")
    return out


class _RawArray:
    """A __cuda_array_interface__ over a raw device pointer (float32, strides in elements)."""

    def __init__(self, ptr: int, shape, strides):
        self.__cuda_array_interface__ = {
            "shape": tuple(int(n) for n in shape),
            "strides": tuple(int(s) * ELEMENT_BYTES for s in strides),
            "typestr": "<f4",
            "data": (int(ptr), True),
            "version": 3,
        }


def _enum_types():
    """cuda.core's swizzle and L2-promotion enums (taken from the options' defaults, so the
    private module that defines them may move)."""
    from cuda.core import TensorMapDescriptorOptions

    fields = TensorMapDescriptorOptions.__dataclass_fields__
    return type(fields["swizzle"].default), type(fields["l2_promotion"].default)


def available() -> bool:
    """Whether the driver can encode tensor maps (gemmlab encodes them with cuTensorMapEncodeTiled
    directly, into the kernel's parameter buffer: see jit/launch.py TensorMapSlot)."""
    try:
        from ..jit.launch import libcuda

        return hasattr(libcuda(), "cuTensorMapEncodeTiled")
    except Exception:
        return False


def _view(ptr, shape, strides):
    from cuda.core.utils import StridedMemoryView

    raw = _RawArray(ptr, shape, strides)
    if hasattr(StridedMemoryView, "from_cuda_array_interface"):
        # stream_ptr=-1: no stream ordering; building a descriptor reads no data.
        return StridedMemoryView.from_cuda_array_interface(raw, stream_ptr=-1)
    return StridedMemoryView(raw, stream_ptr=-1)


_cache: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 64


def encode(ptr: int, shape, strides, box, swizzle_bytes: int = 0, device: int | None = None):
    """A cuda.core TensorMapDescriptor for a float32 tensor at ``ptr`` (outermost first).

    Raises ValueError naming the broken rule. Descriptors are cached per device and arguments
    (a benchmark calls the same shapes and pointers many times).
    """
    shape, strides, box = tuple(map(int, shape)), tuple(map(int, strides)), tuple(map(int, box))
    bad = problems(ptr, shape, strides, box, swizzle_bytes)
    if bad:
        raise ValueError("TMA tensor map: " + "; ".join(bad))
    from cuda.core import Device

    if device is None:
        from ..arrays import pointer_device

        device = pointer_device(ptr)
    Device(device).set_current()  # the descriptor is bound to the current context
    key = (device, ptr, shape, strides, box, swizzle_bytes)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    swizzle_enum, l2_enum = _enum_types()
    swizzle = swizzle_enum({0: 0, 32: 1, 64: 2, 128: 3}[swizzle_bytes])
    view = _view(ptr, shape, strides)
    l2 = l2_enum(3)  # L2_256B: whole 256-byte lines, as the boxes read full rows
    desc = _descriptor(view, box, swizzle, l2)
    with _cache_lock:
        _cache[key] = desc
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return desc


def _descriptor(view, box, swizzle, l2):
    """The public StridedMemoryView.as_tensor_map where this cuda.core has it, else the factory
    it wraps (the same encoder: CCCL's make_tma_descriptor, or cuTensorMapEncodeTiled)."""
    from cuda.core import TensorMapDescriptor, TensorMapDescriptorOptions

    attempts = []
    if hasattr(view, "as_tensor_map"):
        attempts.append(lambda: view.as_tensor_map(box_dim=box, swizzle=swizzle, l2_promotion=l2))
        attempts.append(lambda: view.as_tensor_map(
            options=TensorMapDescriptorOptions(box_dim=box, swizzle=swizzle, l2_promotion=l2)))
    if hasattr(TensorMapDescriptor, "_from_tiled"):
        attempts.append(lambda: TensorMapDescriptor._from_tiled(view, box, swizzle=swizzle, l2_promotion=l2))
    error = None
    for attempt in attempts:
        try:
            return attempt()
        except TypeError as e:  # a signature this cuda.core does not have: try the next
            error = e
    raise RuntimeError(f"this cuda.core cannot build a TMA descriptor ({error}); s11 needs cuda-core >= 1.2")
