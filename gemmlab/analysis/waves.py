"""Waves and the L2 hit estimate (notes 000 §2.3).

A *wave* is the set of blocks resident at once: SMs x blocks per SM. A grid of B blocks runs in
B / (SMs x blocks per SM) waves; the last one is partly empty unless the division is exact, so the
machine is busy ``waves / ceil(waves)`` of the time (the tail effect).

Within a wave, blocks that share a row of tiles read the same A panel and blocks that share a
column read the same B panel; after the first block has brought a K slice into L2 the others hit.
Per K step a wave asks for P x (BM + BN) x BK elements (P blocks) but only
Wm x BM + Wn x BN distinct rows and columns of them, Wm and Wn being the number of distinct tile
rows and columns the wave touches. So

    L2 hit ≈ 1 - (Wm·BM + Wn·BN) / (P·(BM + BN))

which is what :func:`l2_hit` returns for the block order the kernel uses (row-major, or grouped
``group_m`` tile rows at a time as jit/source.py maps blocks, 000 §2.3 and 001). The notes' own
closed form, ``1 - Wm·Wn / (Wm·Wn + Wm·N_block + Wn·M_block)``, is :func:`l2_hit_notes`; docs/models.md
shows why it is not used for the estimate (it falls as the wave gets squarer, against the notes' own
remark that a squarer order hits more).
"""
from __future__ import annotations

import math


