"""gemmlab's GEMMs as torch operators: ``torch.ops.gemmlab.{mm, bmm, gemm, linear}``.

    import gemmlab.torch_ops          # registers the operators (needs torch)
    y = torch.ops.gemmlab.mm(a, b)                       # a @ b, 2-D
    y = torch.ops.gemmlab.bmm(a, b)                      # a @ b, 3-D, equal batches
    y = torch.ops.gemmlab.gemm(a, b, c, alpha, beta)     # alpha * a @ b + beta * c, 2-D or 3-D
    y = torch.ops.gemmlab.linear(x, weight, bias)        # x @ weight.T + bias, x of any leading dims
    y = torch.ops.gemmlab.mm(a, b, "tf32x3")             # every operator takes a last argument
                                                         # precision (None: gemmlab's default)

The operators are defined with ``torch.library.Library`` and two kernels each, not with the
``torch.library.custom_op`` wrapper (whose Python autograd and aliasing checks cost about 27 µs a
call on the H200's host, results/h200/overhead):

- an **Autograd** kernel (all backends), the one the dispatcher calls first. When no gradient is
  wanted and the arguments are plain CPU/CUDA tensors (the dispatch key set is exactly backend +
  autograd: no FakeTensor, functionalization, TorchDispatchMode ...) it runs the implementation
  directly: one Python call per operator call. When a gradient is wanted it runs a
  ``torch.autograd.Function`` whose backward calls these operators again (double backward works);
  otherwise (tracing, modes) it redispatches below autograd, as torch's own ops do;
- a **CompositeExplicitAutograd** kernel: the same implementation, for those redispatches;
- a fake (meta) implementation (``torch.library.register_fake``) with exactly the real output's
  shape, strides, dtype and device, so FakeTensorMode, torch.compile(fullgraph=True), torch.export
  and ``torch.library.opcheck`` trace through them.

The implementation hands the call to ``gemmlab.gemm`` / ``gemmlab.gemm_batched``, which allocates
the contiguous float32 result and launches on torch's current stream; transposed views such as
``weight.t()`` are passed as they are (gemmlab reads them without a copy); linear's bias is fused
as C with beta = 1 (a stride-0 ``bias.expand(M, N)``). Nothing else runs on a good call: the
operator's own checks (dtype, rank, shape, device, naming the operator) run in the fake
implementation, and in the real one only after gemmlab refused a call, to say which argument was
wrong. Gradients: grad_a = alpha * g @ b^T, grad_b = alpha * a^T @ g, grad_c = beta * g; for linear
grad_x = g @ W, grad_W = g^T @ x, grad_bias = g summed over the leading dims; only the gradients
that autograd asks for are computed. Docs: docs/torch.md.
"""

import math
from typing import Optional

import torch
from torch import Tensor

import gemmlab
from gemmlab.api import product as _product
from gemmlab.precision import PRECISIONS

__all__ = ["mm", "bmm", "gemm", "linear", "OPS", "SCHEMAS"]

OPS = ("mm", "bmm", "gemm", "linear")
SCHEMAS = {
    "mm": "mm(Tensor a, Tensor b, str? precision=None) -> Tensor",
    "bmm": "bmm(Tensor a, Tensor b, str? precision=None) -> Tensor",
    "gemm": "gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1., float beta=0., str? precision=None) -> Tensor",
    "linear": "linear(Tensor x, Tensor weight, Tensor? bias=None, str? precision=None) -> Tensor",
}


# ---- the one place gemmlab is called (tests on machines without a GPU replace it) ------------

def _run(op: str, a: Tensor, b: Tensor, c: Optional[Tensor], alpha: float, beta: float,
         precision: Optional[str]) -> Tensor:
    """``alpha * a @ b + beta * c`` through gemmlab (2-D: gemm, 3-D: gemm_batched): a new
    contiguous tensor on torch's current stream. gemmlab checks everything itself (its plan cache
    makes a repeated call's checks one dictionary lookup; a plain product takes api.product's
    cheaper key)."""
    if c is None and alpha == 1.0 and beta == 0.0:
        return _product(a, b, precision, a.dim() == 3)
    if a.dim() == 3:
        return gemmlab.gemm_batched(a, b, c, alpha, beta, precision=precision)
    return gemmlab.gemm(a, b, c, alpha, beta, precision=precision)


