"""Stages s07-s09 (vectorized, the four bank-conflict schemes, double buffering): constraints,
variant selection, the shared-memory address maps the bank model reads, and the index maths of
the kernels' Python mirrors (coverage of the tiles and of the outputs, and a whole-block CPU
simulation). GPU tests at the end (marked ``gpu``) run the edge cases the float4 paths add."""
import itertools
import math

import numpy as np
import pytest

from gemmlab.errors import ConfigError
from gemmlab.stages import get
from gemmlab.stages.base import Problem
from gemmlab.stages.s07_vectorized import float4_tile_map, layout, operand_stores, scalar_tile_map

IDS = ["s07", "s08a", "s08b", "s08c", "s08d", "s09"]
NN = {"vec": 1, "a_k_major": 1, "b_n_major": 1}
BANKS = 32


def spec_cfg(sid, **over):
    spec = get(sid)
    return spec, spec.config(over or None)


def banks_of(addr, width):
    return {(addr // 4 + w) % BANKS for w in range(width // 4)}


def phase_lanes(width):
    n = {4: 32, 8: 16, 16: 8}[width]
    return [list(range(p, p + n)) for p in range(0, 32, n)]


def conflict_free(width, addrs, lanes):
    """No two lanes of ``lanes`` touch one bank at different words."""
    word_of_bank = {}
    for lane in lanes:
        for w in range(width // 4):
            word = addrs[lane] // 4 + w
            if word_of_bank.setdefault(word % BANKS, word) != word:
                return False
    return True


# ---- constraints ----------------------------------------------------------------------------
@pytest.mark.parametrize("sid,over,message", [
    ("s07", {"thread_m": 6, "warp_m": 24, "block_m": 96}, "multiples of 4"),
    ("s07", {"block_k": 4}, "whole float4s"),
    ("s07", {"warp_m": 48}, "multiples of warp_m"),
    ("s07", {"thread_n": 4}, "exactly 32"),
    ("s07", {"min_blocks": 9}, "2048 threads"),
    ("s08b", {"block_k": 64}, "4, 8, 16 or 32"),
    ("s09", {"block_k": 256}, "shared memory per block"),
    ("s08c", {"warp_m": 64, "warp_n": 32}, "4 x 8 lane grid"),
    ("s08d", {"thread_m": 6}, "4 x 4 sub-tiles"),
    ("s09", {"warp_m": 64, "warp_n": 32, "warp_n_iter": 1, "block_k": 16}, "4 x 8 lane grid"),
])
def test_bad_configs_are_rejected_with_the_rule(sid, over, message):
    with pytest.raises(ConfigError, match=message):
        get(sid).config(over)


@pytest.mark.parametrize("sid", IDS)
def test_defaults_are_legal_and_s07_s08_use_the_notes_configuration(sid):
    spec, cfg = spec_cfg(sid)
    assert spec.constraints(cfg) == []
    assert spec.threads(cfg) == 256
    if sid != "s09":  # the notes' configuration, 000 §6.3 / §12.1
        assert (cfg["block_m"], cfg["block_n"], cfg["block_k"], cfg["thread_m"], cfg["thread_n"]) == (128, 128, 8, 8, 8)
        lay = layout(spec.kernel_config(cfg))
        assert (lay["LANES_M"], lay["LANES_N"]) == ((4, 8))
        assert spec.min_blocks_per_sm(cfg) == 2  # 128 registers: two blocks per SM
    assert spec.aligned_path and spec.expected_pct_cublas[0] < spec.expected_pct_cublas[1]


def test_s08d_runs_s07_with_4x4_sub_tiles():
    spec, cfg = spec_cfg("s08d")
    k = spec.kernel_config(cfg)
    assert (k["thread_m"], k["thread_n"], k["warp_m_iter"], k["warp_n_iter"]) == (4, 4, 2, 2)
    assert "S08dBankSplit4x4<128, 128, 8, 32, 64, 1, 1, 8, 8, 1, 1, 1>" in spec.template(cfg, NN)


# ---- variants -------------------------------------------------------------------------------
def dense(M, N, K, layout_, **kw):
    ptrs = dict(a_ptr=1 << 20, b_ptr=1 << 24, d_ptr=1 << 28)
    ptrs.update(kw)
    return Problem.dense(M, N, K, layout_, **ptrs)


@pytest.mark.parametrize("sid", IDS)
def test_variant_follows_alignment_and_layout(sid):
    spec, cfg = spec_cfg(sid)
    variants = spec.variants(cfg)
    assert variants[-1] == {"vec": 0} and variants[0] == NN and len(variants) == 5
    assert len({spec.kernel_name(cfg, v) for v in variants}) == 5
    assert "scalar" in spec.kernel_name(cfg, variants[-1])
    for lay_, (akm, bnm) in {"nn": (1, 1), "nt": (1, 0), "tn": (0, 1), "tt": (0, 0)}.items():
        v = spec.variant(cfg, dense(256, 256, 256, lay_))
        assert v == {"vec": 1, "a_k_major": akm, "b_n_major": bnm} and v in variants
    assert spec.variant(cfg, dense(256, 256, 256, "nn", a_ptr=(1 << 20) + 4)) == {"vec": 0}
    assert spec.variant(cfg, dense(256, 256, 256, "nn", d_ptr=(1 << 28) + 8)) == {"vec": 0}
    assert spec.variant(cfg, dense(256, 4095, 256, "nn")) == {"vec": 0}   # ldb = 4095
    assert spec.variant(cfg, dense(256, 256, 4093, "nn")) == {"vec": 0}   # lda = 4093
    # a padded view: K = 13 inside rows of 16 stays on the float4 path (partial float4 at the K edge)
    view = Problem(M=100, N=70, K=13, a_rs=16, a_cs=1, b_rs=72, b_cs=1, ldd=72, a_ptr=1 << 20, b_ptr=1 << 24,
                   d_ptr=1 << 28)
    assert spec.variant(cfg, view) == NN
    # no unit stride at all: the scalar path (the API copies such operands for aligned_path stages)
    odd = Problem(M=64, N=64, K=64, a_rs=128, a_cs=2, b_rs=64, b_cs=1, ldd=64, a_ptr=1 << 20, b_ptr=1 << 24,
                  d_ptr=1 << 28)
    assert spec.variant(cfg, odd) == {"vec": 0}


# ---- the layouts ----------------------------------------------------------------------------
ALL_VARIANTS = [NN, {"vec": 1, "a_k_major": 1, "b_n_major": 0}, {"vec": 1, "a_k_major": 0, "b_n_major": 1},
                {"vec": 1, "a_k_major": 0, "b_n_major": 0}, {"vec": 0}]


@pytest.mark.parametrize("sid", IDS)
@pytest.mark.parametrize("variant", ALL_VARIANTS, ids=lambda v: "-".join(f"{k}{x}" for k, x in v.items()))
def test_shared_layout_is_one_to_one_inside_its_buffer(sid, variant):
    spec, cfg = spec_cfg(sid)
    k = spec.kernel_config(cfg)
    a = {spec.a_index(k, kk, m, variant) for kk in range(k["block_k"]) for m in range(k["block_m"])}
    b = {spec.b_index(k, kk, n, variant) for kk in range(k["block_k"]) for n in range(k["block_n"])}
    assert len(a) == k["block_k"] * k["block_m"] and len(b) == k["block_k"] * k["block_n"]
    assert min(a) >= 0 and max(a) < spec.a_floats(k) and min(b) >= 0 and max(b) < spec.b_floats(k)
    # float4s of 4 consecutive m (n) from a multiple of 4 stay contiguous (STS.128 / LDS.128)
    for kk, m in itertools.product(range(k["block_k"]), range(0, k["block_m"], 4)):
        assert [spec.a_index(k, kk, m + d, variant) for d in range(4)] == [spec.a_index(k, kk, m, variant) + d for d in range(4)]
    for kk, n in itertools.product(range(k["block_k"]), range(0, k["block_n"], 4)):
        assert [spec.b_index(k, kk, n + d, variant) for d in range(4)] == [spec.b_index(k, kk, n, variant) + d for d in range(4)]


@pytest.mark.parametrize("sid", IDS)
@pytest.mark.parametrize("variant", ALL_VARIANTS, ids=lambda v: "-".join(f"{k}{x}" for k, x in v.items()))
def test_smem_accesses_are_well_formed(sid, variant):
    spec, cfg = spec_cfg(sid)
    acc = spec.smem_accesses(cfg, variant)
    assert set(acc) == {"a_load", "b_load", "a_store", "b_store"}
    size = spec.smem_bytes(cfg, variant)
    for kind, instructions in acc.items():
        assert instructions, kind
        for width, addrs in instructions:
            assert width in (4, 16) and len(addrs) == 32
            for a in addrs:
                assert a is not None and a % width == 0 and 0 <= a and a + width <= size, (kind, a)
    k = spec.kernel_config(cfg)
    lay = layout(k)
    assert len(acc["a_load"]) == lay["FRAG_M"] // 4 and len(acc["b_load"]) == lay["FRAG_N"] // 4
    assert all(w == 16 for w, _ in acc["a_load"] + acc["b_load"])


def qw_banks_distinct(addrs):
    """Each quarter-warp of an LDS.128 touches 32 distinct banks (8 distinct float4s, no conflict)."""
    return all(len(set().union(*(banks_of(addrs[l], 16) for l in q))) == 32 for q in phase_lanes(16))


def test_s07_has_the_notes_baseline_pattern():
    spec, cfg = spec_cfg("s07")
    acc = spec.smem_accesses(cfg)
    for _, addrs in acc["a_load"]:  # a quarter-warp is one row of 8 lanes: one A float4, broadcast
        assert all(len({addrs[l] for l in q}) == 1 for q in phase_lanes(16))
    for _, addrs in acc["b_load"]:  # 8 float4s 8 floats apart: lanes l and l+4 share banks (2-way)
        for q in phase_lanes(16):
            assert len({addrs[l] for l in q}) == 8
            assert not conflict_free(16, addrs, q)
            assert banks_of(addrs[q[0]], 16) == banks_of(addrs[q[4]], 16)
    for width, addrs in acc["a_store"]:  # the transposed A store: 2-way (rows k and k+4)
        assert width == 4 and not conflict_free(4, addrs, range(32))


@pytest.mark.parametrize("sid", ["s08a", "s08b", "s08d"])
def test_schemes_1_2_4_make_b_fragment_loads_conflict_free(sid):
    spec, cfg = spec_cfg(sid)
    acc = spec.smem_accesses(cfg)
    for _, addrs in acc["b_load"]:
        assert qw_banks_distinct(addrs)
    for _, addrs in acc["a_load"]:
        assert all(len({addrs[l] for l in q}) == 1 for q in phase_lanes(16))


@pytest.mark.parametrize("sid", ["s08a", "s08b", "s09"])
def test_padding_and_swizzle_make_the_transposed_a_store_conflict_free(sid):
    spec, cfg = spec_cfg(sid)
    for width, addrs in spec.smem_accesses(cfg)["a_store"]:
        assert width == 4 and conflict_free(4, addrs, range(32))
    # and the B store of a K-major B (also transposed) with padding
    if sid != "s08b":
        v = {"vec": 1, "a_k_major": 1, "b_n_major": 0}
        for width, addrs in spec.smem_accesses(cfg, v)["b_store"]:
            assert width == 4 and conflict_free(4, addrs, range(32))


@pytest.mark.parametrize("sid", ["s08c", "s09"])
def test_zorder_quarter_warps_are_2x4(sid):
    spec, cfg = spec_cfg(sid)
    acc = spec.smem_accesses(cfg)
    for _, addrs in acc["b_load"]:  # lanes i and i^1: same column, same B address (condition A)
        assert all(addrs[i] == addrs[i ^ 1] for i in range(32))
        assert all(len({addrs[l] for l in q}) == 4 and conflict_free(16, addrs, q) for q in phase_lanes(16))
    for _, addrs in acc["a_load"]:  # lanes i and i^2: same row, same A address (condition B)
        assert all(addrs[i] == addrs[i ^ 2] for i in range(32))
    k = spec.kernel_config(cfg)
    for q in range(4):  # each quarter-warp is a 2 x 4 block of lanes
        rows = {spec.lane_row(k, l) for l in range(8 * q, 8 * q + 8)}
        cols = {spec.lane_col(k, l) for l in range(8 * q, 8 * q + 8)}
        assert len(rows) == 2 and len(cols) == 4


def test_s09_b_loads_stay_conflict_free_when_quarter_warps_merge_into_half_warps():
    spec, cfg = spec_cfg("s09")
    for _, addrs in spec.smem_accesses(cfg)["b_load"]:
        for half in (range(16), range(16, 32)):
            assert conflict_free(16, addrs, half)


def test_bank_model_reproduces_the_notes_table():
    from gemmlab.analysis import banks

    totals = {}
    for sid in ["s07", "s08a", "s08b", "s08c", "s08d"]:
        spec, cfg = spec_cfg(sid)
        r = banks.stage_smem(spec, cfg, model="notes")
        totals[sid] = r["a_load"]["wavefronts"] + r["b_load"]["wavefronts"]
    assert totals == {"s07": 10, "s08a": 6, "s08b": 6, "s08c": 4, "s08d": 6}
    spec, cfg = spec_cfg("s09")
    for model in ("notes", "hardware"):
        r = banks.stage_smem(spec, cfg, model=model)
        assert (r["a_load"]["wavefronts"], r["b_load"]["wavefronts"]) == (2, 2)


# ---- coverage of tiles and outputs ----------------------------------------------------------
@pytest.mark.parametrize("sid", IDS)
def test_every_output_of_the_block_tile_has_exactly_one_owner(sid):
    spec, cfg = spec_cfg(sid)
    k = spec.kernel_config(cfg)
    owners = np.zeros((k["block_m"], k["block_n"]), dtype=int)
    for tid in range(spec.threads(cfg)):
        outs = spec.thread_outputs(cfg, tid)
        assert len(outs) == layout(k)["FRAG_M"] * layout(k)["FRAG_N"]
        for r, c in outs:
            owners[r, c] += 1
    assert (owners == 1).all()


def test_s08d_thread_owns_four_4x4_sub_tiles():
    spec, cfg = spec_cfg("s08d")
    outs = spec.thread_outputs(cfg, 9)  # warp 0, lane 9: row 1, column 1 of the 4 x 8 lanes
    rows = sorted({r for r, _ in outs})
    cols = sorted({c for _, c in outs})
    assert rows == [4, 5, 6, 7, 20, 21, 22, 23] and cols == [4, 5, 6, 7, 36, 37, 38, 39]


@pytest.mark.parametrize("sid", ["s07", "s09"])
@pytest.mark.parametrize("variant", ALL_VARIANTS, ids=lambda v: "-".join(f"{k}{x}" for k, x in v.items()))
def test_loaders_cover_each_operand_tile_exactly_once(sid, variant):
    spec, cfg = spec_cfg(sid)
    k = spec.kernel_config(cfg)
    threads = spec.threads(cfg)
    vec = bool(variant["vec"])
    for mn, k_contig in ((k["block_m"], variant.get("a_k_major", 1)), (k["block_n"], not variant.get("b_n_major", 1))):
        seen = np.zeros((k["block_k"], mn), dtype=int)
        for tid in range(threads):
            for width, (kk, m) in operand_stores(mn, k["block_k"], threads, tid, vec, bool(k_contig)):
                for d in range(width // 4):
                    seen[kk, m + d] += 1
        assert (seen == 1).all()


# ---- the whole block on the CPU -------------------------------------------------------------
def simulate_block(spec, cfg, variant, A, B, row0, col0):
    """One block of the kernel in numpy, through the Python mirrors of its index maths: the K tail
    first, then whole tiles; each tile stored through a_index/b_index into a shared buffer poisoned
    with NaN, read back per thread at its fragment offsets, multiplied and written at the
    thread's outputs. Returns the block tile of A @ B (rows/columns outside M, N left NaN)."""
    k = spec.kernel_config(cfg)
    lay = layout(k)
    bm, bn, bk = k["block_m"], k["block_n"], k["block_k"]
    M, K = A.shape
    N = B.shape[1]
    threads = spec.threads(cfg)
    vec = bool(variant["vec"])
    a_kc, b_kc = bool(variant.get("a_k_major", 1)), not variant.get("b_n_major", 1)

    def fetch(mat, row, col):  # zero outside the matrix, as the kernels' loads
        return mat[row, col] if row < mat.shape[0] and col < mat.shape[1] else 0.0

    acc = np.zeros((threads, lay["FRAG_M"], lay["FRAG_N"]))
    k_full = K // bk * bk
    tiles = ([k_full] if K % bk else []) + list(range(0, k_full, bk))
    for k0 in tiles:
        As = np.full(spec.a_floats(k), np.nan)
        Bs = np.full(spec.b_floats(k), np.nan)
        for tid in range(threads):
            # a 16-byte store holds 4 consecutive m (n); a 4-byte one a single element
            for width, (kk, m) in operand_stores(bm, bk, threads, tid, vec, a_kc):
                for d in range(width // 4):
                    As[spec.a_index(k, kk, m + d, variant)] = fetch(A, row0 + m + d, k0 + kk)
            for width, (kk, n) in operand_stores(bn, bk, threads, tid, vec, b_kc):
                for d in range(width // 4):
                    Bs[spec.b_index(k, kk, n + d, variant)] = fetch(B, k0 + kk, col0 + n + d)
        for tid in range(threads):
            r0, c0 = spec.thread_origin(cfg, tid)
            for kk in range(bk):
                a = np.array([As[spec.a_index(k, kk, r0 + spec.frag_row(k, i), variant)] for i in range(lay["FRAG_M"])])
                b = np.array([Bs[spec.b_index(k, kk, c0 + spec.frag_col(k, j), variant)] for j in range(lay["FRAG_N"])])
                acc[tid] += np.outer(a, b)
    out = np.full((bm, bn), np.nan)
    for tid in range(threads):
        r0, c0 = spec.thread_origin(cfg, tid)
        for i in range(lay["FRAG_M"]):
            for j in range(lay["FRAG_N"]):
                r, c = r0 + spec.frag_row(k, i), c0 + spec.frag_col(k, j)
                if row0 + r < M and col0 + c < N:
                    out[r, c] = acc[tid, i, j]
    return out


@pytest.mark.parametrize("sid,variant", [("s07", NN), ("s08b", NN), ("s08b", {"vec": 1, "a_k_major": 0, "b_n_major": 0}),
                                         ("s08c", {"vec": 0}), ("s08d", {"vec": 1, "a_k_major": 0, "b_n_major": 1}),
                                         ("s09", {"vec": 1, "a_k_major": 1, "b_n_major": 0})])
def test_block_simulation_matches_numpy(sid, variant):
    spec, cfg = spec_cfg(sid)
    k = spec.kernel_config(cfg)
    rng = np.random.default_rng(7)
    M, N, K = k["block_m"] + 37, k["block_n"] + 29, 2 * k["block_k"] + 5  # edges in M, N and a K tail
    A = rng.uniform(-1, 1, (M, K))
    B = rng.uniform(-1, 1, (K, N))
    ref = A @ B
    for row0, col0 in ((0, 0), (k["block_m"], k["block_n"])):  # an interior block and the corner
        got = simulate_block(spec, cfg, variant, A, B, row0, col0)
        want = ref[row0:row0 + k["block_m"], col0:col0 + k["block_n"]]
        h, w = want.shape
        assert np.allclose(got[:h, :w], want), sid
        assert np.isnan(got[h:, :]).all() and np.isnan(got[:, w:]).all()


def test_float4_tile_maps_of_the_notes_configuration():
    # A 128 x 8, K-major: 2 float4s per row, thread t takes row t // 2 (§4.4 with float4)
    assert float4_tile_map(128, 8, 256, 5) == [(2, 4)]
    # B 8 x 128, N-major: a warp reads one whole row, 32 float4s
    assert float4_tile_map(8, 128, 256, 37) == [(1, 20)]
    # scalar K-major A: consecutive threads walk k, 32 rows per pass
    assert scalar_tile_map(128, 8, 256, 9, True) == [(1, 1), (1, 33), (1, 65), (1, 97)]
    assert scalar_tile_map(128, 8, 256, 130, False) == [(1, 2), (3, 2), (5, 2), (7, 2)]


# ---- GPU: the edges of the float4 paths ---------------------------------------------------------
def _padded(torch, rows, cols, pad_to=4):
    """A rows x cols view with a leading dimension that is a multiple of 4 (16-byte rows)."""
    ld = -(-cols // pad_to) * pad_to + pad_to
    return (torch.rand(rows, ld, device="cuda") * 2 - 1)[:, :cols]


@pytest.mark.gpu
@pytest.mark.parametrize("sid", IDS)
@pytest.mark.parametrize("layout_", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("shape", [(130, 70, 13), (67, 257, 3), (129, 131, 21), (256, 256, 40), (5, 9, 1), (200, 260, 0)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gpu_float4_path_with_ragged_edges(sid, layout_, shape):
    """Aligned views whose M, N, K are not multiples of 4: partial float4s at every edge, K tails,
    odd numbers of K tiles, on the float4 instantiation of each operand layout."""
    import torch

    import gemmlab
    from gemmlab.check import ALPHA, BETA, compare, reference

    torch.backends.cuda.matmul.allow_tf32 = False
    M, N, K = shape
    a = _padded(torch, M, K) if layout_[0] == "n" else _padded(torch, K, M).t()
    b = _padded(torch, K, N) if layout_[1] == "n" else _padded(torch, N, K).t()
    c = torch.rand(M, N, device="cuda")
    out = torch.full((M, -(-N // 4) * 4), float("nan"), device="cuda")[:, :N]
    spec, cfg = spec_cfg(sid)
    prob = Problem(M=M, N=N, K=K, a_rs=a.stride(0), a_cs=a.stride(1), b_rs=b.stride(0), b_cs=b.stride(1),
                   ldd=out.stride(0), a_ptr=a.data_ptr(), b_ptr=b.data_ptr(), d_ptr=out.data_ptr())
    assert spec.variant(cfg, prob)["vec"] == 1  # the test is about the float4 path
    gemmlab.gemm(a, b, c, alpha=ALPHA, beta=BETA, out=out, stage=sid)
    torch.cuda.synchronize()
    r = compare(out, reference(a, b, c, ALPHA, BETA), K)
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("sid", IDS)
def test_gpu_odd_tile_counts_and_beta_zero(sid):
    import torch

    import gemmlab
    from gemmlab.check import compare, reference

    for K in (8, 16, 24, 40, 43, 1000):  # 1, 2, 3, 5 tiles, a tail, many tiles
        a = torch.rand(300, K, device="cuda") - 0.5
        b = torch.rand(K, 264, device="cuda") - 0.5
        out = torch.full((300, 264), float("nan"), device="cuda")
        gemmlab.gemm(a, b, out, alpha=1.5, beta=0.0, out=out, stage=sid)
        torch.cuda.synchronize()
        r = compare(out, reference(a, b, None, 1.5, 0.0), K)
        assert r.correct, (K, r)


@pytest.mark.gpu
@pytest.mark.parametrize("sid", ["s07", "s09"])
def test_gpu_other_configs(sid):
    from gemmlab.check import check_stage

    configs = [{"block_k": 16}]
    if sid == "s09":
        configs += [{"block_n": 128, "warp_n": 64, "warp_n_iter": 1},
                    {"block_m": 256, "block_n": 128, "warp_m": 64, "warp_n": 64, "warp_m_iter": 2, "warp_n_iter": 1}]
    for config in configs:
        for shape, lay_ in (((257, 300, 77), "nn"), ((256, 256, 256), "tn"), ((129, 1000, 31), "nt")):
            r = check_stage(sid, *shape, lay_, config=config)
            assert r.correct, (config, shape, lay_, r)
