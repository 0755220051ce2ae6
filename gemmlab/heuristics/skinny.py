"""The dispatcher's choice for skinny shapes (M <= 16 or N <= 16, GEMV-like): the memory-bound
``skinny`` kernel (stages/skinny.py, kernels/skinny.cuh) with its config and its own split-K rule.

The stage spec owns the kernel: its parameters, constraints and the auto resolution of its
config for a problem (``STAGE.resolve``). This module owns what ``stage="auto"`` decides: whether
the kernel applies (:func:`applies`) and the config and slices it runs with (:func:`choose`).
"""
from __future__ import annotations

from dataclasses import replace

from ..problem import Problem, k_slices
from ..stages.skinny import MAX_SMALL, STAGE, is_gemv_geometry, renamed, tiles_of  # noqa: F401  (tiles_of: the kernel's tiles)

MIN_K_SPLIT = 128  # no split-K slice shorter than this (the reduce would cost more than it hides)


def applies(M: int, N: int) -> bool:
    """The dispatcher's rule: the skinny kernel is for M <= 16 or N <= 16."""
    return M <= MAX_SMALL or N <= MAX_SMALL


def wave(c: dict, sms: int) -> int:
    """Blocks of config ``c`` that run at once on ``sms`` SMs."""
    return sms * STAGE.blocks_per_sm(c)


def choose(problem: Problem, sms: int) -> tuple[dict, int]:
    """(config, split_k) for ``problem`` on a GPU with ``sms`` SMs.

    The config is the auto resolution for this problem (tile width chosen to fill a wave where it
    can). Split-K only when the tiles fill less than 3/4 of a wave (the bytes in flight DRAM
    bandwidth needs): the most slices that still fit in one wave (a second, partial wave would
    run mostly idle), none shorter than MIN_K_SPLIT. The value returned is the number of slices
    the host will actually run: with k_split = ceil(K / split_k) rounded up to a multiple of 32,
    ceil(K / k_split) == split_k."""
    cfg = STAGE.resolve(STAGE.default_config, problem, sms)
    r = renamed(problem, cfg["small_dim"])
    tiles = tiles_of(cfg, r, problem.batch)
    # The GEMV geometry (stages/skinny.py: 256 threads x 8 rows) has the bytes in flight DRAM needs
    # at one block per SM, so its tiles need only cover the SMs (a second block per SM would only
    # buy a split-K reduce: H200 1x4096x4096 24.7 us at split 2 against 23.5 without).
    full = sms if is_gemv_geometry(cfg) else wave(cfg, sms)
    K = problem.K
    if tiles == 0 or K <= MIN_K_SPLIT or 4 * tiles >= 3 * full:
        return cfg, 1
    want = min(max(1, full // tiles), max(1, K // MIN_K_SPLIT), 65535)
    if want <= 1:
        return cfg, 1
    k_split, splits = k_slices(K, want)
    # The shared-memory stage need not be longer than a slice.
    cfg["k_chunk"] = STAGE.resolve({**cfg, "k_chunk": 0}, replace(problem, splits=splits, k_split=k_split), sms)["k_chunk"]
    return cfg, splits
