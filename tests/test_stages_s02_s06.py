"""Stages s02-s06 (the scalar ladder before float4): constraints, the Python mirror of their index
maths (output ownership, slice copies, shared-memory address maps) and its agreement with the
compiled kernels. No GPU needed except for the tests marked ``gpu``."""
from collections import Counter

import pytest

from gemmlab.analysis import sass
from gemmlab.api import kernel_for
from gemmlab.errors import CompileError, ConfigError
from gemmlab.jit.compiler import compile_cubin
from gemmlab.jit.source import generate
from gemmlab.stages import _slices, get
from gemmlab.stages import (s02_smem_tiling, s03_block_tiling, s04_thread_tiling_1d, s05_thread_tiling_2d,
                            s06_warp_tiling)

MODULES = {"s02": s02_smem_tiling, "s03": s03_block_tiling, "s04": s04_thread_tiling_1d,
           "s05": s05_thread_tiling_2d, "s06": s06_warp_tiling}

# Legal configs besides the defaults, each exercising another branch of the index maths.
OTHER_CONFIGS = {
    "s02": [{"block_m": 8}, {"block_m": 16, "block_k": 64}, {"block_n": 64, "block_m": 8, "block_k": 64}],
    "s03": [{"block_k": 16}, {"threads": 128, "threads_n": 8}, {"block_m": 64, "threads_n": 32}],
    "s04": [{"block_k": 16}, {"block_m": 128, "thread_m": 16}, {"block_n": 32, "block_m": 32, "thread_m": 4}],
    "s05": [{"block_k": 16}, {"block_m": 64, "block_n": 64, "thread_m": 4, "thread_n": 4},
            {"block_m": 64, "thread_m": 8, "thread_n": 4, "block_n": 128}],
    "s06": [
        # 001 kernel 10's A6000 config: 4 warps as 2x2, 64x64 warp tiles in 4 sub-tiles along N.
        {"block_k": 16, "warp_m": 64, "warp_n": 64, "warp_n_iter": 4, "thread_n": 4},
        # two sub-tiles each way, 4x4 thread tiles
        {"warp_m": 32, "warp_n": 64, "warp_m_iter": 2, "warp_n_iter": 2, "thread_m": 4, "thread_n": 4},
        # lanes 8x4 instead of 4x8
        {"warp_m": 64, "warp_n": 32, "block_m": 128, "block_n": 64},
    ],
}

# (config override, a phrase the Python message and the .cuh static_assert both contain)
ILLEGAL = {
    "s02": [({"block_n": 48, "block_m": 16, "block_k": 48}, "multiple of 32"),
            ({"block_m": 64}, "1024"),
            ({"block_k": 16}, "A slice")],
    "s03": [({"threads_n": 24}, "compute layout"),
            ({"threads": 100}, "multiple of 32"),
            ({"block_k": 3}, "A slice"),
            ({"block_n": 80}, "B slice"),
            ({"threads": 64}, "at most 128")],
    "s04": [({"thread_m": 3}, "multiple of thread_m"),
            ({"block_m": 128, "block_n": 128}, "1024"),
            ({"block_k": 4}, "A slice")],
    "s05": [({"thread_m": 5}, "multiples of thread_m"),
            ({"thread_m": 16, "thread_n": 16, "block_m": 256, "block_n": 256}, "at most 128"),
            ({"block_k": 3}, "A slice"),
            ({"block_m": 128, "block_n": 32, "thread_m": 4, "thread_n": 4, "block_k": 4}, "B slice")],
    "s06": [({"warp_m": 48}, "multiples of warp_m"),
            ({"warp_m_iter": 3}, "multiples of warp_m_iter"),
            ({"thread_n": 16}, "exactly 32"),
            ({"warp_m": 16, "warp_n": 16, "thread_m": 4, "thread_n": 2}, "at most 32"),
            ({"warp_m_iter": 2, "warp_n_iter": 2, "warp_m": 64, "warp_n": 128, "block_n": 256}, "at most 128"),
            ({"block_k": 3}, "A slice")],
}

