"""s10 tiles on unaligned shapes with transpose_in 1 and 0 (stages, block_k and min_blocks varied:
how the transposing 4-byte copies depend on what shared memory leaves to L1), on the H200. CUDA
events, L2 flushed, median, us; every plan checked against float64 first; cuBLAS in the same run.

``--small-k``: instead, tiles with K tiles of 8 as cuBLAS runs unaligned problems (its
``sm80_xmma_..._aligna4`` kernels: 64x128x8 at 333x555x777x8 tt, 32x64x8 and 32x32x8 of two warps
on small problems; results/h200/sweep-*/sweep.csv), against s10's 64x64 x3 and the s11 stand-in
64x128 bk16, on the random shapes where s10 fell furthest behind (docs/dispatch.md), at split 1,
with transpose_in as the stage decides, next to `auto` (its own split). ``--w64x32``: the same
shapes with warps of 64x32 (8x8 outputs a thread and 4 warps, as cuBLAS's 64x128x8 warpsize1x4x1),
whose s10 builds compile spill-free at block_k 16 (at block_k 8 they spill: 88 and 264 B of stack).
``--knobs``: on the same shapes, the s10 config `auto` runs (its tile, split and stand-in rules)
with one knob changed at a time: stages, block_k, k_unroll, frag_prefetch, min_blocks, group_m, transpose_in,
frag_carry (also with a stage fewer, and with the copies after half the next tile: carry_copy_k),
ffma_serpentine (alone and with frag_carry); in nt the last two change nothing and are left out.
``--carry``: the same shapes but nt (where frag_carry changes nothing), s10 with the tile's last k
carried over the barrier (frag_carry) and its FFMA runs in serpentine order (ffma_serpentine) at
auto's stand-in tile and at cuBLAS's 4-byte geometry
(64x128x8, 3 stages, 8x8 outputs a thread: 64x128 w32x64), against the stand-in as the runtime builds it.
``--short-k-wide``: the random shapes (seeds 58-63) where auto fell furthest behind cuBLAS, all of
them short K (96-233) on 4-byte copies, most on s10 128x256 (one block an SM), against s10 tiles of
two and three blocks an SM at split 1 (the prediction: docs/dispatch.md, "Short K on 4-byte copies").
    python3 scripts/s10_tile_probe.py [--small-k | --w64x32 | --knobs | --carry | --short-k-wide]"""
import sys

from gemmlab.bench.candidates import Operands
from probe_common import compile_first, cublas_us, event_timer, run_checked, tile

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300)
SHAPES = [(333, 555, 777, "tt", 8), (257, 4001, 999, "nt", 1), (255, 255, 255, "nt", 32), (777, 555, 333, "tt", 1),
          (601, 901, 301, "nn", 1)]
T = {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64}
CONFIGS = {"64x128 s3 mb2": {**T, "stages": 3, "min_blocks": 2}, "64x128 s4 mb2": {**T, "stages": 4, "min_blocks": 2},
           "64x128 bk16 s4": {**T, "block_k": 16, "stages": 4, "min_blocks": 2},
           "64x128 s2 mb3": {**T, "stages": 2, "min_blocks": 3},
           "64x64 s3 mb3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
           "64x64 s4 mb3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 4, "min_blocks": 3}}
SMALL_K_SHAPES = [(333, 555, 777, "tt", 8), (492, 109, 137, "tn", 32), (455, 97, 743, "nn", 32), (152, 405, 199, "nt", 1),
                  (99, 296, 337, "nt", 1), (173, 247, 129, "tt", 4), (1660, 388, 201, "nn", 1), (515, 119, 2969, "tn", 1),
                  (171, 1393, 3365, "tt", 1), (759, 189, 317, "tn", 16), (255, 255, 255, "nt", 32)]
# Each compiles for sm_90 without local memory (gemmlab sass s10 --scalar --config ...: 135, 145,
# 127 and 113 registers); 128x64 at block_k 8 spills (88 B of stack) and is left out.
SMALL_K_CONFIGS = {
    "64x64 s3 mb3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
    "64x128 bk16 s4": {**T, "block_k": 16, "stages": 4, "min_blocks": 2},
    "64x128 bk8 s4 mb3": {**T, "block_k": 8, "stages": 4, "min_blocks": 3},
    "64x64 bk8 s4 mb3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 8, "stages": 4,
                         "min_blocks": 3},
    "32x64 w32x32 bk8 s4 mb8": {"block_m": 32, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 8, "stages": 4,
                                "min_blocks": 8},
    "32x32 w16x32 bk8 s4 mb8": {"block_m": 32, "block_n": 32, "warp_m": 16, "warp_n": 32, "block_k": 8, "stages": 4,
                                "min_blocks": 8},
}
W64X32_CONFIGS = {
    "64x64 s3 mb3": SMALL_K_CONFIGS["64x64 s3 mb3"],
    "128x64 w64x32 bk16 s4 mb2": tile(128, 64, 64, 32, 2, bk=16, stages=4),
    "128x64 w64x32 bk16 s3 mb3": tile(128, 64, 64, 32, 3, bk=16, stages=3),
    "64x128 w64x32 bk16 s3 mb3": tile(64, 128, 64, 32, 3, bk=16, stages=3),
}

