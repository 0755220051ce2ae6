"""s11's persistent grid (config ``persistent=1``, an experiment: kernels/epilogue/stream_k.cuh
PersistentTiles, s11_tma.cuh run_tiles): as many blocks as the GPU holds at once, each running
its tiles of every batch through one ring of stages. What needs no GPU: the config's rules, which
problems get the grid and how large it is, the generated kernel, that it compiles for sm_90a
without local memory. The kernel itself runs on the CPU in tests/test_kernels_host.py (s11_host.cpp:
persistent grids of 2 and 5 blocks, copies landing early and late); on the GPU below, against
float64 and bit for bit against one block a tile (the same FFMAs in the same order)."""
import pytest

from gemmlab.errors import ConfigError
from gemmlab.jit.source import generate
from gemmlab.stages import get
from test_stream_k import _problem  # a dense problem at aligned addresses, split as asked

S11 = get("s11")
# the space's tiles (heuristics/space.py: thread 0 producing) and one with a producer warpgroup
BIG = {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4}
SMALL = {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "k_unroll": 2, "stages": 3, "min_blocks": 3}
WARP = {"block_m": 256, "block_n": 128, "warp_m": 64, "warp_n": 64, "k_unroll": 4, "producer_warp": 1,
        "consumer_sync": 1}


def test_persistent_is_the_rule_on_or_off_with_either_producer(monkeypatch):
    from gemmlab.stages import s11_tma

    with pytest.raises(ConfigError, match="persistent=2 must be -1"):
        S11.config({**BIG, "persistent": 2})
    assert S11.config({**BIG, "persistent": 1})["persistent"] == 1
    assert S11.config({"persistent": 1})["producer_warp"] == 0  # thread 0 producing, the default
    p = _problem(4096, 4096, 512)
    assert S11.config(BIG)["persistent"] == -1 and not S11.persistent(S11.config(BIG), p)  # the rule: off
    monkeypatch.setattr(s11_tma, "PERSISTENT_GRID", True)   # what the rule turns on (model_variant_probe "persistent")
    assert S11.persistent(S11.config(BIG), p) and not S11.persistent(S11.config({**BIG, "persistent": 0}), p)
    assert S11.variant(S11.config(BIG), p).get("persistent") == 1


def test_the_grid_is_what_the_gpu_holds_and_split_k_keeps_one_block_a_tile(monkeypatch):
    big, small = S11.config({**BIG, "persistent": 1}), S11.config({**SMALL, "persistent": 1})
    assert S11.resident_blocks(big) == 1 and S11.resident_blocks(small) == 3
    p = _problem(4096, 4096, 512)                      # 32 x 16 tiles of 128x256
    assert S11.variant(big, p) == {"a_k_major": 1, "b_n_major": 1, "persistent": 1}
    assert S11.persistent_blocks(big, p, 132) == 132
    assert S11.persistent_blocks(small, p, 132) == 396
    assert S11.persistent_blocks(big, _problem(500, 700, 64), 132) == 4 * 3   # fewer tiles than SMs
    assert S11.persistent_blocks(big, _problem(300, 300, 64, batch=40), 132) == 132  # 3 x 2 tiles x 40
    assert S11.persistent_blocks(big, _problem(300, 300, 64, batch=10), 132) == 60
    assert "persistent" not in S11.variant(big, _problem(4096, 4096, 512, splits=4))
    assert "persistent" not in S11.variant(S11.config(BIG), p)              # not asked
    monkeypatch.setattr(type(S11), "PERSISTENT_MAX_TILES", 511)
    assert "persistent" not in S11.variant(big, p)      # 512 tiles: more than the kernel's counter holds


def test_the_persistent_kernel_is_its_own_instantiation():
    cfg = S11.config({**BIG, "persistent": 1})
    name, src = generate(S11, cfg, {"a_k_major": 1, "b_n_major": 1, "persistent": 1})
    dp_name, dp_src = generate(S11, S11.config(BIG), {"a_k_major": 1, "b_n_major": 1})
    assert name.endswith("_persistent1") and name != dp_name
    assert "gemmlab::PersistentTiles<128, 256, 8>" in src and "Stage::run_tiles(tiles, smem, a_map, b_map" in src
    assert "run_tiles" not in dp_src and "PersistentTiles" not in dp_src
    variants = S11.variants(cfg)
    assert sum(1 for v in variants if v.get("persistent")) == 4 and not any(
        v.get("persistent") for v in S11.variants(S11.config(BIG)))


