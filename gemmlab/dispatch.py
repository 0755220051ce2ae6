"""stage="auto": problem -> Choice (stage, config, split-K, repack). Small plain functions.

In order:
1. **Skinny** (M or N <= 16, GEMV-like): the memory-bound kernel (stages/skinny.py) with its
   own split-K rule.
2. **Tuned**: the tuning database (tune/db.py) for this GPU, arch and compiler, by shape bucket
   and layout; the package ships the H200's table. The entry's config is checked against its
   stage's constraints here, so a stale or foreign entry is never run.
3. **Heuristic**: the waves model with split-K (tune/model.py) over the config space
   (tune/space.py), for any GPU and shape the database does not cover. Never one fixed stage.

The choice says ``repack`` when an operand's rows are not 16-byte aligned and the problem is
large enough that copying it into an aligned workspace (so TMA and float4 apply) costs less than
the scalar path it avoids (000 §12: alignment pitfalls).
"""
from __future__ import annotations

import functools
from dataclasses import replace

from .plan import Choice
from .stages import get as get_stage
from .stages.base import Problem
from .tune import db, model

REPACK_MIN_FLOP_PER_BYTE = 64  # 2MNK over the bytes a repack copies (read + write)


@functools.lru_cache(maxsize=None)
def _gpu(dev: int):
    from . import device
    from .jit.compiler import compiler_version

    info = device.info(dev)
    gpu = model.Gpu(sms=info.sms, clock_hz=(info.clock_khz or 1_980_000) * 1e3, cc=device.cc_number(info.arch))
    return gpu, db.identity(info.name, info.arch, compiler_version())


def layout_of(p: Problem) -> str:
    """The problem's layout as the ladder names it: 'n' for a row-major operand, 't' for a
    column-major (transposed) one; A then B."""
    from .stages.s10_cp_async import a_k_major, b_n_major

    return ("n" if a_k_major(p) else "t") + ("n" if b_n_major(p) else "t")


def operands_aligned(p: Problem) -> bool:
    """Both operands can be read with 16-byte vectors / described by TMA as they are."""
    from .stages.s10_cp_async import operands_vec_aligned

    return operands_vec_aligned(p)


TRANSPOSE_B_MIN_M = 1024       # K-major B is transposed when M >= this: 2MNK / 8KN = M/4 FLOP per byte


def should_repack(p: Problem) -> bool:
    """Copy operands into the layout the kernels read fastest: unaligned operands when the
    problem is large against the bytes copied; a K-major B (the [n][k] tile layout measured ~20%
    slower on the H200 than [k][n]) when M is large enough that the copy is a few percent."""
    from .plan import _b_k_major

    if p.K == 0:
        return False
    if _b_k_major(p) and p.M >= TRANSPOSE_B_MIN_M:
        return True
    if operands_aligned(p):
        return False
    flops = 2.0 * p.M * p.N * p.K * p.batch
    moved = 8.0 * (p.M * p.K + p.K * p.N) * p.batch
    return flops / moved >= REPACK_MIN_FLOP_PER_BYTE


def _with_config(spec, cfg, overrides):
    if not overrides:
        return cfg
    merged = dict(cfg)
    merged.update(overrides)
    return spec.config(merged)


# ---- tensor-core precisions (tf32: s12; tf32x3: s13) ---------------------------------------------
TENSOR_CORE_STAGES = {"tf32": "s12", "tf32x3": "s13"}
# Below this many FLOP a SIMT stage (FP32-accurate) beats the operand pre-pass + launch; tf32x3
# runs three products, so it needs larger problems (estimates, not yet tuned on the H200).
TC_MIN_FLOP = {"tf32": 2.0 ** 27, "tf32x3": 2.0 ** 31}
# (block_m, block_n, stages, relative speed of one full tile): wide tiles reuse more per byte.
TC_TILES = {"tf32": ((128, 256, 4, 1.0), (128, 128, 6, 0.9), (64, 128, 8, 0.75)),
            "tf32x3": ((128, 128, 3, 1.0), (64, 128, 4, 0.8))}


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
        return None
    best = None
    for bm, bn, stages, speed in TC_TILES[precision]:
        tiles = -(-p.M // bm) * -(-p.N // bn) * p.batch
        split = 1
        if allow_workspace and tiles < sms // 2 and p.batch == 1:
            split = max(1, min(sms // tiles, p.K // 1024))
        waves = -(-(tiles * split) // sms)
        score = speed * (tiles * split) / (waves * sms)  # per-tile speed x the SMs kept busy
        if best is None or score > best[0]:
            best = (score, bm, bn, stages, split)
    _, bm, bn, stages, split = best
    try:
        cfg = spec.config({"block_m": bm, "block_n": bn, "stages": stages})
    except Exception:
        cfg = spec.default_config
    return Choice(spec, cfg, split, False, "heuristic")


def choose(p: Problem, dev: int = 0, *, allow_workspace: bool = True, config=None,
           precision: str = "ieee") -> Choice:
    """The Choice for the kernel-level problem ``p`` on device ``dev``. ``config``: overrides
    applied to whatever stage is chosen (they must be legal for it). ``precision``: "ieee" (the
    SIMT ladder), "tf32" or "tf32x3" (tensor cores, where they pay; else the SIMT ladder, which
    is at least as accurate)."""
    gpu, ident = _gpu(dev)
    M, N, K, batch = p.M, p.N, p.K, p.batch
    if precision != "ieee":
        tc = tensor_core_choice(p, gpu.sms, precision, allow_workspace)
        if tc is not None:
            return replace(tc, config=_with_config(tc.spec, tc.config, config))

    # 1. Skinny: M or N <= 16.
    from .stages import skinny

    if K > 0 and skinny.applies(M, N):
        cfg, split = skinny.choose(p, gpu.sms)
        if not allow_workspace:
            split = 1
        return Choice(skinny.STAGE, _with_config(skinny.STAGE, skinny.STAGE.config(cfg), config), split, False,
                      "skinny")

    repack = allow_workspace and should_repack(p)
    aligned = operands_aligned(p) or repack

    # 2. Tuned.
    entry = db.lookup(ident, M, N, K, batch, layout_of(p), aligned)
    if entry is not None:
        try:
            spec = get_stage(entry["stage"])
            if spec.min_cc > gpu.cc:
                raise ValueError(f"needs compute capability {spec.min_cc}")
            cfg = _with_config(spec, spec.config(entry.get("config") or {}), config)
            split = int(entry.get("split_k", 1)) if allow_workspace else 1
            return Choice(spec, cfg, split, repack, "tuned")
        except Exception as e:  # a stale entry: say so once, use the heuristic
            db._warn(f"tuning entry {entry.get('bucket')} {entry.get('layout')} from {entry.get('_source')} "
                     f"cannot be used ({e}); using the heuristic")

    # 3. Heuristic.
    best = model.best(M, N, K, batch, gpu, allow_split=allow_workspace)
    spec = best.candidate.spec()
    cfg = _with_config(spec, best.candidate.config(), config)
    return Choice(spec, cfg, best.split_k, repack, "heuristic")
