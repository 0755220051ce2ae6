"""Programmatic dependent launch on the H200: each plan of several kernels (repack copies, split-K
reduce) built with GEMMLAB_PDL=0 and with it on (the default), timed both ways in the same run:
GPU time per call with the L2 flushed before each (CUDA events, median, us), back to back without
the flush (as in a training step), and the host time per call; every plan checked against float64.
    python3 scripts/pdl_probe.py"""
import os
import time

import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from probe_common import event_timer

flushed = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
back_to_back = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300, flushed=False)


def host_us(fn, n=300):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return 1e6 * (t1 - t0) / n


CASES = [  # (M, N, K, layout, batch, stage, config)
    (777, 555, 333, "nn", 1, "s11", {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3,
                                     "repack": 1}),
    (513, 1025, 257, "tt", 1, "auto", {"repack": 1}),
    (1001, 999, 1003, "nn", 1, "auto", None),
    (129, 257, 1025, "tn", 16, "auto", {"repack": 1}),
    (256, 256, 16384, "nn", 1, "auto", None),
    (64, 4096, 11008, "nt", 1, "auto", None),
    (768, 768, 2048, "nt", 1, "auto", None),
    (2047, 2049, 511, "nt", 1, "auto", None),
    (4096, 768, 3072, "tn", 1, "auto", None),
    (601, 1203, 4099, "nn", 1, "auto", None),
    (3001, 1999, 777, "nn", 1, "auto", None),
]
rows = []
for M, N, K, lay, batch, stage, cfg in CASES:
    ops = Operands.make(M, N, K, lay, 0, batch=batch)
    ops.reference()
    mm = torch.bmm if ops.batched else torch.mm
    cub = flushed(lambda: mm(ops.a, ops.b, out=ops.out))
    res = {}
    for mode in ("0", "1"):
        os.environ["GEMMLAB_PDL"] = mode
        api.clear_plan_cache()
        plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg, batched=ops.batched)
        ops.poison()
        fn()
        ok = ops.check_out().correct
        res[mode] = (flushed(fn), back_to_back(fn), host_us(fn), ok, len(plan.steps))
    os.environ.pop("GEMMLAB_PDL")
    api.clear_plan_cache()
    (f0, b0, h0, ok0, n), (f1, b1, h1, ok1, _) = res["0"], res["1"]
    shape = f"{M}x{N}x{K}{f'x{batch}' if batch > 1 else ''} {lay}"
    rows.append((shape, n, cub, f0, f1, b0, b1, h0, h1, ok0 and ok1))
    print(f"{shape}: {n} kernels ({' + '.join(k.split('_bm')[0] for k in plan.kernels)}) cuBLAS {cub:.1f} | "
          f"flushed {f0:.1f} -> {f1:.1f} | back to back {b0:.1f} -> {b1:.1f} | host {h0:.1f} -> {h1:.1f}"
          f"{'' if ok0 and ok1 else ' WRONG'}", flush=True)
    del ops

print("\nGEMMLAB_PDL=0 -> 1 (us per call; cuBLAS flushed for scale)")
print(f"{'shape':24} {'kernels':>7} {'cuBLAS':>8} {'flushed':>17} {'ratio':>6} {'back to back':>17} {'host':>13}")
for shape, n, cub, f0, f1, b0, b1, h0, h1, ok in rows:
    print(f"{shape:24} {n:7d} {cub:8.1f} {f0:8.1f} {f1:8.1f} {cub / f0:.3f}->{cub / f1:.3f} {b0:8.1f} {b1:8.1f} "
          f"{h0:6.1f} {h1:6.1f}{'' if ok else ' WRONG'}")
