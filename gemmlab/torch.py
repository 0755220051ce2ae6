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

_o_mm = _o_mm_out = _o_addmm = _o_addmm_out = _o_bmm = _o_bmm_out = _o_baddbmm = _o_baddbmm_out = None
_c_mm, _c_mm_out, _c_addmm, _c_addmm_out, _c_bmm, _c_bmm_out, _c_baddbmm, _c_baddbmm_out = (_counts[op] for op in OPS)


def _bind_originals():
    global _o_mm, _o_mm_out, _o_addmm, _o_addmm_out, _o_bmm, _o_bmm_out, _o_baddbmm, _o_baddbmm_out
    (_o_mm, _o_mm_out, _o_addmm, _o_addmm_out, _o_bmm, _o_bmm_out, _o_baddbmm, _o_baddbmm_out) = (
        _orig[(_KEY, op)] for op in OPS)


def _gemm(a, b, c, alpha, beta, out, precision):
    """The one place the kernels call gemmlab (tests on machines without a GPU replace it)."""
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


def _mm(ks, self, mat2):
    s = _state
    if s is not None and _two(self, mat2, 2):
        try:
            r = _gemm(self, mat2, None, 1.0, 0.0, None, s.precision)
            _c_mm[0] += 1
            return r
        except GemmlabError as e:
            _refused("mm", e, s, self, mat2)
    _c_mm[1] += 1
    return _o_mm.call_boxed(ks, self, mat2)


def _mm_out(ks, self, mat2, *, out):
    s = _state
    if (s is not None and _two(self, mat2, 2) and _other(out, self)
            and out.shape == (self.shape[0], mat2.shape[1])):
        try:
            _gemm(self, mat2, None, 1.0, 0.0, out, s.precision)
            _c_mm_out[0] += 1
            return out
        except GemmlabError as e:
            _refused("mm.out", e, s, self, mat2)
    _c_mm_out[1] += 1
    return _o_mm_out.call_boxed(ks, self, mat2, out=out)


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


def _addmm(ks, self, mat1, mat2, *, beta=1, alpha=1):
    s = _state
    if (s is not None and _two(mat1, mat2, 2) and _other(self, mat1)
            and type(beta) in _REAL and type(alpha) in _REAL):
        c = _c_of(self, (mat1.shape[0], mat2.shape[1]), beta)
        if c is not False:
            try:
                r = _gemm(mat1, mat2, c, alpha, beta, None, s.precision)
                _c_addmm[0] += 1
                return r
            except GemmlabError as e:
                _refused("addmm", e, s, mat1, mat2)
    _c_addmm[1] += 1
    return _o_addmm.call_boxed(ks, self, mat1, mat2, beta=beta, alpha=alpha)


def _addmm_out(ks, self, mat1, mat2, *, beta=1, alpha=1, out):
    s = _state
    if (s is not None and _two(mat1, mat2, 2) and _other(self, mat1) and _other(out, mat1)
            and type(beta) in _REAL and type(alpha) in _REAL and out.shape == (mat1.shape[0], mat2.shape[1])):
        c = _c_of(self, out.shape, beta)
        if c is not False:
            try:
                _gemm(mat1, mat2, c, alpha, beta, out, s.precision)
                _c_addmm_out[0] += 1
                return out
            except GemmlabError as e:
                _refused("addmm.out", e, s, mat1, mat2)
    _c_addmm_out[1] += 1
    return _o_addmm_out.call_boxed(ks, self, mat1, mat2, beta=beta, alpha=alpha, out=out)


def _bmm(ks, self, mat2):
    s = _state
    if s is not None and _two(self, mat2, 3):
        try:
            r = _gemm(self, mat2, None, 1.0, 0.0, None, s.precision)
            _c_bmm[0] += 1
            return r
        except GemmlabError as e:
            _refused("bmm", e, s, self, mat2)
    _c_bmm[1] += 1
    return _o_bmm.call_boxed(ks, self, mat2)


def _bmm_out(ks, self, mat2, *, out):
    s = _state
    if (s is not None and _two(self, mat2, 3) and _other(out, self)
            and out.shape == (self.shape[0], self.shape[1], mat2.shape[2])):
        try:
            _gemm(self, mat2, None, 1.0, 0.0, out, s.precision)
            _c_bmm_out[0] += 1
            return out
        except GemmlabError as e:
            _refused("bmm.out", e, s, self, mat2)
    _c_bmm_out[1] += 1
    return _o_bmm_out.call_boxed(ks, self, mat2, out=out)


def _baddbmm(ks, self, batch1, batch2, *, beta=1, alpha=1):
    s = _state
    if (s is not None and _two(batch1, batch2, 3) and _other(self, batch1)
            and type(beta) in _REAL and type(alpha) in _REAL):
        c = _c_of(self, (batch1.shape[0], batch1.shape[1], batch2.shape[2]), beta)
        if c is not False:
            try:
                r = _gemm(batch1, batch2, c, alpha, beta, None, s.precision)
                _c_baddbmm[0] += 1
                return r
            except GemmlabError as e:
                _refused("baddbmm", e, s, batch1, batch2)
    _c_baddbmm[1] += 1
    return _o_baddbmm.call_boxed(ks, self, batch1, batch2, beta=beta, alpha=alpha)


def _baddbmm_out(ks, self, batch1, batch2, *, beta=1, alpha=1, out):
    s = _state
    if (s is not None and _two(batch1, batch2, 3) and _other(self, batch1) and _other(out, batch1)
            and type(beta) in _REAL and type(alpha) in _REAL
            and out.shape == (batch1.shape[0], batch1.shape[1], batch2.shape[2])):
        c = _c_of(self, out.shape, beta)
        if c is not False:
            try:
                _gemm(batch1, batch2, c, alpha, beta, out, s.precision)
                _c_baddbmm_out[0] += 1
                return out
            except GemmlabError as e:
                _refused("baddbmm.out", e, s, batch1, batch2)
    _c_baddbmm_out[1] += 1
    return _o_baddbmm_out.call_boxed(ks, self, batch1, batch2, beta=beta, alpha=alpha, out=out)


_KERNELS = {"mm": _mm, "mm.out": _mm_out, "addmm": _addmm, "addmm.out": _addmm_out,
            "bmm": _bmm, "bmm.out": _bmm_out, "baddbmm": _baddbmm, "baddbmm.out": _baddbmm_out}
