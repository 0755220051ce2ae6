"""s10 tiles on unaligned shapes with transpose_in 1 and 0 (stages, block_k and min_blocks varied:
how the transposing 4-byte copies depend on what shared memory leaves to L1), on the H200. CUDA
events, L2 flushed, median, us; every plan checked against float64 first; cuBLAS in the same run.
    python3 scripts/s10_tile_probe.py"""

from gemmlab.bench.candidates import Operands
from probe_common import compile_first, cublas_us, event_timer, run_checked

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
SHAPES = [(333, 555, 777, "tt", 8), (257, 4001, 999, "nt", 1), (255, 255, 255, "nt", 32), (777, 555, 333, "tt", 1),
          (601, 901, 301, "nn", 1)]
T = {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64}
CONFIGS = {"64x128 s3 mb2": {**T, "stages": 3, "min_blocks": 2}, "64x128 s4 mb2": {**T, "stages": 4, "min_blocks": 2},
           "64x128 bk16 s4": {**T, "block_k": 16, "stages": 4, "min_blocks": 2},
           "64x128 s2 mb3": {**T, "stages": 2, "min_blocks": 3},
           "64x64 s3 mb3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
           "64x64 s4 mb3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 4, "min_blocks": 3}}
ops_all = [Operands.make(M, N, K, lay, 0, batch=b) for M, N, K, lay, b in SHAPES]
compile_first([(o, "s10", {**c, "transpose_in": ti}) for o in ops_all for c in CONFIGS.values() for ti in (0, 1)])
del ops_all
for M, N, K, lay, b in SHAPES:
    ops = Operands.make(M, N, K, lay, 0, batch=b)
    ops.reference()
    cub = cublas_us(t, ops)
    cells = []
    for name, c in CONFIGS.items():
        us = [run_checked(t, ops, "s10", {**c, "transpose_in": ti})[0] for ti in (1, 0)]
        cells.append(f"{name} {us[0]:.1f}/{us[1]:.1f}")
    print(f"{M}x{N}x{K}x{b} {lay}: cuBLAS {cub:.1f} | ti1/ti0 " + " | ".join(cells), flush=True)
