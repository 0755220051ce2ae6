"""``gemmlab.torch``: torch's own FP32 matmuls on gemmlab, with no change to the model.

    import gemmlab.torch

    gemmlab.torch.enable()                        # from here on: torch.mm, @, F.linear ... on gemmlab
    gemmlab.torch.enable(precision="tf32x3")      # the same at a precision (None: gemmlab's default)
    gemmlab.torch.disable()                       # torch's own kernels again

    with gemmlab.torch.enable():                  # or for a block: the state before it comes back at
        loss = model(x).sum()                     # the end (blocks nest; disable() is a block too)
        loss.backward()

While enabled, the CUDA kernels of ``aten::mm``, ``aten::addmm``, ``aten::bmm`` and
``aten::baddbmm`` and of their ``out=`` forms are gemmlab's. ``torch.mm``, ``torch.matmul`` and
``@``, ``F.linear`` / ``nn.Linear``, ``nn.MultiheadAttention``'s projections, ``torch.bmm``,
``torch.baddbmm``, ``torch.addmm`` all reach them (matmul and linear decompose into them), in the
forward and in autograd's backward (whose formulas are torch's own, calling mm again), and so do
the GEMMs of ``torch.compile``'d code (Inductor calls ``mm``/``addmm``/``bmm`` with ``out=``;
Inductor's own Triton GEMMs, chosen with mode="max-autotune", do not). Anything gemmlab does not
take goes to torch's original kernel unchanged: other dtypes, tensors on different devices, an
``out=`` torch would have to resize, and any call gemmlab refuses (a warning, once per operator
and reason; ``strict=True`` raises instead). CPU tensors never reach these kernels.

How: ``torch.library.Library("aten", "IMPL")`` kernels on the CUDA dispatch key, one Python call
per GEMM, below autograd (no TorchDispatchMode, which costs a Python call for every operator of
the model). torch's own kernel is kept as a handle from ``torch.library.get_kernel`` (torch >=
2.9) taken before the first override, and called for whatever falls through. ``disable()``
removes the registrations (the dispatcher's table is torch's again: no cost left).

The state is process-wide (the dispatcher is), not per thread; enable/disable from outside
compiled code. ``stats()`` counts, per operator, the calls gemmlab ran and the calls that fell
through to torch.
"""
from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import torch

import gemmlab as _gemmlab
from gemmlab.api import product as _product
from gemmlab.errors import GemmlabError
from gemmlab.precision import PRECISIONS

__all__ = ["enable", "disable", "is_enabled", "settings", "stats", "reset_stats", "OPS"]

# The aten operators that gemmlab takes over (overload names as the dispatcher spells them).
OPS = ("mm", "mm.out", "addmm", "addmm.out", "bmm", "bmm.out", "baddbmm", "baddbmm.out")

_KEY = "CUDA"           # the dispatch key the kernels go on (tests on CPU-only machines: "CPU")
_F32 = torch.float32
_REAL = (int, float)


@dataclass(frozen=True)
class Settings:
    precision: str | None = None    # None: gemmlab's process default (gemmlab.set_precision)
    strict: bool = False            # a call gemmlab refuses raises instead of falling through


_state: Settings | None = None       # what the kernels read on every call; None: disabled
_lock = threading.RLock()
_lib = None                          # the torch.library.Library holding the overrides, while enabled
_orig: dict = {}                     # (key, overload) -> torch's kernel (SafeKernelFunction)
_counts = {op: [0, 0] for op in OPS}  # overload -> [ran on gemmlab, fell through to torch]
_warned: set = set()


# ---- switching -------------------------------------------------------------------------------

class _Switch:
    """What enable() and disable() return: the new state is already in force; used as a context
    manager, the state from before the call comes back at the end of the block."""

    def __init__(self, previous: Settings | None):
        self._previous = previous

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _apply(self._previous)
        return False

    def __repr__(self):
        return f"<gemmlab.torch: {'enabled ' + repr(_state) if _state else 'disabled'}>"