_REFUSED = (TypeError, ValueError, gemmlab.GemmlabError)


def _explain(op: str, args: tuple, precision, error) -> None:
    """After gemmlab refused a call: raise the operator's own error (naming the operator and the
    argument) where one of its checks fails, else return (the caller re-raises gemmlab's)."""
    _check_precision(op, precision)
    _SHAPE[op](*args)
    t = args[0]
    if not t.is_cuda:
        raise ValueError(f"gemmlab::{op}: the inputs are on {t.device}; gemmlab runs on CUDA tensors "
                         f"(move them with .cuda())") from error


# ---- checks of the fake implementations (and of the real ones once gemmlab refused a call) ----
# Messages are built only when a check fails.

def _check_precision(op: str, precision) -> None:
    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"gemmlab::{op}: precision={precision!r}; expected None or one of "
                         f"{', '.join(map(repr, PRECISIONS))}")


def _float32(op: str, **tensors) -> None:
    for name, t in tensors.items():
        if t is not None and t.dtype != torch.float32:
            raise TypeError(f"gemmlab::{op}: {name} has dtype {t.dtype}; gemmlab computes float32 only "
                            f"(convert with .float())")


def _rank(op: str, name: str, t: Tensor, ranks) -> None:
    if t.dim() not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"gemmlab::{op}: {name} is {t.dim()}-D (shape {tuple(t.shape)}); expected {want}")


def _same_device(op: str, **tensors) -> None:
    devs = [t.device for t in tensors.values() if t is not None]
    if any(d != devs[0] for d in devs[1:]):
        raise ValueError(f"gemmlab::{op}: tensors on different devices (" +
                         ", ".join(f"{n} on {t.device}" for n, t in tensors.items() if t is not None) +
                         "); move them to one GPU")


def _check(cond, msg) -> None:
    """Raise ValueError(msg()) unless ``cond``; ``cond`` may be a symbolic bool (torch.compile
    with dynamic shapes), for which torch records the condition instead."""
    if cond is True:
        return
    torch._check_with(ValueError, cond, msg)


def _product_shape(op: str, a: Tensor, b: Tensor, batch_broadcast: bool) -> tuple:
    """The shape of a @ b (2-D or 3-D), after checking dtypes, ranks, devices and sizes."""
    _float32(op, a=a, b=b)
    _rank(op, "a", a, {"mm": (2,), "bmm": (3,)}.get(op, (2, 3)))
    _rank(op, "b", b, (a.dim(),))
    _same_device(op, a=a, b=b)
    *batch_a, M, K = a.shape
    *batch_b, K2, N = b.shape
    _check(K == K2, lambda: f"gemmlab::{op}: shape mismatch: a is {tuple(a.shape)}, b is {tuple(b.shape)} "
                            f"(a's columns must equal b's rows)")
    if not batch_a:
        return (M, N)
    ba, bb = batch_a[0], batch_b[0]
    if batch_broadcast:
        _check((ba == bb) | (ba == 1) | (bb == 1),
               lambda: f"gemmlab::{op}: a has batch {ba}, b has batch {bb} (equal, or one of them 1)")
        batch = bb if ba == 1 else ba
    else:
        _check(ba == bb, lambda: f"gemmlab::{op}: a has batch {ba}, b has batch {bb}; they must be equal")
        batch = ba
    return (batch, M, N)


def _gemm_shape(a, b, c) -> tuple:
    shape = _product_shape("gemm", a, b, batch_broadcast=True)
    if c is not None:
        _float32("gemm", c=c)
        _same_device("gemm", a=a, c=c)
        if c.dim() != len(shape):
            raise ValueError(f"gemmlab::gemm: c is {c.dim()}-D, expected {len(shape)}-D like a @ b")
        for i, n in enumerate(shape):
            _check(c.shape[i] == n, lambda: f"gemmlab::gemm: c has shape {tuple(c.shape)}, expected {shape} "
                                            f"(pass c.expand(...) to broadcast)")
    return shape


