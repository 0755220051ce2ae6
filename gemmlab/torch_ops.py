"""gemmlab's GEMMs as torch operators: ``torch.ops.gemmlab.{mm, bmm, gemm, linear}``.

    import gemmlab.torch_ops          # registers the operators (needs torch)
    y = torch.ops.gemmlab.mm(a, b)                       # a @ b, 2-D
    y = torch.ops.gemmlab.bmm(a, b)                      # a @ b, 3-D, equal batches
    y = torch.ops.gemmlab.gemm(a, b, c, alpha, beta)     # alpha * a @ b + beta * c, 2-D or 3-D
    y = torch.ops.gemmlab.linear(x, weight, bias)        # x @ weight.T + bias, x of any leading dims

Each is a ``torch.library.custom_op`` with

- a real implementation that allocates a contiguous float32 output and runs ``gemmlab.gemm`` /
  ``gemmlab.gemm_batched`` into it on torch's current stream (transposed views such as
  ``weight.t()`` are passed as they are: gemmlab reads them without a copy; the bias is fused as
  C with beta = 1, a stride-0 ``bias.expand(M, N)``);
- a fake implementation (``register_fake``) that returns the same shape, strides, dtype and
  device without running anything, so torch.compile / export / FakeTensorMode trace through it;
- an autograd formula (``register_autograd``) whose GEMMs are these operators again
  (grad_a = alpha * g @ b^T, grad_b = alpha * a^T @ g, grad_c = beta * g; for linear
  grad_x = g @ W, grad_W = g^T @ x, grad_bias = g summed over the leading dims), computing only
  the gradients that autograd asks for.

Inputs are float32 CUDA tensors on one device. The dtype, rank and shape checks run in the fake
implementation too, so a bad call fails while torch.compile traces it (TypeError / ValueError
naming the operator); CPU tensors are refused when the operator runs. Docs: docs/torch.md.
"""

import math
from typing import Optional

import torch
from torch import Tensor

import gemmlab

__all__ = ["mm", "bmm", "gemm", "linear", "OPS"]

OPS = ("mm", "bmm", "gemm", "linear")


# ---- the one place gemmlab is called (tests on machines without a GPU replace it) ------------

def _run(op: str, a: Tensor, b: Tensor, c: Optional[Tensor], alpha: float, beta: float, out: Tensor) -> None:
    """``out = alpha * a @ b + beta * c`` through gemmlab (2-D: gemm, 3-D: gemm_batched).
    ``out`` was allocated on the first input's device, and every input is on that device."""
    if not out.is_cuda:
        raise ValueError(f"gemmlab::{op}: the inputs are on {out.device}; gemmlab runs on CUDA tensors "
                         f"(move them with .cuda())")
    if a.dim() == 2:
        gemmlab.gemm(a, b, c, alpha=alpha, beta=beta, out=out)
    else:
        gemmlab.gemm_batched(a, b, c, alpha=alpha, beta=beta, out=out)


# ---- checks shared by the real and the fake implementations ----------------------------------
# Messages are built only when a check fails (they are on every call's path).

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
    """The shape of a @ b (2-D or 3-D), after checking ranks and sizes."""
    _float32(op, a=a, b=b)
    _rank(op, "a", a, (2, 3))
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


# ---- the operators ---------------------------------------------------------------------------

