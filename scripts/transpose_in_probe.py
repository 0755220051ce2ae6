"""s10's 4-byte copies with K-major operands turned into [k][x] tiles (config transpose_in=1, the
default) against kept as [x][k] (0), on unaligned shapes (rows not 16-byte aligned) on the H200:
stage="auto" as shipped, auto with s10's default transpose_in 0, auto with no repack at all
(heuristics.choice.REPACK_MIN_FLOP_PER_BYTE = inf: s10 on the operands as they are), and s10 at
three tiles both ways; cuBLAS in the same run. CUDA events, L2 flushed, median, microseconds;
every plan checked against float64 first.
    python3 scripts/transpose_in_probe.py [M N K layout batch ...]"""
import dataclasses
import math

from gemmlab import api
from gemmlab.heuristics import choice
from gemmlab.stages import get
from probe_common import event_timer, settings_table, shapes_arg

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
SHAPES = [(777, 555, 333, "nn", 1), (777, 555, 333, "nt", 1), (777, 555, 333, "tt", 1), (513, 1025, 257, "tt", 1),
          (333, 555, 777, "tt", 8), (601, 901, 301, "nn", 1), (1999, 333, 1501, "tt", 1), (257, 4001, 999, "nt", 1),
          (601, 1203, 4099, "nn", 1), (2047, 2049, 511, "nt", 1), (1001, 999, 1003, "nn", 1),
          (4095, 1023, 2049, "tn", 1), (3333, 1111, 2222, "nt", 1), (129, 257, 1025, "tn", 16),
          (255, 255, 255, "nt", 32)]
SHAPES = shapes_arg(SHAPES)
TILES = {"64x64": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
         "64x128": {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "stages": 3, "min_blocks": 2},
         "128x128": {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "block_k": 16, "k_unroll": 1}}
S10 = get("s10")
PARAMS = S10.params
THRESHOLD = choice.REPACK_MIN_FLOP_PER_BYTE


def setting(transpose_in, repack=True):
    """s10's default transpose_in and the repack threshold, with the plan cache cleared."""
    S10.params = tuple(dataclasses.replace(p, default=transpose_in) if p.name == "transpose_in" else p
                       for p in PARAMS)
    choice.REPACK_MIN_FLOP_PER_BYTE = THRESHOLD if repack else math.inf
    api.clear_plan_cache()


ROWS = [("auto", "auto", None, (1, True)), ("auto ti0", "auto", None, (0, True)), ("auto no-rp", "auto", None, (1, False)),
        ("auto no-rp ti0", "auto", None, (0, False))]
ROWS += [(f"s10 {k} ti{ti}", "s10", {**v, "transpose_in": ti}, (1, True)) for k, v in TILES.items() for ti in (1, 0)]

settings_table(t, SHAPES, ROWS, lambda s: setting(*(s or (1, True))))
