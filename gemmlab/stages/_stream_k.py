"""Python mirror of the stream-K schedule (``StreamKSegment`` in kernels/epilogue/stream_k.cuh,
run by the wrapper in jit/source.py, and the fixup kernel, kernels/stream_k_fixup.cuh): which
block computes which K tiles of which output tile, where a cut tile's partials go and in which
order the fixup adds them. The tests check the schedule's invariants on it (every K tile of
every tile once, every slot written once and read once, in K order); the plan asks it whether
any tile is cut (else no fixup kernel); ``longest_run`` is its balance."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    block: int
    tile: int       # linear tile index (before the group_m order)
    k_begin: int    # first K tile of the segment
    k_end: int      # one past its last
    slot: int       # the partial slot it stores into; -1: the whole tile, stored into D


def shared_tiles(tiles: int, blocks: int) -> int:
    """The tiles whose K iterations are shared: the last partial wave plus one full wave (all of
    them below two waves; none when the waves are full)."""
    if tiles < 2 * blocks:
        return tiles
    rest = tiles % blocks
    return 0 if rest == 0 else blocks + rest


def run_of(block: int, total: int, blocks: int) -> tuple[int, int]:
    """The shared iterations [begin, end) of ``block``: an even share of ``total`` among ``blocks``."""
    return block * total // blocks, (block + 1) * total // blocks


def block_of(it: int, total: int, blocks: int) -> int:
    """The block whose run holds shared iteration ``it`` (the largest b with b*total//blocks <= it)."""
    return ((it + 1) * blocks + total - 1) // total - 1


def segments(block: int, tiles: int, k_tiles: int, blocks: int) -> list[Segment]:
    """The segments of ``block``, in the order it computes them: its whole tiles, then its run."""
    shared = shared_tiles(tiles, blocks)
    dp = tiles - shared
    out = [Segment(block, t, 0, k_tiles, -1) for t in range(block, dp, blocks)]
    total = shared * k_tiles
    begin, end = run_of(block, total, blocks)
    it = begin
    while it < end:
        t, kb = divmod(it, k_tiles)
        ke = min(end - t * k_tiles, k_tiles)
        slot = -1 if kb == 0 and ke == k_tiles else 2 * block + (0 if it == begin and kb > 0 else 1)
        out.append(Segment(block, dp + t, kb, ke, slot))
        it += ke - kb
    return out


def fixup_slots(t: int, tiles: int, k_tiles: int, blocks: int) -> list[int]:
    """The slots the fixup adds for shared tile ``t``, in order ([] where one block computed it whole)."""
    total = shared_tiles(tiles, blocks) * k_tiles
    owner, last = block_of(t * k_tiles, total, blocks), block_of((t + 1) * k_tiles - 1, total, blocks)
    return [] if owner == last else [2 * owner + 1] + [2 * b for b in range(owner + 1, last + 1)]


def cut_tiles(tiles: int, k_tiles: int, blocks: int) -> int:
    """How many shared tiles more than one block computes (the fixup kernel's work)."""
    return sum(1 for t in range(shared_tiles(tiles, blocks)) if fixup_slots(t, tiles, k_tiles, blocks))


def longest_run(tiles: int, k_tiles: int, blocks: int) -> int:
    """K tiles computed by the busiest block (what the grid's time follows)."""
    shared = shared_tiles(tiles, blocks)
    return (tiles - shared) // blocks * k_tiles + -(-shared * k_tiles // blocks)
