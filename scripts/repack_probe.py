"""Unaligned shapes (rows not 16-byte aligned) on the H200: what stage="auto" runs now, what it
would run if every such problem were repacked (heuristics.choice.REPACK_MIN_FLOP_PER_BYTE = 0:
the copies into an aligned workspace, then s11 on TMA), and a few s11 tiles with the repack
forced; with each repacked plan's kernels timed one by one (torch profiler, L2 flushed before).
CUDA events, L2 flushed, median, microseconds; every plan checked against float64 first.
    python3 scripts/repack_probe.py [M N K layout batch ...]"""

import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from gemmlab.bench.timing import L2Flush
from gemmlab.heuristics import choice
from probe_common import compile_first, cublas_us, event_timer, run_checked, shapes_arg

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
SHAPES = [(777, 555, 333, "nn", 1), (777, 555, 333, "nt", 1), (777, 555, 333, "tt", 1), (513, 1025, 257, "tt", 1),
          (333, 555, 777, "tt", 8), (1001, 999, 1003, "nn", 1), (2047, 2049, 511, "nt", 1), (3001, 1999, 777, "nn", 1),
          (4095, 1023, 2049, "tn", 1), (3333, 1111, 2222, "nn", 1), (3333, 1111, 2222, "nt", 1),
          (601, 901, 301, "nn", 1), (1999, 333, 1501, "tt", 1), (257, 4001, 999, "nt", 1), (129, 257, 1025, "tn", 16)]
SHAPES = shapes_arg(SHAPES)
TILES = {"64x64": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3},
         "64x128": {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2},
         "128x128": {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "min_blocks": 1}}
flush = L2Flush()


def kernel_us(fn):
    """Each kernel of one call (after an L2 flush): [(name, us)], from the torch profiler."""
    flush()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [(e.name, e.device_time) for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
            and "flush" not in e.name and "fill" not in e.name.lower()]


def compile_all():
    """Every plan's kernels compiled (and cached) first, at the shipped threshold and at 0."""
    small = [Operands.make(M, N, K, lay, 0, batch=batch) for M, N, K, lay, batch in SHAPES]
    for thr, jobs in [(threshold, [(o, "auto", None) for o in small] +
                       [(o, "s11", {**v, "repack": 1}) for o in small for v in TILES.values()]),
                      (0, [(o, "auto", None) for o in small])]:
        choice.REPACK_MIN_FLOP_PER_BYTE = thr
        compile_first(jobs)
        api.clear_plan_cache()
    choice.REPACK_MIN_FLOP_PER_BYTE = threshold


threshold = choice.REPACK_MIN_FLOP_PER_BYTE
compile_all()
for M, N, K, lay, batch in SHAPES:
    ops = Operands.make(M, N, K, lay, 0, batch=batch)
    ops.reference()
    cub = cublas_us(t, ops)
    cells = []
    for label, stage, cfg, thr in [("auto", "auto", None, threshold), ("auto rp", "auto", None, 0)] + [
            (f"s11 {k} rp", "s11", {**v, "repack": 1}, threshold) for k, v in TILES.items()]:
        choice.REPACK_MIN_FLOP_PER_BYTE = thr
        api.clear_plan_cache()
        try:
            us, what, fn = run_checked(t, ops, stage, cfg)
            cells.append(f"{label} {us:.1f} ({cub / us:.3f}) [{what}]")
            if label == "auto rp":
                ks = kernel_us(fn)
                cells.append("kernels " + " + ".join(f"{n.split('_bm')[0][8:]} {u:.1f}" for n, u in ks))
        except Exception as e:  # noqa: BLE001
            cells.append(f"{label} {type(e).__name__}: {str(e)[:60]}")
    choice.REPACK_MIN_FLOP_PER_BYTE = threshold
    api.clear_plan_cache()
    print(f"{M}x{N}x{K}{f'x{batch}' if batch > 1 else ''} {lay}: cuBLAS {cub:.1f} | " + " | ".join(cells), flush=True)
    del ops
