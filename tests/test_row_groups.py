"""The row-group view of unaligned rows on TMA (scripts/row_group_model.py: a design for s11, CPU
only): every tile equals the operand's own floats, with the padding poisoned; each of the three
things the view leaves to the kernel (the dim-0 end, the column mask, the tail rows) is needed."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from script_loader import load_script

rg = load_script("row_group_model")


@pytest.mark.parametrize("ld_mod", [1, 2, 3, 0])
@pytest.mark.parametrize("rows", [4, 5, 6, 7, 33, 66])
@pytest.mark.parametrize("inner,pad", [(29, 0), (30, 3), (64, 1), (13, 6)])
def test_every_tile_is_the_operands_own_floats(ld_mod, rows, inner, pad):
    ld = inner + pad
    ld += (ld_mod - ld) % 4  # the leading dimension's class mod 4
    v = rg.view(rows, inner, ld)
    assert v.G == {1: 4, 3: 4, 2: 2, 0: 1}[ld % 4] and v.stride1 % rg.VEC == 0
    assert v.tail == rows % v.G and v.dim1 * v.G + v.tail == rows
    rng = np.random.default_rng(rows * 1000 + ld)
    flat = rg.operand(rows, inner, ld, rng)
    # the last whole group's last element: the operand's own last element where no rows are left over
    assert rg.max_offset(v) == (v.dim1 * v.G - 1) * ld + inner - 1 <= flat.size - 1
    assert (rg.max_offset(v) == flat.size - 1) == (v.tail == 0)
    for box_rows, box_inner in ((8, 16), (32, 8), (4, 32)):
        assert rg.check(rows, inner, ld, box_rows, box_inner, rng) > 0


def _first_mismatch(rows, inner, ld, box_rows, box_inner, **kw):
    rng = np.random.default_rng(3)
    flat = rg.operand(rows, inner, ld, rng)
    v = kw.pop("v", None) or rg.view(rows, inner, ld)
    for r0 in range(0, rows, box_rows):
        for c0 in range(0, inner, box_inner):
            got = rg.in_row_order(rg.load_tile(flat, v, ld, rows, inner, r0, c0, box_rows, box_inner, **kw), v.G)
            want = rg.expected(flat, rows, inner, ld, r0, c0, box_rows, box_inner)
            if not np.array_equal(got, want):
                return r0, c0
    return None


def test_without_the_column_mask_the_next_rows_floats_leak_in():
    # inner 30 is not a multiple of the 16-column box: the last column tile crosses it
    assert _first_mismatch(9, 30, 31, 8, 16) is None
    assert _first_mismatch(9, 30, 31, 8, 16, mask=False) == (0, 16)


def test_without_the_tail_rows_they_read_as_zeros():
    assert _first_mismatch(7, 32, 33, 8, 16, tail=False) == (0, 0)  # rows 4-6 are in no whole group
    assert _first_mismatch(8, 32, 33, 8, 16, tail=False) is None    # no tail: nothing to load


def test_a_group_wide_dim0_reads_past_the_operand():
    """Dim 0 of G * ld floats (the whole group, padding included) would read the padding after the
    last row, which need not be allocated."""
    rows, inner, ld = 8, 30, 33
    v = rg.view(rows, inner, ld)
    wide = dataclasses.replace(v, dim0=v.G * ld)
    with pytest.raises(IndexError, match="past the operand"):
        _first_mismatch(rows, inner, ld, 8, 32, v=wide)


def test_too_few_rows_or_a_short_ld_have_no_view():
    assert rg.view(3, 10, 11) is None  # G = 4
    assert rg.view(3, 10, 10) is not None  # G = 2
    with pytest.raises(ValueError, match="ld=9"):
        rg.view(8, 10, 9)


def test_smem_rows_are_a_permutation_of_the_tile():
    for G in (1, 2, 4):
        for box_rows in (8, 16, 32, 128):
            rows = [rg.smem_row(s, box_rows, G) for s in range(box_rows)]
            assert sorted(rows) == list(range(box_rows))
            assert rows[1] - rows[0] == G or G == 1
            assert all(rg.smem_slot(rows[s], box_rows, G) == s for s in range(box_rows))
