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


def choose(p: Problem, dev: int = 0, *, allow_workspace: bool = True, config=None) -> Choice:
    """The Choice for the kernel-level problem ``p`` on device ``dev``. ``config``: overrides
    applied to whatever stage is chosen (they must be legal for it)."""
    gpu, ident = _gpu(dev)
    M, N, K, batch = p.M, p.N, p.K, p.batch

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