def enable(precision: str | None = None, *, strict: bool = False) -> _Switch:
    """Run torch's float32 CUDA GEMMs (mm, addmm, bmm, baddbmm and their out= forms; matmul, @
    and linear through them) on gemmlab from now on, at ``precision`` ("ieee", "tf32",
    "tf32x3"; None: gemmlab's process default). ``strict``: raise where gemmlab refuses a float32
    CUDA call instead of handing it to torch (with a warning). Usable as a context manager."""
    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"gemmlab.torch.enable: precision={precision!r}; expected None (gemmlab's default) "
                         f"or one of {', '.join(map(repr, PRECISIONS))}")
    _not_compiling("enable")
    with _lock:
        previous = _state
        _apply(Settings(precision, bool(strict)))
    return _Switch(previous)


def disable() -> _Switch:
    """torch's own kernels from now on (the overrides are removed). Usable as a context manager
    (inside ``with gemmlab.torch.disable():`` torch runs; the state before comes back after)."""
    _not_compiling("disable")
    with _lock:
        previous = _state
        _apply(None)
    return _Switch(previous)


def _not_compiling(what: str) -> None:
    if torch.compiler.is_compiling():
        raise RuntimeError(f"gemmlab.torch.{what}() inside code that torch.compile traces: call it outside the "
                           f"compiled function (it switches torch's dispatcher for the whole process, and compiled "
                           f"code picks the switch up when it runs: compile once, run with or without enable())")


def is_enabled() -> bool:
    return _state is not None


def settings() -> Settings | None:
    """The state in force: a :class:`Settings` (precision, strict), or None when disabled."""
    return _state


def stats() -> dict:
    """Per aten overload: {"gemmlab": calls gemmlab ran, "torch": calls handed to torch}, since
    the process started or the last reset_stats()."""
    return {op: {"gemmlab": n[0], "torch": n[1]} for op, n in _counts.items()}


def reset_stats() -> None:
    for n in _counts.values():
        n[0] = n[1] = 0


def _apply(state: Settings | None) -> None:
    global _state, _lib
    with _lock:
        if state is None:
            _state = None
            if _lib is not None:
                lib, _lib = _lib, None
                lib._destroy()
            return
        if _lib is None:
            _lib = _register()
        _state = state


def _register():
    if not hasattr(torch.library, "get_kernel"):
        raise RuntimeError(f"gemmlab.torch.enable needs torch >= 2.9 (torch.library.get_kernel); this is torch "
                           f"{torch.__version__}. Use gemmlab.nn.Linear or torch.ops.gemmlab.* instead")
    for op in OPS:  # torch's kernels, taken before the first override (later they would be ours)
        if (_KEY, op) not in _orig:
            try:
                _orig[(_KEY, op)] = torch.library.get_kernel(f"aten::{op}", _KEY)
            except RuntimeError:  # no kernel for this key in this build (CPU-only torch): nothing to take over
                _orig[(_KEY, op)] = None
    _bind_originals()
    lib = torch.library.Library("aten", "IMPL")
    try:
        with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
            warnings.simplefilter("ignore")
            for op in OPS:
                if _orig[(_KEY, op)] is not None:
                    lib.impl(op, _KERNELS[op], _KEY, with_keyset=True)
    except BaseException:
        lib._destroy()
        raise
    return lib


# ---- the kernels ---------------------------------------------------------------------------------
# Each: (dispatch key set, the aten arguments). gemmlab runs the call when every tensor is float32
# on one device and the shapes fit; else, or where gemmlab refuses it, torch's own kernel does.

_torch_kernel = {op: None for op in OPS}  # torch's own kernel per overload, bound at registration


def _bind_originals():
    for op in OPS:
        _torch_kernel[op] = _orig[(_KEY, op)]


def _gemm(a, b, c, alpha, beta, out, precision):
    """The one place the kernels call gemmlab (tests on machines without a GPU replace it)."""
    if c is None and out is None and alpha == 1 and beta == 0:
        return _product(a, b, precision, a.dim() == 3)
    if a.dim() == 3:
        return _gemmlab.gemm_batched(a, b, c, alpha, beta, out, precision=precision)
    return _gemmlab.gemm(a, b, c, alpha, beta, out, precision=precision)


def _refused(op: str, error: Exception, s: Settings, a, b) -> None:
    """gemmlab refused a call it was given: raise (strict), else warn once per operator and kind
    of error, and let torch run it."""
    if s.strict:
        raise error
    key = (op, type(error).__name__)
    if key not in _warned:
        _warned.add(key)
        hint = (" (warm up before capturing a CUDA graph: run the same shapes once first)"
                if type(error).__name__ == "NotReady" else "")
        warnings.warn(f"gemmlab.torch: aten::{op} on {tuple(a.shape)} x {tuple(b.shape)} was handed to torch: "
                      f"gemmlab refused it ({type(error).__name__}: {error}){hint}", RuntimeWarning, stacklevel=3)


