"""The row-group view of unaligned rows on TMA (scripts/row_group_model.py): every tile equals the
operand's own floats, with the padding poisoned; each of the three things the view leaves to the
kernel (the dim-0 end, the column mask, the tail rows) is needed. Then s11's row groups
(s11_tma.ROW_GROUPS): the problem's rule, the host's maps and the kernel's index maths through the
model, and on the GPU against float64."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

from script_loader import load_script

rg = load_script("row_group_model")
# The row-group design's boxes on an idealized TMA that starts a box anywhere; the hardware does not
# (test_the_hardware_does_not_load_a_groups_later_boxes): the index maths are still checked on it.
_ideal_box = functools.partial(rg.tma_box, aligned_start=False)


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


# ---- s11's row groups (s11_tma.ROW_GROUPS): the host's maps and the kernel's index maths -----------
from gemmlab import heuristics  # noqa: E402
from gemmlab.problem import Problem  # noqa: E402
from gemmlab.stages import get as get_stage  # noqa: E402
from gemmlab.stages import s11_tma  # noqa: E402

S11 = get_stage("s11")
BASE = 1 << 40  # a fake 16-byte aligned device address


@pytest.fixture
def row_groups_on(monkeypatch):
    """Row groups on, on the idealized TMA (UNALIGNED_BOX_STARTS: the design, not the hardware)."""
    monkeypatch.setattr(s11_tma, "ROW_GROUPS", True)
    monkeypatch.setattr(s11_tma, "UNALIGNED_BOX_STARTS", True)
    monkeypatch.setattr(s11_tma.tensor_map, "available", lambda: True)


def test_the_hardware_does_not_load_a_groups_later_boxes(monkeypatch):
    """TMA loads a box only from a 16-byte boundary of dim 0 (the H100 faulted on every row-group
    kernel at its second box; scripts/tma_start_probe.py): box j >= 1 of a group starts j·ld floats
    in, so the model refuses the design's tiles, and with ROW_GROUPS on s11 still refuses row groups
    and s10 takes the problem."""
    flat = rg.operand(8, 30, 31, np.random.default_rng(0))
    v = rg.view(8, 30, 31)
    assert rg.tma_box(flat, v.dim0, v.dim1, v.stride1, 0, 0, 16, 2).shape == (2, 16)  # box 0: aligned
    with pytest.raises(rg.UnalignedBox, match="12 bytes past a 16-byte boundary"):
        rg.tma_box(flat, v.dim0, v.dim1, v.stride1, 31, 0, 16, 2)                    # box 1: 124 bytes in
    with pytest.raises(rg.UnalignedBox):
        rg.load_tile(flat, v, 31, 8, 30, 0, 0, 8, 16, aligned_start=True)
    assert rg.load_tile(flat, v, 31, 8, 30, 0, 0, 8, 16).shape == (8, 16)            # the idealized TMA
    monkeypatch.setattr(s11_tma, "ROW_GROUPS", True)
    monkeypatch.setattr(s11_tma.tensor_map, "available", lambda: True)
    assert not s11_tma.UNALIGNED_BOX_STARTS
    p = strided(129, 37, 51, "nn", 1, 1)
    assert s11_tma.row_groups(p) != (1, 1)
    assert any("not 16-byte aligned" in m for m in s11_tma.tma_problems(S11.default_config, p))
    assert S11.fallback(S11.default_config, p)[0].id == "s10"


def _padded(rows, cols, row_major, pad):
    """(row stride, column stride, floats) of a rows x cols matrix whose leading dimension is padded."""
    ld = (cols if row_major else rows) + pad
    return (ld, 1, rows * ld) if row_major else (1, ld, cols * ld)


def strided(M, N, K, layout, lda_pad=0, ldb_pad=0, batch=1, a_bs=None, b_bs=None, a_off=0):
    """A problem whose operands have leading dimensions padded by ``lda_pad`` / ``ldb_pad`` floats
    (A: M x K, 'n' row-major, 't' column-major; B likewise)."""
    a_rs, a_cs, a_extent = _padded(M, K, layout[0] == "n", lda_pad)
    b_rs, b_cs, b_extent = _padded(K, N, layout[1] == "n", ldb_pad)
    return Problem(M, N, K, a_rs, a_cs, b_rs, b_cs, -(-N // 4) * 4, batch=batch,
                   a_bs=(a_extent if a_bs is None else a_bs) if batch > 1 else 0,
                   b_bs=(b_extent if b_bs is None else b_bs) if batch > 1 else 0,
                   d_bs=M * -(-N // 4) * 4 if batch > 1 else 0,
                   a_ptr=BASE + 4 * a_off, b_ptr=2 * BASE, d_ptr=3 * BASE)


@pytest.mark.parametrize("layout,lda_pad,ldb_pad,want", [
    ("nn", 0, 1, (4, 2)),    # A row-major, rows of m 51 floats apart: G 4; B ld N+1 = 38: G 2
    ("nn", 1, 0, (1, 4)),    # A ld 52: aligned; B ld 37: G 4
    ("tn", 1, 2, (2, 4)),    # A column-major ld 30 (G 2), B ld 39 (G 4)
    ("tt", 3, 0, (1, 4)),    # A ld 32: aligned; B K-major, rows of n 51 apart: G 4 (not built in s11)
    ("nt", 3, 1, (2, 1)),    # A ld 54: G 2; B ld 52: aligned
])
def test_operand_row_group(layout, lda_pad, ldb_pad, want):
    p = strided(29, 37, 51, layout, lda_pad, ldb_pad)
    assert (p.operand("a").row_group, p.operand("b").row_group) == want


def test_row_group_needs_an_aligned_base_a_whole_group_and_batch_stride():
    assert strided(29, 37, 51, "tn", 1).operand("a").row_group == 2
    assert strided(29, 37, 51, "tn", 1, a_off=1).operand("a").row_group == 0   # base 4 bytes off
    assert strided(29, 37, 3, "nn").operand("b").row_group == 0                 # K 3 < G 4
    assert strided(3, 37, 51, "nn").operand("a").row_group == 0                 # M 3 < G 4 (rows of m)
    assert strided(29, 37, 3, "nn", ldb_pad=1).operand("b").row_group == 2      # K 3 >= G 2
    assert strided(29, 37, 51, "nn", batch=2, b_bs=51 * 37 + 2).operand("b").row_group == 0
    assert strided(29, 37, 51, "nn", batch=2, b_bs=51 * 40).operand("b").row_group == 4


@pytest.mark.usefixtures("row_groups_off")
def test_tma_ready_counts_row_groups_only_when_on(monkeypatch):
    p = strided(300, 37, 64, "nn")  # A aligned, B ld 37
    assert not p.operands_aligned() and not heuristics.tma_ready(p)
    assert s11_tma.row_groups(p) == (1, 1)
    monkeypatch.setattr(s11_tma, "ROW_GROUPS", True)
    assert heuristics.tma_ready(p) and s11_tma.row_groups(p) == (1, 4)
    assert heuristics.tma_ready(strided(300, 37, 63, "nn"))               # A rows of 63 floats: G 4
    assert s11_tma.row_groups(strided(300, 37, 63, "nn")) == (4, 4)
    assert heuristics.tma_ready(strided(300, 37, 64, "nt", ldb_pad=1))      # B K-major, rows of n 65 apart: G 4
    assert s11_tma.row_groups(strided(300, 37, 64, "nt", ldb_pad=1)) == (1, 4)
    assert not heuristics.tma_ready(strided(300, 37, 64, "nt", a_off=1))    # A's base 4 bytes off: no view


@pytest.mark.usefixtures("row_groups_off")
def test_row_grouped_problems_are_not_repacked_for_alignment(monkeypatch):
    p = strided(2000, 1001, 2048, "nn")  # large against its bytes: repacked today
    assert heuristics.should_repack(p)
    monkeypatch.setattr(s11_tma, "ROW_GROUPS", True)
    assert not heuristics.should_repack(p)


@pytest.mark.parametrize("layout,lda_pad,ldb_pad", [("nn", 1, 1), ("nn", 1, 0), ("tn", 1, 2), ("tn", 2, 0),
                                                     ("tt", 1, 1), ("nn", 0, 0), ("nt", 0, 1), ("tt", 1, 0),
                                                     ("nt", 1, 2)])
def test_row_groups_keep_s11_on_tma(row_groups_on, layout, lda_pad, ldb_pad):
    cfg = S11.default_config
    p = strided(129, 37, 51, layout, lda_pad, ldb_pad)
    assert S11.fallback(cfg, p) is None
    v = S11.variant(cfg, p)
    ga, gb = s11_tma.row_groups(p)
    assert v.get("a_row_group", 1) == ga and v.get("b_row_group", 1) == gb and (ga, gb) != (1, 1)
    assert f"{ga}, {gb}>" in S11.template(cfg, v)
    assert S11.stream_k_blocks(cfg, p, 132) == 0  # stream-K segments do not take row groups


def _kernel_tile(flat, shape, strides, box, ld, g, x0, k0, K, x_len, bk):
    """Stage tile of a row-grouped operand as the kernel builds it: G boxes (copy/row_groups.cuh
    RowGroups::load, through scripts/row_group_model.py's model of a TMA box), then fill_tail in the
    problem's last K tile; rows in shared-memory order."""
    _, dim1, dim0 = shape
    stride1 = strides[1]
    per = box[1]
    assert per == bk // g
    tile = np.concatenate([_ideal_box(flat, dim0, dim1, stride1, j * ld + x0, k0 // g, box[2], per) for j in range(g)])
    tail = K % g
    if k0 <= K - 1 < k0 + bk and tail:
        for k in range(K - tail - k0, K - k0):
            row = (k % g) * (bk // g) + k // g  # RowGroups::fill_tail
            for x in range(box[2]):
                tile[row, x] = flat[(k0 + k) * ld + x0 + x] if x < x_len else 0.0
    return tile


@pytest.mark.parametrize("layout,which,M,N,K,lda_pad,ldb_pad,bk", [
    ("nn", "b", 64, 37, 51, 1, 0, 16),   # G 4, K tail 3 (A's rows of 51 k padded to 52)
    ("nn", "b", 64, 37, 50, 2, 1, 32),   # G 2 (ld 38), no tail
    ("tn", "a", 45, 64, 33, 2, 0, 8),    # A ld 47: G 4, tail 1
    ("tn", "b", 64, 45, 34, 0, 1, 16),   # B ld 46: G 2, no tail; ld 45 x 34 rows
    ("tt", "a", 30, 64, 35, 0, 1, 32),   # A ld 30: G 2, tail 1 (B's columns of 35 k padded to 36)
])
def test_row_group_tiles_read_through_k_slot_are_the_operands_own(row_groups_on, layout, which, M, N, K, lda_pad,
                                                                 ldb_pad, bk):
    """The host's map (operand_maps) and the kernel's box coordinates, tail fill and k_slot
    (mma/warp_tile.cuh) together give every stage tile of the operand: its floats at k < K and
    x < the operand's x, zeros at k >= K; the padding between rows is NaN and Inf, and the model
    raises on any read past the operand's last element."""
    cfg = S11.config({"block_m": 32, "block_n": 32, "warp_m": 16, "warp_n": 32, "block_k": bk, "k_unroll": 1})
    p = strided(M, N, K, layout, lda_pad, ldb_pad)
    op = p.operand(which)
    g = op.row_group
    assert g > 1
    maps = s11_tma.operand_maps(cfg, p)
    ptr, shape, strides, box, swizzle = maps[which]
    assert swizzle == 0 and not s11_tma.tma_problems(cfg, p)
    ld, x = op.k_stride, op.x
    flat = rg.operand(K, x, ld, np.random.default_rng(K * ld))  # rows of k, x floats each, poisoned padding
    bx = cfg["block_m"] if which == "a" else cfg["block_n"]
    for x0 in range(0, x, bx):
        for k0 in range(0, K, bk):
            tile = _kernel_tile(flat, shape, strides, box, ld, g, x0, k0, K, x - x0, bk)
            for k in range(bk):
                row = tile[(k % g) * (bk // g) + k // g]  # WarpTileCore::k_slot<G>(k)
                for c in range(bx):
                    if k0 + k >= K:
                        assert row[c] == 0, (x0, k0, k, c)
                    elif x0 + c < x:
                        assert row[c] == flat[(k0 + k) * ld + x0 + c], (x0, k0, k, c)


def _kernel_m_tile(flat, shape, strides, box, ld, g, m0, k0, M, K, bm, bk, mask=True, fill=True):
    """A's stage tile as the kernel builds it where its rows of m go in groups (A K-major): G boxes,
    then (RowGroups::mask_k) the columns from K on zeroed in the problem's last K tile and
    (fill_m_tail) the last M % G rows written in every K tile of their block; smem rows, logical
    columns (the swizzle is one bijection for TMA, the mask and the fill alike)."""
    _, dim1, dim0 = shape
    per = box[1]
    assert per == bm // g and box[2] == bk
    tile = np.concatenate([_ideal_box(flat, dim0, dim1, strides[1], j * ld + k0, m0 // g, bk, per) for j in range(g)])
    k_len = K - k0
    if mask and k_len < bk:
        tile[:, k_len:] = 0
    m_full = M // g * g
    if fill and m_full < M and m_full < m0 + bm:
        for m in range(m_full - m0, M - m0):
            s = (m % g) * per + m // g
            for k in range(min(k_len, bk)):
                tile[s, k] = flat[(m0 + m) * ld + k0 + k]
    return tile


def _m_tiles_agree(M, K, lda_pad, bm, bk, which="a", **kw):
    """Every stage tile of a K-major operand whose rows (of m for A, of n for B: M stands for
    either) go in groups, read back through out_m / out_n, against the operand."""
    if which == "a":
        cfg = S11.config({"block_m": bm, "block_n": 32, "warp_m": 16, "warp_n": 32, "block_k": bk, "k_unroll": 1})
        p = strided(M, 64, K, "nt", lda_pad, -K % 4)
    else:
        cfg = S11.config({"block_m": 32, "block_n": bm, "warp_m": 16, "warp_n": 32, "block_k": bk, "k_unroll": 1})
        p = strided(64, M, K, "nt", -K % 4, lda_pad)
    op = p.operand(which)
    g = op.row_group
    assert g > 1 and s11_tma.row_groups(p) == ((g, 1) if which == "a" else (1, g)) and not s11_tma.tma_problems(cfg, p)
    ptr, shape, strides, box, swizzle = s11_tma.operand_maps(cfg, p)[which]
    assert swizzle == 4 * bk or (which == "a" and not cfg["a_swizzle"])
    ld = op.x_stride
    flat = rg.operand(M, K, ld, np.random.default_rng(M * ld))  # rows of m, K floats each, poisoned padding
    per = bm // g
    for m0 in range(0, M, bm):
        for k0 in range(0, K, bk):
            tile = _kernel_m_tile(flat, shape, strides, box, ld, g, m0, k0, M, K, bm, bk, **kw)
            for s in range(bm):
                m = (s % per) * g + s // per  # WarpTileCore::out_m
                for k in range(bk):
                    want = flat[(m0 + m) * ld + k0 + k] if m0 + m < M and k0 + k < K else 0.0
                    if not tile[s, k] == want:
                        return False
    return True


@pytest.mark.parametrize("which", ["a", "b"])
@pytest.mark.parametrize("M,K,lda_pad,bm,bk", [(70, 45, 0, 32, 16), (67, 50, 1, 64, 32), (129, 30, 3, 32, 8),
                                              (37, 33, 2, 64, 16)])
def test_row_grouped_rows_of_m_or_n_stored_through_out_m_are_the_operands_own(row_groups_on, which, M, K, lda_pad,
                                                                             bm, bk):
    """A K-major (rows of m) or B K-major (rows of n) on row groups: the host's map, the boxes, the
    K mask, the tail fill and the epilogue's out_m / out_n give every element of the operand at
    its row (x < M or N, k < K) and zeros elsewhere, with NaN and Inf between the rows; without the
    mask the next rows' floats (and the poison) leak in past K, without the fill the last rows
    read as zeros."""
    assert _m_tiles_agree(M, K, lda_pad, bm, bk, which)
    if K % bk:
        assert not _m_tiles_agree(M, K, lda_pad, bm, bk, which, mask=False)
    if M % (4 // np.gcd(K + lda_pad, 4)):
        assert not _m_tiles_agree(M, K, lda_pad, bm, bk, which, fill=False)


def test_rows_of_m_in_groups_need_whole_swizzle_periods_a_box(row_groups_on):
    p = strided(70, 64, 45, "nt", 0, 3)  # A rows of 45 floats: G 4
    cfg = S11.config({"block_m": 16, "block_n": 64, "warp_m": 16, "warp_n": 32})
    assert any("block_m a multiple of 32" in m for m in s11_tma.tma_problems(cfg, p))
    assert S11.fallback(cfg, p) is not None
    q = strided(64, 70, 45, "tt", 3, 0)  # B K-major, rows of n 45 floats apart: G 4
    assert S11.fallback(S11.default_config, q) is None
    turned = S11.config({"b_transpose": 1, "stages": 2})
    assert any("not turned" in m for m in s11_tma.tma_problems(turned, q)) and S11.fallback(turned, q) is not None


def test_without_the_tail_fill_the_last_rows_are_zeros(row_groups_on):
    """The problem's last K % G rows lie in no whole group: the boxes bring zeros there, and only
    the fill gives the operand's floats (the tile emulated as if K were a multiple of G beyond)."""
    cfg = S11.config({"block_m": 32, "block_n": 32, "warp_m": 16, "warp_n": 32, "block_k": 16, "k_unroll": 1})
    M, N, K = 64, 37, 51
    _, shape, strides, box, _ = s11_tma.operand_maps(cfg, strided(M, N, K, "nn", 1))["b"]
    flat = rg.operand(K, N, N, np.random.default_rng(1))
    with_fill = _kernel_tile(flat, shape, strides, box, N, 4, 0, 48, K, N, 16)
    without = _kernel_tile(flat, shape, strides, box, N, 4, 0, 48, 52, N, 16)  # no tail: no fill
    rows = [(k % 4) * 4 + k // 4 for k in range(3)]  # k 48..50 of the tile at k0 = 48
    assert not without[rows].any()
    assert np.array_equal(with_fill[rows], flat[48 * N:51 * N].reshape(3, N)[:, :32])  # block_n 32


# ---- folded batches: a batch stride that is a whole number of unaligned rows ------------------------
def folded(M, N, K, layout, lda, ldb, a_per, b_per, batch):
    """A batched problem whose operands' rows are ``lda`` / ``ldb`` floats apart ('n' row-major, 't'
    column-major) and whose batches are ``a_per`` / ``b_per`` such rows apart."""
    a_row = K if layout[0] == "n" else M  # the unpadded row lengths
    b_row = N if layout[1] == "n" else K
    return strided(M, N, K, layout, lda - a_row, ldb - b_row, batch, a_bs=a_per * lda, b_bs=b_per * ldb)


def test_contiguous_batches_of_unaligned_rows_fold():
    p = folded(333, 555, 777, "tt", 333, 777, 777, 555, 8)  # torch's contiguous 333x555x777x8 tt
    a, b = p.operand("a"), p.operand("b")
    assert p.a_bs % 4 and p.b_bs % 4
    assert (a.row_group, a.row_fold, a.folded_rows) == (4, 777, 7 * 777 + 777)      # rows of k
    assert (b.row_group, b.row_fold, b.folded_rows) == (4, 555, 7 * 555 + 555)      # rows of n
    q = folded(255, 255, 255, "nn", 255, 255, 261, 255, 3)  # A's batches 6 rows of padding apart
    assert (q.operand("a").row_fold, q.operand("a").folded_rows) == (261, 2 * 261 + 255)
    assert folded(255, 255, 255, "nn", 255, 255, 260, 255, 3).operand("a").row_fold == 0  # 260 x 255: aligned
    assert folded(255, 255, 255, "nn", 255, 255, 254, 255, 3).operand("a").row_group == 0  # batches overlap
    r = folded(255, 256, 255, "nn", 255, 256, 255, 255, 3)  # B's batch stride 255 x 256: aligned
    assert r.operand("b").row_group == 1 and r.operand("b").row_fold == 0
    assert strided(29, 37, 51, "nn", batch=2, b_bs=51 * 37 + 2).operand("b").row_fold == 0  # not whole rows
    assert folded(255, 255, 255, "nn", 255, 255, 255, 255, 1).operand("a").row_fold == 0     # one batch


def test_folded_batches_are_one_map_of_row_groups(row_groups_on):
    p = folded(333, 555, 777, "tt", 333, 777, 777, 555, 8)
    cfg = S11.default_config
    assert not s11_tma.tma_problems(cfg, p) and S11.fallback(cfg, p) is None
    maps = s11_tma.operand_maps(cfg, p)
    assert maps["batch_mask"] == 0
    _, shape, strides, box, _ = maps["a"]
    assert shape == (1, 8 * 777 // 4, 3 * 333 + 333) and strides[1:] == (4 * 333, 1)
    _, shape, strides, box, _ = maps["b"]
    assert shape == (1, 8 * 555 // 4, 3 * 777 + 777) and strides[1:] == (4 * 777, 1)
    assert [int(v) for v in s11_tma.fold_args(p)] == [777, 8 * 777, 555, 8 * 555]
    v = S11.variant(cfg, p)
    names = [n for _, n in S11.extra_params(cfg, v)]
    assert names[-4:] == ["a_fold", "a_full", "b_fold", "b_full"]
    assert len(S11.extra_args(cfg, v, p)) == len(names)
    # aligned rows: no RowFold
    aligned = strided(64, 64, 64, "nn", batch=2)
    assert len(S11.extra_params(cfg, S11.variant(cfg, aligned))) == 3


def _batched_rows(batch, rows, inner, ld, per, rng):
    """``batch`` operands of ``rows`` rows of ``inner`` floats, ``ld`` apart, batches ``per`` rows
    apart, ending at the last batch's last element; NaN and Inf between the rows and batches."""
    flat = np.where(np.arange((batch - 1) * per * ld + (rows - 1) * ld + inner) % 2, np.inf, np.nan).astype(np.float32)
    for b in range(batch):
        for r in range(rows):
            flat[(b * per + r) * ld:(b * per + r) * ld + inner] = rng.standard_normal(inner)
    return flat


def _folded_boxes(flat, shape, strides, ld, g, row0, inner0, width, per):
    """The G boxes of a tile whose first row is row0 (RowGroups::load): box j at group (row0+j)/G,
    dim-0 coordinate ((row0+j) % G)·ld + inner0, ``per`` groups of ``width`` floats."""
    _, dim1, dim0 = shape
    return np.concatenate([_ideal_box(flat, dim0, dim1, strides[1], (row0 + j) % g * ld + inner0, (row0 + j) // g,
                                      width, per) for j in range(g)])


def _folded_k_tile(flat, shape, strides, ld, g, fold, full, b, x0, k0, K, X, bx, bk, zero=True):
    """A stage tile of a row-grouped operand with rows of k (copy/row_groups.cuh) as the kernel
    builds it for batch b: G boxes from row b·fold + k0, then RowGroups::fill_gaps: rows below K
    past ``full`` filled, rows past K before it zeroed (``zero``)."""
    per = bk // g
    tile = _folded_boxes(flat, shape, strides, ld, g, b * fold + k0, x0, bx, per)
    k_len, f = K - k0, full - b * fold - k0
    rows = min(k_len, bk)
    for k in range(min(max(f, 0), rows), rows):
        for x in range(bx):
            tile[(k % g) * per + k // g, x] = flat[(b * fold + k0 + k) * ld + x0 + x] if x0 + x < X else 0.0
    if zero and k_len < bk and f > k_len:
        for k in range(k_len, min(f, bk)):
            tile[(k % g) * per + k // g] = 0.0
    return tile


def _folded_x_tile(flat, shape, strides, ld, g, fold, full, b, x0, k0, K, X, bx, bk, fill=True):
    """The same for rows of m or n: the boxes, the K mask in the last K tile, rows below X past
    ``full`` filled."""
    per = bx // g
    tile = _folded_boxes(flat, shape, strides, ld, g, b * fold + x0, k0, bk, per)
    k_len, f = K - k0, full - b * fold - x0
    if k_len < bk:
        tile[:, k_len:] = 0
    rows = min(bx, X - x0)
    if fill:
        for x in range(min(max(f, 0), rows), rows):
            for k in range(min(k_len, bk)):
                tile[(x % g) * per + x // g, k] = flat[(b * fold + x0 + x) * ld + k0 + k]
    return tile


def _folded_tiles_agree(which, layout, M, N, K, pad, extra, batch, bx, bk, **kw):
    """Every stage tile of every batch of operand ``which`` (rows ``pad`` floats longer than its
    floats, one more where that would be a 16-byte multiple; batches ``extra`` rows further apart,
    one more where the batch stride would be one, which needs no folding), through the host's map and fold_args and the
    kernel's coordinates and writes, read back as the core (k_slot) and the epilogue (out_m / out_n)
    read it, against the operand."""
    rows_of_k = (which == "a") == (layout[0] == "t") if which == "a" else layout[1] == "n"
    X = M if which == "a" else N
    rows, inner = (K, X) if rows_of_k else (X, K)
    ld = inner + pad + ((inner + pad) % 4 == 0)
    per = rows + extra
    per += per * ld % 4 == 0
    lda, a_per = (ld, per) if which == "a" else (-(-(K if layout[0] == "n" else M) // 4) * 4, None)
    ldb, b_per = (ld, per) if which == "b" else (-(-(N if layout[1] == "n" else K) // 4) * 4, None)
    a_per = a_per or (M if layout[0] == "n" else K)
    b_per = b_per or (K if layout[1] == "n" else N)
    p = folded(M, N, K, layout, lda, ldb, a_per, b_per, batch)
    op = p.operand(which)
    g = op.row_group
    assert g > 1 and op.row_fold == per, (g, op.row_fold)
    cfg = S11.config({"block_m": bx if which == "a" else 32, "block_n": bx if which == "b" else 32, "warp_m": 16,
                      "warp_n": 32, "block_k": bk, "k_unroll": 1})
    assert not s11_tma.tma_problems(cfg, p), s11_tma.tma_problems(cfg, p)
    _, shape, strides, box, _ = s11_tma.operand_maps(cfg, p)[which]
    assert shape[0] == 1 and box[1] == (bk if rows_of_k else bx) // g
    args = [int(v) for v in s11_tma.fold_args(p)]
    fold, full = args[0:2] if which == "a" else args[2:4]
    flat = _batched_rows(batch, rows, inner, ld, per, np.random.default_rng(rows * ld + batch))
    for b in range(batch):
        base = b * per * ld
        for x0 in range(0, X, bx):
            for k0 in range(0, K, bk):
                if rows_of_k:
                    tile = _folded_k_tile(flat, shape, strides, ld, g, fold, full, b, x0, k0, K, X, bx, bk, **kw)
                    for k in range(bk):
                        row = tile[(k % g) * (bk // g) + k // g]  # k_slot
                        for c in range(min(bx, X - x0)):
                            want = flat[base + (k0 + k) * ld + x0 + c] if k0 + k < K else 0.0
                            if not row[c] == want:
                                return False
                else:
                    tile = _folded_x_tile(flat, shape, strides, ld, g, fold, full, b, x0, k0, K, X, bx, bk, **kw)
                    for s in range(bx):
                        x = (s % (bx // g)) * g + s // (bx // g)  # out_m / out_n
                        if x0 + x >= X:
                            continue  # never stored
                        for k in range(bk):
                            want = flat[base + (x0 + x) * ld + k0 + k] if k0 + k < K else 0.0
                            if not tile[s, k] == want:
                                return False
    return True


@pytest.mark.parametrize("which,layout", [("a", "tn"), ("b", "nn"), ("a", "nt"), ("b", "tt")])
@pytest.mark.parametrize("M,N,K,pad,extra,batch,bx,bk", [
    (37, 45, 29, 0, 0, 3, 32, 8),   # contiguous, G 4 (rows of 37, 45 or 29 floats), tails everywhere
    (30, 30, 30, 0, 1, 4, 32, 16),  # G 2, one row of padding between the batches
    (13, 19, 17, 2, 3, 5, 64, 16),  # padded rows, batches smaller than a tile
    (9, 7, 6, 1, 0, 6, 32, 8),      # a tile spans several batches
])
def test_folded_batches_tiles_are_each_batchs_own(row_groups_on, which, layout, M, N, K, pad, extra, batch, bx, bk):
    """Folded batches (Operand.row_fold): a tile may start inside a group and its boxes reach into
    the next batch; every tile of every batch still reads back as that batch's floats, zeros past
    K, with NaN and Inf between rows and batches."""
    assert _folded_tiles_agree(which, layout, M, N, K, pad, extra, batch, bx, bk)


def test_folded_rows_of_k_past_k_are_the_next_batchs_without_the_zeros(row_groups_on):
    assert _folded_tiles_agree("b", "nn", 37, 45, 29, 0, 0, 3, 32, 8)
    assert not _folded_tiles_agree("b", "nn", 37, 45, 29, 0, 0, 3, 32, 8, zero=False)
    assert not _folded_tiles_agree("a", "tn", 37, 45, 29, 0, 0, 3, 32, 8, zero=False)


def test_folded_rows_of_m_past_full_need_the_fill(row_groups_on):
    assert not _folded_tiles_agree("a", "nt", 37, 45, 29, 0, 0, 3, 32, 8, fill=False)


# ---- GPU: s11 on row groups against float64 ----------------------------------------------------------
def _rows(rows, inner, ld, batch=1, per=None):
    """A (batch, rows, inner) float32 view with rows ``ld`` floats apart (batches ``per`` floats
    apart; by default the 16-byte multiple after the rows) in a buffer whose padding between rows
    and after them is NaN and Inf; signed data with exponents from 2^-8 to 2^8."""
    import torch

    per = -(-rows * ld // 4) * 4 if per is None else per
    n = batch * per
    buf = torch.where(torch.arange(n, device="cuda") % 2 == 0, float("nan"), float("inf")).float()
    view = buf.as_strided((batch, rows, inner), (per, ld, 1))
    view.copy_(torch.randn(batch, rows, inner, device="cuda") * torch.randint(-8, 9, (batch, rows, inner),
                                                                              device="cuda").float().exp2())
    return view


def _operands(layout, M, N, K, pad_a, pad_b, batch):
    """A (M x K) and B (K x N) of ``layout`` ('n' row-major, 't' column-major), rows padded by
    pad_a / pad_b floats."""
    if layout[0] == "n":
        a = _rows(M, K, K + pad_a, batch)
    else:
        a = _rows(K, M, M + pad_a, batch).transpose(-1, -2)
    if layout[1] == "n":
        b = _rows(K, N, N + pad_b, batch)
    else:
        b = _rows(N, K, K + pad_b, batch).transpose(-1, -2)
    return a, b


def _check_elementwise(out, a, b):
    """Every element within FP32 accumulation's bound, 2K·2^-24·(|A||B|), of the float64 product
    (a missing or doubled k anywhere shows), and finite."""
    import torch

    ref = a.double() @ b.double()
    bound = 2 * a.shape[-1] * 2.0**-24 * (a.double().abs() @ b.double().abs()) + 1e-300
    assert bool(torch.isfinite(out).all())
    err = (out.double() - ref).abs()
    worst = float((err / bound).max())
    assert worst <= 1.0, worst


ON_HARDWARE = pytest.mark.skip(reason="row groups do not run on TMA: a group's later boxes start off 16-byte "
                                        "boundaries (UNALIGNED_BOX_STARTS; docs/stages/s10-s11.md)")


@pytest.fixture
def row_groups_gpu(monkeypatch):
    from gemmlab import api

    monkeypatch.setattr(s11_tma, "ROW_GROUPS", True)
    monkeypatch.setenv("GEMMLAB_PRINT_CONFIG", "1")
    api.clear_plan_cache()
    yield
    api.clear_plan_cache()


RG_CONFIGS = [{}, {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "block_k": 16, "stages": 4},
              {"block_m": 32, "block_n": 64, "warp_m": 16, "warp_n": 32, "block_k": 16, "k_unroll": 1, "stages": 2}]


@pytest.mark.gpu
@pytest.mark.parametrize("config", range(len(RG_CONFIGS)))
@pytest.mark.parametrize("layout,pad_a,pad_b", [("nn", 1, 1), ("nn", 0, 2), ("nn", 2, 0), ("tn", 1, 3), ("tn", 2, 1),
                                                ("tn", 3, 0), ("tt", 1, 0), ("tt", 2, 1), ("tt", 0, 0), ("nt", 0, 0), ("nt", 3, 1),
                                                ("nt", 1, 2)])
@ON_HARDWARE
def test_gpu_s11_row_groups(row_groups_gpu, capsys, config, layout, pad_a, pad_b):
    """s11 on operands whose rows are not 16-byte aligned, read as row groups (G 2 and 4; A's rows
    of k or m, B's of k or n), with K, M and N tails of every size, partial tiles at every edge,
    NaN and Inf between rows."""
    import torch

    import gemmlab

    cfg = RG_CONFIGS[config]
    grouped = 0
    for M, N, K in ((129, 131, 127), (300, 37, 51), (64, 517, 1027), (7, 9, 6), (257, 255, 4)):
        a, b = _operands(layout, M, N, K, pad_a, pad_b, 1)
        a, b = a[0], b[0]
        out = gemmlab.gemm(a, b, stage="s11", config=cfg)
        torch.cuda.synchronize()
        err = capsys.readouterr().err
        _check_elementwise(out, a, b)
        p = _problem_of(a, b, out)
        groups = s11_tma.row_groups(p)
        assert p.operands_tma_ready(True), (M, N, K, a.stride(), b.stride())
        assert "-> s11 " in err and ("row_group" in err) == (groups != (1, 1)), (groups, err)
        grouped += groups != (1, 1)
    assert grouped >= 3


def _problem_of(a, b, out):
    """The kernel-level problem of gemm(a, b) into a row-major out."""
    (M, K), N = a.shape, b.shape[1]
    return Problem(M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0),
                   a_ptr=a.data_ptr(), b_ptr=b.data_ptr(), d_ptr=out.data_ptr())


@pytest.mark.gpu
@pytest.mark.parametrize("layout,pad_a,pad_b", [("nn", 1, 1), ("nn", 0, 0), ("tn", 1, 2), ("tt", 3, 0), ("nt", 2, 0),
                                                ("tt", 0, 1)])
@ON_HARDWARE
@pytest.mark.parametrize("plan", [{"split_k": 2}, {"split_k": 3, "cluster_reduce": 0}, {"batch": 3}])
def test_gpu_s11_row_groups_split_and_batched(row_groups_gpu, capsys, layout, pad_a, pad_b, plan):
    """Split-K (slices added in a cluster, and through the workspace: only the last slice has the K
    tail) and strided batches on row groups."""
    import torch

    import gemmlab

    plan = dict(plan)
    batch = plan.pop("batch", 1)
    M, N, K = 200, 301, 1001
    a, b = _operands(layout, M, N, K, pad_a, pad_b, batch)
    if batch == 1:
        a, b = a[0], b[0]
        out = gemmlab.gemm(a, b, stage="s11", config={"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64,
                                                      **plan})
    else:
        out = gemmlab.gemm_batched(a, b, stage="s11")
    torch.cuda.synchronize()
    err = capsys.readouterr().err
    assert "-> s11" in err and "row_group" in err, err
    _check_elementwise(out, a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tn", "tt", "nt"])
@pytest.mark.parametrize("M,N,K,batch,extra", [(333, 555, 777, 8, 0), (255, 255, 255, 32, 0), (37, 45, 29, 5, 3),
                                               (9, 7, 6, 6, 1), (130, 67, 301, 3, 0)])
@ON_HARDWARE
def test_gpu_s11_folded_batches(row_groups_gpu, capsys, layout, M, N, K, batch, extra):
    """Batches whose stride is a whole number of unaligned rows (torch's contiguous bmm operands,
    and with ``extra`` rows of NaN and Inf between the batches): s11 folds them into the rows
    (Operand.row_fold) and each batch's product is right, tiles that start inside a group and
    boxes that reach into the next batch included."""
    import torch

    import gemmlab

    def operand(rows, inner):
        ld = inner + (inner % 4 == 0)
        per = (rows + extra) * ld
        per += ld * (per % 4 == 0)  # a batch stride of whole rows that is not 16-byte aligned
        return _rows(rows, inner, ld, batch, per)

    a = operand(M, K) if layout[0] == "n" else operand(K, M).transpose(-1, -2)
    b = operand(K, N) if layout[1] == "n" else operand(N, K).transpose(-1, -2)
    out = gemmlab.gemm_batched(a, b, stage="s11")
    torch.cuda.synchronize()
    err = capsys.readouterr().err
    assert "-> s11" in err and "row_group" in err, err
    _check_elementwise(out, a, b)


@ON_HARDWARE
@pytest.mark.gpu
def test_gpu_auto_takes_row_groups_instead_of_a_copy(row_groups_gpu, capsys):
    """stage="auto" on a problem whose B rows are 1001 floats: s11 on row groups, no repack; and on
    3333x1111x2222 nn (A's rows of 2222 floats, G 2; B's of 1111, G 4), repacked today."""
    import torch

    import gemmlab

    from gemmlab import dispatch

    a, b = _operands("nn", 1000, 1001, 1000, 0, 0, 1)
    a, b = a[0], b[0]
    out = gemmlab.matmul(a, b)
    torch.cuda.synchronize()
    err = capsys.readouterr().err
    assert "-> s11 " in err and "b_row_group" in err, err
    assert not dispatch.choose(_problem_of(a, b, out), out.device.index or 0).repack
    _check_elementwise(out, a, b)
    a, b = _operands("nn", 3333, 1111, 2222, 0, 0, 1)
    a, b = a[0], b[0]
    out = gemmlab.matmul(a, b)
    torch.cuda.synchronize()
    err = capsys.readouterr().err
    assert "-> s11 " in err and "a_row_group': 2" in err and "b_row_group': 4" in err, err
    _check_elementwise(out, a, b)
