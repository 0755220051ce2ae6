"""A K-major B read one k at a time (s11 ``b_scalar``) against 4 k per LDS.128, on the H200 (issue 16:
the nt and tt layouts). CUDA events, L2 flushed, median, microseconds; every plan checked against
float64 first.

Part 1, the kernels alone at 4096^3 (no split, no copies): the issue model's slots per FFMA
(instructions + 2-bank conflict cycles per FFMA of the main loop, from the SASS) are printed
next to the measured time, so the model's prediction can be read against the GPU.
Part 2, shapes as users call them: stage="auto" as dispatched (b_scalar's rule), the same plan with
b_scalar 0 and 1, and, for nt, with A transposed first (nt -> tt); cuBLAS in the same run.
    python3 scripts/b_scalar_probe.py [--part 1|2]"""
import sys

import torch

from gemmlab import api
from gemmlab.analysis.issue_model import layout_slots
from gemmlab.bench.candidates import Operands
from gemmlab.stages import get
from probe_common import compile_first, event_timer

S11 = get("s11")
t = event_timer(target_seconds=0.15, max_seconds=1.5, min_reps=10, max_reps=400)
parts = sys.argv[sys.argv.index("--part") + 1].split(",") if "--part" in sys.argv else ["1", "2"]


def timed(ops, cfg, stage="auto"):
    plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg)
    ops.poison()
    fn()
    r = ops.check_out()
    assert r.correct, (ops.M, ops.N, ops.K, ops.layout, cfg, r)
    return t(fn), plan


TILES = {"128x256 ku2": {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 2},
         "128x256 ku4": {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
         "128x128 x2": {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "stages": 3, "min_blocks": 2},
         "64x256": {"block_m": 64, "block_n": 256, "warp_m": 32, "warp_n": 64}}
if "1" in parts:
    print("part 1: s11 kernels alone at 4096^3 (no split, no copies); slots = issue model per FFMA", flush=True)
    print(f"{'tile':12} lay  {'bs0 us':>8} {'slots':>6} {'bs1 us':>8} {'slots':>6}  bs1/bs0 time  slots", flush=True)
    for lay in ("tt", "nt"):
        ops = Operands.make(4096, 4096, 4096, lay)
        ops.reference()
        compile_first([(ops, "s11", {**tile, "b_scalar": bs, "split_k": 1, "repack": 0, "a_transpose": 0})
                       for tile in TILES.values() for bs in (0, 1)])
        for name, tile in TILES.items():
            row = {}
            for bs in (0, 1):
                cfg = {**tile, "b_scalar": bs, "split_k": 1, "repack": 0, "a_transpose": 0}
                row[bs] = (timed(ops, cfg, "s11")[0], layout_slots("s11", {**tile, "b_scalar": bs}, lay))
            print(f"{name:12} {lay}  {row[0][0]:8.1f} {row[0][1]:6.3f} {row[1][0]:8.1f} {row[1][1]:6.3f}  "
                  f"{row[1][0] / row[0][0]:12.3f} {row[1][1] / row[0][1]:6.3f}", flush=True)
        del ops
    for lay in ("nn", "tn"):  # the B N-major kernels for scale (b_scalar does not apply)
        ops = Operands.make(4096, 4096, 4096, lay)
        ops.reference()
        tile = TILES["128x256 ku4"]
        us = timed(ops, {**tile, "split_k": 1, "repack": 0, "a_transpose": 0}, "s11")[0]
        print(f"{'128x256 ku4':12} {lay}  {us:8.1f} {layout_slots('s11', tile, lay):6.3f}", flush=True)
        del ops

SHAPES = [(4096, 4096, 4096, "tt"), (4096, 4096, 4096, "nt"), (256, 16384, 1024, "nt"), (256, 16384, 1024, "tt"),
          (896, 896, 4096, "tt"), (256, 512, 32768, "tt"), (128, 128, 32768, "tt"), (256, 8192, 1024, "tt"),
          (768, 768, 2048, "nt"), (512, 512, 32768, "nt"), (512, 256, 65536, "nt"), (2048, 2048, 2048, "tt"),
          (1024, 1024, 1024, "tt"), (512, 512, 512, "nt"), (4096, 128, 11008, "tt"), (1536, 1536, 1536, "nt")]
if "2" in parts:
    print("\npart 2: as called; us (ratio cuBLAS/us); auto = b_scalar's rule", flush=True)
    print(f"{'shape':>17} lay {'cuBLAS':>8} {'auto':>15} {'bs0':>15} {'bs1':>15} {'A^T':>15}  auto's plan", flush=True)
    every = {shape: Operands.make(*shape) for shape in SHAPES}
    compile_first([(ops, "auto", cfg) for (M, N, K, lay), ops in every.items()
                   for cfg in (None, {"b_scalar": 0}, {"b_scalar": 1}) + (({"a_transpose": 1},) if lay == "nt" else ())])
    for M, N, K, lay in SHAPES:
        ops = every.pop((M, N, K, lay))
        ops.reference()
        cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        cells = []
        plan = None
        for cfg in (None, {"b_scalar": 0}, {"b_scalar": 1}, {"a_transpose": 1} if lay == "nt" else None):
            if cfg is None and cells:
                cells.append(f"{'-':>15}")
                continue
            try:
                us, p = timed(ops, cfg)
            except Exception as e:  # noqa: BLE001  (e.g. auto chose s10, which has no b_scalar)
                cells.append(f"{type(e).__name__[:15]:>15}")
                continue
            plan = plan or p
            cells.append(f"{us:8.1f} ({cub / us:4.2f})")
        d = plan.describe()
        c = d["config"]
        print(f"{M:>5}x{N}x{K:<5} {lay} {cub:8.1f} " + " ".join(cells) +
              f"  {d['stage']} {c.get('block_m')}x{c.get('block_n')} ku{c.get('k_unroll')} s{d['split_k']}"
              f"{' repack' if d['repack'] else ''}{' A^T' if d['a_transpose'] else ''} ({d['source']})", flush=True)
        del ops
