"""A K-major B turned into [k][n] tiles in shared memory by each consumer warp (s11 ``b_transpose``,
copy/smem_transpose.cuh) against reading its fragments from Bs[n][k], on the H200 (issue 16: the nt
and tt layouts). CUDA events, L2 flushed, median, microseconds; every plan checked against float64
first (probe_common.checked_timer).

Part 1, the kernels alone at 4096^3 (no split, no copies), with the issue model's slots per FFMA
(the prediction) next to the time; the N-major kernels (nn, tn) for scale.
Part 2, shapes as users call them: stage="auto" as shipped, then the same plan with b_transpose=1
(stages lowered until the two [k][n] tiles fit); cuBLAS in the same run.
    python3 scripts/b_transpose_probe.py [--part 1|2]"""
import sys

import torch

from gemmlab import api
from gemmlab.analysis.issue_model import layout_slots
from gemmlab.bench.candidates import Operands
from probe_common import checked_timer, compile_first, event_timer

t = event_timer(target_seconds=0.15, max_seconds=1.5, min_reps=10, max_reps=400)
timed = checked_timer(t)
parts = sys.argv[sys.argv.index("--part") + 1].split(",") if "--part" in sys.argv else ["1", "2"]
FIXED = {"split_k": 1, "repack": 0, "a_transpose": 0}

TILES = {
    "128x256 ku4 s4": {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
    "128x256 ku4 s3": {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4, "stages": 3},
    "128x256 bk16 s6": {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "block_k": 16, "stages": 6},
    "256x128 ku4 s3": {"block_m": 256, "block_n": 128, "warp_m": 64, "warp_n": 64, "k_unroll": 4, "stages": 3},
    "128x128 bk16 ku1 x2": {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "block_k": 16,
                            "k_unroll": 1, "min_blocks": 2},
    "128x64 bk16 ku1 x3": {"block_m": 128, "block_n": 64, "warp_m": 64, "warp_n": 32, "block_k": 16, "k_unroll": 1,
                           "min_blocks": 3},
    "64x128 x2 s3": {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "stages": 3, "min_blocks": 2},
    "64x64 x3 s3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
}


def slots(tile, bt, lay):
    try:
        return layout_slots("s11", {**tile, "b_transpose": bt}, lay)
    except Exception:  # noqa: BLE001  (a config that does not fit: no kernel)
        return float("nan")


if "1" in parts:
    print("part 1: s11 kernels alone at 4096^3 (no split, no copies); slots = issue model per FFMA", flush=True)
    print(f"{'tile':20} lay  {'bt0 us':>8} {'slots':>6} {'bt1 us':>8} {'slots':>6}  bt1/bt0 time  slots", flush=True)
    every = {lay: Operands.make(4096, 4096, 4096, lay) for lay in ("nt", "tt", "nn", "tn")}
    compile_first([(every[lay], "s11", {**tile, **FIXED, "b_transpose": bt})
                   for lay in ("nt", "tt") for tile in TILES.values() for bt in (0, 1)]
                  + [(every[lay], "s11", {**TILES["128x256 ku4 s4"], **FIXED}) for lay in ("nn", "tn")])
    for lay in ("nt", "tt"):
        ops = every[lay]
        ops.reference()
        for name, tile in TILES.items():
            us = [timed(ops, "s11", {**tile, **FIXED, "b_transpose": bt})[0] for bt in (0, 1)]
            sl = [slots(tile, bt, lay) for bt in (0, 1)]
            print(f"{name:20} {lay}  {us[0]:8.1f} {sl[0]:6.3f} {us[1]:8.1f} {sl[1]:6.3f}  "
                  f"{us[1] / us[0]:12.3f} {sl[1] / sl[0]:6.3f}", flush=True)
    for lay in ("nn", "tn"):
        ops = every[lay]
        ops.reference()
        tile = TILES["128x256 ku4 s4"]
        us = timed(ops, "s11", {**tile, **FIXED})[0]
        print(f"{'128x256 ku4 s4':20} {lay}  {us:8.1f} {slots(tile, 0, lay):6.3f}", flush=True)
    del every

SHAPES = [(768, 768, 2048, "nt"), (256, 8192, 4096, "nt"), (512, 256, 65536, "nt"), (2048, 2048, 2048, "nt"),
          (896, 896, 4096, "tt"), (128, 128, 32768, "tt"), (256, 8192, 1024, "tt"), (256, 512, 32768, "tt"),
          (1024, 4096, 16384, "tt"), (640, 1280, 2560, "tt"), (2048, 2048, 2048, "tt")]
if "2" in parts:
    print("\npart 2: as called; us (cuBLAS/us); auto as shipped, then with b_transpose=1", flush=True)
    for M, N, K, lay in SHAPES:
        ops = Operands.make(M, N, K, lay)
        ops.reference()
        cub = t(lambda: torch.mm(ops.a, ops.b, out=ops.out))
        us0, names = timed(ops, "auto", None)
        plan, _ = api.prepare(ops.a, ops.b, out=ops.out)
        d = plan.describe()
        cells = [f"{us0:8.1f} ({cub / us0:4.2f})"]
        why = ""
        if d["stage"] == "s11":
            for stages in range(d["config"]["stages"], 1, -1):
                us1, reason = timed(ops, "auto", {"b_transpose": 1, "stages": stages})
                if us1 == us1:
                    cells.append(f"{us1:8.1f} ({cub / us1:4.2f}) s{stages}")
                    break
                why = reason
        c = d["config"]
        print(f"{M:>5}x{N}x{K:<5} {lay} {cub:8.1f} " + " ".join(cells) +
              f"  {d['stage']} {c.get('block_m')}x{c.get('block_n')} bk{c.get('block_k')} ku{c.get('k_unroll')} "
              f"s{c.get('stages')} split {d['split_k']} ({d['source']}) {why[:60]}", flush=True)
        del ops
