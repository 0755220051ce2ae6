"""Host side of s11: TMA tensor maps (CUtensorMap) for the A and B operands.

The rules of ``cuTensorMapEncodeTiled`` are checked here first (``problems``), in plain Python,
so a stage can decide without a GPU whether a problem can use TMA (and hand it to s10 if not).
A stage describes its maps as :class:`TensorMapArg` kernel arguments (which operand, shape,
strides, box, swizzle); the plan holds one :class:`TensorMapDescriptor` per argument: the 128-byte
``__grid_constant__`` parameter itself, encoded by the driver straight into the launch's
parameter buffer, and pointed at a new address only when the operand's address changes (after a
few driver encodings, by patching the address word: :class:`TensorMapDescriptor`).

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
            # The driver zero-fills the overhang; a caller that wants boxes no larger than the
            # tensor (none of gemmlab's stages now: s11 and s12 pass overhang=True) is told.
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


ADDRESS_WORD_UNKNOWN, NO_ADDRESS_WORD = None, -1


class TensorMapDescriptor:
    """A CUtensorMap (128 bytes, 64-byte aligned host storage) for a float32 tensor whose shape,
    strides, box and swizzle are fixed; :meth:`encode` points it at a base address. ``addr`` is
    what a kernel parameter buffer points at.

    Pointing a map at a new address is the common case (every call on fresh tensors), and the
    driver's cuTensorMapEncodeTiled costs ~10 us of host time per map on the H200's host
    (scripts/training_hostprof.py). Only the global-address field depends on the address (PTX's
    ``tensormap.replace.tile.global_address`` replaces that field alone), so once a map has been
    encoded by the driver at two addresses, the 8-byte word that holds the raw address is found
    by comparing the two encodings (``address_word``), a third driver encoding is checked
    byte for byte against the patched bytes, and from then on a new address is one 8-byte store.
    Where the encodings do not show a raw address word, or the check fails, the map keeps asking
    the driver (``address_word`` = NO_ADDRESS_WORD)."""

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
        self.address_word = ADDRESS_WORD_UNKNOWN  # byte offset of the raw-address word, once known
        self.driver_encodes = 0
        self._seen = None                         # (address, bytes) of the last driver encoding
        self._word = None                         # the ctypes u64 over the address word (patching)

    @property
    def verified(self) -> bool:
        """A driver encoding matched the patched bytes: new addresses are patched from now on."""
        return self._word is not None

    def encode(self, ptr: int) -> None:
        if ptr == self.ptr:
            return
        if self._word is not None:
            self._word.value = ptr
            self.ptr = ptr
            return
        self._driver_encode(ptr)
        self.ptr = ptr
        self._learn(ptr, ctypes.string_at(self.addr, 128))

    def _driver_encode(self, ptr: int) -> None:
        from ..jit.launch import check_result, libcuda

        err = libcuda().cuTensorMapEncodeTiled(
            ctypes.c_void_p(self.addr), self.data_type, self.rank, ctypes.c_void_p(ptr), self.dims, self.strides, self.box,
            self.elem, 0, self.swizzle, 3, 0)  # no interleave, swizzle, L2 256B promotion, zero fill
        check_result(err, "cuTensorMapEncodeTiled")
        self.driver_encodes += 1

    def _learn(self, ptr: int, now: bytes) -> None:
        """After a driver encoding at ``ptr``: find, then check, the raw-address word."""
        seen, self._seen = self._seen, (ptr, now)
        if seen is None or self.address_word == NO_ADDRESS_WORD:
            return
        if self.address_word is ADDRESS_WORD_UNKNOWN:
            self.address_word = address_word(seen[0], seen[1], ptr, now)
            return
        if patched(seen[1], self.address_word, ptr) == now:
            self._word = ctypes.c_uint64.from_address(self.addr + self.address_word)
        else:
            self.address_word = NO_ADDRESS_WORD


def _u64(blob: bytes, offset: int) -> int:
    return int.from_bytes(blob[offset:offset + 8], "little")


def patched(blob: bytes, offset: int, ptr: int) -> bytes:
    """``blob`` with the 8-byte little-endian word at ``offset`` replaced by ``ptr``."""
    return blob[:offset] + ptr.to_bytes(8, "little") + blob[offset + 8:]


def address_word(ptr1: int, blob1: bytes, ptr2: int, blob2: bytes) -> int:
    """The byte offset of the 8-byte word that holds the raw address in two encodings of one map
    at two different addresses (every differing byte inside it, equal elsewhere), else
    NO_ADDRESS_WORD."""
    if ptr1 == ptr2 or len(blob1) != len(blob2):
        return NO_ADDRESS_WORD
    diff = [i for i in range(len(blob1)) if blob1[i] != blob2[i]]
    for off in range(0, len(blob1) - 7, 8):
        if (_u64(blob1, off) == ptr1 and _u64(blob2, off) == ptr2 and all(off <= i < off + 8 for i in diff)):
            return off
    return NO_ADDRESS_WORD


def encode(ptr: int, shape, strides, box, swizzle_bytes: int = 0) -> TensorMapDescriptor:
    """A descriptor for a float32 tensor at ``ptr`` (outermost first); raises ValueError naming
    the broken rule before the driver is asked."""
    bad = problems(ptr, shape, strides, box, swizzle_bytes)
    if bad:
        raise ValueError("TMA tensor map: " + "; ".join(bad))
    desc = TensorMapDescriptor(shape, strides, box, swizzle_bytes)
    desc.encode(ptr)
    return desc
