"""A tile larger than the problem (M < block_m or N < block_n): s11 with its TMA boxes hanging over
the tensor against the s10 fallback it used to take, at the same tile and split, and against the
same tile on a problem that fills it (M or N rounded up to the tile), on the H200. CUDA events,
L2 flushed, median, microseconds; every plan checked against float64 first.
    python3 scripts/overhang_probe.py"""
import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from gemmlab.heuristics import model, space
from probe_common import checked_timer, compile_first, event_timer

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=400)
timed = checked_timer(t, " ")
CANDS = {c.label: c for c in space.candidates(90)}
TILES = ["64x256 w32x64", "64x128 w32x64 x2", "32x256 w16x64 s3 x2", "128x256 w64x64 ku4", "256x64 w32x64",
         "128x32 w32x32 x2"]
SHAPES = [(48, 4096, 11008, "nn"), (48, 4096, 11008, "nt"), (48, 4096, 4096, "tn"), (40, 8192, 4096, "nn"),
          (96, 1024, 8192, "nn"), (56, 11008, 2048, "nn"), (80, 5120, 5120, "nn"), (24, 4096, 4096, "nn"),
          (4096, 48, 4096, "nn"), (8192, 40, 4096, "tn")]
S10_KEYS = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "k_unroll", "a_swizzle", "group_m", "min_blocks")


def variants(M, N, K):
    """(label, tile's config with the model's split) of every oversized tile wasting at most half."""
    for label in TILES:
        cand = CANDS[label]
        bm, bn = cand.tile()
        covered = -(-M // bm) * bm * -(-N // bn) * bn
        if (bm <= M and bn <= N) or covered > 2 * M * N:
            continue
        split = model.rank(M, N, K, 1, candidates=[cand])[0].split_k
        yield label, cand.tile(), {**cand.config(), "split_k": split}


def s10_of(cfg):
    return {**{k: cfg[k] for k in S10_KEYS}, "stages": 3, "split_k": cfg["split_k"]}


jobs, cases = [], []
for M, N, K, lay in SHAPES:
    ops = Operands.make(M, N, K, lay)
    rows = []
    for label, (bm, bn), cfg in variants(M, N, K):
        full = Operands.make(max(M, bm), max(N, bn), K, lay)
        rows.append((label, cfg, full))
        jobs += [(ops, "s11", cfg), (ops, "s10", s10_of(cfg)), (full, "s11", cfg)]
    jobs.append((ops, "auto", None))
    cases.append(((M, N, K, lay), ops, rows))
compile_first(jobs)

print(f"{'shape':>18} lay {'tile':22} split {'s11 over':>9} {'s10':>8} {'s11 full':>9}  over/full  s10/over  "
      f"cuBLAS  cuBLAS/over", flush=True)
for (M, N, K, lay), ops, rows in cases:
    ops.reference()
    cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
    for label, cfg, full in rows:
        over, kern = timed(ops, "s11", cfg)
        if "gemmlab_s11" not in kern:
            print(f"{M:>5}x{N}x{K:<6} {lay} {label:22} s11 did not run on TMA: {kern}", flush=True)
            continue
        s10 = timed(ops, "s10", s10_of(cfg))[0]
        full.reference()
        f = timed(full, "s11", cfg)[0]
        print(f"{M:>5}x{N}x{K:<6} {lay} {label:22} {cfg['split_k']:5} {over:9.1f} {s10:8.1f} {f:9.1f}  {over / f:9.3f}  "
              f"{s10 / over:8.3f}  {cub:6.1f}  {cub / over:11.3f}", flush=True)
    plan, fn = api.prepare(ops.a, ops.b, out=ops.out)
    d = plan.describe()
    print(f"{M:>5}x{N}x{K:<6} {lay} auto: {t(fn):.1f} us ({d['stage']} {d['config']['block_m']}x{d['config']['block_n']} "
          f"split {d['split_k']}, {d['source']}), cuBLAS {cub:.1f}", flush=True)
