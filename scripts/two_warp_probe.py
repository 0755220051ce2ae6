"""Tiles of two warps (and cuBLAS's 64x32 warps) against the small tiles `auto` runs today, on
small problems of our own (in no suite, no table bucket checked here), on the H200.

cuBLAS runs problems of 0.1-1 GFLOP with 32x64 tiles of two warps (32x32 each, sm80_xmma
..._tilesize32x64x8_warpsize1x2x1: 513x1025x257 tt 18.9 us, 289 blocks) or 64x128 with four
warps of 64x32, where gemmlab's smallest general tile is 64x64 of four warps (25.9 us, 153 blocks:
35% of the SMs idle; results/h200/logs/ncu-shortfalls-2.txt). Each variant at split 1 and the
waves model's best two split counts; s11 for aligned shapes, s10 (4-byte copies) for unaligned
ones; CUDA events, L2 flushed, median, us; every plan checked against float64 first.
    python3 scripts/two_warp_probe.py [M N K layout batch ...]"""
import torch

from gemmlab.bench.candidates import Operands
from gemmlab.heuristics import model, space
from probe_common import checked_timer, compile_first, event_timer, shapes_arg, tile

t = event_timer(target_seconds=0.05, max_seconds=0.5, min_reps=10, max_reps=300)
timed = checked_timer(t)


VARIANTS = {
    "64x64 w32x32 x3": tile(64, 64, 32, 32, 3),
    "32x64 w16x32 x4": tile(32, 64, 16, 32, 4),
    "32x64 w32x32 x4": tile(32, 64, 32, 32, 4),
    "32x64 w32x32 bk16 x5": tile(32, 64, 32, 32, 5, 16, 4, 1),
    "64x32 w32x32 x4": tile(64, 32, 32, 32, 4),
    "32x128 w32x32 x2": tile(32, 128, 32, 32, 2),
    "64x64 w64x32 x3": tile(64, 64, 64, 32, 3),
    "64x128 w64x32 x2": tile(64, 128, 64, 32, 2),
}
# (M, N, K, layout, batch); the odd ones run s10 on 4-byte copies (too small to repack).
SHAPES = shapes_arg([
    (448, 832, 576, "nn", 1), (640, 640, 1024, "nt", 1), (320, 1536, 768, "tn", 1), (960, 704, 384, "tt", 1),
    (192, 320, 224, "nn", 20), (1408, 896, 640, "nn", 1),
    (450, 700, 350, "nn", 1), (700, 1300, 261, "tt", 1), (999, 501, 403, "nt", 1), (301, 301, 301, "tn", 12),
    (1001, 333, 555, "nn", 1),
])


def splits(stage, M, N, K, batch, cfg):
    cand = space.Candidate(stage, cfg, 0.6, "probe", "")
    out = [1]
    for p in model.rank(M, N, K, batch, candidates=[cand]):
        if p.split_k not in out:
            out.append(p.split_k)
        if len(out) == 3:
            break
    return out


cases, jobs = [], []
for M, N, K, lay, batch in SHAPES:
    ops = Operands.make(M, N, K, lay, 0, batch=batch)
    stage = "s11" if M % 4 == 0 and N % 4 == 0 and K % 4 == 0 else "s10"
    rows = []
    for label, cfg in VARIANTS.items():
        c = dict(cfg, stages=3) if stage == "s10" else dict(cfg)
        for s in splits(stage, M, N, K, batch, c):
            rows.append((label, {**c, "split_k": s}))
            jobs.append((ops, stage, rows[-1][1]))
    jobs.append((ops, "auto", None))
    cases.append((f"{M}x{N}x{K}{f'x{batch}' if batch > 1 else ''} {lay}", ops, stage, rows))
compile_first(jobs)

summary = []
for name, ops, stage, rows in cases:
    ops.reference()
    cub = t(lambda: torch.bmm(ops.a, ops.b, out=ops.out) if ops.batched else torch.mm(ops.a, ops.b, out=ops.out))
    auto, kern = timed(ops, "auto", None)
    print(f"== {name} ({stage}): cuBLAS {cub:.1f} us, auto {auto:.1f} us ({cub / auto:.3f}) [{kern}]", flush=True)
    best = {}
    for label, cfg in rows:
        us, kern = timed(ops, stage, cfg)
        note = "" if us == us else f"  {kern}"
        print(f"   {label:24} split {cfg['split_k']:3}  {us:8.1f} us  cuBLAS/it {cub / us:6.3f}{note}", flush=True)
        if us == us and us < best.get(label, (float("inf"),))[0]:
            best[label] = (us, cfg["split_k"])
    summary.append((name, cub, auto, best))

labels = list(VARIANTS)
print("\nbest split of each tile, cuBLAS / it (>1: faster than cuBLAS)")
print(f"{'shape':22} {'auto':>6} " + " ".join(f"{lab[:14]:>14}" for lab in labels))
for name, cub, auto, best in summary:
    cells = [f"{cub / best[lab][0]:.3f} s{best[lab][1]:<3}" if lab in best else "-" for lab in labels]
    print(f"{name:22} {cub / auto:6.3f} " + " ".join(f"{c:>14}" for c in cells))
