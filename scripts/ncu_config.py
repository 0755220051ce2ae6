"""One call of a stage with a given config (for ncu next to another config):
    python3 ncu_config.py M N K layout stage 'json config'"""
import json
import sys

import torch

import gemmlab
from gemmlab import check

M, N, K = map(int, sys.argv[1:4])
layout, stage, cfg = sys.argv[4], sys.argv[5], json.loads(sys.argv[6])
a, b, _ = check.random_operands(M, N, K, layout)
out = torch.empty((M, N), device="cuda")
gemmlab.matmul(a, b, out=out, stage=stage, config=cfg)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
gemmlab.matmul(a, b, out=out, stage=stage, config=cfg)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
