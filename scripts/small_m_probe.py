"""Tiles for M (or N) of 17-128 (H200 probe, issue 16): shapes with a decode-sized M that are in no
table and not in the held-out suite, in nn and nt, each timed with stage="auto" and with s11 tiles
whose block_m covers M in one or two row tiles, each at the split-K counts that bring the grid
nearest to 1 and 2 full waves. CUDA events, L2 flushed, median, microseconds; every launch is
checked against float64 first. Prints per shape the auto time and the fastest three configs, and
at the end each tile's geometric-mean ratio to the best per shape (how often it is near best).
With PROBE_SIDE=n the same for a decode-sized N (M large): tiles with block_n 32-64, nn and tn.
    python3 scripts/small_m_probe.py [MxNxK,...]"""
import math
import os
import sys

import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from gemmlab.stages import get
from probe_common import event_timer

t = event_timer(0.02, 0.25, 10, 200)
SMS = torch.cuda.get_device_properties(0).multi_processor_count
shapes = ([tuple(int(x) for x in s.split("x")) for s in sys.argv[1].split(",")] if len(sys.argv) > 1 else
          [(24, 4096, 4096), (40, 8192, 4096), (64, 4096, 8192), (80, 5120, 5120), (112, 4096, 4096),
           (128, 2048, 8192), (56, 11008, 2048)])
TILES = {
    "32x64 w16x32 x4": dict(block_m=32, block_n=64, warp_m=16, warp_n=32, min_blocks=4),
    "64x64 w32x32 x3": dict(block_m=64, block_n=64, warp_m=32, warp_n=32, min_blocks=3),
    "64x128 w32x64 x2": dict(block_m=64, block_n=128, warp_m=32, warp_n=64, min_blocks=2),
    "64x256 w32x64": dict(block_m=64, block_n=256, warp_m=32, warp_n=64),
    "128x128 w64x64 s3 x2": dict(block_m=128, block_n=128, warp_m=64, warp_n=64, stages=3, min_blocks=2),
    "32x256 w16x64": dict(block_m=32, block_n=256, warp_m=16, warp_n=64),
    "32x256 w16x64 s3 x2": dict(block_m=32, block_n=256, warp_m=16, warp_n=64, stages=3, min_blocks=2),
    "32x128 w16x64 x2": dict(block_m=32, block_n=128, warp_m=16, warp_n=64, min_blocks=2),
    "32x128 w16x32 x2": dict(block_m=32, block_n=128, warp_m=16, warp_n=32, min_blocks=2),
    "64x128 w16x64": dict(block_m=64, block_n=128, warp_m=16, warp_n=64),
    "64x256 w16x64 s3": dict(block_m=64, block_n=256, warp_m=16, warp_n=64, stages=3),
}
N_SIDE = os.environ.get("PROBE_SIDE", "m") == "n"
if N_SIDE:
    if len(sys.argv) <= 1:
        shapes = [(4096, 24, 4096), (8192, 40, 4096), (4096, 64, 8192), (5120, 80, 5120), (4096, 112, 4096),
                  (2048, 128, 8192), (11008, 56, 2048)]
    TILES = {
        "64x64 w32x32 x3": dict(block_m=64, block_n=64, warp_m=32, warp_n=32, min_blocks=3),
        "128x64 w32x32 x2": dict(block_m=128, block_n=64, warp_m=32, warp_n=32, min_blocks=2),
        "128x128 w64x64 s3 x2": dict(block_m=128, block_n=128, warp_m=64, warp_n=64, stages=3, min_blocks=2),
        "256x128 w64x64": dict(block_m=256, block_n=128, warp_m=64, warp_n=64),
        "256x32 w32x32": dict(block_m=256, block_n=32, warp_m=32, warp_n=32),
        "128x32 w32x32 x2": dict(block_m=128, block_n=32, warp_m=32, warp_n=32, min_blocks=2),
        "256x64 w64x32": dict(block_m=256, block_n=64, warp_m=64, warp_n=32),
        "256x64 w32x64": dict(block_m=256, block_n=64, warp_m=32, warp_n=64),
    }
LAYOUTS = ("nn", "tn") if N_SIDE else ("nn", "nt")
S11 = get("s11")


def splits_for(tiles, per_sm, K):
    """The split-K counts nearest to 1 and 2 full waves (K slices of at least 256)."""
    out = set()
    for waves in (1, 2):
        s = max(1, round(waves * SMS * per_sm / tiles))
        for c in (s, max(1, s // 2) if s > 2 else s):
            if K // c >= 256:
                out.add(c)
    return sorted(out) or [1]


scores = {name: [] for name in TILES}
for M, N, K in shapes:
    for lay in LAYOUTS:
        ops = Operands.make(M, N, K, lay, 0)
        ops.reference()
        cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage="auto")
        auto = t(fn)
        res = []
        for name, ov in TILES.items():
            small, tile = (N, ov["block_n"]) if N_SIDE else (M, ov["block_m"])
            if tile > 2 * max(small, 32) or (tile >= 2 * small and tile > 32):
                continue
            tiles = math.ceil(M / ov["block_m"]) * math.ceil(N / ov["block_n"])
            best = None
            for sp in splits_for(tiles, ov.get("min_blocks", 1), K):
                try:
                    p, f = api.prepare(ops.a, ops.b, out=ops.out, stage="s11", config={**ov, "split_k": sp})
                    ops.poison()
                    f()
                    torch.cuda.synchronize()
                    if not ops.check_out().correct:
                        print(f"   WRONG {name} split {sp}", flush=True)
                        continue
                    us = t(f)
                except Exception as e:
                    print(f"   skip {name} split {sp}: {type(e).__name__}: {str(e)[:90]}", flush=True)
                    continue
                if best is None or us < best[0]:
                    best = (us, sp)
            if best:
                res.append((best[0], name, best[1]))
        res.sort()
        top = res[0][0] if res else float("nan")
        for us, name, _ in res:
            scores[name].append(top / us)
        print(f"{M}x{N}x{K} {lay}: cuBLAS {cub:.1f} us | auto {auto:.1f} ({cub / auto:.3f}) "
              f"{plan.choice.spec.id} {plan.choice.config.get('block_m')}x{plan.choice.config.get('block_n')} "
              f"split {plan.choice.split_k} | best: " +
              " | ".join(f"{n} split {sp}: {us:.1f} ({cub / us:.3f})" for us, n, sp in res[:3]), flush=True)
        del ops
print("tile: geometric mean of (best time / its time) over the shapes it ran on")
for name, r in sorted(scores.items(), key=lambda kv: -(math.prod(kv[1]) ** (1 / len(kv[1])) if kv[1] else 0)):
    if r:
        print(f"  {name:22s} {math.prod(r) ** (1 / len(r)):.3f} over {len(r)}")
