"""The tensor-core choice for precision "tf32" (s12) and "tf32x3" (s13).

A tensor-core stage pays for operand pre-passes (the K-major transposes TF32 wgmma needs; s13's
hi/lo split) and one more launch, so it is chosen only for problems large enough; below that
(and for skinny shapes) the FP32 SIMT dispatch takes the problem, which is at least as accurate
as asked. The tile is the one that fills the SMs best (waves x the tile's relative speed), with
split-K when there are too few tiles; the tensor-core plan is kept only where its time, pre-passes
included, is below the SIMT estimate.
"""
from __future__ import annotations

from ..plan import Choice
from ..problem import Problem
from ..stages import get as get_stage

TENSOR_CORE_STAGES = {"tf32": "s12", "tf32x3": "s13"}
# Below this many FLOP a SIMT stage (FP32-accurate) beats the operand pre-pass + launch; tf32x3
# runs three products, so it needs larger problems (estimates, not yet tuned on the H200).
TC_MIN_FLOP = {"tf32": 2.0 ** 27, "tf32x3": 2.0 ** 31}
# Candidate tiles: (config overrides, the variant they are for, relative speed of one full tile).
# Wide tiles reuse more per byte. tf32x3: the variants that split an operand in registers (rs: B,
# ra: A) skip that operand's pre-pass; H200 at 8192^3 (scripts/s13_rs_probe.py): pre-split SS
# 128x128 112 TFLOPS = 1.0, RS 128x128 105.7 (0.94), RS 128x64 79.6 (0.71); RA taken as RS.
TC_TILES = {
    "tf32": (({"block_m": 128, "block_n": 256, "stages": 4}, {}, 1.0),
             ({"block_m": 128, "block_n": 128, "stages": 6}, {}, 0.9),
             ({"block_m": 64, "block_n": 128, "stages": 8}, {}, 0.75)),
    "tf32x3": (({"block_m": 128, "block_n": 128, "stages": 3}, {}, 1.0),
               ({"block_m": 64, "block_n": 128, "stages": 4}, {}, 0.8),
               ({"block_m": 128, "block_n": 128, "stages": 3, "split_partials": 0, "b_regs": 1}, {"rs": 1}, 0.94),
               ({"block_m": 128, "block_n": 64, "stages": 4, "split_partials": 0, "b_regs": 1}, {"rs": 1}, 0.71),
               ({"block_m": 128, "block_n": 128, "stages": 3, "split_partials": 0, "a_regs": 1}, {"ra": 1}, 0.94),
               ({"block_m": 128, "block_n": 64, "stages": 4, "split_partials": 1, "a_regs": 1}, {"ra": 1}, 0.71)),
}
# Rates for weighing the tensor-core plan (its pre-passes included) against the SIMT one, H200,
# measured (results/h200): s12 318-328 and s13 103-118 TFLOPS at 4096^3-8192^3, the FP32 SIMT
# stages 46-51 on large shapes. A pre-pass moves BYTES_PER_ELEMENT per operand element (the split:
# read 4, write hi and lo 8; a transposing copy: read 4, write 4) at about PREPASS_BW (copy 3.96 TB/s).
TC_RATE = {"tf32": 320e12, "tf32x3": 110e12}
SIMT_RATE = 48e12
PREPASS_BW = 3.3e12
BYTES_PER_ELEMENT = {"split": 12, "transpose": 8}


def prepass_seconds(p: Problem, spec, cfg=None) -> float:
    """Time of the operand pre-passes a tensor-core plan runs for ``p``: s13 splits both operands,
    or only the one its variant does not split in registers; s12 transposes those that are not
    K-major."""
    elements = {"a": p.M * p.K * p.batch, "b": p.K * p.N * p.batch}
    if getattr(spec, "operand_split", False):
        split = spec.split_operands(cfg or spec.default_config, p)
        moved = BYTES_PER_ELEMENT["split"] * sum(elements[w] for w in split)
    else:
        moved = BYTES_PER_ELEMENT["transpose"] * sum(n for w, n in elements.items()
                                                     if not spec.operand_ready(p, w, cfg))
    return moved / PREPASS_BW


def tensor_core_choice(p: Problem, sms: int, precision: str, allow_workspace: bool) -> Choice | None:
    """s12/s13 for a problem large enough to pay for its operand transposes, with the tile that
    fills the SMs best (waves x per-tile speed) and split-K when there are too few tiles; None:
    let the FP32 SIMT dispatch take it (it is at least as accurate)."""
    stage_id = TENSOR_CORE_STAGES.get(precision)
    if stage_id is None or p.K == 0:
        return None
    try:
        spec = get_stage(stage_id)
    except Exception:  # the stage is not in this build
        return None
    flops = 2.0 * p.M * p.N * p.K * p.batch
    if flops < TC_MIN_FLOP[precision] or min(p.M, p.N) <= 16:
        return None
    needs_ws = not all(spec.operand_ready(p, w) for w in ("a", "b")) or getattr(spec, "needs_workspace", False)
    if needs_ws and not allow_workspace:
        # s12's RS variant reads a row-major B as it is (no transposing copy, no workspace)
        rs = {"block_m": 256, "block_n": 128, "stages": 4, "b_regs": 1}
        try:
            cfg = spec.config(rs)
        except Exception:
            return None
        if all(spec.operand_ready(p, w, cfg) for w in ("a", "b")):
            return Choice(spec, cfg, 1, False, "heuristic")
        return None
    # The candidate with the least estimated time: the tensor cores at the tile's speed over the
    # SMs it keeps busy (waves, split-K where there are too few tiles), plus its pre-passes.
    best = None
    for overrides, want_variant, speed in TC_TILES[precision]:
        try:
            cfg = spec.config(overrides)
        except Exception:
            continue
        if want_variant and spec.variant(cfg, p) != want_variant:
            continue  # the problem's layout does not allow this variant
        bm, bn = cfg["block_m"], cfg["block_n"]
        tiles = -(-p.M // bm) * -(-p.N // bn) * p.batch
        split = 1
        if allow_workspace and tiles < sms // 2 and p.batch == 1:
            split = max(1, min(sms // tiles, p.K // 1024))
        waves = -(-(tiles * split) // sms)
        score = speed * (tiles * split) / (waves * sms)  # per-tile speed x the SMs kept busy
        seconds = flops / (TC_RATE[precision] * score) + prepass_seconds(p, spec, cfg)
        if best is None or seconds < best[0]:
            best = (seconds, cfg, split)
    if best is None:
        return None
    seconds, cfg, split = best
    # Skinny-ish shapes where every candidate pre-splits the large operand (8192x128x8192 with a
    # B that is not row-major): the pre-pass costs more than the GEMM gains; the SIMT stages then
    # win at the same or better accuracy.
    if seconds >= flops / SIMT_RATE:
        return None
    return Choice(spec, cfg, split, False, "heuristic")
