"""One gemmlab call and one cuBLAS call per shape (for ncu):
    python3 ncu_short.py M N K [layout (nn)] [batch (1)] [--stage S --config 'json'] [--s10-variant 'json']
With --stage, that stage and config (json, default {}) instead of auto, and no cuBLAS call. With
--s10-variant, those keys replace the ones s10 takes from the problem (e.g. '{"b_vec": 1}': B's
16-byte copies beside A's 4-byte ones where ONE_OPERAND_VEC would not choose them)."""
import json
import sys

import torch

import gemmlab
from gemmlab import check

torch.backends.cuda.matmul.allow_tf32 = False
args = sys.argv[1:]
stage, cfg = "auto", None
if "--stage" in args:
    i = args.index("--stage")
    stage = args[i + 1]
    del args[i:i + 2]
if "--config" in args:
    i = args.index("--config")
    cfg = json.loads(args[i + 1])
    del args[i:i + 2]
if "--s10-variant" in args:
    from gemmlab.stages import get

    i = args.index("--s10-variant")
    extra = json.loads(args[i + 1])
    del args[i:i + 2]
    s10, taken = get("s10"), get("s10").variant
    s10.variant = lambda c, p: {**taken(c, p), **extra}
M, N, K = map(int, args[0:3])
layout = args[3] if len(args) > 3 else "nn"
batch = int(args[4]) if len(args) > 4 else 1
a, b, _ = check.random_operands(M, N, K, layout, batch if batch > 1 else None)
out = torch.empty((batch, M, N) if batch > 1 else (M, N), device="cuda")
mm = torch.bmm if batch > 1 else torch.mm


def calls():
    gemmlab.matmul(a, b, out=out, stage=stage, config=cfg)
    if stage == "auto":
        mm(a, b, out=out)
    torch.cuda.synchronize()


calls()
torch.cuda.cudart().cudaProfilerStart()
calls()
torch.cuda.cudart().cudaProfilerStop()
