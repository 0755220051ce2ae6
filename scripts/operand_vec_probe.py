"""s10 with one operand on 16-byte copies beside the other on 4-byte ones (the variant's
``a_vec``/``b_vec``) against both on 4-byte copies (the variant before them), on shapes where
only one operand's rows are 16-byte aligned, on the H200: stage="auto" as shipped, without the
repack (heuristics.choice.REPACK_MIN_FLOP_PER_BYTE = inf) and without the A transpose
(TRANSPOSE_A_MIN_N = inf), and s10 at two tiles; cuBLAS in the same run. CUDA events, L2 flushed,
median, microseconds; every plan checked against float64 first.
    python3 scripts/operand_vec_probe.py [M N K layout batch ...]"""
import math

from gemmlab import api
from gemmlab.heuristics import choice
from gemmlab.stages import get
from probe_common import event_timer, settings_table, shapes_arg

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
SHAPES = [(4096, 17, 4096, "tn", 1), (8192, 19, 2048, "nn", 1), (2048, 1001, 1024, "nn", 1),
          (1001, 2048, 1023, "nn", 1), (601, 900, 301, "tn", 1), (333, 512, 1024, "tt", 1),
          (512, 333, 777, "tt", 1), (257, 4001, 999, "nt", 1), (333, 555, 260, "nn", 8)]
SHAPES = shapes_arg(SHAPES)
TILES = {"64x64": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
         "128x32": {"block_m": 128, "block_n": 32, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 2}}
S10 = get("s10")
VARIANT = S10.variant
REPACK, A_MIN_N = choice.REPACK_MIN_FLOP_PER_BYTE, choice.TRANSPOSE_A_MIN_N


def both_4byte(cfg, problem):
    """The variant as it was before a_vec/b_vec: one size for both operands."""
    return {k: x for k, x in VARIANT(cfg, problem).items() if k not in ("a_vec", "b_vec")}


def setting(mixed=True, repack=True, a_t=True):
    S10.variant = VARIANT if mixed else both_4byte
    choice.REPACK_MIN_FLOP_PER_BYTE = REPACK if repack else math.inf
    choice.TRANSPOSE_A_MIN_N = A_MIN_N if a_t else math.inf
    api.clear_plan_cache()


# (label, stage, config, setting)
ROWS = [("auto", "auto", None, {}), ("auto 4B", "auto", None, {"mixed": False}),
        ("auto no-rp", "auto", None, {"repack": False}), ("auto no-rp 4B", "auto", None, {"repack": False, "mixed": False}),
        ("auto no-A^T", "auto", None, {"a_t": False}), ("auto no-A^T 4B", "auto", None, {"a_t": False, "mixed": False})]
ROWS += [(f"s10 {k}{' 4B' if not m else ''}", "s10", c, {"mixed": m}) for k, c in TILES.items() for m in (True, False)]

settings_table(t, SHAPES, ROWS, lambda s: setting(**(s or {})))