def tile_of(pid: int, tiles_m: int, tiles_n: int, group_m: int = 1) -> tuple[int, int]:
    """(tile_m, tile_n) of linear block ``pid``, exactly as the generated kernel maps it
    (jit/source.py): ``group_m`` tile rows at a time, column-major inside a group."""
    group_size = group_m * tiles_n
    first_m = (pid // group_size) * group_m
    rows = min(tiles_m - first_m, group_m)
    return first_m + (pid % group_size) % rows, (pid % group_size) // rows


def waves(blocks: int, sms: int, blocks_per_sm: int) -> dict:
    """{"blocks", "capacity", "waves", "full_waves", "last_wave_blocks", "last_wave_utilisation",
    "efficiency"} for ``blocks`` blocks on ``sms`` SMs holding ``blocks_per_sm`` each."""
    capacity = sms * blocks_per_sm
    if capacity <= 0:
        return {"blocks": blocks, "capacity": 0, "waves": math.inf, "full_waves": 0,
                "last_wave_blocks": 0, "last_wave_utilisation": 0.0, "efficiency": 0.0}
    w = blocks / capacity
    full, rest = divmod(blocks, capacity)
    last = rest if rest else (capacity if blocks else 0)
    return {
        "blocks": blocks,
        "capacity": capacity,
        "waves": w,
        "full_waves": full,
        "last_wave_blocks": last,
        "last_wave_utilisation": last / capacity,
        "efficiency": w / math.ceil(w) if blocks else 0.0,
    }


def wave_spans(tiles_m: int, tiles_n: int, capacity: int, group_m: int = 1, max_waves: int = 64):
    """For each wave: (blocks P, distinct tile rows Wm, distinct tile columns Wn). Past
    ``max_waves`` waves, that many evenly spaced waves stand for all of them."""
    total = tiles_m * tiles_n
    capacity = max(capacity, 1)
    n_waves = -(-total // capacity)
    picks = range(n_waves) if n_waves <= max_waves else sorted({i * (n_waves - 1) // (max_waves - 1)
                                                                 for i in range(max_waves)})
    out = []
    for start in (w * capacity for w in picks):
        rows, cols = set(), set()
        end = min(start + capacity, total)
        for pid in range(start, end):
            tm, tn = tile_of(pid, tiles_m, tiles_n, group_m)
            rows.add(tm)
            cols.add(tn)
        out.append((end - start, len(rows), len(cols)))
    return out


def l2_hit(tiles_m: int, tiles_n: int, capacity: int, block_m: int, block_n: int, group_m: int = 1) -> float:
    """Share of the A and B tile requests of a wave that another block of the same wave already
    brought into L2, averaged over waves weighted by their blocks (model above)."""
    spans = wave_spans(tiles_m, tiles_n, capacity, group_m)
    asked = sum(p * (block_m + block_n) for p, _, _ in spans)
    distinct = sum(wm * block_m + wn * block_n for _, wm, wn in spans)
    return 1.0 - distinct / asked if asked else 0.0


def l2_hit_notes(wm: int, wn: int, m_blocks: int, n_blocks: int) -> float:
    """The notes' formula (000 §2.3) verbatim, with M_block and N_block read as the number of
    block tiles along M and N (the notes do not define them)."""
    d = wm * wn + wm * n_blocks + wn * m_blocks
    return 1.0 - wm * wn / d if d else 0.0


def report(M: int, N: int, block_m: int, block_n: int, sms: int, blocks_per_sm: int,
           group_m: int = 1, batch: int = 1) -> dict:
    """Waves, tail and L2 estimates for an M x N output in BM x BN tiles."""
    tiles_m, tiles_n = math.ceil(M / block_m), math.ceil(N / block_n)
    blocks = tiles_m * tiles_n * batch
    out = waves(blocks, sms, blocks_per_sm)
    capacity = out["capacity"]
    out.update({"tiles_m": tiles_m, "tiles_n": tiles_n, "group_m": group_m})
    if capacity and tiles_m and tiles_n:
        spans = wave_spans(tiles_m, tiles_n, capacity, group_m)
        _, wm, wn = spans[0]
        out["first_wave_span"] = {"tile_rows": wm, "tile_cols": wn}
        out["l2_hit"] = l2_hit(tiles_m, tiles_n, capacity, block_m, block_n, group_m)
        out["l2_hit_row_major"] = l2_hit(tiles_m, tiles_n, capacity, block_m, block_n, 1)
        best = max((1, 2, 4, 8, 16, 32), key=lambda g: l2_hit(tiles_m, tiles_n, capacity, block_m, block_n, g))
        out["best_group_m"] = best
        out["l2_hit_best_group"] = l2_hit(tiles_m, tiles_n, capacity, block_m, block_n, best)
        out["l2_hit_notes_formula"] = l2_hit_notes(wm, wn, tiles_m, tiles_n)
    return out


def dram_traffic(M: int, N: int, K: int, block_m: int, block_n: int, sms: int, blocks_per_sm: int,
                 group_m: int = 1, l2_bytes: int = 60 * 1024 * 1024, splits: int = 1, elem: int = 4,
                 operand_elem: int | None = None) -> dict:
    """Bytes the kernel moves between L2 and DRAM and between the SMs and L2 (beta = 0), for
    ``gemmlab profile`` to set against ncu (which flushes L2 before the kernel and counts only
    what happens while it runs).

    - **L2 reads**: every block reads its A panel (BM x K) and B panel (K x BN) once, so
      tiles x (BM + BN) x K elements. For a stage without shared-memory tiles (s01) that is what
      L1 leaves when it catches the block's own reuse.
    - **DRAM reads**: an operand no larger than half of L2 is read from DRAM once and stays;
      a larger one is read again by every wave that touches it (per wave: Wm x BM rows of A and
      Wn x BN columns of B over all of K, from the real block order, ``group_m`` included), since
      between two waves' visits more than L2 has streamed through.
    - **L2 writes**: C (and split-K partials): M x N x splits elements.
    - **DRAM writes**: those, less the last round's output, which is still dirty in L2 when the
      kernel ends (up to half of L2).

    ``operand_elem``: bytes per element of A and B as the kernel reads them, where that differs
    from C's ``elem`` (s13 reads a hi and a lo TF32 copy of each: 8).
    """
    op = elem if operand_elem is None else operand_elem
    tiles_m, tiles_n = math.ceil(M / block_m), math.ceil(N / block_n)
    k_split = math.ceil(K / max(1, splits))
    a_bytes, b_bytes, c_bytes = op * M * K, op * K * N, elem * M * N * splits
    l2_read = op * tiles_m * tiles_n * (block_m + block_n) * K
    capacity = max(1, sms * blocks_per_sm)
    a_resident, b_resident = a_bytes <= l2_bytes / 2, b_bytes <= l2_bytes / 2
    if not tiles_m or not tiles_n or not K:
        spans = []
    else:
        spans = wave_spans(tiles_m, tiles_n, capacity, group_m, max_waves=1 << 30) if splits == 1 else \
            wave_spans(tiles_m, tiles_n, max(1, capacity // splits), group_m, max_waves=1 << 30)
    waves_a = sum(wm * block_m for _, wm, _ in spans) * K * op
    waves_b = sum(wn * block_n for _, _, wn in spans) * K * op
    dram_a = a_bytes if a_resident else max(a_bytes, waves_a)
    dram_b = b_bytes if b_resident else max(b_bytes, waves_b)
    if a_bytes + b_bytes + c_bytes <= l2_bytes:   # everything fits: each byte once
        dram_a, dram_b = a_bytes, b_bytes
    rounds = math.ceil(tiles_m * tiles_n * splits / capacity) if capacity else 0
    last_round = c_bytes / rounds if rounds else 0.0
    dram_write = max(0.0, c_bytes - min(last_round, l2_bytes / 2))
    dram_read = float(dram_a + dram_b)
    return {
        "l2_read_bytes": float(l2_read),
        "l2_write_bytes": float(c_bytes),
        "dram_read_bytes": dram_read,
        "dram_write_bytes": dram_write,
        "l2_read_hit": 1.0 - dram_read / l2_read if l2_read else 0.0,
        "a_resident": a_resident, "b_resident": b_resident,
        "rounds": rounds, "k_split": k_split,
        "compulsory_read_bytes": float(a_bytes + b_bytes),
    }
