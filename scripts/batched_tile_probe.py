"""Small batched GEMMs (strided batch, small matrices): s11 tiles at more blocks per SM against the
heuristic's 64x64 x3, cuBLAS (torch.matmul on the same 3-D operands) and auto, on the own suite's
batched shapes that lose most (160x160x160x100 nt 0.854, 384x384x384x48 nn 0.905,
129x257x1025x16 tn 0.894; results/h100/logs/3cd0cad/sweep-own.txt). CUDA events, L2 flushed,
median, us; every plan checked against float64 first.

ncu (results/h100/logs/76b06cd/ncu_mid.txt) put 160^3x100 nt's gap in the block, not the tiling:
the same 900 blocks of 64x64 as cuBLAS, but 3 an SM (66.6 KB, 168 registers) where cuBLAS fits 4
(13 KB, 128 registers): 2.27 waves against 1.70. block_k 16 with k_unroll 1 holds fragments for
4 k, so four or five blocks fit (scripts/small_tile_probe.py); sm_90 SASS (variant 0): x4 128
registers, no stack; x5 96 registers and 72 bytes of stack.

Predicted before the run: 160^3x100 nt with 64x64 bk16 ku1 x4 in 2 waves where x3 takes 3,
36-40 us against 43.6 (0.92-1.0 of cuBLAS); x5 no better than x4 (also 2 waves, and it spills).
384^3x48 nn (1728 blocks of 64x64: 4.4 waves at x3, 3.3 at x4): x4 5-10% faster. 129x257x1025x16
tn: 32x64 x4 wastes least of 129 rows; within 5% of the best.
    python3 scripts/batched_tile_probe.py [M N K layout batch ...]"""
import torch

from gemmlab.bench.candidates import Operands
from probe_common import checked_timer, compile_first, event_timer, shapes_arg, tile

t = event_timer(target_seconds=0.08, max_seconds=0.8, min_reps=10, max_reps=300)
timed = checked_timer(t)

VARIANTS = {
    "64x64 x3 (space)": tile(64, 64, 32, 32, 3),
    "64x64 bk32 s3 x3": tile(64, 64, 32, 32, 3, 32, 3),
    "64x64 bk16 ku1 x3": tile(64, 64, 32, 32, 3, 16, 4, 1),
    "64x64 bk16 ku1 x4": tile(64, 64, 32, 32, 4, 16, 4, 1),
    "64x64 bk16 ku1 x5": tile(64, 64, 32, 32, 5, 16, 4, 1),
    "64x64 bk16 s3 ku1 x4": tile(64, 64, 32, 32, 4, 16, 3, 1),
    "32x64 x4 (space)": tile(32, 64, 16, 32, 4),
    "64x128 bk16 ku1 x3": tile(64, 128, 32, 64, 3, 16, 4, 1),
    "128x64 bk16 ku1 x3": tile(128, 64, 64, 32, 3, 16, 4, 1),
    "128x128 w32x64 x2": tile(128, 128, 32, 64, 2, 32, 3),
}
SHAPES = shapes_arg([(160, 160, 160, "nt", 100), (384, 384, 384, "nn", 48), (129, 257, 1025, "tn", 16)])

cases, jobs = [], []
for M, N, K, lay, batch in SHAPES:
    ops = Operands.make(M, N, K, lay, batch=batch)
    cases.append((f"{M}x{N}x{K}x{batch} {lay}", ops))
    jobs += [(ops, "s11", cfg) for cfg in VARIANTS.values()] + [(ops, "auto", None)]
compile_first(jobs)

summary = []
for name, ops in cases:
    ops.reference()
    cub = t(lambda: torch.matmul(ops.a, ops.b, out=ops.out))
    auto, kern = timed(ops, "auto", None)
    print(f"== {name}: cuBLAS {cub:.1f} us, auto {auto:.1f} us ({cub / auto:.3f}) [{kern}]", flush=True)
    best = (auto, "auto")
    for label, cfg in VARIANTS.items():
        us, kern = timed(ops, "s11", cfg)
        note = "" if us == us else f"  {kern[:90]}"
        print(f"   {label:24} {us:8.1f} us  cuBLAS/it {cub / us:6.3f}{note}", flush=True)
        if us < best[0]:
            best = (us, label)
    summary.append((name, cub, auto, best))

print("\nshape                      cuBLAS us  auto us  auto/cuBLAS  best variant              best/cuBLAS")
for name, cub, auto, (us, label) in summary:
    print(f"{name:26} {cub:9.1f} {auto:8.1f} {cub / auto:12.3f}  {label:25} {cub / us:10.3f}")
