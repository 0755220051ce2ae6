"""Host side of s11: TMA tensor maps (CUtensorMap) for the A and B operands.

The rules of ``cuTensorMapEncodeTiled`` are checked here first (``problems``), in plain Python,
so a stage can decide without a GPU whether a problem can use TMA (and hand it to s10 if not).
A stage describes its maps as :class:`TensorMapArg` kernel arguments (which operand, shape,
strides, box, swizzle); the plan holds one :class:`TensorMapDescriptor` per argument: the 128-byte
``__grid_constant__`` parameter itself, encoded by the driver straight into the launch's
parameter buffer, and re-encoded only when the operand's address changes.

Shapes and strides here are outermost first (row-major order, like the arrays): a 3-D map is
``(batch, outer, inner)`` with the inner dimension contiguous; the driver's order is reversed.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

ELEMENT_BYTES = 4  # float32
MAX_BOX = 256
MAX_DIM = 2**32
MAX_STRIDE_BYTES = 2**40
SWIZZLE_BYTES = (0, 32, 64, 128)
FLOAT32, TFLOAT32 = 7, 11  # CUtensorMapDataType


def problems(ptr: int, shape, strides, box, swizzle_bytes: int = 0, overhang: bool = False) -> list[str]:
    """Messages for every rule of cuTensorMapEncodeTiled (and gemmlab's own for s11: each box
    dimension no larger than the tensor's, unless ``overhang``) the map would break (empty: encodable).

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
        elif n > size and not overhang:
            # The driver would zero-fill the overhang; gemmlab sends problems smaller than one
            # box to s10 instead (boxes only ever hang off the far edge).
            out.append(f"box dimension {d} is {n}, larger than the tensor's {size}")
    inner_bytes = box[-1] * ELEMENT_BYTES
    if inner_bytes % 16:
        out.append(f"box inner dimension is {inner_bytes} bytes; TMA needs a multiple of 16")
    if swizzle_bytes not in SWIZZLE_BYTES:
        out.append(f"swizzle {swizzle_bytes} B: TMA has 0 (none), 32, 64 or 128")
    elif swizzle_bytes and inner_bytes > swizzle_bytes:
        out.append(f"box inner dimension is {inner_bytes} bytes, wider than the {swizzle_bytes}-byte swizzle")
    return out


@dataclass(frozen=True)
class TensorMapArg:
    """A TMA descriptor kernel argument over operand ``operand`` ("a" or "b" of the Problem),
    outermost first (see :func:`problems`); the plan turns it into a TensorMapDescriptor."""

    operand: str
    shape: tuple
    strides: tuple
    box: tuple
    swizzle: int
    data_type: int = 7  # CU_TENSOR_MAP_DATA_TYPE_FLOAT32; TFLOAT32 (11): the copy rounds to tf32


def available() -> bool:
    """Whether the driver can encode tensor maps."""
    try:
        from ..jit.launch import libcuda

        return hasattr(libcuda(), "cuTensorMapEncodeTiled")
    except Exception:
        return False


class TensorMapDescriptor:
    """A CUtensorMap (128 bytes, 64-byte aligned host storage) for a float32 tensor whose shape,
    strides, box and swizzle are fixed; :meth:`encode` points it at a base address (the driver is
    called only when the address changes). ``addr`` is what a kernel parameter buffer points at."""

    def __init__(self, shape, strides, box, swizzle_bytes: int = 0, data_type: int = FLOAT32):
        shape, strides, box = tuple(map(int, shape)), tuple(map(int, strides)), tuple(map(int, box))
        self.raw = ctypes.create_string_buffer(128 + 64)
        self.addr = (ctypes.addressof(self.raw) + 63) // 64 * 64
        self.rank = len(shape)
        # The driver's order is innermost first; strides exclude the innermost (unit) one, in bytes.
        self.dims = (ctypes.c_uint64 * self.rank)(*reversed(shape))
        self.strides = (ctypes.c_uint64 * max(self.rank - 1, 1))(*reversed([s * ELEMENT_BYTES for s in strides[:-1]]))
        self.box = (ctypes.c_uint * self.rank)(*reversed(box))
        self.elem = (ctypes.c_uint * self.rank)(*([1] * self.rank))
        self.swizzle = {0: 0, 32: 1, 64: 2, 128: 3}[swizzle_bytes]
        self.data_type = int(data_type)
        self.ptr = None

    def encode(self, ptr: int) -> None:
        if ptr == self.ptr:
            return
        from ..jit.launch import check_result, libcuda

        err = libcuda().cuTensorMapEncodeTiled(
            ctypes.c_void_p(self.addr), self.data_type, self.rank, ctypes.c_void_p(ptr), self.dims, self.strides, self.box,
            self.elem, 0, self.swizzle, 3, 0)  # no interleave, swizzle, L2 256B promotion, zero fill
        check_result(err, "cuTensorMapEncodeTiled")
        self.ptr = ptr


def encode(ptr: int, shape, strides, box, swizzle_bytes: int = 0) -> TensorMapDescriptor:
    """A descriptor for a float32 tensor at ``ptr`` (outermost first); raises ValueError naming
    the broken rule before the driver is asked."""
    bad = problems(ptr, shape, strides, box, swizzle_bytes)
    if bad:
        raise ValueError("TMA tensor map: " + "; ".join(bad))
    desc = TensorMapDescriptor(shape, strides, box, swizzle_bytes)
    desc.encode(ptr)
    return desc
