"""Kernels for ncu (scripts/ncu_stream_k.sh): one shape, s11 data-parallel and stream-K at the
same tile, each launched twice (ncu profiles the second).   python3 scripts/ncu_stream_k.py M N K"""
import sys

import torch

import gemmlab

M, N, K = map(int, sys.argv[1:4])
a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
tile = {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4}
for cfg in ({**tile, "split_k": 1}, {**tile, "stream_k": 1}):
    for _ in range(2):
        gemmlab.gemm(a, b, stage="s11", config=cfg)
torch.cuda.synchronize()