@torch.library.custom_op("gemmlab::mm", mutates_args=())
def mm(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` for 2-D float32 CUDA tensors (like torch.mm)."""
    _rank("mm", "a", a, (2,))
    out = a.new_empty(_product_shape("mm", a, b, False))
    _run("mm", a, b, None, 1.0, 0.0, out)
    return out


@mm.register_fake
def _mm_fake(a, b):
    _rank("mm", "a", a, (2,))
    return a.new_empty(_product_shape("mm", a, b, False))


@torch.library.custom_op("gemmlab::bmm", mutates_args=())
def bmm(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` for 3-D float32 CUDA tensors with equal batches (like torch.bmm)."""
    _rank("bmm", "a", a, (3,))
    out = a.new_empty(_product_shape("bmm", a, b, False))
    _run("bmm", a, b, None, 1.0, 0.0, out)
    return out


@bmm.register_fake
def _bmm_fake(a, b):
    _rank("bmm", "a", a, (3,))
    return a.new_empty(_product_shape("bmm", a, b, False))


@torch.library.custom_op("gemmlab::gemm", mutates_args=())
def gemm(a: Tensor, b: Tensor, c: Optional[Tensor] = None, alpha: float = 1.0, beta: float = 0.0) -> Tensor:
    """``alpha * a @ b + beta * c`` (2-D, or 3-D where a batch of 1 in a or b broadcasts);
    without c (or with beta 0) c is not read."""
    out = a.new_empty(_gemm_shape(a, b, c))
    _run("gemm", a, b, c, float(alpha), float(beta), out)
    return out


@gemm.register_fake
def _gemm_fake(a, b, c=None, alpha=1.0, beta=0.0):
    return a.new_empty(_gemm_shape(a, b, c))


@torch.library.custom_op("gemmlab::linear", mutates_args=())
def linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """``x @ weight.T + bias`` like torch.nn.functional.linear: x is (..., in), weight (out, in),
    bias (out,) or None; the result is (..., out), contiguous."""
    shape = _linear_shape(x, weight, bias)
    out = x.new_empty(shape)
    M, (N, K) = _rows(x), weight.shape
    x2 = x.reshape(M, K)           # a view whenever the leading dims can be flattened without a copy
    c = None if bias is None else bias.expand(M, N)  # stride-0 rows: gemmlab copies it into out first
    _run("linear", x2, weight.t(), c, 1.0, 0.0 if bias is None else 1.0, out.view(M, N))
    return out


@linear.register_fake
def _linear_fake(x, weight, bias=None):
    return x.new_empty(_linear_shape(x, weight, bias))


# ---- autograd --------------------------------------------------------------------------------

def _mT(t: Tensor) -> Tensor:
    return t.transpose(-2, -1)


def _unbroadcast(grad: Tensor, like: Tensor) -> Tensor:
    """Sum a batched gradient back over the batch that ``like`` broadcast (3-D, batch 1)."""
    if grad.dim() == 3 and like.shape[0] == 1 and grad.shape[0] != 1:
        return grad.sum(0, keepdim=True)
    return grad


def _save_ab(ctx, inputs, output):
    a, b = inputs[0], inputs[1]
    ctx.save_for_backward(a, b)


def _needs(ctx, n: int) -> tuple:
    """ctx.needs_input_grad padded to the op's ``n`` arguments: the dispatcher drops trailing
    arguments equal to their defaults (bias=None, alpha=1.0, ...) before autograd sees them."""
    ng = tuple(ctx.needs_input_grad)
    return ng + (False,) * (n - len(ng))


def _grads(ctx, *grads) -> tuple:
    """One gradient per argument autograd was given (see _needs)."""
    return grads[:len(ctx.needs_input_grad)]


def _mm_backward(ctx, g):
    a, b = ctx.saved_tensors
    need_a, need_b = _needs(ctx, 2)
    ga = torch.ops.gemmlab.mm(g, b.t()) if need_a else None
    gb = torch.ops.gemmlab.mm(a.t(), g) if need_b else None
    return ga, gb


def _bmm_backward(ctx, g):
    a, b = ctx.saved_tensors
    need_a, need_b = _needs(ctx, 2)
    ga = torch.ops.gemmlab.bmm(g, _mT(b)) if need_a else None
    gb = torch.ops.gemmlab.bmm(_mT(a), g) if need_b else None
    return ga, gb


def _gemm_setup(ctx, inputs, output):
    a, b, c, alpha, beta = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta = float(alpha), float(beta)


def _gemm_backward(ctx, g):
    a, b = ctx.saved_tensors
    need_a, need_b, need_c, _, _ = _needs(ctx, 5)
    ga = gb = gc = None
    if need_a:
        ga = _unbroadcast(torch.ops.gemmlab.gemm(g, _mT(b), None, ctx.alpha, 0.0), a)
    if need_b:
        gb = _unbroadcast(torch.ops.gemmlab.gemm(_mT(a), g, None, ctx.alpha, 0.0), b)
    if need_c:
        gc = g * ctx.beta
    return _grads(ctx, ga, gb, gc, None, None)


def _linear_setup(ctx, inputs, output):
    x, weight, bias = inputs
    ctx.save_for_backward(x, weight)


def _linear_backward(ctx, g):
    x, weight = ctx.saved_tensors
    N, K = weight.shape
    M = _rows(x)
    g2 = g.reshape(M, N)
    need_x, need_w, need_bias = _needs(ctx, 3)
    gx = torch.ops.gemmlab.mm(g2, weight).reshape(x.shape) if need_x else None
    gw = torch.ops.gemmlab.mm(g2.t(), x.reshape(M, K)) if need_w else None
    gbias = g2.sum(0) if need_bias else None
    return _grads(ctx, gx, gw, gbias)


mm.register_autograd(_mm_backward, setup_context=_save_ab)
bmm.register_autograd(_bmm_backward, setup_context=_save_ab)
gemm.register_autograd(_gemm_backward, setup_context=_gemm_setup)
linear.register_autograd(_linear_backward, setup_context=_linear_setup)
