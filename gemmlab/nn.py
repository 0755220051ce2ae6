"""``gemmlab.nn.Linear``: torch.nn.Linear whose forward runs gemmlab's GEMM.

    import gemmlab.nn
    layer = gemmlab.nn.Linear(1024, 4096, device="cuda")      # same arguments as torch.nn.Linear
    y = layer(x)                                              # torch.ops.gemmlab.linear(x, W, b)

A drop-in subclass: same parameters (``weight`` [out_features, in_features], ``bias``), same
initialization, same state_dict, so a trained torch.nn.Linear's weights load into it and back.
Its forward is one call of the ``gemmlab::linear`` custom operator (gemmlab/torch_ops.py): the
bias is fused into the GEMM as C with beta = 1, autograd runs gemmlab GEMMs for the gradients, and
torch.compile(fullgraph=True) traces it without a graph break.
"""
from __future__ import annotations

import torch

from . import torch_ops  # noqa: F401  (registers torch.ops.gemmlab.*)

__all__ = ["Linear"]


class Linear(torch.nn.Linear):
    """``y = x @ weight.T + bias`` through gemmlab; float32 only (the parameters and the input)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        if dtype is not None and dtype != torch.float32:
            raise TypeError(f"gemmlab.nn.Linear: dtype {dtype}; gemmlab computes float32 only")
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        if self.weight.dtype != torch.float32:  # torch's default dtype was changed
            raise TypeError(f"gemmlab.nn.Linear: parameters would be {self.weight.dtype} (torch's default "
                            "dtype); gemmlab computes float32 only: pass dtype=torch.float32")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return torch.ops.gemmlab.linear(input, self.weight, self.bias)
