"""Split-K in a cluster of 2-8 slices against the workspace path, at the tile `auto` picks, with
the driver's count of the clusters that can be resident at once (cuOccupancyMaxActiveClusters, on
the GEMM kernel as built) next to the clusters the grid launches. The question: on which grids do
clusters of more than 2 slices win (docs/stages/s10-s11.md, "3 to 8 slices in a cluster")?

Each (tile, slices) is timed twice, workspace and cluster interleaved (ws, cl, ws, cl), so that the
run-to-run spread shows beside the difference. CUDA events, L2 flushed, median, microseconds.
    python3 scripts/cluster_occupancy_probe.py [M N K layout batch ...]"""
import torch

from gemmlab import api
from gemmlab.bench.candidates import Operands
from probe_common import compile_first, event_timer, shapes_arg

SHAPES = [(288, 1179, 879, "nn", 1), (496, 727, 651, "nt", 1), (1925, 173, 888, "nn", 1), (119, 1364, 477, "nt", 1),
          (703, 207, 468, "tn", 1), (120, 897, 759, "tn", 1), (584, 161, 541, "nn", 1), (307, 312, 524, "tt", 1),
          (141, 164, 412, "tt", 1), (129, 257, 1025, "tn", 16), (311, 963, 864, "tn", 1), (300, 1101, 3433, "tt", 1),
          (2008, 495, 1652, "nn", 1), (333, 555, 777, "tt", 8), (513, 1025, 257, "tt", 1), (768, 768, 2048, "nt", 1)]
SPLITS = (2, 3, 4, 6, 8)


def max_active_clusters(step):
    """The driver's count for the step's kernel (its __cluster_dims__), grid and shared memory."""
    from cuda.bindings import driver

    cfg = driver.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = step.grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = step.block, 1, 1
    cfg.sharedMemBytes = step.smem
    cfg.numAttrs = 0
    err, n = driver.cuOccupancyMaxActiveClusters(driver.CUfunction(step.fn), cfg)
    return n if err == driver.CUresult.CUDA_SUCCESS else f"?{err.name}"


def main():
    t = event_timer(target_seconds=0.04, max_seconds=0.3)
    shapes = shapes_arg(SHAPES)
    cases = []
    for M, N, K, lay, batch in shapes:
        ops = Operands.make(M, N, K, lay, 0, batch=batch)
        plan0, _ = api.prepare(ops.a, ops.b, out=ops.out, batched=ops.batched)
        d = plan0.describe()
        tile = {**d["config"], "repack": int(d["repack"]), "a_transpose": int(d["a_transpose"])}
        for s in SPLITS:
            if K // s >= 64:
                for cl in (0, 1):
                    cases.append((ops, d["stage"], {**tile, "split_k": s, "cluster_reduce": cl}))
        cases.append((ops, d, None))
    compile_first([c for c in cases if c[2] is not None])
    print("shape [tile]: slices: workspace us x2 | cluster us x2 (clusters launched / resident at once)")
    cells, pair = [], {}
    for ops, stage, cfg in cases:
        if cfg is None:  # the end of a shape
            d = stage
            print(f"{ops.M}x{ops.N}x{ops.K}{f'x{ops.batch}' if ops.batched else ''} {ops.layout} "
                  f"[{d['stage']} {d['config']['block_m']}x{d['config']['block_n']} auto s{d['split_k']}"
                  f"{'c' if d['cluster_reduce'] else ''}]: " + " | ".join(cells), flush=True)
            cells = []
            continue
        try:
            plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg, batched=ops.batched)
            ops.poison()
            fn()
            ok = ops.check_out().correct
            pair[cfg["cluster_reduce"]] = (t(fn), plan)
        except Exception as e:  # noqa: BLE001
            pair[cfg["cluster_reduce"]] = (float("nan"), f"{type(e).__name__}: {str(e)[:50]}")
            ok = False
        if cfg["cluster_reduce"] == 1:
            (w, _), (c, plan) = pair[0], pair[1]
            w2 = t(api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config={**cfg, "cluster_reduce": 0},
                               batched=ops.batched)[1]) if w == w else w
            c2 = t(fn) if c == c else c
            if isinstance(plan, str):
                cells.append(f"s{cfg['split_k']}: {w:.1f} {w2:.1f} | {plan}")
            else:
                step = plan.main
                g = step.grid[0] * step.grid[1] * step.grid[2]
                k = plan.choice.split_k
                occ = max_active_clusters(step) if plan.describe()["cluster_reduce"] else "ws"
                cells.append(f"s{k}: {w:.1f} {w2:.1f} | {c:.1f} {c2:.1f} ({g // k}/{occ}){'' if ok else ' WRONG'}")


if __name__ == "__main__":
    main()
