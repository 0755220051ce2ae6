"""Small and mid tiles at higher occupancy on mid-size problems (1e9-1e10 FLOP), on the H200.

cuBLAS runs these with 64x64 or 64x128 tiles, several blocks per SM (sm80_xmma ..._tilesize64x64x8
warpsize1x4x1); gemmlab's tuned table picks 128x256 with split-K because its small tiles run at
0.48-0.66 of the SM where the large one runs at 0.75. The variants here trade registers for
blocks: block_k 16 and k_unroll 1 hold fragments for 4 k instead of 8, so min_blocks 3-5 fit.
For each shape and variant: no split and the model's best two split counts, CUDA events, L2 flushed, median, us;
every plan checked against float64 first. Single GEMMs only (api.prepare takes 2-D operands).
``--shapes MxNxK:layout,...``: those shapes instead (say the held-out ones where cuBLAS runs
64x64x8 tiles and `auto` a big tile in a cluster: 4096x768x768:nn,4096x2304x768:nn,2560x2560x640:nn).
``--tiles LABEL,...``: only those variants. The last three are 128x256's thread tile (16x8, 64x64
warps) in tiles of half its area, two blocks an SM: more, smaller tiles where the grid of
128x256 tiles leaves its last wave nearly empty (5000^3: 800 tiles, 6.06 waves of 132, against
1580 of 256x64, 5.98 waves of 264; cuBLAS runs 256x64x8 there, docs/dispatch.md).
    python3 scripts/small_tile_probe.py [--quick] [--shapes MxNxK:layout,...] [--tiles LABEL,...]"""
import sys

import torch

from gemmlab.bench.candidates import Operands
from gemmlab.heuristics import model, space
from probe_common import checked_timer, compile_first, event_timer, tile

t = event_timer(target_seconds=0.08, max_seconds=0.8, min_reps=10, max_reps=300)
timed = checked_timer(t)


VARIANTS = {
    "64x64 w32x32 x3": tile(64, 64, 32, 32, 3),
    "64x64 bk16 ku1 x4": tile(64, 64, 32, 32, 4, 16, 4, 1),
    "64x64 bk16 ku1 x5": tile(64, 64, 32, 32, 5, 16, 4, 1),
    "64x128 w32x64 x2": tile(64, 128, 32, 64, 2),
    "64x128 bk16 ku1 x3": tile(64, 128, 32, 64, 3, 16, 4, 1),
    "64x128 bk16 ku1 x4": tile(64, 128, 32, 64, 4, 16, 4, 1),
    "128x64 w32x32 x2": tile(128, 64, 32, 32, 2),
    "128x64 w64x32 bk16 ku1 x3": tile(128, 64, 64, 32, 3, 16, 4, 1),
    "128x128 w32x64 x2": tile(128, 128, 32, 64, 2, 32, 3),
    "128x128 w32x64 bk16 ku1 x2": tile(128, 128, 32, 64, 2, 16, 4, 1),
    "128x128 w64x64 bk16 ku1 x2": tile(128, 128, 64, 64, 2, 16, 4, 1),
    "128x256 w64x64 ku4": dict(k_unroll=4),
    "256x64 w64x64 bk16 x2": tile(256, 64, 64, 64, 2, 16, 4, 2),
    "64x256 w64x64 bk16 x2": tile(64, 256, 64, 64, 2, 16, 4, 2),
    "256x64 w64x64 bk16 s5 x2": tile(256, 64, 64, 64, 2, 16, 5, 2),
}
if "--tiles" in sys.argv:
    VARIANTS = {k: VARIANTS[k] for k in sys.argv[sys.argv.index("--tiles") + 1].split(",")}
SHAPES = [(1200, 1200, 1200, "nn"), (2048, 768, 768, "nn"), (768, 768, 2048, "nt"), (256, 256, 16384, "nn"),
          (12288, 512, 512, "nn"), (896, 896, 4096, "tt"), (2048, 1536, 512, "nt"), (1536, 1536, 1536, "tn"),
          (3000, 1000, 1000, "nn"), (4096, 4096, 4096, "nn")]
if "--quick" in sys.argv:
    SHAPES = SHAPES[:3]
if "--shapes" in sys.argv:
    SHAPES = [(*map(int, dims.split("x")), lay) for dims, lay in
              (item.split(":") for item in sys.argv[sys.argv.index("--shapes") + 1].split(","))]


def splits(M, N, K, cfg):
    cand = space.Candidate("s11", cfg, 0.6, "probe", "")
    out = []
    for p in model.rank(M, N, K, 1, candidates=[cand]):
        if p.split_k not in out:
            out.append(p.split_k)
        if len(out) == 2:
            break
    return out if 1 in out else [1] + out


cases, jobs = [], []
for M, N, K, lay in SHAPES:
    ops = Operands.make(M, N, K, lay)
    rows = []
    for label, cfg in VARIANTS.items():
        for s in splits(M, N, K, cfg):
            rows.append((label, {**cfg, "split_k": s}))
            jobs.append((ops, "s11", rows[-1][1]))
    jobs.append((ops, "auto", None))
    cases.append((f"{M}x{N}x{K} {lay}", ops, rows))
compile_first(jobs)

summary = []
for name, ops, rows in cases:
    ops.reference()
    cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
    auto, kern = timed(ops, "auto", None)
    print(f"== {name}: cuBLAS {cub:.1f} us, auto {auto:.1f} us ({cub / auto:.3f}) [{kern}]", flush=True)
    best = (auto, "auto")
    for label, cfg in rows:
        us, kern = timed(ops, "s11", cfg)
        note = "" if us == us else f"  {kern}"
        print(f"   {label:28} split {cfg['split_k']:3}  {us:8.1f} us  cuBLAS/it {cub / us:6.3f}{note}", flush=True)
        if us < best[0]:
            best = (us, f"{label} split {cfg['split_k']}")
    summary.append((name, cub, auto, best))

print("\nshape                      cuBLAS us  auto us  auto/cuBLAS  best variant                        best/cuBLAS")
for name, cub, auto, (us, label) in summary:
    print(f"{name:26} {cub:9.1f} {auto:8.1f} {cub / auto:12.3f}  {label:35} {cub / us:10.3f}")
