"""Split-K added in a thread block cluster (s11, kernels/epilogue/cluster_reduce.cuh) against the
workspace + reduce kernel path, on the shapes where split-K runs (the training model's dW and dX
GEMMs, K-heavy held-out shapes), and the split counts the cheaper reduce makes worth trying.
CUDA events, L2 flushed, median, microseconds; ratios to cuBLAS (torch.mm) in the same run.
    python3 scripts/cluster_split_probe.py"""
import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from probe_common import event_timer

t = event_timer(target_seconds=0.05, max_seconds=0.3)

SHAPES = [(1536, 512, 4096, "tn"), (512, 512, 4096, "tn"), (2048, 512, 4096, "tn"), (512, 2048, 4096, "tn"),
          (1536, 512, 4096, "nt"), (4096, 512, 2048, "nn"), (4096, 512, 1536, "nn"), (4096, 512, 2048, "nt"),
          (4096, 768, 3072, "nn"), (4096, 768, 768, "nn"), (48, 4096, 11008, "nn"), (96, 1024, 8192, "nn"),
          (512, 512, 32768, "nn"), (2900, 2901, 2903, "nn"), (5000, 5000, 5000, "nn"), (4096, 4096, 4096, "nn"),
          (8192, 8192, 8192, "nn"), (2048, 2048, 2048, "nn")]
TILES = {"128x128": {"block_m": 128, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2, "stages": 3}}

for M, N, K, lay in SHAPES:
    ops = Operands.make(M, N, K, lay, 0)
    ops.reference()
    cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
    rows, best = [], None
    plan0, _ = api.prepare(ops.a, ops.b, out=ops.out)
    d = plan0.describe()
    keys = {"repack": int(d["repack"]), "a_transpose": int(d["a_transpose"])}
    tile = {**d["config"], **keys}
    alts = [("auto", None), ("auto", {"cluster_reduce": 0})]
    if d["stage"] == "s11":
        alts += [("s11", {**tile, "split_k": s}) for s in (1, 2, 3, 4, 6, 8) if s != d["split_k"]]
    alts += [("s11", {**cfg, **keys, "split_k": s}) for cfg in TILES.values() for s in (2, 4, 8)]
    for stage, cfg in alts:
        try:
            plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg)
            ops.poison(); fn()
            ok = ops.check_out().correct
            us = t(fn)
            x = plan.describe()
            label = (f"{x['stage']} {x['config']['block_m']}x{x['config']['block_n']} s{x['split_k']}"
                     f"{'c' if x['cluster_reduce'] else ''}{' T' if x['a_transpose'] else ''}")
            rows.append((us, label, ok))
            if ok and (best is None or us < best[0]):
                best = (us, label, cfg)
        except Exception as e:
            rows.append((float("nan"), f"{stage}{cfg}: {type(e).__name__} {str(e)[:60]}", False))
    auto = rows[0][0]
    print(f"{M}x{N}x{K} {lay}: cuBLAS {cub:.1f} | auto {auto:.1f} ({cub / auto:.3f}) [{rows[0][1]}] | "
          f"workspace {rows[1][0]:.1f} ({cub / rows[1][0]:.3f}) | best {best[0]:.1f} ({cub / best[0]:.3f}) "
          f"[{best[1]}] cfg {best[2]}", flush=True)
    print("    " + " | ".join(f"{lab}: {us:.1f}{'' if ok else ' WRONG'}" for us, lab, ok in rows[2:]), flush=True)
    del ops
