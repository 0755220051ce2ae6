"""s11 with B's fragments of the next group of 4 k loaded before this group's FFMAs
(``frag_prefetch=1``, mma/warp_tile.cuh FRAG_PREFETCH) against without, on the H200: stage="auto"
as shipped and with the override (same tile, split and copies), and three tiles at split 1;
cuBLAS in the same run. CUDA events, L2 flushed, median, microseconds; every plan checked
against float64 first. Where auto runs s10 (unaligned operands) the override goes to s10.
With --mid: the tiles of 64 accumulators a thread, each with and without, on six shapes.
    python3 scripts/frag_prefetch_probe.py [--mid] [M N K layout batch ...]"""
import sys

from probe_common import event_timer, settings_table, shapes_arg

MID_RUN = "--mid" in sys.argv
if MID_RUN:
    sys.argv.remove("--mid")
t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
SHAPES = [
    (4096, 4096, 4096, "nn", 1), (4096, 4096, 4096, "tn", 1), (8192, 8192, 8192, "nt", 1),
    (1200, 1200, 1200, "nn", 1), (2048, 768, 768, "nn", 1), (12288, 512, 512, "nn", 1), (768, 768, 2048, "nt", 1),
    (896, 896, 4096, "tt", 1), (3500, 3500, 3500, "nt", 1), (2048, 3072, 2048, "nn", 1), (16384, 3072, 768, "nt", 1),
    (256, 8192, 4096, "nt", 1), (256, 256, 16384, "nn", 1), (512, 256, 65536, "nt", 1), (32, 11008, 4096, "nt", 1),
    (8192, 64, 4096, "nt", 1), (2047, 2049, 511, "nt", 1), (4095, 1023, 2049, "tn", 1),
    (1024, 1024, 1024, "nn", 8), (256, 256, 64, "tt", 64), (128, 128, 64, "nt", 96),
    # unaligned: s10 (4-byte copies; frag_prefetch passes to s10 too) or repacked
    (333, 555, 777, "tt", 8), (513, 1025, 257, "tt", 1), (1001, 999, 1003, "nn", 1), (777, 555, 333, "nt", 1),
    # own shapes (suites.OWN_ENTRIES), aligned
    (1792, 1792, 1792, "nt", 1), (3072, 1024, 4096, "nn", 1), (6144, 2048, 1024, "nt", 1), (384, 384, 384, "nn", 48),
    (96, 4096, 2048, "nt", 1), (2304, 2304, 576, "tn", 1), (160, 160, 160, "nt", 100), (5120, 640, 1280, "tt", 1),
    (601, 901, 301, "nn", 1), (255, 255, 255, "nt", 32),
]
PF, NO = {"frag_prefetch": 1}, {"frag_prefetch": 0}
T128 = dict(block_m=128, block_n=128, warp_m=64, warp_n=64, block_k=16, k_unroll=1, min_blocks=2)
T64 = dict(block_m=64, block_n=64, warp_m=32, warp_n=32, min_blocks=3)
ROWS = [("auto", "auto", NO, None), ("auto pf", "auto", PF, None),
        ("128x256 ku4", "s11", {"k_unroll": 4, **NO}, None), ("128x256 ku4 pf", "s11", {"k_unroll": 4, **PF}, None),
        ("128x128 x2", "s11", {**T128, **NO}, None), ("128x128 x2 pf", "s11", {**T128, **PF}, None),
        ("64x64 x3", "s11", {**T64, **NO}, None), ("64x64 x3 pf", "s11", {**T64, **PF}, None)]
if MID_RUN:  # the tiles of 64 accumulators a thread (8x8, 16x4), on a few shapes
    MID = {"64x128 x2": dict(block_m=64, block_n=128, warp_m=32, warp_n=64, min_blocks=2),
           "64x128 bk16 x3": dict(block_m=64, block_n=128, warp_m=32, warp_n=64, block_k=16, k_unroll=1, min_blocks=3),
           "128x64 w64x32 bk16 x3": dict(block_m=128, block_n=64, warp_m=64, warp_n=32, block_k=16, k_unroll=1,
                                         min_blocks=3),
           "256x64": dict(block_m=256, block_n=64, warp_m=32, warp_n=64)}
    ROWS = [(f"{k}{' pf' if p else ''}", "s11", {**c, "frag_prefetch": p}, None) for k, c in MID.items() for p in (0, 1)]
    SHAPES = [(12288, 512, 512, "nn", 1), (2304, 2304, 576, "tn", 1), (3071, 3071, 383, "tt", 1),
              (8192, 64, 4096, "nt", 1), (1024, 1024, 1024, "nn", 8), (3000, 1000, 1000, "nn", 1)]
settings_table(t, shapes_arg(SHAPES), ROWS, lambda s: None)