# For each stage, the one illegal config whose static_assert we compile (it must fail the same way).
STATIC_ASSERT_CASES = {"s02": 0, "s03": 0, "s04": 2, "s05": 2, "s06": 2}


def all_configs(stage_id):
    spec = get(stage_id)
    return [spec.default_config] + [spec.config(o) for o in OTHER_CONFIGS[stage_id]]


def cfg_id(cfg):
    return ",".join(f"{k}={v}" for k, v in cfg.items())


CASES = [(s, c) for s in MODULES for c in all_configs(s)]


# ---- constraints ------------------------------------------------------------------------------

@pytest.mark.parametrize("stage_id", list(MODULES))
def test_defaults_are_the_notes_configs(stage_id):
    spec = get(stage_id)
    cfg = spec.default_config
    assert spec.constraints(cfg) == []
    expected = {"s02": (32, 32, 1024), "s03": (128, 128, 256), "s04": (64, 64, 512),
                "s05": (128, 128, 256), "s06": (128, 128, 256)}[stage_id]
    assert (*spec.block_tile(cfg), spec.threads(cfg)) == expected
    assert spec.aligned_path is False and spec.variants(cfg) == [{}]
    assert {"LDS", "BAR", "FFMA"} <= set(spec.sass) or {"LDS.128", "BAR", "FFMA"} <= set(spec.sass)
    low, high = spec.expected_pct_cublas
    assert 0 < low < high <= 100


