"""One gemmlab auto call and one cuBLAS call per shape (for ncu):
    python3 ncu_short.py M N K [layout (nn)] [batch (1)]"""
import sys

import torch

import gemmlab
from gemmlab import check

torch.backends.cuda.matmul.allow_tf32 = False
M, N, K = map(int, sys.argv[1:4])
layout = sys.argv[4] if len(sys.argv) > 4 else "nn"
batch = int(sys.argv[5]) if len(sys.argv) > 5 else 1
a, b, _ = check.random_operands(M, N, K, layout, batch if batch > 1 else None)
out = torch.empty((batch, M, N) if batch > 1 else (M, N), device="cuda")
mm = torch.bmm if batch > 1 else torch.mm
gemmlab.matmul(a, b, out=out); mm(a, b, out=out); torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
gemmlab.matmul(a, b, out=out); mm(a, b, out=out); torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