def _linear_shape(x, weight, bias) -> tuple:
    _float32("linear", x=x, weight=weight, bias=bias)
    _rank("linear", "weight", weight, (2,))
    if x.dim() < 1:
        raise ValueError("gemmlab::linear: x is 0-D; expected at least 1-D (..., in_features)")
    _same_device("linear", x=x, weight=weight, bias=bias)
    N, K = weight.shape
    _check(x.shape[-1] == K, lambda: f"gemmlab::linear: x has {x.shape[-1]} features (shape {tuple(x.shape)}), "
                                     f"weight is {tuple(weight.shape)} [out_features, in_features]")
    if bias is not None:
        _rank("linear", "bias", bias, (1,))
        _check(bias.shape[0] == N, lambda: f"gemmlab::linear: bias has shape {tuple(bias.shape)}, expected ({N},)")
    return (*x.shape[:-1], N)


def _rows(x: Tensor):
    """How many rows x has once its leading dims are flattened."""
    return math.prod(x.shape[:-1])


# ---- the implementations (real tensors) ------------------------------------------------------

def _mm_impl(a, b, precision=None):
    try:
        return _run("mm", a, b, None, 1.0, 0.0, precision)
    except _REFUSED as e:
        _explain("mm", (a, b), precision, e)
        raise


def _bmm_impl(a, b, precision=None):
    if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0]:  # gemm_batched would broadcast a batch of 1
        _product_shape("bmm", a, b, False)
    try:
        return _run("bmm", a, b, None, 1.0, 0.0, precision)
    except _REFUSED as e:
        _explain("bmm", (a, b), precision, e)
        raise


def _gemm_impl(a, b, c=None, alpha=1.0, beta=0.0, precision=None):
    try:
        return _run("gemm", a, b, c, float(alpha), float(beta), precision)
    except _REFUSED as e:
        _explain("gemm", (a, b, c), precision, e)
        raise


def _linear_impl(x, weight, bias=None, precision=None):
    try:
        if x.dim() == 2:
            x2, lead = x, None
        else:
            if x.dim() < 1:
                raise ValueError("x is 0-D")
            lead = x.shape[:-1]
            x2 = x.reshape(_rows(x), x.shape[-1])   # a view whenever the leading dims allow it
        if weight.dim() != 2 or (bias is not None and bias.dim() != 1):
            raise ValueError("weight or bias rank")
        if bias is None:
            out = _run("linear", x2, weight.t(), None, 1.0, 0.0, precision)
        else:   # stride-0 rows: gemmlab copies the bias into the output, then accumulates onto it
            out = _run("linear", x2, weight.t(), bias.expand(x2.shape[0], bias.shape[0]), 1.0, 1.0, precision)
    except _REFUSED as e:
        _explain("linear", (x, weight, bias), precision, e)
        raise
    return out if lead is None else out.view(*lead, out.shape[-1])


# ---- fake implementations ----------------------------------------------------------------------

def _mm_fake(a, b, precision=None):
    _check_precision("mm", precision)
    return a.new_empty(_product_shape("mm", a, b, False))


def _bmm_fake(a, b, precision=None):
    _check_precision("bmm", precision)
    return a.new_empty(_product_shape("bmm", a, b, False))


def _gemm_fake(a, b, c=None, alpha=1.0, beta=0.0, precision=None):
    _check_precision("gemm", precision)
    return a.new_empty(_gemm_shape(a, b, c))


def _linear_fake(x, weight, bias=None, precision=None):
    _check_precision("linear", precision)
    return x.new_empty(_linear_shape(x, weight, bias))


# ---- autograd ----------------------------------------------------------------------------------

def _mT(t: Tensor) -> Tensor:
    return t.transpose(-2, -1)


def _col_major(t: Tensor) -> bool:
    """A 2-D tensor stored column-major (e.g. weight.t()), not also row-major."""
    return t.stride(0) == 1 and t.stride(1) != 1 and t.shape[0] > 1


