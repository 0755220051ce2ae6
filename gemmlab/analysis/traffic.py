"""Traffic per memory level and arithmetic intensity (notes 002; 000 §3.2, §4.3, §5.2, §6.2).

For C (m x n) = A (m x k) B (k x n), tiled into bm x bn blocks stepping bk along K, and each block
tile into rm x rn register tiles (one per thread), the reads needed to compute all of C are (002):

    global   m·n·k·(1/bm + 1/bn)      (naive, one element per thread: 2·m·n·k)
    shared   m·n·k·(1/rm + 1/rn)      (no register tiling, rm = rn = 1: 2·m·n·k)
    register 2·m·n·k

and the arithmetic intensities (FLOP per byte read from the level below, FP32 = 4 bytes):

    block  (global -> shared)   bm·bn / (2·(bm + bn))          128 x 128: 32 FLOP/B    (§4.3)
    thread (shared -> register) rm·rn / (2·(rm + rn))          8 x 8: 2 FLOP/B          (§5.2)
    warp, with broadcast        32·rm·rn·2 / (4·(x·rm + y·rn))  rm = rn: 16·rm/(x + y)  (§6.2)

where the warp's 32 lanes form an x (along M) by y (along N) grid: lanes on the same row share A
values, lanes on the same column share B values.
"""
from __future__ import annotations

import math

FLOAT = 4


def global_reads(m: int, n: int, k: int, bm: int | None = None, bn: int | None = None) -> float:
    """Elements read from global memory: 2mnk untiled, mnk(1/bm + 1/bn) with bm x bn block tiles."""
    if bm is None or bn is None:
        return 2.0 * m * n * k
    return m * n * k * (1.0 / bm + 1.0 / bn)


def shared_reads(m: int, n: int, k: int, rm: int = 1, rn: int = 1) -> float:
    """Elements read from shared memory with rm x rn register tiles per thread."""
    return m * n * k * (1.0 / rm + 1.0 / rn)


def register_reads(m: int, n: int, k: int) -> float:
    """A and B operands read by the FFMAs: 2 per multiply-add."""
    return 2.0 * m * n * k


def block_intensity(bm: int, bn: int) -> float:
    """FLOP per byte of A and B moved from global to shared memory (000 §4.3)."""
    return bm * bn / (2.0 * (bm + bn))


def thread_intensity(rm: int, rn: int) -> float:
    """FLOP per byte a thread reads from shared memory for its rm x rn outer product (000 §5.2)."""
    return rm * rn / (2.0 * (rm + rn))


def warp_intensity(x: int, y: int, rm: int, rn: int) -> float:
    """FLOP per distinct byte a warp of x x y lanes reads from shared memory per k step when
    lanes sharing a row (column) broadcast their A (B) values (000 §6.2)."""
    return 32.0 * rm * rn * 2 / (FLOAT * (x * rm + y * rn))


def warp_shape_ratio(x: int, y: int, tm: int) -> float:
    """The notes' closed form for TM = TN: 16·TM / (x + y)."""
    return 16.0 * tm / (x + y)


def warp_shapes(tm: int = 8, tn: int = 8, lanes: int = 32) -> list[tuple[int, int, float]]:
    """Every x x y = ``lanes`` warp shape with its warp intensity, best first."""
    shapes = [(x, lanes // x) for x in range(1, lanes + 1) if lanes % x == 0]
    rows = [(x, y, warp_intensity(x, y, tm, tn)) for x, y in shapes]
    return sorted(rows, key=lambda r: (-r[2], r[0]))


def best_warp_shapes(tm: int = 8, tn: int = 8, lanes: int = 32) -> list[tuple[int, int]]:
    rows = warp_shapes(tm, tn, lanes)
    top = rows[0][2]
    return [(x, y) for x, y, v in rows if math.isclose(v, top)]


def tiling_plan(m: int, n: int, k: int, bm: int, bn: int, bk: int, rm: int, rn: int) -> dict:
    """The derived quantities of 002's worked example for any (divisible) problem and tiling."""
    blocks_m, blocks_n = m // bm, n // bn
    threads = (bm // rm) * (bn // rn)
    return {
        "blocks": blocks_m * blocks_n,
        "c_per_block": bm * bn,
        "threads_per_block": threads,
        "c_per_thread": rm * rn,
        "big_iterations": k // bk,            # K tiles per block
        "small_iterations": bk,               # k steps per K tile, one rm x rn outer product each
        "ffma_per_small_iteration": rm * rn,  # per thread
        "a_tile_elements": bm * bk,           # moved global -> shared per big iteration
        "b_tile_elements": bk * bn,
        "global_reads": global_reads(m, n, k, bm, bn),
        "shared_reads": shared_reads(m, n, k, rm, rn),
        "register_reads": register_reads(m, n, k),
    }


def levels(m: int, n: int, k: int, *, bm: int | None, bn: int | None, rm: int, rn: int,
           warp_distinct: int | None = None, lanes_mn: tuple | None = None) -> dict:
    """Traffic per level (elements and bytes) and intensity per level for one stage's tiling.

    ``bm``/``bn`` None: no shared-memory tiling (global reads 2mnk). ``warp_distinct``: distinct
    A and B elements one warp reads from shared memory per k step (from the stage's addressing);
    ``lanes_mn``: the warp's lane grid (x, y) if known.
    """
    flops = 2.0 * m * n * k
    g = global_reads(m, n, k, bm, bn)
    s = shared_reads(m, n, k, rm, rn) if bm is not None else 0.0
    r = register_reads(m, n, k)
    out = {
        "flops": flops,
        "global_reads": g,
        "global_bytes": g * FLOAT,
        "shared_reads": s,
        "shared_bytes": s * FLOAT,
        "register_reads": r,
        "block_tile": [bm, bn] if bm is not None else None,
        "thread_tile": [rm, rn],
        "global_intensity": flops / (g * FLOAT) if g else None,
        "block_intensity": block_intensity(bm, bn) if bm is not None else 0.25,
        "thread_intensity": thread_intensity(rm, rn) if bm is not None else None,
    }
    if warp_distinct:
        out["warp_intensity"] = 32.0 * rm * rn * 2 / (FLOAT * warp_distinct)
    if lanes_mn:
        out["warp_lanes"] = list(lanes_mn)
        if "warp_intensity" not in out:
            out["warp_intensity"] = warp_intensity(lanes_mn[0], lanes_mn[1], rm, rn)
    return out


def compulsory_bytes(m: int, n: int, k: int, reads_c: bool = False) -> float:
    """Bytes every GEMM must move at least: A, B once, C written (and read when beta != 0)."""
    return FLOAT * (m * k + k * n + m * n * (2 if reads_c else 1))
