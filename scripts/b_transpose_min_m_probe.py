"""Aligned problems with a K-major B (nt, tt) and M below heuristics.choice.TRANSPOSE_B_MIN_M, on
the H200: stage="auto" as shipped (B read K-major by s11) against auto with B always transposed
into an N-major copy first (TRANSPOSE_B_MIN_M = 0: the repack, then s11 on [k][n] tiles); cuBLAS
in the same run. The rule is set on the wide suite's shapes and our own; the held-out shapes at
the end are only reported. CUDA events, L2 flushed, median, microseconds; every plan checked
against float64 first.
    python3 scripts/b_transpose_min_m_probe.py [M N K layout batch ...]"""
from gemmlab import api
from gemmlab.heuristics import choice
from probe_common import event_timer, settings_table, shapes_arg

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
WIDE = [(768, 768, 2048, "nt", 1), (896, 896, 4096, "tt", 1), (512, 256, 65536, "nt", 1), (256, 8192, 4096, "nt", 1),
        (256, 8192, 1024, "tt", 1), (512, 512, 512, "nt", 1), (700, 700, 700, "tt", 1), (256, 512, 32768, "tt", 1)]
OWN = [(640, 2048, 2048, "nt", 1), (768, 3072, 768, "nt", 1), (512, 4096, 4096, "nt", 1), (384, 1536, 6144, "tt", 1)]
HELD_OUT = [(512, 512, 32768, "nt", 1), (96, 1024, 8192, "nt", 1), (96, 1024, 8192, "tt", 1)]
SHAPES = shapes_arg(WIDE + OWN + HELD_OUT)
MIN_M = choice.TRANSPOSE_B_MIN_M


def setting(min_m):
    choice.TRANSPOSE_B_MIN_M = MIN_M if min_m is None else min_m
    api.clear_plan_cache()


settings_table(t, SHAPES, [("auto", "auto", None, None), ("auto B^T", "auto", None, 0)], setting)