def _unbroadcast(grad: Tensor, like: Tensor) -> Tensor:
    """Sum a batched gradient back over the batch that ``like`` broadcast (3-D, batch 1)."""
    if grad.dim() == 3 and like.shape[0] == 1 and grad.shape[0] != 1:
        return grad.sum(0, keepdim=True)
    return grad


def _mm_backward(ctx, g):
    a, b = ctx.saved_tensors
    p = ctx.precision
    need_a, need_b = ctx.needs_input_grad[1:3]
    ga = gb = None
    mm_ = _OP["mm"]
    if need_a:  # g @ b^T, in a's layout (a column-major a gets (b @ g^T)^T)
        ga = mm_(b, g.t(), p).t() if _col_major(a) else mm_(g, b.t(), p)
    if need_b:  # a^T @ g, in b's layout (b = weight.t() gets (g^T @ a)^T: a row-major weight gradient)
        gb = mm_(g.t(), a, p).t() if _col_major(b) else mm_(a.t(), g, p)
    return None, ga, gb, None


def _bmm_backward(ctx, g):
    a, b = ctx.saved_tensors
    p = ctx.precision
    need_a, need_b = ctx.needs_input_grad[1:3]
    ga = _OP["bmm"](g, _mT(b), p) if need_a else None
    gb = _OP["bmm"](_mT(a), g, p) if need_b else None
    return None, ga, gb, None


def _gemm_backward(ctx, g):
    a, b = ctx.saved_tensors
    p, alpha, beta = ctx.precision, ctx.alpha, ctx.beta
    need_a, need_b, need_c = ctx.needs_input_grad[1:4]
    ga = gb = gc = None
    if need_a:
        ga = _unbroadcast(_OP["gemm"](g, _mT(b), None, alpha, 0.0, p), a)
    if need_b:
        gb = _unbroadcast(_OP["gemm"](_mT(a), g, None, alpha, 0.0, p), b)
    if need_c:
        gc = g * beta
    return None, ga, gb, gc, None, None, None


def _linear_backward(ctx, g):
    x, weight = ctx.saved_tensors
    p = ctx.precision
    N, K = weight.shape
    M = _rows(x)
    g2 = g.reshape(M, N)
    need_x, need_w, need_bias = ctx.needs_input_grad[1:4]
    gx = _OP["mm"](g2, weight, p).reshape(x.shape) if need_x else None
    gw = _OP["mm"](g2.t(), x.reshape(M, K), p) if need_w else None
    gbias = g2.sum(0) if need_bias else None
    return None, gx, gw, gbias, None


# The dispatch key sets of calls on plain CPU or CUDA tensors (backend + autograd; no FakeTensor,
# functionalization, TorchDispatchMode ... below autograd): for them the implementation runs
# directly instead of through a second dispatcher trip.
_PLAIN_KEYSETS = frozenset(
    torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, backend))
    .add(getattr(torch._C.DispatchKey, "Autograd" + backend)).raw_repr()
    for backend in ("CPU", "CUDA"))


def _forward(name, ks, args):
    """The operator's result for these arguments below autograd: the implementation itself for
    plain tensors, else a redispatch (the CompositeExplicitAutograd or fake kernel, through
    whatever modes are active)."""
    if ks.raw_repr() in _PLAIN_KEYSETS:
        return _DIRECT[name](*args)
    with torch._C._AutoDispatchBelowAutograd():
        return _OP[name](*args)


def _product_function(name: str, backward):
    """The autograd.Function of the two-operand operator ``name`` (mm, bmm)."""

    class Product(torch.autograd.Function):
        @staticmethod
        def forward(ctx, ks, a, b, precision):
            ctx.save_for_backward(a, b)
            ctx.precision = precision
            return _forward(name, ks, (a, b, precision))

    Product.backward = staticmethod(backward)
    Product.__name__ = Product.__qualname__ = f"_{name.upper()}"
    return Product


_MM = _product_function("mm", _mm_backward)
_BMM = _product_function("bmm", _bmm_backward)