STAND_IN = tile(128, 64, 32, 32, 2, bk=16, stages=4) | {"edge_shift": 1}
CARRY_CONFIGS = {
    "128x64 bk16 s4 (stand-in)": STAND_IN,
    "+fc1": {**STAND_IN, "frag_carry": 1},
    "+fc1 cck7": {**STAND_IN, "frag_carry": 1, "carry_copy_k": 7},
    "+fs1": {**STAND_IN, "ffma_serpentine": 1},
    "+fc1 fs1": {**STAND_IN, "frag_carry": 1, "ffma_serpentine": 1},
    "64x128 w32x64 bk8 s3 mb3 fc1": tile(64, 128, 32, 64, 3, bk=8, stages=3) | {"edge_shift": 1, "frag_carry": 1},
    "64x128 w32x64 bk16 s3 mb2 fc1": tile(64, 128, 32, 64, 2, bk=16, stages=3) | {"edge_shift": 1, "frag_carry": 1},
    "64x64 bk16 s3 mb3 fc1": tile(64, 64, 32, 32, 3, bk=16, stages=3) | {"edge_shift": 1, "frag_carry": 1},
}

# auto / cuBLAS 0.597-0.712 on seeds 58-63 (results/h100/logs/379482e: fixed4-seed61..63, epilogue2-seed58..60)
SHORT_K_WIDE_SHAPES = [(3299, 2339, 101, "nt", 1), (1989, 1807, 111, "tn", 1), (1243, 2505, 111, "nn", 1),
                       (3040, 2365, 148, "tn", 1), (384, 501, 99, "nt", 64), (489, 97, 129, "nt", 64),
                       (737, 685, 128, "tt", 32), (595, 624, 233, "nt", 32), (1065, 1489, 96, "tn", 1),
                       (3959, 532, 232, "tn", 1)]
ONE_SLICE = {"edge_shift": 1, "split_k": 1}
SHORT_K_WIDE_CONFIGS = {
    "128x256 w64x64 ku4 mb1": tile(128, 256, 64, 64, 1, ku=4) | ONE_SLICE,
    "128x128 w64x64 bk16 mb1": tile(128, 128, 64, 64, 1, bk=16) | ONE_SLICE,
    "128x128 w32x64 bk16 mb2": tile(128, 128, 32, 64, 2, bk=16) | ONE_SLICE,
    "128x64 w32x32 bk16 mb2": STAND_IN | ONE_SLICE,
    "64x128 w32x64 bk16 mb2": tile(64, 128, 32, 64, 2, bk=16) | ONE_SLICE,
    "64x128 w64x32 bk16 s3 mb3": tile(64, 128, 64, 32, 3, bk=16, stages=3) | ONE_SLICE,
    "64x64 s3 mb3": tile(64, 64, 32, 32, 3, stages=3) | ONE_SLICE,
}