@pytest.mark.parametrize("tile", [BIG, SMALL, WARP], ids=["128x256", "64x64x3", "256x128-producer-warp"])
@pytest.mark.parametrize("a_k_major,b_n_major", [(1, 1), (1, 0), (0, 1), (0, 0)], ids=["nn", "nt", "tn", "tt"])
def test_the_persistent_kernel_compiles_for_sm90a_without_local_memory(tile, a_k_major, b_n_major):
    """The producer's walk over the block's tiles (int32 tile arithmetic; a producer warpgroup's
    within its registers after setmaxnreg) costs the consumers nothing: no spills, and no more than
    a few stack loads and stores more than one block a tile."""
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    variant = {"a_k_major": a_k_major, "b_n_major": b_n_major}
    ck = kernel_for(S11, S11.config({**tile, "persistent": 1}), {**variant, "persistent": 1}, "sm_90")
    assert ck.name.endswith("_persistent1")
    res = sass.resources(ck.cubin)
    assert res["local_bytes"] == 0, res
    insns = sass.instructions(ck.cubin)
    for op in ("UTMALDG", "SYNCS", "FFMA"):
        assert sass.has_opcode(insns, op), (op, sass.mix(insns))
    plain_ck = kernel_for(S11, S11.config(tile), variant, "sm_90")
    plain = sass.instructions(plain_ck.cubin)
    stack = lambda ins: sum(1 for i in ins if i.op.startswith(("LDL", "STL")))  # noqa: E731
    # at most a few stack loads and stores more than one block a tile, once a tile (its corner and
    # batch offsets; 12 in the producer-warpgroup builds under NVRTC 13.0), none in the K loop
    assert stack(insns) <= stack(plain) + 16, (stack(insns), stack(plain))
    # the registers move to the consumers (setmaxnreg) where they did with one block a tile
    assert sass.has_opcode(insns, "USETMAXREG") == sass.has_opcode(plain, "USETMAXREG")


