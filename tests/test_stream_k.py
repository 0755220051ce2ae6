"""Stream-K (s11's ``stream_k`` plan option): the schedule's invariants on its Python mirror
(gemmlab/stages/_stream_k.py, the index maths of the wrapper in jit/source.py), the grid size the
stage asks for, the generated kernel, and GPU runs against float64 that also check that two runs
give the same bits (the owner adds the partials in block order)."""
from dataclasses import replace

import pytest

from gemmlab.jit.source import generate
from gemmlab.stages import get
from gemmlab.stages._stream_k import cut_tiles, fixup_slots, longest_run, segments, shared_tiles
from gemmlab.stages.base import Problem

S11 = get("s11")
ALIGNED = 1 << 40


@pytest.mark.parametrize("tiles,k_tiles,blocks", [(1, 1, 1), (50, 38, 132), (48, 24, 132), (12, 128, 132),
                                                   (7, 3, 5), (132, 1, 132), (1, 200, 132), (264, 16, 132),
                                                   (3, 1000, 7), (10, 10, 100), (512, 128, 132), (192, 16, 132),
                                                   (300, 5, 132), (1000, 3, 264)])
def test_schedule_covers_every_k_tile_once_and_the_fixup_adds_each_cut_tile_in_k_order(tiles, k_tiles, blocks):
    blocks = min(blocks, tiles * k_tiles)  # stream_k_blocks never asks for more
    shared = shared_tiles(tiles, blocks)
    assert shared == 0 or shared >= min(tiles, blocks)  # a run holds at least a tile's K tiles
    seen = {}
    written = {}  # slot -> (tile, k_begin, k_end)
    longest = 0
    for b in range(blocks):
        segs = segments(b, tiles, k_tiles, blocks)
        longest = max(longest, sum(s.k_end - s.k_begin for s in segs))
        whole = [s for s in segs if s.tile < tiles - shared]
        assert whole == segs[:len(whole)]  # the whole tiles first, b, b + G, ...
        assert [s.tile for s in whole] == list(range(b, tiles - shared, blocks))
        assert all(s.k_begin == 0 and s.k_end == k_tiles and s.slot == -1 for s in whole)
        run = segs[len(whole):]
        assert all(s.k_begin == 0 for s in run[1:])  # only a run's first segment starts inside a tile
        for s in segs:
            for k in range(s.k_begin, s.k_end):
                assert (s.tile, k) not in seen
                seen[(s.tile, k)] = b
            assert (s.slot == -1) == (s.k_begin == 0 and s.k_end == k_tiles)
            if s.slot >= 0:
                assert s.slot // 2 == b and s.slot not in written
                written[s.slot] = (s.tile, s.k_begin, s.k_end)
    assert len(seen) == tiles * k_tiles
    read = []
    for t in range(shared):
        slots = fixup_slots(t, tiles, k_tiles, blocks)
        tile = tiles - shared + t
        assert bool(slots) == (len({seen[(tile, k)] for k in range(k_tiles)}) > 1)
        # the slots hold the tile's K tiles in order, back to back from 0 to k_tiles
        k = 0
        for slot in slots:
            assert written[slot][0] == tile and written[slot][1] == k
            k = written[slot][2]
        assert not slots or k == k_tiles
        read += slots
    assert sorted(read) == sorted(written)  # every slot written is read once
    assert cut_tiles(tiles, k_tiles, blocks) == sum(1 for t in range(shared) if fixup_slots(t, tiles, k_tiles, blocks))
    assert longest == longest_run(tiles, k_tiles, blocks)