class _GEMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, ks, a, b, c, alpha, beta, precision):
        ctx.save_for_backward(a, b)
        ctx.precision, ctx.alpha, ctx.beta = precision, float(alpha), float(beta)
        return _forward("gemm", ks, (a, b, c, alpha, beta, precision))

    backward = staticmethod(_gemm_backward)


class _LINEAR(torch.autograd.Function):
    @staticmethod
    def forward(ctx, ks, x, weight, bias, precision):
        ctx.save_for_backward(x, weight)
        ctx.precision = precision
        return _forward("linear", ks, (x, weight, bias, precision))

    backward = staticmethod(_linear_backward)


_grad_enabled = torch.is_grad_enabled
_any_requires_grad = torch._C._any_requires_grad


def _mm_autograd(ks, a, b, precision=None):
    if _grad_enabled() and _any_requires_grad(a, b):
        return _MM.apply(ks, a, b, precision)
    if ks.raw_repr() in _PLAIN_KEYSETS:
        return _mm_impl(a, b, precision)
    return _forward("mm", ks, (a, b, precision))


def _bmm_autograd(ks, a, b, precision=None):
    if _grad_enabled() and _any_requires_grad(a, b):
        return _BMM.apply(ks, a, b, precision)
    if ks.raw_repr() in _PLAIN_KEYSETS:
        return _bmm_impl(a, b, precision)
    return _forward("bmm", ks, (a, b, precision))


def _gemm_autograd(ks, a, b, c=None, alpha=1.0, beta=0.0, precision=None):
    if _grad_enabled() and _any_requires_grad(a, b, c):
        return _GEMM.apply(ks, a, b, c, alpha, beta, precision)
    if ks.raw_repr() in _PLAIN_KEYSETS:
        return _gemm_impl(a, b, c, alpha, beta, precision)
    return _forward("gemm", ks, (a, b, c, alpha, beta, precision))


def _linear_autograd(ks, x, weight, bias=None, precision=None):
    if _grad_enabled() and _any_requires_grad(x, weight, bias):
        return _LINEAR.apply(ks, x, weight, bias, precision)
    if ks.raw_repr() in _PLAIN_KEYSETS:
        return _linear_impl(x, weight, bias, precision)
    return _forward("linear", ks, (x, weight, bias, precision))


# ---- registration ------------------------------------------------------------------------------

_SHAPE = {"mm": lambda a, b: _product_shape("mm", a, b, False),
          "bmm": lambda a, b: _product_shape("bmm", a, b, False),
          "gemm": _gemm_shape, "linear": _linear_shape}
_DIRECT = {"mm": _mm_impl, "bmm": _bmm_impl, "gemm": _gemm_impl, "linear": _linear_impl}
_IMPL = dict(_DIRECT)  # what the CompositeExplicitAutograd kernels call (looked up per call)
_FAKE = {"mm": _mm_fake, "bmm": _bmm_fake, "gemm": _gemm_fake, "linear": _linear_fake}
_AUTOGRAD = {"mm": _mm_autograd, "bmm": _bmm_autograd, "gemm": _gemm_autograd, "linear": _linear_autograd}
FUNCTIONS = {"mm": _MM, "bmm": _BMM, "gemm": _GEMM, "linear": _LINEAR}  # tests swap a backward

_lib = torch.library.Library("gemmlab", "DEF")
for _name in OPS:
    _lib.define(SCHEMAS[_name])
    # A kernel that looks the implementation up at call time, so tests can replace _run / _IMPL.
    _lib.impl(_name, (lambda n: lambda *a: _IMPL[n](*a))(_name), "CompositeExplicitAutograd")
    _lib.impl(_name, _AUTOGRAD[_name], "Autograd", with_keyset=True)
    torch.library.register_fake(f"gemmlab::{_name}", _FAKE[_name], lib=_lib)
del _name

_OP = {name: getattr(torch.ops.gemmlab, name).default for name in OPS}
mm, bmm, gemm, linear = (_OP[n] for n in OPS)
