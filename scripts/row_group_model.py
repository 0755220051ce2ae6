"""Unaligned rows on TMA without a copy: the row-group view, modelled on the CPU (s11 builds it behind
s11_tma.ROW_GROUPS, kernels/copy/row_groups.cuh; docs/stages/s10-s11.md, "Rows that are not 16-byte
aligned on TMA"; tests/test_row_groups.py checks the kernel's index maths through this model).

**The view does not run on the hardware.** Box j of a group starts at dim-0 coordinate j·ld + c0,
4-byte aligned only, and TMA does not load a box whose start is not 16-byte aligned: every
row-group kernel faulted ("illegal instruction", H100, 2026-12-06) at its second box
(scripts/tma_start_probe.py). ``tma_box`` models that rule; ``aligned_start=False`` keeps the
idealized TMA the design assumed, on which the index maths below are still checked.

TMA needs a 16-byte aligned base and strides that are multiples of 16 bytes. A row-major operand
whose leading dimension ``ld`` is not a multiple of 4 floats fails the second: today it is either
repacked into an aligned copy (a kernel launch and ~2 bytes moved per byte read) or run by s10 on
4-byte cp.async. But G = 4 / gcd(ld, 4) consecutive rows (4 for an odd ``ld``, 2 for ld = 2 mod
4) span G*ld floats, a multiple of 16 bytes. So the operand is a 2-D tensor of *row groups*:

    dim 0: (G - 1) * ld + inner floats (a group's rows end to end; the last row stops at ``inner``)
    dim 1: rows // G groups, stride G * ld * 4 bytes

and row r = g * G + j, element c sits at (j * ld + c, g). A box of ``box_rows`` rows (a multiple of
G) and ``box_inner`` columns is G boxes of box_rows / G groups, box j at (j * ld + c0, r0 / G): box j
brings rows r0 + j, r0 + j + G, ... Shared memory then holds the tile's rows in j-major order,
a fixed permutation (``smem_row``) that the consumer's indexing absorbs: row-wise for A (the
epilogue's row address), k-wise for a B whose rows are k (the FFMA loop's k order, a compile-time
constant when G is a template parameter).

What the view leaves to the kernel (each modelled here, each checked by tests/test_row_groups.py):
- **No read past the operand.** Dim 0 ends at the last row's ``inner``, not at G * ld, so the
  last group never reads the padding after the operand's last row (which need not be allocated);
  the largest address read is that of the last element itself (``max_offset``).
- **Past ``inner`` inside a group** box j reads row j + 1's first floats (or padding), not zeros:
  real data, possibly Inf or NaN. The tile that crosses ``inner`` zeroes those columns in shared
  memory before the FFMAs read them (``mask_inner``); only that last tile along ``inner`` pays.
- **The last rows % G rows** lie in no whole group: TMA returns zeros there (dim 1 ends at
  rows // G). They are loaded with plain loads by the one block row that holds them
  (``tail_rows``), after the TMA lands and before the FFMAs; at most 3 rows.

    python3 scripts/row_group_model.py       # a quick self-check over random shapes
"""

import math
import random
from dataclasses import dataclass

import numpy as np

VEC = 4  # floats in 16 bytes: the TMA stride unit


@dataclass(frozen=True)
class RowGroups:
    """The 2-D tensor-map view of a row-major operand (``rows`` x ``inner`` floats, row stride
    ``ld`` floats, base 16-byte aligned)."""
    G: int          # rows per group
    dim0: int       # floats along a group (its rows end to end, the last stopping at ``inner``)
    dim1: int       # whole groups
    stride1: int    # floats from one group to the next (G * ld: a multiple of 4)
    tail: int       # rows after the last whole group (rows % G)


def group_rows(ld: int) -> int:
    """G: the fewest consecutive rows whose floats make a multiple of 16 bytes."""
    return VEC // math.gcd(ld, VEC)