def test_s06_default_is_warps_4x2_and_lanes_4x8():
    cfg = get("s06").default_config
    lay = s06_warp_tiling.layout(cfg)
    assert (cfg["block_m"] // cfg["warp_m"], lay["WARPS_N"]) == (4, 2)
    assert (lay["LANES_M"], lay["LANES_N"]) == (4, 8)
    # 000 §6.3's worked example: tid 18 -> warp 0, lane_row 2, lane_col 2 -> rows 16..23, cols 16..23.
    assert s06_warp_tiling.thread_origin(cfg, 18) == (16, 16)
    # and a thread in warp 3 (warp_row 1, warp_col 1): lane 5 -> (1*32 + 0*8, 1*64 + 5*8)
    assert s06_warp_tiling.thread_origin(cfg, 3 * 32 + 5) == (32, 104)


@pytest.mark.parametrize("stage_id,config,phrase", [(s, c, p) for s in ILLEGAL for c, p in ILLEGAL[s]],
                         ids=lambda x: cfg_id(x) if isinstance(x, dict) else str(x))
def test_illegal_configs_are_rejected_naming_the_rule(stage_id, config, phrase):
    spec = get(stage_id)
    with pytest.raises(ConfigError, match=phrase) as err:
        spec.config(config)
    assert f"stage {stage_id}" in str(err.value)


@pytest.mark.parametrize("stage_id", list(MODULES))
def test_non_positive_parameters_are_rejected(stage_id):
    spec = get(stage_id)
    with pytest.raises(ConfigError, match="positive"):
        spec.config({spec.params[0].name: 0})


@pytest.mark.parametrize("stage_id", list(STATIC_ASSERT_CASES))
def test_the_cuh_repeats_the_constraint_as_static_assert(stage_id):
    """Bypass the Python check: the kernel itself must refuse the same config at compile time."""
    spec = get(stage_id)
    override, phrase = ILLEGAL[stage_id][STATIC_ASSERT_CASES[stage_id]]
    cfg = {**spec.default_config, **override}
    assert spec.constraints(cfg)
    name, src = generate(spec, cfg, {})
    with pytest.raises(CompileError) as err:
        compile_cubin(src, name, "sm_90")
    assert "static assertion failed" in str(err.value) and phrase in str(err.value)


# ---- who computes what --------------------------------------------------------------------------

@pytest.mark.parametrize("stage_id,cfg", CASES, ids=[f"{s}-{cfg_id(c)}" for s, c in CASES])
def test_threads_cover_every_output_of_the_block_tile_exactly_once(stage_id, cfg):
    spec = get(stage_id)
    bm, bn = spec.block_tile(cfg)
    owners = Counter()
    for tid in range(spec.threads(cfg)):
        owners.update(MODULES[stage_id].thread_outputs(cfg, tid))
    assert set(owners) == {(r, c) for r in range(bm) for c in range(bn)}
    assert set(owners.values()) == {1}


@pytest.mark.parametrize("stage_id,cfg", CASES, ids=[f"{s}-{cfg_id(c)}" for s, c in CASES])
def test_slice_copies_cover_every_element_exactly_once(stage_id, cfg):
    """The A and B slices as SliceLoad copies them (the thread layouts of the .cuh)."""
    spec = get(stage_id)
    t = spec.threads(cfg)
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    b_cols = {"s02": bn, "s03": 32, "s04": bn}.get(stage_id, min(bn, t))
    # a_tile then b_tile fill the dynamic buffer exactly
    assert spec.smem_bytes(cfg, {}) == 4 * (bm * bk + bk * bn)
    for rows, cols, thread_cols in ((bm, bk, bk), (bk, bn, b_cols)):
        assert _slices.slice_load_rules("X", rows, cols, t, thread_cols) == []
        seen = Counter()
        for tid in range(t):
            seen.update(_slices.slice_load_elements(rows, cols, t, thread_cols, tid))
        assert set(seen) == {(r, c) for r in range(rows) for c in range(cols)}
        assert set(seen.values()) == {1}
        # coalescing: consecutive threads of a warp take consecutive columns of one row
        first = [_slices.slice_load_elements(rows, cols, t, thread_cols, tid)[0] for tid in range(32)]
        assert all(b == (a[0], a[1] + 1) for a, b in zip(first, first[1:]) if b[0] == a[0])


def test_s06_sub_tiles_step_by_the_sub_tile_size():
    cfg = get("s06").config(OTHER_CONFIGS["s06"][1])  # 2x2 sub-tiles of 16x32, 4x4 thread tiles
    out = s06_warp_tiling.thread_outputs(cfg, 0)
    assert out[0] == (0, 0) and (0, 32) in out and (16, 0) in out and (16, 32) in out
    assert len(out) == 4 * 16


# ---- shared-memory address maps ----------------------------------------------------------------

KINDS = ("a_load", "b_load", "a_store", "b_store")


@pytest.mark.parametrize("stage_id,cfg", CASES, ids=[f"{s}-{cfg_id(c)}" for s, c in CASES])
def test_smem_accesses_are_32_lane_maps_inside_the_buffer(stage_id, cfg):
    spec = get(stage_id)
    acc = spec.smem_accesses(cfg)
    assert set(acc) == set(KINDS)
    size = spec.smem_bytes(cfg, {})
    a_bytes = 4 * cfg["block_m"] * cfg["block_k"]
    for kind in KINDS:
        assert acc[kind], kind
        for width, addresses in acc[kind]:
            assert width in (4, 8, 16)
            assert len(addresses) == 32
            for a in addresses:
                assert isinstance(a, int) and a % width == 0 and 0 <= a <= size - width
                # A instructions stay in the A tile, B instructions in the B tile
                assert (a < a_bytes) == kind.startswith("a"), (kind, a)
    if stage_id in ("s05", "s06"):
        # per BLOCK_K slice: every row of a_frag once per 4 k (LDS.128), b_frag per k
        frag_m = cfg["thread_m"] * cfg.get("warp_m_iter", 1)
        frag_n = cfg["thread_n"] * cfg.get("warp_n_iter", 1)
        assert sum(w for w, _ in acc["a_load"]) == 4 * frag_m * cfg["block_k"]
        assert sum(w for w, _ in acc["b_load"]) == 4 * frag_n * cfg["block_k"]


def test_s06_default_reads_are_the_notes_row_major_pattern():
    """000 §8.4: lanes 4x8 row-major; per k the B read of lane l starts at column (l % 8) * 8, and
    lanes of one lane_row read the same A row."""
    cfg = get("s06").default_config
    acc = get("s06").smem_accesses(cfg)
    b_base = 4 * 128 * 8
    width, first_b = acc["b_load"][0]  # k = 0, columns 0..3 of each lane's tile
    assert width == 16
    assert first_b == [b_base + 4 * (lane % 8) * 8 for lane in range(32)]
    width, first_a = acc["a_load"][0]  # row 0 of each lane's tile, k = 0..3
    assert width == 16
    assert first_a == [4 * (lane // 8) * 8 * 8 for lane in range(32)]


def k_loop(insns):
    body = sass.main_loop(insns)
    assert body, "no main loop found"
    return body


@pytest.mark.parametrize("stage_id", list(MODULES))
def test_smem_accesses_match_the_compiled_main_loop(stage_id):
    """The widths the Python map assumes the compiler chose are the ones in the SASS: as many
    LDS.128 in one trip of the main loop as 16-byte loads listed, scalar LDS as 4-byte loads, and
    one STS per listed store. (s04's k-outer loop order used to leave a scalar reload of
    a_tile[row][7] per row on top; its row-by-row order compiles to exactly the listed loads.)"""
    spec = get(stage_id)
    cfg = spec.default_config
    ck = kernel_for(spec, cfg, {}, "sm_90")
    loop = k_loop(sass.instructions(ck.cubin))
    mix = sass.mix(loop)
    acc = spec.smem_accesses(cfg)
    loads = Counter(w for kind in ("a_load", "b_load") for w, _ in acc[kind])
    assert mix.get("LDS.128", 0) == loads[16]
    assert mix.get("LDS.64", 0) == loads[8]
    assert mix.get("LDS", 0) == loads[4]
    assert mix.get("STS", 0) == len(acc["a_store"]) + len(acc["b_store"])


@pytest.mark.parametrize("stage_id", list(MODULES))
def test_main_loop_does_all_the_multiply_adds_of_a_slice(stage_id):
    """One trip of the K loop is one BLOCK_K slice, fully unrolled: every output of the thread
    gets BLOCK_K FFMAs (s05: 64 per k step, 512 per slice)."""
    spec = get(stage_id)
    cfg = spec.default_config
    ck = kernel_for(spec, cfg, {}, "sm_90")
    loop = k_loop(sass.instructions(ck.cubin))
    outputs = len(MODULES[stage_id].thread_outputs(cfg, 0))
    assert sass.mix(loop).get("FFMA", 0) == outputs * cfg["block_k"]
    assert sass.mix(loop).get("BAR", 0) == 2


@pytest.mark.parametrize("stage_id,blocks", [("s02", 2), ("s04", 4)])
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_launch_bounds_give_the_blocks_per_sm_that_hide_the_slice_latency(stage_id, blocks, arch):
    """s02 and s04 have no latency hiding of their own (each slice waits at a barrier for its
    global loads): their defaults ask __launch_bounds__ for `blocks` blocks per SM, and the
    registers ptxas then takes let that many blocks fit (64K registers per SM), without spills."""
    spec = get(stage_id)
    cfg = spec.default_config
    assert spec.min_blocks_per_sm(cfg) == blocks
    ck = kernel_for(spec, cfg, {}, arch)
    res = sass.resources(ck.cubin)
    assert res["registers"] * spec.threads(cfg) * blocks <= 65536
    assert res["local_bytes"] == 0


# ---- GPU: the non-default configs (the generic GPU tests run the defaults) ------------------------

GPU_SHAPES = [(1, 1, 1), (7, 129, 5), (129, 7, 33), (127, 255, 17), (300, 200, 129), (64, 64, 0)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("stage_id,config", [(s, o) for s in OTHER_CONFIGS for o in OTHER_CONFIGS[s]],
                         ids=lambda x: cfg_id(x) if isinstance(x, dict) else str(x))
def test_other_configs_are_correct(stage_id, config, shape, layout):
    from gemmlab.check import check_stage

    r = check_stage(stage_id, *shape, layout, config=config)
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("stage_id", list(MODULES))
def test_batched_and_beta_zero(stage_id):
    from gemmlab.check import check_stage, check_stage_poisoned

    r = check_stage(stage_id, 131, 70, 45, "nt", batch=3)
    assert r.correct, r
    r = check_stage_poisoned(stage_id, 129, 255, 63, "tn")
    assert r.correct, r