# ---- GPU ----------------------------------------------------------------------------------------
SHAPES = [(1200, 1200, 1200), (513, 1025, 257), (2047, 2049, 511), (777, 556, 33), (100, 3000, 72), (128, 256, 32),
          (33, 64, 4100)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_gpu_persistent_matches_float64_and_one_block_a_tile_bit_for_bit(layout, M, N, K):
    """Odd shapes (edge tiles, K not a multiple of block_k, fewer tiles than SMs and many more),
    every layout, a separate c with alpha and beta into a NaN-poisoned out; and the same bits as
    the data-parallel kernel of the same tile (each output's FFMAs run in the same order)."""
    import torch

    import gemmlab
    from gemmlab import api
    from gemmlab.check import check_stage

    for tile in (BIG, SMALL, WARP):
        r = check_stage("s11", M, N, K, layout, config={**tile, "persistent": 1, "split_k": 1})
        assert r.correct, (tile, r)
    a = torch.randn(M, K, device="cuda") if layout[0] == "n" else torch.randn(K, M, device="cuda").t()
    b = torch.randn(K, N, device="cuda") if layout[1] == "n" else torch.randn(N, K, device="cuda").t()
    for tile in (BIG, SMALL, WARP):
        plan, _ = api.prepare(a, b, out=torch.empty(M, N, device="cuda"), stage="s11",
                              config={**tile, "persistent": 1, "split_k": 1})
        if plan.choice.spec.id == "s11":  # TMA can take it (else s10 ran)
            assert plan.kernels[-1].endswith("_persistent1"), plan.kernels
        got = gemmlab.gemm(a, b, stage="s11", config={**tile, "persistent": 1, "split_k": 1})
        want = gemmlab.gemm(a, b, stage="s11", config={**tile, "persistent": 0, "split_k": 1})
        torch.cuda.synchronize()
        assert torch.equal(got, want), tile


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tt"])
def test_gpu_persistent_batched_broadcast_and_in_place_c(layout):
    """Batches share the grid (a block's tiles cross from one batch to the next); a broadcast B
    (stride 0) and c = out read in place."""
    import torch

    import gemmlab
    from gemmlab.check import check_stage, compare

    for tile in (BIG, SMALL, WARP):
        r = check_stage("s11", 300, 256, 200, layout, batch=7, config={**tile, "persistent": 1, "split_k": 1})
        assert r.correct, (tile, r)
    batch, M, N, K = 5, 333, 292, 132  # rows 16-byte aligned: TMA, not s10
    a = torch.randn(batch, M, K, device="cuda")
    b = torch.randn(1, K, N, device="cuda")  # a batch of 1: broadcast
    c = torch.randn(batch, M, N, device="cuda")
    ref = 0.75 * (a.double() @ b.double()) + 1.5 * c.double()
    for tile in (BIG, SMALL, WARP):
        out = c.clone()
        gemmlab.gemm_batched(a, b, out, alpha=0.75, beta=1.5, out=out, stage="s11",
                             config={**tile, "persistent": 1, "split_k": 1})
        torch.cuda.synchronize()
        assert compare(out, ref, K).correct, tile


def test_the_probe_times_whole_waves_and_only_autos_one_slice_s11_plans():
    """scripts/persistent_probe.py (h200_run.sh persistent): its wave series are exact multiples
    of a full wave of the tile's blocks, its fit recovers a wave's cost, and part 2 holds only
    the mid-size shapes that auto sends to s11 with one slice of K and no cut, run by s11 itself."""
    from script_loader import load_script

    from gemmlab.heuristics import space

    probe = load_script("persistent_probe")
    cands = {c.label: c for c in space.candidates(90)}
    for label in probe.TILES:
        bm, bn = cands[label].tile()
        shapes = probe.wave_shapes(label)
        M1, N1 = shapes[0]
        assert M1 % bm == 0 and N1 % bn == 0 and (M1 // bm) * (N1 // bn) == 132 * cands[label].blocks_per_sm()
        assert shapes == [(M1 * w, N1) for w in probe.WAVES]
    assert probe.per_wave([10.0 + 7.5 * w for w in probe.WAVES]) == pytest.approx(7.5)
    mvp = load_script("model_variant_probe")
    plans = probe.mid_plans(60, 64)
    assert plans
    for (M, N, K, lay, batch), cfg in plans:
        assert 1e9 <= 2.0 * M * N * K * batch < 1e10
        c = mvp.h200_choice(M, N, K, lay, batch)
        assert c.spec.id == "s11" and c.split_k == 1 and c.tail is None
        assert not mvp.runs(c, M, N, K, lay, batch)  # s11 itself runs, not its s10 stand-in
        assert cfg["split_k"] == 1 and cfg["block_m"] == c.config["block_m"] and cfg["repack"] == int(c.repack)
        assert cfg["persistent"] == 0  # the baseline: one block a tile, whatever the rule says
        S11.config({k: v for k, v in cfg.items() if k not in ("split_k", "repack", "a_transpose")} | {"persistent": 1})
    # --producer-warp: the same grids with a producer warpgroup, each a legal s11 config
    base = probe.s11_config(probe.TILES[1])
    grids = probe.series_configs(base, True)
    assert list(probe.series_configs(base, False)) == ["one block a tile", "persistent"]
    assert [(g.get("persistent", 0), g.get("producer_warp", 0)) for g in grids.values()] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    for g in grids.values():
        assert S11.threads(S11.config({k: v for k, v in g.items() if k != "split_k"})) == (256 if g.get("producer_warp") else 128)


def test_a_persistent_grid_shows_in_the_variant_logs_and_counts_as_a_changed_plan():
    """model_variant_probe marks a plan on a persistent grid " pg" (the choice is the same, the
    kernel is not); probe_breakdown parses it and its rule counts the plan as changed."""
    from script_loader import load_script

    pb = load_script("probe_breakdown")
    line = ("1780x3729x129 tt: cuBLAS 100.0 | as_is 110.0 (0.909) [s11 128x256 s1 heuristic] | "
            "persistent 104.0 (0.962) [s11 128x256 s1 pg heuristic]")
    (row,) = pb.parse(line)
    assert row["runs"]["as_is"][2][8] is False and row["runs"]["persistent"][2][8] is True
    assert pb.plan_str(row["runs"]["persistent"][2]) == "s11 128x256 s1 pg"
    v = pb.verdict([[row]], "as_is", "persistent", 1.02, 0.95)
    assert v["changed"] == 1 and v["speedup"] == pytest.approx(110.0 / 104.0)
    old = "513x1025x257 nn: cuBLAS 50.0 | as_is 60.0 (0.833) [s10 128x64 s2 rp aT heuristic]"
    assert pb.parse(old)[0]["runs"]["as_is"][2] == ("s10", 128, 64, 2, True, "heuristic", True, "", False)