def _problem(M, N, K, layout="nn", batch=1, splits=1):
    p = Problem.dense(M, N, K, layout, batch, a_ptr=ALIGNED, b_ptr=2 * ALIGNED, d_ptr=3 * ALIGNED)
    return p if splits == 1 else replace(p, splits=splits, k_split=-(-K // splits))


def test_stream_k_blocks_fill_the_gpu_and_refuse_what_the_schedule_cannot_take(monkeypatch):
    from gemmlab.stages import tensor_map

    monkeypatch.setattr(tensor_map, "available", lambda: True)
    big = S11.default_config  # 128x256, one block per SM
    small = S11.config({"block_m": 128, "block_n": 128, "warp_m": 32, "warp_n": 64, "stages": 3, "min_blocks": 2})
    assert S11.stream_k_blocks(big, _problem(1200, 1200, 1200), 132) == 132
    assert S11.stream_k_blocks(small, _problem(1200, 1200, 1200), 132) == 264
    assert S11.stream_k_blocks(big, _problem(128, 256, 64), 132) == 2  # 2 K tiles in all
    assert S11.stream_k_blocks(big, _problem(1200, 1200, 1200, batch=2), 132) == 0
    assert S11.stream_k_blocks(big, _problem(1200, 1200, 1200, splits=2), 132) == 0
    assert S11.stream_k_blocks(big, _problem(1200, 1200, 0), 132) == 0
    unaligned = Problem.dense(1200, 1201, 1200, "nn", a_ptr=ALIGNED, b_ptr=2 * ALIGNED, d_ptr=3 * ALIGNED)
    assert S11.stream_k_blocks(big, unaligned, 132) == 0  # B's rows are not 16-byte aligned: no TMA
    assert get("s10").stream_k_blocks(get("s10").default_config, _problem(1200, 1200, 1200), 132) == 0


def test_stream_k_kernel_is_its_own_instantiation_and_keeps_no_schedule_in_registers():
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    cfg = S11.default_config
    name, src = generate(S11, cfg, {"a_k_major": 1, "b_n_major": 1, "stream_k": 1})
    dp_name, dp_src = generate(S11, cfg, {"a_k_major": 1, "b_n_major": 1})
    assert name == dp_name + "_sk1"
    assert "StreamKStore" in src and "sk_partials" in src and "StreamKStore" not in dp_src
    ck = kernel_for(S11, cfg, {"a_k_major": 1, "b_n_major": 1, "stream_k": 1}, "sm_90")
    assert sass.resources(ck.cubin)["local_bytes"] == 0
    insns = sass.instructions(ck.cubin)
    assert not sass.has_opcode(insns, "LDL") and not sass.has_opcode(insns, "STL")


# ---- GPU ----------------------------------------------------------------------------------------
SHAPES = [(1200, 1200, 1200), (513, 1025, 257), (2047, 2049, 511), (777, 556, 333), (4096, 512, 2048),
          (100, 3000, 72), (128, 256, 32), (33, 64, 4100), (1536, 512, 4096)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_gpu_stream_k_matches_float64_and_repeats_bit_for_bit(layout, M, N, K):
    """Odd shapes (tiles cut by the M/N edges, K not a multiple of block_k, runs cutting tiles
    into 2-4 segments and runs inside one tile), every layout, a separate c with alpha and beta,
    into a NaN-poisoned out; the same call twice gives the same bits."""
    import torch

    import gemmlab
    from gemmlab import api
    from gemmlab.check import check_stage

    for tile in ({}, {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
                 {"block_m": 128, "block_n": 128, "warp_m": 32, "warp_n": 64, "stages": 3, "min_blocks": 2}):
        cfg = {**tile, "stream_k": 1}
        r = check_stage("s11", M, N, K, layout, config=cfg)
        assert r.correct, (tile, r)
    a = torch.randn(M, K, device="cuda") if layout[0] == "n" else torch.randn(K, M, device="cuda").t()
    b = torch.randn(K, N, device="cuda") if layout[1] == "n" else torch.randn(N, K, device="cuda").t()
    out = torch.empty(M, N, device="cuda")
    plan, _ = api.prepare(a, b, out=out, stage="s11", config={"stream_k": 1})
    if plan.choice.spec.id == "s11":  # TMA can take it (else s10 ran, with no stream-K)
        assert plan.choice.stream_k and plan.kernels[0].endswith("_sk1"), plan.kernels
        assert plan.kernels[1:] in ([], ["gemmlab_stream_k_fixup"]), plan.kernels
    first = gemmlab.gemm(a, b, stage="s11", config={"stream_k": 1})
    again = gemmlab.gemm(a, b, stage="s11", config={"stream_k": 1})
    torch.cuda.synchronize()
    assert torch.equal(first, again)


@pytest.mark.gpu
def test_gpu_stream_k_in_place_c_and_poisoned_out():
    """c is out (beta reads the old out, which only the owner writes), and beta = 0 into NaN."""
    import torch

    import gemmlab
    from gemmlab.check import check_stage_poisoned, compare

    M, N, K = 1000, 1100, 900
    a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
    c = torch.randn(M, N, device="cuda")
    ref = 1.25 * (a.double() @ b.double()) - 0.5 * c.double()
    gemmlab.gemm(a, b, c, alpha=1.25, beta=-0.5, out=c, stage="s11", config={"stream_k": 1})
    torch.cuda.synchronize()
    assert compare(c, ref, K).correct
    r = check_stage_poisoned("s11", M, N, K, config={"stream_k": 1})
    assert r.correct, r
