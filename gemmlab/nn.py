"""``gemmlab.nn.Linear``: torch.nn.Linear whose forward runs gemmlab's GEMM.

    import gemmlab.nn
    layer = gemmlab.nn.Linear(1024, 4096, device="cuda")      # same arguments as torch.nn.Linear
    layer = gemmlab.nn.Linear(1024, 4096, precision="tf32x3") # a precision of its own (None: default)
    y = layer(x)                                              # torch.ops.gemmlab.linear(x, W, b)
    gemmlab.nn.replace_linear(model)                          # every torch.nn.Linear of a model

A drop-in subclass: same parameters (``weight`` [out_features, in_features], ``bias``), same
initialization, same state_dict, so a trained torch.nn.Linear's weights load into it and back.
In eager code its forward is one call of the ``gemmlab::linear`` operator (gemmlab/torch_ops.py):
the bias is fused into the GEMM as C with beta = 1, and autograd runs gemmlab GEMMs for the
gradients. Under torch.compile (not torch.export) it is ``gemmlab::mm`` on the flattened input and
a bias add, which Inductor fuses into the neighbouring elementwise kernel (an activation, dropout,
the residual add) instead of a separate pass over the output, as it does for torch's own addmm;
torch.compile(fullgraph=True) traces either without a graph break.
"""
from __future__ import annotations

import torch

from . import torch_ops  # noqa: F401  (registers torch.ops.gemmlab.*)
from .precision import PRECISIONS

__all__ = ["Linear", "replace_linear"]

_linear = torch.ops.gemmlab.linear.default
_mm = torch.ops.gemmlab.mm.default
_is_compiling = torch.compiler.is_compiling
_export_flag = getattr(torch.compiler, "is_exporting", lambda: False)


@torch._dynamo.assume_constant_result
def _is_exporting() -> bool:
    """Whether torch.export is tracing. Dynamo calls this in Python while it traces and keeps the
    answer as a constant: torch.compiler.is_exporting() traced by Dynamo itself reads True under
    a plain torch.compile on torch 2.11 (measured on the H200), which kept gemmlab::linear there."""
    return _export_flag()


def _check_precision(precision):
    if precision is not None and precision not in PRECISIONS:
        raise ValueError(f"gemmlab.nn.Linear: precision={precision!r}; expected None (gemmlab's default) "
                         f"or one of {', '.join(map(repr, PRECISIONS))}")
    return precision


class Linear(torch.nn.Linear):
    """``y = x @ weight.T + bias`` through gemmlab; float32 only (the parameters and the input).

    ``precision``: None (gemmlab's process default, gemmlab.set_precision), "ieee", "tf32" or
    "tf32x3"; an attribute, so it can be changed on a built model."""

    # Under torch.compile: mm + a bias add that Inductor fuses into the next elementwise kernel
    # (False: the fused-bias gemmlab::linear operator, as in eager code).
    unfuse_bias_under_compile = True

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None, *,
                 precision: str | None = None):
        if dtype is not None and dtype != torch.float32:
            raise TypeError(f"gemmlab.nn.Linear: dtype {dtype}; gemmlab computes float32 only")
        self.precision = _check_precision(precision)
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        if self.weight.dtype != torch.float32:  # torch's default dtype was changed
            raise TypeError(f"gemmlab.nn.Linear: parameters would be {self.weight.dtype} (torch's default "
                            "dtype); gemmlab computes float32 only: pass dtype=torch.float32")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        p = self.precision
        if self.unfuse_bias_under_compile and _is_compiling() and not _is_exporting() and input.dim() >= 1:
            x2 = input.reshape(-1, self.in_features) if input.dim() != 2 else input
            y = _mm(x2, self.weight.t(), p)
            if self.bias is not None:
                y = y + self.bias
            return y.view(*input.shape[:-1], self.out_features) if input.dim() != 2 else y
        if p is None:
            return _linear(input, self.weight, self.bias)
        return _linear(input, self.weight, self.bias, p)

    def extra_repr(self) -> str:
        text = super().extra_repr()
        return text if self.precision is None else f"{text}, precision={self.precision!r}"


_TORCH_LINEARS = (torch.nn.Linear, torch.nn.modules.linear.NonDynamicallyQuantizableLinear)


def replace_linear(module: torch.nn.Module, *, precision: str | None = None) -> int:
    """Replace, in place, every ``torch.nn.Linear`` inside ``module`` (its exact class, or the
    NonDynamicallyQuantizableLinear of nn.MultiheadAttention) with float32 parameters by a
    :class:`Linear` holding the *same* Parameter objects (nothing is copied; an optimizer built
    before keeps working). Subclasses with their own forward are left alone. Returns how many
    were replaced.

    Note: nn.MultiheadAttention never calls ``out_proj.forward`` (it passes the weights to
    F.multi_head_attention_forward), and its input projection is a bare Parameter: only
    ``gemmlab.torch.enable()`` puts those GEMMs on gemmlab."""
    _check_precision(precision)
    if isinstance(module, Linear):
        return 0
    count = 0
    for name, child in list(module.named_children()):
        if type(child) in _TORCH_LINEARS and child.weight.dtype == torch.float32:
            new = Linear(child.in_features, child.out_features, bias=child.bias is not None, device="meta",
                         precision=precision)
            new.weight = child.weight
            new.bias = child.bias
            new.train(child.training)
            setattr(module, name, new)
            count += 1
        else:
            count += replace_linear(child, precision=precision)
    return count
