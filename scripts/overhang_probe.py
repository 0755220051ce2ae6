"""A tile larger than the problem (M < block_m or N < block_n): s11 with its TMA boxes hanging over
the tensor against the s10 fallback it used to take, at the same tile and split, and against the
same tile on a problem that fills it (M or N rounded up to the tile), on the H200. CUDA events,
L2 flushed, median, microseconds; every plan checked against float64 first.
    python3 scripts/overhang_probe.py"""
import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from gemmlab.heuristics import model, space
from probe_common import event_timer

t = event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=400)
CANDS = {c.label: c for c in space.candidates(90)}
TILES = ["64x256 w32x64", "64x128 w32x64 x2", "32x256 w16x64 s3 x2", "128x256 w64x64 ku4", "256x64 w32x64"]
SHAPES = [(48, 4096, 11008, "nn"), (48, 4096, 11008, "nt"), (48, 4096, 4096, "tn"), (40, 8192, 4096, "nn"),
          (96, 1024, 8192, "nn"), (56, 11008, 2048, "nn"), (80, 5120, 5120, "nn"), (24, 4096, 4096, "nn"),
          (4096, 48, 4096, "nn"), (8192, 40, 4096, "tn")]


def run(ops, stage, cfg):
    plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg)
    ops.poison()
    fn()
    r = ops.check_out()
    assert r.correct, (ops.M, ops.N, ops.K, ops.layout, stage, cfg, r)
    return t(fn), " ".join(plan.describe()["kernels"])


print(f"{'shape':>18} lay {'tile':22} split {'s11 over':>9} {'s10':>8} {'s11 full':>9}  over/full  s10/over  "
      f"cuBLAS  over/cuBLAS", flush=True)
for M, N, K, lay in SHAPES:
    ops = Operands.make(M, N, K, lay)
    ops.reference()
    cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
    for label in TILES:
        cand = CANDS[label]
        bm, bn = cand.tile()
        covered = -(-M // bm) * bm * -(-N // bn) * bn
        if (bm <= M and bn <= N) or covered > 2 * M * N:
            continue  # not oversized here, or more than half the tile wasted
        split = model.rank(M, N, K, 1, candidates=[cand])[0].split_k
        cfg = {**cand.config(), "split_k": split}
        over, kern = run(ops, "s11", cfg)
        assert "gemmlab_s11" in kern, kern  # on TMA, not handed to s10
        s10 = run(ops, "s10", {k: v for k, v in cfg.items() if k not in ("producer_warp", "consumer_sync", "ffma_rotate",
                                                                         "b_scalar")} | {"stages": 3})[0]
        full_ops = Operands.make(max(M, bm), max(N, bn), K, lay)
        full = run(full_ops, "s11", cfg)[0]
        del full_ops
        print(f"{M:>5}x{N}x{K:<6} {lay} {label:22} {split:5} {over:9.1f} {s10:8.1f} {full:9.1f}  {over / full:9.3f}  "
              f"{s10 / over:8.3f}  {cub:6.1f}  {cub / over:11.3f}", flush=True)
    plan, fn = api.prepare(ops.a, ops.b, out=ops.out)
    d = plan.describe()
    print(f"{M:>5}x{N}x{K:<6} {lay} auto: {t(fn):.1f} us ({d['stage']} {d['config']['block_m']}x{d['config']['block_n']} "
          f"split {d['split_k']}, {d['source']}), cuBLAS {cub:.1f}", flush=True)
    del ops