def small_k(configs, shapes=SMALL_K_SHAPES):
    compile_first([(Operands.make(M, N, K, lay, 0, batch=b), "s10", c)
                   for M, N, K, lay, b in shapes for c in configs.values()])
    for M, N, K, lay, b in shapes:
        ops = Operands.make(M, N, K, lay, 0, batch=b)
        ops.reference()
        cub = cublas_us(t, ops)
        auto_us, auto_what, _ = run_checked(t, ops, "auto", None)
        cells = [f"{name} {run_checked(t, ops, 's10', c)[0]:.1f}" for name, c in configs.items()]
        print(f"{M}x{N}x{K}x{b} {lay}: cuBLAS {cub:.1f} | auto {auto_us:.1f} [{auto_what}] | " + " | ".join(cells), flush=True)


def knob_changes(cfg, variant):
    """(label, config) for auto's s10 config with one knob changed, each legal for s10 (frag_carry
    only where ``variant``'s layout takes it)."""
    from gemmlab.stages import get
    from gemmlab.errors import ConfigError

    s10 = get("s10")
    fp = 1 if s10.frag_prefetch(cfg) else 0
    changes = [("stages-1", {"stages": cfg["stages"] - 1}), ("stages+1", {"stages": cfg["stages"] + 1}),
               ("bk32 s3", {"block_k": 32, "stages": 3}), ("bk16 s4", {"block_k": 16, "stages": 4}),
               ("ku1", {"k_unroll": 1}), ("ku4", {"k_unroll": 4}), (f"fp{1 - fp}", {"frag_prefetch": 1 - fp}),
               ("mb-1", {"min_blocks": cfg["min_blocks"] - 1}), ("mb+1", {"min_blocks": cfg["min_blocks"] + 1}),
               ("gm1", {"group_m": 1}), ("ti0", {"transpose_in": 0}), ("fc1", {"frag_carry": 1}),
               ("fc1 s-1", {"frag_carry": 1, "stages": cfg["stages"] - 1}),
               ("fc1 late", {"frag_carry": 1, "carry_copy_k": cfg["block_k"] // 2 - 1}),
               ("fs1", {"ffma_serpentine": 1}), ("fc1 fs1", {"frag_carry": 1, "ffma_serpentine": 1})]
    out = []
    for label, change in changes:
        c = {**cfg, **change}
        if c == cfg or ((c.get("frag_carry") or c.get("ffma_serpentine")) and not s10.outer_product(c, variant)):
            continue
        try:
            s10.config({k: v for k, v in c.items() if k != "split_k"})
        except ConfigError:
            continue
        out.append((label, c))
    return out


def knobs():
    from gemmlab import api

    for M, N, K, lay, b in SMALL_K_SHAPES:
        ops = Operands.make(M, N, K, lay, 0, batch=b)
        plan, _ = api.prepare(ops.a, ops.b, out=ops.out, stage="auto", batched=ops.batched)
        c = plan.choice
        if c.spec.id != "s10":
            print(f"{M}x{N}x{K}x{b} {lay}: auto runs {c.spec.id}, not s10", flush=True)
            continue
        cfg = {**c.config, "split_k": c.split_k}
        rows = knob_changes(cfg, plan.variant)
        compile_first([(ops, "s10", r) for _, r in rows] + [(ops, "s10", cfg)])
        ops.reference()
        cub = cublas_us(t, ops)
        base, what, _ = run_checked(t, ops, "s10", cfg)
        cells = [f"{label} {run_checked(t, ops, 's10', r)[0] / base:.3f}" for label, r in rows]
        print(f"{M}x{N}x{K}x{b} {lay}: cuBLAS {cub:.1f} | auto's s10 {base:.1f} [{what} {cfg['block_k']}x{cfg['stages']} "
              f"ku{cfg['k_unroll']} mb{cfg['min_blocks']}] | time / it: " + " | ".join(cells), flush=True)


if "--short-k-wide" in sys.argv:
    small_k(SHORT_K_WIDE_CONFIGS, SHORT_K_WIDE_SHAPES)
    sys.exit(0)
if "--knobs" in sys.argv:
    knobs()
    sys.exit(0)
if "--carry" in sys.argv:
    small_k(CARRY_CONFIGS, [s for s in SMALL_K_SHAPES if s[3] != "nt"])
    sys.exit(0)
if "--small-k" in sys.argv or "--w64x32" in sys.argv:
    small_k(W64X32_CONFIGS if "--w64x32" in sys.argv else SMALL_K_CONFIGS)
    sys.exit(0)
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