def view(rows: int, inner: int, ld: int) -> RowGroups | None:
    """The row-group view, or None where there is none (fewer rows than a group; ld < inner)."""
    if ld < inner or inner < 1:
        raise ValueError(f"ld={ld} must be >= inner={inner} >= 1")
    G = group_rows(ld)
    if rows < G:
        return None
    return RowGroups(G, (G - 1) * ld + inner, rows // G, G * ld, rows % G)


def max_offset(v: RowGroups) -> int:
    """The largest float offset any box may read (dim 0 and dim 1 at their ends)."""
    return (v.dim1 - 1) * v.stride1 + v.dim0 - 1


class UnalignedBox(ValueError):
    """A box whose dim-0 start is not 16-byte aligned: the hardware does not load it."""


def tma_box(flat: np.ndarray, dim0: int, dim1: int, stride1: int, c0: int, c1: int, b0: int, b1: int,
            aligned_start: bool = True) -> np.ndarray:
    """A tiled TMA load: box [b1][b0] from coordinates (c0, c1); an element outside [0, dim0) x
    [0, dim1) reads 0 (the fill), inside it reads ``flat``, which must hold it (an IndexError here
    is a read past the operand). As the hardware does it (``aligned_start``), the box must start at
    a 16-byte boundary of dim 0 (c0 a multiple of 4 floats; UnalignedBox otherwise: the H100 faults,
    "illegal instruction", scripts/tma_start_probe.py); aligned_start=False models an idealized TMA
    that starts anywhere, on which the row-group design below was built."""
    if aligned_start and c0 % VEC:
        raise UnalignedBox(f"box starts at float {c0} of dim 0, {4 * (c0 % VEC)} bytes past a 16-byte boundary")
    out = np.zeros((b1, b0), flat.dtype)
    for r in range(b1):
        y = c1 + r
        if not 0 <= y < dim1:
            continue
        for i in range(b0):
            x = c0 + i
            if 0 <= x < dim0:
                off = y * stride1 + x
                if off >= flat.size:
                    raise IndexError(f"read at float {off} past the operand's {flat.size}")
                out[r, i] = flat[off]
    return out


def smem_row(s: int, box_rows: int, G: int) -> int:
    """The tile row (0..box_rows) that shared-memory row ``s`` holds: box j's rows are j, j + G, ..."""
    per = box_rows // G
    return (s % per) * G + s // per


def smem_slot(row: int, box_rows: int, G: int) -> int:
    """The inverse of ``smem_row``: where tile row ``row`` lands (for rows that are k, the row the
    FFMA loop reads for its k: a compile-time constant in an unrolled loop)."""
    return (row % G) * (box_rows // G) + row // G


def load_tile(flat: np.ndarray, v: RowGroups, ld: int, rows: int, inner: int, r0: int, c0: int,
              box_rows: int, box_inner: int, *, mask: bool = True, tail: bool = True,
              aligned_start: bool = False) -> np.ndarray:
    """The shared-memory tile (rows in smem order) of rows [r0, r0 + box_rows) and columns
    [c0, c0 + box_inner), as the kernel would build it: G TMA boxes (on the idealized TMA unless
    ``aligned_start``: see tma_box), then the columns past ``inner`` zeroed (``mask_inner``) and the
    tail rows loaded by plain loads (``tail_rows``)."""
    assert box_rows % v.G == 0 and r0 % v.G == 0
    per = box_rows // v.G
    smem = np.concatenate([tma_box(flat, v.dim0, v.dim1, v.stride1, j * ld + c0, r0 // v.G, box_inner, per,
                                   aligned_start) for j in range(v.G)])
    if mask:
        mask_inner(smem, c0, inner)
    if tail:
        tail_rows(smem, flat, v, ld, rows, inner, r0, c0, box_rows, box_inner)
    return smem


def mask_inner(smem: np.ndarray, c0: int, inner: int) -> None:
    """Zero the columns at or past ``inner`` (the tile crossing it holds the next row's floats there)."""
    if c0 + smem.shape[1] > inner:
        smem[:, max(inner - c0, 0):] = 0


def tail_rows(smem, flat, v: RowGroups, ld, rows, inner, r0, c0, box_rows, box_inner) -> None:
    """The rows after the last whole group, loaded one float at a time into their smem rows."""
    first = v.dim1 * v.G
    for r in range(max(first, r0), min(rows, r0 + box_rows)):
        s = smem_slot(r - r0, box_rows, v.G)
        for i in range(box_inner):
            c = c0 + i
            smem[s, i] = flat[r * ld + c] if c < inner else 0


def operand(rows: int, inner: int, ld: int, rng: np.random.Generator, poison: bool = True) -> np.ndarray:
    """A row-major operand as it lies in memory, ending at its last element: ``(rows - 1) * ld +
    inner`` floats, the padding between rows (ld > inner) poisoned with NaN and Inf."""
    flat = rng.standard_normal((rows - 1) * ld + inner).astype(np.float32)
    if poison and ld > inner:
        for r in range(rows - 1):
            flat[r * ld + inner:(r + 1) * ld] = np.where(np.arange(ld - inner) % 2, np.inf, np.nan)
    return flat


def expected(flat, rows, inner, ld, r0, c0, box_rows, box_inner) -> np.ndarray:
    """The tile in row order, zero past the operand (what any correct load must give)."""
    out = np.zeros((box_rows, box_inner), np.float32)
    for i in range(box_rows):
        for k in range(box_inner):
            if r0 + i < rows and c0 + k < inner:
                out[i, k] = flat[(r0 + i) * ld + c0 + k]
    return out


def in_row_order(smem: np.ndarray, G: int) -> np.ndarray:
    box_rows = smem.shape[0]
    out = np.empty_like(smem)
    for s in range(box_rows):
        out[smem_row(s, box_rows, G)] = smem[s]
    return out


def check(rows, inner, ld, box_rows, box_inner, rng) -> int:
    """Every tile of one operand loaded through the view against ``expected``; returns the tiles."""
    flat = operand(rows, inner, ld, rng)
    v = view(rows, inner, ld)
    assert v is not None and max_offset(v) <= flat.size - 1
    n = 0
    for r0 in range(0, rows, box_rows):
        for c0 in range(0, inner, box_inner):
            got = in_row_order(load_tile(flat, v, ld, rows, inner, r0, c0, box_rows, box_inner), v.G)
            want = expected(flat, rows, inner, ld, r0, c0, box_rows, box_inner)
            if not np.array_equal(got, want):
                raise AssertionError(f"rows {rows} inner {inner} ld {ld}: tile ({r0}, {c0}) differs")
            n += 1
    return n


def main():
    rng, py = np.random.default_rng(7), random.Random(7)
    tiles = 0
    for _ in range(60):
        inner = py.randint(1, 90)
        ld = inner + py.choice((0, 0, 1, 2, 3, 5))
        rows = py.randint(group_rows(ld), 70)
        tiles += check(rows, inner, ld, py.choice((8, 16, 32)), py.choice((8, 16, 32)), rng)
    print(f"row groups (idealized TMA: boxes start anywhere): {tiles} tiles of 60 random operands equal to the "
          "operand's own floats")


if __name__ == "__main__":
    main()