def _two(a, b, rank):
    """a and b float32 of ``rank`` on one device with matching inner sizes (and batches)."""
    return (a.dtype is _F32 and b.dtype is _F32 and a.dim() == rank and b.dim() == rank
            and a.shape[-1] == b.shape[-2] and (rank == 2 or a.shape[0] == b.shape[0])
            and a.get_device() == b.get_device())


def _other(t, like) -> bool:
    """An extra tensor (self of addmm, out) that is float32 on like's device."""
    return t.dtype is _F32 and t.get_device() == like.get_device()


def _c_of(self, shape, beta):
    """addmm's / baddbmm's self broadcast to the product's shape (None when beta is 0: not
    read), or False when it does not broadcast (torch then says why)."""
    if beta == 0:
        return None
    if self.dim() > len(shape):
        return False
    try:
        return self.expand(shape)
    except RuntimeError:
        return False


def _product_kernels(mul: str, add: str, rank: int) -> dict:
    """The four aten kernels of one product of rank-``rank`` operands: ``mul`` (mm, bmm), ``add``
    (addmm, baddbmm: beta * self + alpha * product) and the .out form of each."""
    mul_out, add_out = mul + ".out", add + ".out"
    n_mul, n_mul_out, n_add, n_add_out = _counts[mul], _counts[mul_out], _counts[add], _counts[add_out]
    tk = _torch_kernel

    def shape(a, b):
        return (a.shape[0], b.shape[1]) if rank == 2 else (a.shape[0], a.shape[1], b.shape[2])

    def k_mul(ks, self, mat2):
        s = _state
        if s is not None and _two(self, mat2, rank):
            try:
                r = _gemm(self, mat2, None, 1.0, 0.0, None, s.precision)
                n_mul[0] += 1
                return r
            except GemmlabError as e:
                _refused(mul, e, s, self, mat2)
        n_mul[1] += 1
        return tk[mul].call_boxed(ks, self, mat2)

    def k_mul_out(ks, self, mat2, *, out):
        s = _state
        if s is not None and _two(self, mat2, rank) and _other(out, self) and out.shape == shape(self, mat2):
            try:
                _gemm(self, mat2, None, 1.0, 0.0, out, s.precision)
                n_mul_out[0] += 1
                return out
            except GemmlabError as e:
                _refused(mul_out, e, s, self, mat2)
        n_mul_out[1] += 1
        return tk[mul_out].call_boxed(ks, self, mat2, out=out)

    def k_add(ks, self, m1, m2, *, beta=1, alpha=1):
        s = _state
        if (s is not None and _two(m1, m2, rank) and _other(self, m1)
                and type(beta) in _REAL and type(alpha) in _REAL):
            c = _c_of(self, shape(m1, m2), beta)
            if c is not False:
                try:
                    r = _gemm(m1, m2, c, alpha, beta, None, s.precision)
                    n_add[0] += 1
                    return r
                except GemmlabError as e:
                    _refused(add, e, s, m1, m2)
        n_add[1] += 1
        return tk[add].call_boxed(ks, self, m1, m2, beta=beta, alpha=alpha)

    def k_add_out(ks, self, m1, m2, *, beta=1, alpha=1, out):
        s = _state
        if (s is not None and _two(m1, m2, rank) and _other(self, m1) and _other(out, m1)
                and type(beta) in _REAL and type(alpha) in _REAL and out.shape == shape(m1, m2)):
            c = _c_of(self, out.shape, beta)
            if c is not False:
                try:
                    _gemm(m1, m2, c, alpha, beta, out, s.precision)
                    n_add_out[0] += 1
                    return out
                except GemmlabError as e:
                    _refused(add_out, e, s, m1, m2)
        n_add_out[1] += 1
        return tk[add_out].call_boxed(ks, self, m1, m2, beta=beta, alpha=alpha, out=out)

    return {mul: k_mul, mul_out: k_mul_out, add: k_add, add_out: k_add_out}


_KERNELS = {**_product_kernels("mm", "addmm", 2), **_product_kernels("bmm", "baddbmm", 3)}
