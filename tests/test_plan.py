"""The call path: plans, split-K, repacking, the plan cache, graph capture.

CPU: the pieces that need no GPU (slicing rule, repack rule, the reduce kernel's SASS, the
wrapper's split-K parameters). GPU: every new path fuzzed against float64 on odd shapes and all
layouts, and the cache and capture rules."""
import threading

import pytest

from gemmlab.heuristics import model, space
from gemmlab.stages import get
from gemmlab.stages.base import Problem

LAYOUTS = ["nn", "nt", "tn", "tt"]


# ---- CPU ------------------------------------------------------------------------------------

@pytest.mark.parametrize("K,split,expect", [(1000, 4, (256, 4)), (1000, 3, (352, 3)), (100, 8, (32, 4)),
                                             (64, 1, (64, 1)), (0, 4, (0, 1)), (65536, 64, (1024, 64))])
def test_k_slices_are_whole_32s_and_cover_k(K, split, expect):
    k_split, n = model.k_slices(K, split)
    assert (k_split, n) == expect
    if n > 1:
        assert k_split % 32 == 0 and (n - 1) * k_split < K <= n * k_split


def test_repack_rule():
    aligned = Problem.dense(256, 256, 256, a_ptr=1 << 20, b_ptr=2 << 20, d_ptr=3 << 20)
    assert not aligned.operand("a").needs_repack(True) and not aligned.operand("b").needs_repack(True)
    odd = Problem.dense(255, 257, 255, a_ptr=1 << 20, b_ptr=2 << 20, d_ptr=3 << 20)  # rows of 255/257 floats
    assert odd.operand("a").needs_repack(True) and odd.operand("b").needs_repack(True)
    assert not odd.operand("a").needs_repack(False)  # unit stride: readable as it is by the scalar path
    shifted = Problem.dense(256, 256, 256, a_ptr=(1 << 20) + 4, b_ptr=2 << 20, d_ptr=3 << 20)
    assert shifted.operand("a").needs_repack(True) and not shifted.operand("b").needs_repack(True)
    strided = Problem(M=8, N=8, K=8, a_rs=16, a_cs=2, b_rs=8, b_cs=1, ldd=8, a_ptr=1 << 20, b_ptr=2 << 20)
    assert strided.operand("a").needs_repack(False)  # no unit stride: always copied for float4 stages


def test_separate_c_is_read_in_place_and_transposed_with_the_output():
    """A c that is not the output is no copy step: the problem carries its strides (swapped when
    the output is column-major), and the kernel wrapper and the reduce take them."""
    from gemmlab.jit.source import generate
    from gemmlab.problem import Problem as P

    common = dict(M=5, N=7, K=3, batch=2, a_ptr=0, a_strides=(15, 3, 1), a_batch=2, b_ptr=0,
                  b_strides=(21, 7, 1), b_batch=2, d_ptr=0)
    row, swapped = P.of_call(**common, d_strides=(35, 7, 1), beta=1.0, c_strides=(0, 0, 1))
    assert not swapped and row.separate_c and row.c_strides() == (0, 1, 0)  # a bias, broadcast over the batch
    col, swapped = P.of_call(**common, d_strides=(35, 1, 5), beta=1.0, c_strides=(35, 0, 1))
    assert swapped and col.c_strides() == (1, 0, 35)  # out^T = b^T a^T reads c^T
    own, _ = P.of_call(**common, d_strides=(35, 7, 1), beta=1.0)
    assert not own.separate_c and own.c_strides() == (own.ldd, 1, own.d_bs)
    spec = get("s11")
    cfg = spec.config(None)
    _, src = generate(spec, cfg, spec.variants(cfg)[0])
    assert "const float* C, int64 c_rs, int64 c_cs, int64 c_bs" in src and "C + b * c_bs, c_rs, c_cs" in src


def test_reduce_kernel_compiles_vectorized():
    from gemmlab.analysis import sass
    from gemmlab.jit import compile_cubin

    ck = compile_cubin('#include "splitk_reduce.cuh"\n', "gemmlab_splitk_reduce", "sm_90")
    info = sass.inspect(ck.cubin, ck.name)
    assert info["local_bytes"] == 0
    assert info["mix"].get("LDG.E.128", 0) >= 1 and info["mix"].get("STG.E.128", 0) >= 1


def test_reduce_lanes_spread_few_outputs_over_more_threads():
    from gemmlab.analysis import sass
    from gemmlab.jit import compile_cubin
    from gemmlab.plan import REDUCE_THREADS, reduce_lanes

    assert reduce_lanes(64 * 16, 128) == 32          # 64x64, 128 slices: 1024 groups of 4 columns
    assert reduce_lanes(64 * 16, 4) == 4             # never more lanes than slices
    assert reduce_lanes(8192 * 32, 4) == 1           # 8192x128: enough outputs already
    assert reduce_lanes(REDUCE_THREADS // 8, 64) == 8
    for outputs, splits in ((1, 1), (3, 2), (1000, 7), (10 ** 6, 65535)):
        lanes = reduce_lanes(outputs, splits)
        assert lanes & (lanes - 1) == 0 and 1 <= lanes <= min(32, max(splits, 1))
    ck = compile_cubin('#include "splitk_reduce.cuh"\n', "gemmlab_splitk_reduce", "sm_90")
    assert sass.has_opcode(sass.instructions(ck.cubin), "SHFL.BFLY")  # the lanes' butterfly


@pytest.mark.gpu
@pytest.mark.parametrize("stage,M,N,K,split", [("s11", 64, 64, 65536, 128), ("s11", 7, 9, 5000, 33),
                                                ("s10", 64, 300, 4096, 64), ("s11", 1, 128, 8192, 40)])
def test_gpu_split_k_with_many_slices(stage, M, N, K, split):
    """Few outputs, many slices: the reduce's lane groups (up to 32 threads an output) add the
    slices correctly, and the same bits come out twice."""
    import torch

    import gemmlab
    from gemmlab import check

    r = check.check_stage(stage, M, N, K, "nn", config={"split_k": split})
    assert r.correct, r
    a, b, _ = check.random_operands(M, N, K)
    x = gemmlab.matmul(a, b, stage=stage, config={"split_k": split})
    y = gemmlab.matmul(a, b, stage=stage, config={"split_k": split})
    torch.cuda.synchronize()
    assert torch.equal(x, y)


def test_split_k_problem_grid_and_wrapper():
    from gemmlab.jit.source import generate

    spec = get("s11")
    cfg = spec.default_config
    p = Problem.dense(1024, 1024, 4096, splits=4, k_split=1024, d_ss=1024 * 1024)
    assert spec.grid(cfg, p) == (32, 4, 1)
    _, src = generate(spec, cfg, spec.variant(cfg, p))
    assert "int64 k_split" in src and "blockIdx.y * d_ss" in src and "k0 * a_cs" in src
    # s11 takes split-K only in whole K tiles (its TMA boxes would read the next slice otherwise)
    from gemmlab.stages.s11_tma import tma_problems

    ok = Problem.dense(1024, 1024, 4096, splits=4, k_split=1024, d_ss=1024 * 1024, a_ptr=1 << 20, b_ptr=2 << 20)
    assert not tma_problems(cfg, ok)
    bad = Problem.dense(1024, 1024, 4096, splits=4, k_split=1000, d_ss=1024 * 1024, a_ptr=1 << 20, b_ptr=2 << 20)
    assert any("whole K tiles" in m for m in tma_problems(cfg, bad))


def test_split_k_in_a_cluster_kernel_and_rule():
    """Slices that share D (d_ss = 0) make s11's cluster variant: __cluster_dims__ over the
    slices, two cluster barriers, loads from the other CTAs' shared memory, no spill in the main
    loop; the spec's rule (2..8 slices, the partial tile fits in the stage buffers) is the
    kernel's static_assert, by default 2 slices only, and the model charges those no reduce kernel."""
    from gemmlab.analysis import sass
    from gemmlab.errors import GemmlabError
    from gemmlab.jit.source import generate
    from gemmlab.plan import kernel_for

    spec = get("s11")
    cfg = spec.default_config
    shared = Problem.dense(1024, 1024, 4096, splits=4, k_split=1024)
    v = spec.variant(cfg, shared)
    assert v["cluster_k"] == 4
    assert "cluster_k" not in spec.variant(cfg, Problem.dense(1024, 1024, 4096, splits=4, k_split=1024, d_ss=1 << 20))
    name, src = generate(spec, cfg, v)
    assert name.endswith("_ck4") and "__cluster_dims__(1, 4, 1) __launch_bounds__" in src
    for variant in (v, {**v, "a_k_major": 0}, {**v, "b_n_major": 0}):
        ck = kernel_for(spec, cfg, variant, "sm_90")
        insns = sass.instructions(ck.cubin)
        ops = sass.opcodes(insns)
        assert ops.get("UCGABAR_ARV", 0) >= 2 and ops.get("UCGABAR_WAIT", 0) >= 2, ops
        assert sass.resources(ck.cubin)["local_bytes"] == 0
        loop = sass.main_loop(insns)
        assert loop and not any(i.op.startswith(("LDL", "STL")) for i in loop), ck.name
    assert spec.cluster_slices(cfg, 2) and not spec.cluster_slices(cfg, 4)  # the default: 2 slices
    assert spec.cluster_slices(cfg, 8, forced=True) and spec.cluster_slices(cfg, 3, forced=True)
    assert not spec.cluster_slices(cfg, 1, forced=True) and not spec.cluster_slices(cfg, 9, forced=True)
    tight = spec.config({"block_m": 128, "block_n": 128, "warp_m": 32, "warp_n": 64, "block_k": 8, "stages": 2})
    assert not spec.cluster_slices(tight, 2, forced=True)  # 2 stages of 8 k: the 128 x 136 partial does not fit
    with pytest.raises(GemmlabError, match="cluster_k"):
        kernel_for(spec, tight, {"a_k_major": 1, "b_n_major": 1, "cluster_k": 4}, "sm_90")
    # the model: no reduce kernel, no workspace traffic for a cluster split
    cand = next(c for c in space.SM90 if c.stage == "s11" and c.tile() == (128, 256))
    gpu = model.Gpu()
    assert model.in_cluster(cand, 4096, 512, 2) and not model.in_cluster(cand, 4096, 512, 4)
    # a tile larger than the problem stays on s11 (its TMA boxes hang over), so its 2 slices are
    # added in a cluster too, as the plan does: the spec hands nothing to s10 there
    assert model.in_cluster(cand, 100, 512, 2)
    from gemmlab.stages.s11_tma import tma_problems

    small = Problem.dense(100, 512, 2048, a_ptr=1 << 20, b_ptr=1 << 22, d_ptr=1 << 24)
    assert tma_problems(spec.config({}), small) == []
    two = model.predict(cand, 4096, 512, 2048, 1, 2, gpu)
    one = model.predict(cand, 4096, 512, 2048, 1, 1, gpu)
    ws = one.seconds / 2 + model.LAUNCH_S  # at least the halved blocks plus the reduce launch
    assert two.seconds < ws


@pytest.mark.parametrize("cfg", [{}, {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3,
                                         "stages": 3}], ids=["default", "64x64"])
def test_s10_split_k_in_a_cluster_kernel_and_rule(cfg):
    """s10 (the 4-byte copies of unaligned problems, and 16-byte ones) adds the slices of a tile
    in a cluster as s11 does: the variant, __cluster_dims__, two cluster barriers and no local
    memory on both copy sizes; the rule is its own buffers' (no TMA rounding), 2 slices by
    default; the plan asks for a cluster only on sm_90 and later, and the model charges such a
    split no reduce kernel only there."""
    from gemmlab.analysis import sass
    from gemmlab.jit.source import generate
    from gemmlab.plan import kernel_for

    spec = get("s10")
    cfg = spec.config(cfg)
    v = spec.variant(cfg, Problem.dense(333, 555, 777, "tt", splits=2, k_split=389))
    assert v["cluster_k"] == 2 and v["vec"] == 0
    assert "cluster_k" not in spec.variant(cfg, Problem.dense(333, 555, 777, splits=2, k_split=389, d_ss=1 << 20))
    name, src = generate(spec, cfg, v)
    assert name.endswith("_ck2") and "__cluster_dims__(1, 2, 1) __launch_bounds__" in src
    for variant in (v, {**v, "vec": 1}):
        ck = kernel_for(spec, cfg, variant, "sm_90")
        ops = sass.opcodes(sass.instructions(ck.cubin))
        assert ops.get("UCGABAR_ARV", 0) >= 2 and ops.get("UCGABAR_WAIT", 0) >= 2, ops
        assert sass.resources(ck.cubin)["local_bytes"] == 0
    assert spec.cluster_slices(cfg, 2) and not spec.cluster_slices(cfg, 3)
    assert spec.cluster_slices(cfg, 8, forced=True) and not spec.cluster_slices(cfg, 9, forced=True)
    # 2 stages of 8 k hold 2 x 192 x 8 floats: a 64 x (128 + 8) partial does not fit
    tight = spec.config({"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "block_k": 8, "stages": 2})
    assert not spec.cluster_slices(tight, 2, forced=True)
    cand = next(c for c in space.SM80 if c.tile() == (64, 64))
    for cc, clustered in ((90, True), (80, False)):
        gpu = model.Gpu(cc=cc)
        two = model.predict(cand, 777, 555, 333, 1, 2, gpu).seconds
        ws = model.predict(cand, 777, 555, 333, 1, 2, gpu, cluster=False).seconds  # the workspace path
        assert (ws - two > model.LAUNCH_S) == clustered and (two == ws) != clustered


@pytest.mark.parametrize("stage", ["s10", "s11"])
def test_more_slices_in_a_cluster_only_for_small_tiles_whose_clusters_are_all_resident(stage):
    """3..8 slices go into a cluster only for tiles of at most 64x64 outputs and only where the
    grid's clusters all fit at once (0.8 of the GPU's block slots / slices: under every count the
    driver gave on the H200); 2 slices on any grid, as before; the model follows the rule."""
    spec = get(stage)
    small = spec.config({"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3, "stages": 3})
    assert spec.resident_clusters(small, 4, 132) == 79  # 0.8 x 132 x 3 / 4
    assert spec.cluster_slices(small, 4, clusters=79, sms=132)
    assert not spec.cluster_slices(small, 4, clusters=80, sms=132)
    assert not spec.cluster_slices(small, 4)  # no grid given: no cluster of 4
    assert spec.cluster_slices(small, 8, clusters=39, sms=132) and not spec.cluster_slices(small, 8, clusters=40, sms=132)
    assert not spec.cluster_slices(small, 9, clusters=1, sms=132)  # past a portable cluster
    assert spec.cluster_slices(small, 2, clusters=10_000, sms=132)  # 2 slices: any grid
    big = spec.config({})
    assert big["block_m"] * big["block_n"] > 64 * 64
    assert not spec.cluster_slices(big, 3, clusters=1, sms=132) and spec.cluster_slices(big, 2, clusters=1, sms=132)
    if stage == "s11":  # the model: 120x897x759 (30 tiles of 64x64) in a cluster, 288x1179x879 (95) not
        cand = next(c for c in space.SM90 if c.label == "64x64 w32x32 x3")
        gpu = model.Gpu(cc=90, sms=132)
        assert model.in_cluster(cand, 120, 897, 4, True, 1, 132) and not model.in_cluster(cand, 288, 1179, 4, True, 1, 132)
        assert not model.in_cluster(cand, 120, 897, 4, True, 3, 132)  # 90 tiles: past the 79
        near = model.predict(cand, 120, 897, 759, 1, 4, gpu)
        assert model.predict(cand, 120, 897, 759, 1, 4, gpu, cluster=False).seconds - near.seconds > model.LAUNCH_S
        far = model.predict(cand, 288, 1179, 879, 1, 4, gpu)
        assert far.seconds == model.predict(cand, 288, 1179, 879, 1, 4, gpu, cluster=False).seconds


def test_the_model_adds_slices_in_a_cluster_where_the_plan_does():
    """model.in_cluster against the plan's rule (the stage that runs the problem decides, with its
    config) for every tile of the space, 2 slices, on rows TMA can take and on odd ones (s11 hands
    those to s10's stand-in config: three tiles then take the workspace)."""
    aligned = Problem.dense(1024, 1024, 2048, splits=2, k_split=1024, a_ptr=1 << 20, b_ptr=1 << 24, d_ptr=1 << 28)
    odd = Problem.dense(1023, 1021, 2047, splits=2, k_split=1024, a_ptr=1 << 20, b_ptr=1 << 24, d_ptr=1 << 28)
    from gemmlab.stages.s11_tma import tma_problems

    differ = []
    for cand in space.SM90:
        spec, cfg = cand.spec(), cand.config()
        for is_aligned, prob in ((True, aligned), (False, odd)):
            # Tma.fallback without the driver's tensor-map check (no GPU here)
            assert (not tma_problems(cfg, prob)) == is_aligned, cand.label
            run_spec, run_cfg = (spec, cfg) if is_aligned else spec.fallback_config(cfg)
            plan_says = run_spec.cluster_slices(run_cfg, 2)
            assert model.in_cluster(cand, prob.M, prob.N, 2, is_aligned) == plan_says, (cand.label, is_aligned)
            # 4 slices of a small grid (plan.py: one cluster per tile of the tile that runs)
            for M, N in ((200, 136), (1000, 600)):
                bm, bn = run_spec.block_tile(run_cfg)
                says = run_spec.cluster_slices(run_cfg, 4, clusters=-(-M // bm) * -(-N // bn), sms=132)
                assert model.in_cluster(cand, M, N, 4, is_aligned, 1, 132) == says, (cand.label, M, N)
        if model.in_cluster(cand, 1024, 1024, 2) != model.in_cluster(cand, 1023, 1021, 2, False):
            differ.append(cand.label)
    assert sorted(differ) == ["128x128 w32x64 x2", "128x128 w64x64 s3 x2", "128x256 w64x64 bk16 s8"], differ


def test_heuristic_uses_the_machine():
    gpu = model.Gpu()
    big = model.best(8192, 8192, 8192, 1, gpu)
    assert big.split_k == 1 and big.candidate.tile() == (128, 256)
    small = model.best(1024, 1024, 1024, 1, gpu)
    assert small.blocks > 32  # the default tile would leave 100 of 132 SMs idle
    deep = model.best(64, 64, 65536, 1, gpu)
    assert deep.split_k >= 16  # one tile: only split-K fills the machine
    for p in model.rank(3000, 5000, 7000, 1, gpu)[:5]:
        assert p.seconds > 0 and p.blocks >= 1


def test_space_configs_are_legal():
    for cc in (90, 80, 70):
        for cand in space.candidates(cc):
            cand.config()  # raises ConfigError if a constraint is broken


# ---- GPU ------------------------------------------------------------------------------------

def _check(fn, M, N, K, layout, batch=None, beta=3.0, alpha=0.5, c_layout="row", **kw):
    import torch

    from gemmlab import check

    a, b, c = check.random_operands(M, N, K, layout, batch, c_layout=c_layout)
    out = check.poisoned_like(c)
    fn(a, b, c, alpha=alpha, beta=beta, out=out, **kw)
    torch.cuda.synchronize()
    return check.compare(out, check.reference(a, b, c, alpha, beta), K)


SPLIT_CASES = [("s11", {}), ("s11", {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2}),
               ("s10", {}), ("s07", {}), ("s01", {})]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("stage,cfg", SPLIT_CASES)
@pytest.mark.parametrize("M,N,K,split", [(129, 260, 1000, 4), (64, 64, 4097, 16), (257, 33, 95, 3), (7, 300, 64, 2)])
def test_gpu_split_k(stage, cfg, layout, M, N, K, split):
    import gemmlab

    r = _check(gemmlab.gemm, M, N, K, layout, stage=stage, config={**cfg, "split_k": split})
    assert r.correct, r


CLUSTER_TILES = [{}, {"block_m": 256, "block_n": 128, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
                 {"block_m": 128, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2, "stages": 3},
                 {"block_m": 64, "block_n": 256, "warp_m": 32, "warp_n": 64}]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cfg", CLUSTER_TILES, ids=["default", "256x128", "128x128", "64x256"])
@pytest.mark.parametrize("M,N,K,split", [(300, 520, 2000, 2), (257, 390, 1000, 3), (513, 257, 4100, 8),
                                         (256, 256, 96, 3), (260, 300, 777, 5)])
def test_gpu_split_k_in_a_cluster(layout, cfg, M, N, K, split):
    """s11 adds 2..8 slices in a cluster (no workspace, no reduce kernel; forced past the default
    of 2): right on edges in M, N and K, every layout, the same bits twice, and the same result as
    the workspace path (unaligned layouts run on s10, which clusters too)."""
    _check_cluster_split("s11", {**cfg, "split_k": split, "cluster_reduce": 1}, M, N, K, layout)


def _check_cluster_split(stage, config, M, N, K, layout):
    """``stage`` with a forced cluster split (``config``): right against float64 with C and
    alpha/beta, one kernel (no reduce) whose name says the slices where the stage that runs can
    hold the partial tile (an unaligned s11 problem runs on s10's stand-in config, whose buffers
    may not), the same bits twice, and the workspace path's result. Returns the plan."""
    import torch

    import gemmlab
    from gemmlab import check

    r = _check(gemmlab.gemm, M, N, K, layout, stage=stage, config=config)
    assert r.correct, r
    a, b, c = check.random_operands(M, N, K, layout)
    out = torch.full((M, N), float("nan"), device="cuda")
    plan, fn = gemmlab.api.prepare(a, b, c, alpha=0.5, beta=2.0, out=out, stage=stage, config=config)
    ran = plan.choice
    if ran.spec.cluster_slices(ran.config, config["split_k"], forced=True):
        assert ran.cluster_reduce and "gemmlab_splitk_reduce" not in plan.kernels, plan.kernels
        assert f"_ck{config['split_k']}_" in plan.main.name + "_", plan.kernels
    else:
        assert not ran.cluster_reduce and "gemmlab_splitk_reduce" in plan.kernels, plan.kernels
    fn()
    first = out.clone()
    fn()
    torch.cuda.synchronize()
    assert torch.equal(out, first)
    ws = gemmlab.gemm(a, b, c, alpha=0.5, beta=2.0, stage=stage, config={**config, "cluster_reduce": 0})
    torch.cuda.synchronize()
    assert check.compare(out, ws.double(), K).correct
    return plan


S10_CLUSTER_TILES = [{}, {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3, "stages": 3},
                     {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2, "stages": 4,
                      "block_k": 16, "k_unroll": 1, "transpose_in": 1}]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cfg", S10_CLUSTER_TILES, ids=["default", "64x64", "64x128-bk16-ti"])
@pytest.mark.parametrize("M,N,K,split", [(333, 555, 777, 2), (257, 390, 1000, 3), (64, 128, 96, 2),
                                         (513, 257, 4101, 8), (260, 300, 776, 5)])
def test_gpu_s10_split_k_in_a_cluster(layout, cfg, M, N, K, split):
    """s10 adds 2..8 slices in a cluster (2 by default, more forced), on 4-byte copies (odd sizes)
    and 16-byte ones: right against float64 on edges in M, N and K in every layout, with C and
    alpha/beta, the same bits twice, no reduce kernel, and the same result as the workspace path."""
    plan = _check_cluster_split("s10", {**cfg, "split_k": split, "cluster_reduce": 1}, M, N, K, layout)
    assert plan.choice.spec.id == "s10" and plan.choice.cluster_reduce, plan.summary


@pytest.mark.gpu
@pytest.mark.parametrize("stage", ["s10", "auto"])
def test_gpu_s10_split_k_in_a_cluster_batched_strided_c_and_nan(stage):
    """Batched with a broadcast bias and a column-major out (unaligned: s10's 4-byte copies, 2
    slices in a cluster by default), and a NaN / Inf in A reaching exactly its row of D."""
    import torch

    import gemmlab
    from gemmlab import check

    B, M, N, K = 3, 301, 203, 999
    config = {"split_k": 2} if stage == "s10" else None
    a = torch.rand(B, M, K, device="cuda") - 0.5
    b = torch.rand(B, K, N, device="cuda") - 0.5
    bias = (torch.rand(N, device="cuda") - 0.5).expand(B, M, N)
    out = torch.full((B, N, M), float("nan"), device="cuda").transpose(1, 2)
    gemmlab.gemm_batched(a, b, bias, alpha=0.5, beta=2.0, out=out, stage=stage, config=config)
    torch.cuda.synchronize()
    ref = 0.5 * (a.double() @ b.double()) + 2.0 * bias.double()
    assert check.compare(out, ref, K).correct
    a[1, 7, 5], a[2, 100, 998] = float("nan"), float("inf")
    out2 = gemmlab.gemm_batched(a, b, stage=stage, config=config)
    torch.cuda.synchronize()
    assert torch.isnan(out2[1, 7]).all() and not torch.isnan(out2[1, 8]).any()
    assert not torch.isfinite(out2[2, 100]).any() and torch.isfinite(out2[2, 99]).all()
    assert torch.isfinite(out2[0]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("split", [2, 4])
def test_gpu_split_k_in_a_cluster_batched_with_c_and_column_major_out(split):
    import torch

    import gemmlab
    from gemmlab import check

    B, M, N, K = 3, 300, 270, 1500
    r = _check(gemmlab.gemm_batched, M, N, K, "tn", batch=B, stage="s11", config={"split_k": split, "cluster_reduce": 1})
    assert r.correct, r
    a = torch.rand(B, M, K, device="cuda") - 0.5
    b = torch.rand(B, K, N, device="cuda") - 0.5
    bias = (torch.rand(N, device="cuda") - 0.5).expand(B, M, N)
    out = torch.full((B, N, M), float("nan"), device="cuda").transpose(1, 2)
    gemmlab.gemm_batched(a, b, bias, alpha=0.5, beta=2.0, out=out, stage="s11",
                         config={"split_k": split, "cluster_reduce": 1})
    torch.cuda.synchronize()
    ref = 0.5 * (a.double() @ b.double()) + 2.0 * bias.double()
    assert check.compare(out, ref, K).correct


@pytest.mark.gpu
@pytest.mark.parametrize("split", [1, 5])
def test_gpu_split_k_batched_and_beta0(split):
    import torch

    import gemmlab
    from gemmlab import check

    r = _check(gemmlab.gemm_batched, 100, 200, 700, "nt", batch=3, stage="s11", config={"split_k": split})
    assert r.correct, r
    a, b, _ = check.random_operands(100, 130, 500, "tn")
    out = torch.full((100, 130), float("nan"), device="cuda")
    gemmlab.gemm(a, b, out, alpha=2.0, beta=0.0, out=out, stage="s11", config={"split_k": split})
    torch.cuda.synchronize()
    assert check.compare(out, check.reference(a, b, None, 2.0, 0.0), 500).correct


@pytest.mark.gpu
@pytest.mark.parametrize("cand", [c for c in space.SM90 + space.SM80], ids=lambda c: c.label)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gpu_space_configs(cand, layout):
    """Every tuner config on a shape with edges in M, N and K."""
    import gemmlab

    r = _check(gemmlab.gemm, 300, 333, 200, layout, stage=cand.stage, config=cand.overrides)
    assert r.correct, r


@pytest.mark.parametrize("src,name", [('#include "common.cuh"\n', "gemmlab_copy"),
                                      ('#include "transpose.cuh"\n', "gemmlab_transpose"),
                                      ('#include "splitk_reduce.cuh"\n', "gemmlab_splitk_reduce"),
                                      ('#include "stream_k_fixup.cuh"\n', "gemmlab_stream_k_fixup"),
                                      ('#include "copy/split_tf32.cuh"\n', "gemmlab_split_tf32")])
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_plan_kernels_wait_for_the_previous_grid_first(src, name, arch):
    """Every kernel a plan launches besides the stages' (whose wrapper test_stages_compile checks)
    waits for the previous grid before it touches global memory: plans launch them as dependents."""
    from gemmlab.analysis import sass
    from gemmlab.jit import compile_cubin
    from test_stages_compile import assert_waits_before_global_memory

    ck = compile_cubin(src, name, arch)
    assert_waits_before_global_memory(sass.instructions(ck.cubin, name), arch, name)


class _FakeStep:
    def __init__(self, arch):
        self.ck = type("CK", (), {"arch": arch})()
        self.grid, self.block, self.smem = (3, 2, 1), 256, 1024
        self.dependent = None


def test_dependent_launches_are_the_later_sm90_kernels(monkeypatch):
    """The first kernel of a plan waits for the stream; the later ones compiled for sm_90+ start
    as programmatic dependents (their config carries the attribute and their launch shape), unless
    GEMMLAB_PDL=0; a kernel compiled for an older arch never does (it has no griddepcontrol.wait)."""
    from cuda.bindings import driver

    from gemmlab import plan

    monkeypatch.delenv("GEMMLAB_PDL", raising=False)
    steps = [_FakeStep("sm_90a"), _FakeStep("sm_90"), _FakeStep("sm_80"), _FakeStep("sm_90a")]
    plan.dependent_launches(steps)
    assert [s.dependent is not None for s in steps] == [False, True, False, True]
    cfg = steps[1].dependent.config
    assert (cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ, cfg.blockDimX, cfg.sharedMemBytes) == (3, 2, 1, 256, 1024)
    assert cfg.numAttrs == 1
    attr = steps[1].dependent.attrs[0]
    assert attr.id == driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    assert attr.value.programmaticStreamSerializationAllowed == 1
    monkeypatch.setenv("GEMMLAB_PDL", "0")
    steps = [_FakeStep("sm_90a"), _FakeStep("sm_90a")]
    plan.dependent_launches(steps)
    assert all(s.dependent is None for s in steps)


def test_copy_grid_counts_the_kernels_runs():
    """plan.copy sizes its grid by COPY_RUN, the run one warp of gemmlab_copy copies."""
    from pathlib import Path

    import gemmlab
    from gemmlab import plan

    src = (Path(gemmlab.__file__).parent / "kernels" / "common.cuh").read_text()
    assert f"#define GEMMLAB_COPY_RUN {plan.COPY_RUN}\n" in src


def test_repack_copy_grid_counts_runs_of_copy_run():
    """The repack's copy is gemmlab_copy from common.cuh, its grid sized by COPY_RUN: a 3333x2222
    copy is 18 runs a line, 8 warps a block, capped at 16 blocks an SM; two copies share the cap
    by their runs."""
    from gemmlab import plan

    launches = []
    b = plan._Builder.__new__(plan._Builder)
    b.arch = "sm_90"
    b.add = lambda label, src, name, arch, grid, *rest: launches.append((name, grid, src))
    job = (("a",), ("ws", 0), 3333, 2222, 1, (0, 2222, 1), (0, 2224, 1))
    small = (("b",), ("ws", 4), 64, 100, 1, (0, 100, 1), (0, 100, 1))
    b.copy("repack a", [job])
    b.copy("repack a and b", [job, small])
    name, src = "gemmlab_copy", '#include "common.cuh"\n'
    runs = -(-2222 // 128) * 3333
    assert plan.copy_runs(3333, 2222, 1, (0, 2224, 1)) == runs
    assert launches[0] == (name, (min(-(-runs // 8), 132 * 16), 1, 1), src)
    assert launches[1][0] == name and launches[1][1][0] == 132 * 16


K_STEP_16 = [c for c in space.SM90 if c.overrides.get("k_unroll") == 1]


@pytest.mark.gpu
@pytest.mark.parametrize("cand", K_STEP_16, ids=lambda c: c.label)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gpu_k_step_16_tiles_split_batched_odd(cand, layout):
    """The block_k 16 / k_unroll 1 tiles (three blocks per SM): split-K with a ragged last slice,
    strided batched, unaligned rows (repack) and a K shorter than one block_k step."""
    import gemmlab

    cfg = cand.overrides
    for M, N, K, split in [(1001, 999, 1003, 3), (257, 130, 4097, 8), (129, 65, 9, 1)]:
        r = _check(gemmlab.gemm, M, N, K, layout, stage="s11", config={**cfg, "split_k": split})
        assert r.correct, (M, N, K, split, r)
    r = _check(gemmlab.gemm, 1001, 999, 1003, layout, stage="s11", config={**cfg, "repack": 1, "split_k": 2})
    assert r.correct, r
    r = _check(gemmlab.gemm_batched, 65, 130, 97, layout, batch=5, stage="s11", config=cfg)
    assert r.correct, r
    r = _check(gemmlab.gemm_batched, 200, 136, 520, layout, batch=3, stage="s11", config={**cfg, "split_k": 2})
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gpu_repack_unaligned(layout):
    """Rows of 1023/1025 floats: TMA cannot read them; repack copies them into aligned workspace."""
    import gemmlab

    r = _check(gemmlab.gemm, 1025, 1023, 1021, layout, stage="s11", config={"repack": 1})
    assert r.correct, r
    r = _check(gemmlab.gemm, 1025, 1023, 1021, layout, stage="s11", config={"repack": 1, "split_k": 3})
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gpu_repack_copies_share_one_launch(layout):
    """Both operands unaligned: their strided copies are one gemmlab_copy launch (a K-major B is
    transposed by its own kernel), batched and not, and the result is right."""
    import torch

    from gemmlab import api, check

    for batch in (None, 3):
        a, b, c = check.random_operands(333, 555, 777, layout, batch)
        out = torch.full_like(c, float("nan"))
        plan, fn = api.prepare(a, b, out=out, stage="s11", config={"repack": 1, "split_k": 1},
                               batched=batch is not None)
        assert plan.kernels.count("gemmlab_copy") == 1, plan.kernels
        assert len(plan.kernels) == 2 + (layout[1] == "t"), plan.kernels  # + the transpose of a K-major B
        fn()
        torch.cuda.synchronize()
        assert check.compare(out, check.reference(a, b, None, 1.0, 0.0), 777).correct, (layout, batch)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gpu_dependent_kernels_read_this_calls_results(layout):
    """Copy -> GEMM -> reduce (and copy -> GEMM in a cluster) launched as programmatic dependents:
    each kernel must read what the one before wrote in *this* call. The same plan runs on new
    values written in place into the same arrays each time (a kernel that started early would
    read the previous call's workspace), and on the copies of a plan built with GEMMLAB_PDL=0."""
    import torch

    from gemmlab import api, check

    a, b, c = check.random_operands(1001, 999, 1003, layout)
    out = torch.full_like(c, float("nan"))
    for cfg in ({"repack": 1, "split_k": 3, "cluster_reduce": 0}, {"repack": 1, "split_k": 2}):
        plan, fn = api.prepare(a, b, out=out, stage="s11", config=cfg)
        assert len(plan.kernels) >= 2 and all(s.dependent is not None for s in plan.steps[1:]), plan.kernels
        for i in range(4):
            with torch.no_grad():
                a.copy_(torch.rand_like(a) * (i + 1) - 0.5)
                b.copy_(torch.rand_like(b) - 0.5 * i)
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            assert check.compare(out, check.reference(a, b, None, 1.0, 0.0), 1003).correct, (cfg, i)


@pytest.mark.gpu
def test_gpu_pdl_off_launches_plainly(monkeypatch):
    """GEMMLAB_PDL=0: plans built after it launch every kernel plainly, with the same results."""
    import torch

    from gemmlab import api, check

    monkeypatch.setenv("GEMMLAB_PDL", "0")
    api.clear_plan_cache()
    try:
        a, b, c = check.random_operands(1001, 999, 1003, "nt")
        out = torch.full_like(c, float("nan"))
        plan, fn = api.prepare(a, b, out=out, stage="s11", config={"repack": 1, "split_k": 3, "cluster_reduce": 0})
        assert len(plan.steps) == 4 and all(s.dependent is None for s in plan.steps), plan.kernels
        fn()
        torch.cuda.synchronize()
        assert check.compare(out, check.reference(a, b, None, 1.0, 0.0), 1003).correct
    finally:
        api.clear_plan_cache()


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(127, 129, 131), (3, 257, 5), (255, 3, 129), (2, 3, 385)])
def test_gpu_repack_copy_runs(layout, M, N, K):
    """The repack copy (gemmlab_copy: one warp per run of 128 elements of a line) on lines one
    short of, one past and far below a run, batched, and on operands with no unit stride. Each
    plan is checked to run the copy, so no shape stops covering it unnoticed: with repack=1, and
    with both operands strided (every other row and column: both copied, in one launch). The
    shapes are ones the plan repacks both ways (checked on the CPU); a 1x1x385 problem, say, is
    not copied strided: a single row or column counts as unit-strided (Operand.unit_strided), and
    its plan runs s10 on the operands as they are."""
    import torch

    import gemmlab
    from gemmlab import api, check

    a, b, c = check.random_operands(M, N, K, layout, 3)
    plan, _ = api.prepare(a, b, c, alpha=0.5, beta=3.0, out=check.poisoned_like(c), stage="s11",
                          config={"repack": 1}, batched=True)
    assert "gemmlab_copy" in plan.kernels, plan.kernels
    r = _check(gemmlab.gemm_batched, M, N, K, layout, batch=3, stage="s11", config={"repack": 1})
    assert r.correct, r
    a, b, _ = check.random_operands(2 * M, 2 * N, 2 * K, layout, 2)
    a, b = a[:, ::2, ::2], b[:, ::2, ::2]  # every other row and column: copied
    out = torch.full((2, M, N), float("nan"), device="cuda")
    plan, _ = api.prepare(a, b, out=out, stage="s11", batched=True)
    assert plan.kernels[0] == "gemmlab_copy" and plan.steps[0].label == "repack a + repack b", plan.kernels
    gemmlab.gemm_batched(a, b, out=out, stage="s11")
    torch.cuda.synchronize()
    assert check.compare(out, check.reference(a, b, None, 1.0, 0.0), K).correct


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(1024, 1024, 1024), (4095, 4097, 1023), (64, 64, 65536), (1, 4096, 4096),
                                    (4096, 1, 4096), (1500, 130, 4100), (130, 1500, 4100), (3, 5, 7), (127, 129, 1)])
def test_gpu_auto(layout, M, N, K):
    import gemmlab

    r = _check(gemmlab.gemm, M, N, K, layout)
    assert r.correct, r


@pytest.mark.gpu
def test_gpu_auto_column_major_out_and_batched():
    import gemmlab

    assert _check(gemmlab.gemm, 700, 300, 900, "tn", c_layout="col").correct
    assert _check(gemmlab.gemm_batched, 65, 300, 2000, "nt", batch=4).correct


@pytest.mark.gpu
def test_gpu_plan_cache_hit_uses_this_calls_arrays():
    """Same signature, new arrays: the cached plan must read and write the new ones."""
    import torch

    import gemmlab
    from gemmlab import api, check

    for layout in LAYOUTS:
        outs = []
        for _ in range(3):
            a, b, c = check.random_operands(300, 200, 500, layout)
            outs.append((gemmlab.matmul(a, b), a, b))
            o2 = torch.full_like(c, float("nan"))
            gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, out=o2)
            torch.cuda.synchronize()
            assert check.compare(o2, check.reference(a, b, c, 0.5, 3.0), 500).correct
        torch.cuda.synchronize()
        for out, a, b in outs:
            assert check.compare(out, check.reference(a, b, None, 1.0, 0.0), 500).correct
    assert api.plan_cache_info()["entries"] >= 4


@pytest.mark.gpu
def test_gpu_hit_still_refuses_overlap():
    import torch

    import gemmlab

    buf = torch.rand(1000, 64, device="cuda")
    a, b = buf[:64], buf[64:128]
    gemmlab.gemm(a, b, out=buf[200:264])  # builds the plan
    with pytest.raises(ValueError, match="out overlaps a"):  # same signature: a plan-cache hit
        gemmlab.gemm(buf[300:364], b, out=buf[300:364])
    with pytest.raises(ValueError, match="out overlaps b"):
        gemmlab.gemm(a, buf[400:464], out=buf[400:464])


@pytest.mark.gpu
def test_gpu_threads_share_plans():
    import torch

    import gemmlab
    from gemmlab import check

    errors = []

    def work(seed):
        try:
            torch.cuda.set_device(0)
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for i in range(20):
                    a, b, _ = check.random_operands(256, 192, 320, LAYOUTS[(seed + i) % 4], seed=seed * 100 + i)
                    out = gemmlab.matmul(a, b)
                    s.synchronize()
                    r = check.compare(out, check.reference(a, b, None, 1.0, 0.0), 320)
                    if not r.correct:
                        errors.append(r)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


SPLIT3_WS = {"split_k": 3, "cluster_reduce": 0}  # the workspace and its reduce kernel, captured


@pytest.mark.gpu
def test_gpu_graph_capture():
    import torch

    import gemmlab
    from gemmlab import check
    from gemmlab.plan import NotReady

    a, b, c = check.random_operands(512, 384, 1000, "nt")
    out = torch.empty(512, 384, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, out=out, config=SPLIT3_WS)  # warm-up: compile, load
        gemmlab.matmul(a, b)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, out=out, config=SPLIT3_WS)
        fresh = gemmlab.matmul(a, b)
    for _ in range(2):
        a.copy_(torch.rand_like(a) * 2 - 1)
        c.copy_(torch.rand_like(c))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        assert check.compare(out, check.reference(a, b, c, 0.5, 3.0), 1000).correct
        assert check.compare(fresh, check.reference(a, b, None, 1.0, 0.0), 1000).correct
    # A shape never run before: its kernel is not loaded, so capture refuses with a clear error.
    cfg = {"block_m": 32, "block_n": 64, "warp_m": 16, "warp_n": 32, "min_blocks": 4, "stages": 2,
           "k_unroll": 1, "group_m": 3}  # a config no other test runs
    g2 = torch.cuda.CUDAGraph()
    with pytest.raises(NotReady, match="warm-up"):
        with torch.cuda.graph(g2):
            gemmlab.matmul(a[:100, :100], b[:100, :100], stage="s10", config=cfg)


# 4 slices through the workspace (a small grid of 64x64 tiles would add them in a cluster)
SPLIT_WS = {"split_k": 4, "cluster_reduce": 0}


@pytest.mark.gpu
def test_gpu_workspace_kept_per_stream_and_not_under_capture(monkeypatch):
    import torch

    import gemmlab
    from gemmlab import api, check

    api.clear_plan_cache()
    allocated = []
    real = api._allocate
    monkeypatch.setattr(api, "_allocate", lambda *a: allocated.append(a[1]) or real(*a))

    def call(seed, stream_key):
        a, b, _ = check.random_operands(200, 136, 3000, "nn", seed=seed)
        out = gemmlab.matmul(a, b, config=SPLIT_WS)
        torch.cuda.synchronize()
        assert check.compare(out, check.reference(a, b, None, 1.0, 0.0), 3000).correct
        return api._workspaces[(0, stream_key)]

    here = torch.cuda.current_stream().cuda_stream
    kept = {call(i, here).data_ptr() for i in range(3)}          # fresh operands, one kept workspace
    assert len(kept) == 1 and len(api._workspaces) == 1
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        other = call(7, side.cuda_stream)                         # another stream: its own
    assert other.data_ptr() not in kept and len(api._workspaces) == 2
    a, b, _ = check.random_operands(200, 136, 3000, "nn", seed=9)
    with torch.cuda.stream(side):
        gemmlab.matmul(a, b, config=SPLIT_WS)               # warm-up on the capture stream
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    n = len(allocated)
    with torch.cuda.graph(g, stream=side):
        fresh = gemmlab.matmul(a, b, config=SPLIT_WS)
    assert len(allocated) == n + 2                                # out and a workspace of the graph's own
    call(11, here)                                                # eager calls between replays
    g.replay()
    torch.cuda.synchronize()
    assert check.compare(fresh, check.reference(a, b, None, 1.0, 0.0), 3000).correct
    api.clear_plan_cache()
    assert not api._workspaces


@pytest.mark.gpu
def test_gpu_device_memory_is_usable_and_freed_once():
    """jit/memory.DeviceMemory (the kept workspaces): device memory torch can write through its
    pointer, from a thread with no current context too; free() returns it once."""
    import threading

    import torch

    from gemmlab.jit.memory import DeviceMemory

    made = []
    t = threading.Thread(target=lambda: made.append(DeviceMemory(0, 1000)))  # a new thread: no context
    t.start()
    t.join()
    (m,) = made
    assert m.data_ptr() != 0 and m.numel() == 1000
    from cuda.bindings import driver

    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    back = torch.zeros(1000, device="cuda")
    torch.cuda.synchronize()
    assert driver.cuMemcpyDtoD(m.data_ptr(), x.data_ptr(), 4000)[0] == driver.CUresult.CUDA_SUCCESS
    assert driver.cuMemcpyDtoD(back.data_ptr(), m.data_ptr(), 4000)[0] == driver.CUresult.CUDA_SUCCESS
    torch.cuda.synchronize()
    assert torch.equal(back, x)
    m.free()
    assert m.data_ptr() == 0
    m.free()  # a second free does nothing
    with pytest.raises(ValueError, match="floats"):
        DeviceMemory(0, 0)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K,batch", [(257, 129, 300, None), (64, 64, 64, None), (100, 3000, 700, None),
                                         (33, 65, 129, 3), (1, 300, 500, None)])
def test_gpu_product_fast_path(layout, M, N, K, batch):
    """api.product (the torch operators' and enable()'s a @ b): the same results as gemm on
    fresh operands every call, through the entry it remembered on the first call."""
    import torch

    from gemmlab import api, check

    for i in range(3):
        a, b, _ = check.random_operands(M, N, K, layout, batch, seed=100 + i)
        out = api.product(a, b, None, bool(batch))
        torch.cuda.synchronize()
        assert out.shape == ((batch, M, N) if batch else (M, N)) and out.is_contiguous()
        assert check.compare(out, check.reference(a, b, None, 1.0, 0.0), K).correct
    assert any(k[1] == a.shape and k[3] == b.shape for k in api._products)
    with pytest.raises(Exception, match="float32|dtype"):
        api.product(a.double(), b.double())


def test_transpose_kernel_compiles():
    from gemmlab.analysis import sass
    from gemmlab.jit import compile_cubin

    ck = compile_cubin('#include "transpose.cuh"\n', "gemmlab_transpose", "sm_90")
    info = sass.inspect(ck.cubin, ck.name)
    assert info["local_bytes"] == 0 and info["mix"].get("BAR", 0) >= 2 and info["mix"].get("STS", 0) >= 1


def test_transpose_launch_grid():
    """The transposing copy is gemmlab_transpose from transpose.cuh: a grid of at most 16 blocks
    an SM striding over its 32x32 tiles, the batches on z up to 65535."""
    from gemmlab import plan

    launches = []
    b = plan._Builder.__new__(plan._Builder)
    b.arch = "sm_90"
    b.add = lambda label, src, name, arch, grid, *rest: launches.append((name, grid, src))
    b.transpose("turn b", ("b",), ("ws", 0), 2049, 768, 1, 0, 2049, 0, 768)
    b.transpose("turn b", ("b",), ("ws", 0), 100, 65535 * 64 + 1, 70000, 0, 100, 0, 65535 * 64 + 1)
    assert launches[0] == ("gemmlab_transpose", (65 * 24, 1, 1), '#include "transpose.cuh"\n')
    assert launches[1] == ("gemmlab_transpose", (132 * 16, 1, 65535), '#include "transpose.cuh"\n')


def test_dispatch_transposes_large_k_major_b(monkeypatch):
    from gemmlab.heuristics import should_repack

    big_nt = Problem.dense(2048, 2048, 2048, "nt", a_ptr=1 << 20, b_ptr=2 << 20, d_ptr=3 << 20)
    assert should_repack(big_nt)
    small_nt = Problem.dense(256, 2048, 2048, "nt", a_ptr=1 << 20, b_ptr=2 << 20, d_ptr=3 << 20)
    assert not should_repack(small_nt)  # M/4 FLOP per copied byte: too few
    big_tn = Problem.dense(2048, 2048, 2048, "tn", a_ptr=1 << 20, b_ptr=2 << 20, d_ptr=3 << 20)
    assert not should_repack(big_tn)  # B already N-major


def test_a_transpose_copy_and_the_rule():
    from gemmlab.heuristics import should_transpose_a

    p = Problem.dense(4095, 2048, 1023, "nt", a_ptr=1 << 20, b_ptr=2 << 20, d_ptr=3 << 20)
    copies, seen = p.repacks(True, a_transpose=True)
    assert [(c.which, c.kind, c.rs, c.cs, c.ld) for c in copies][:2] == [("a", "transpose", 1, 4096, 4096),
                                                                           ("b", "transpose", 2048, 1, 2048)]
    assert seen.layout == "tn" and (seen.a_rs, seen.a_cs) == (1, 4096)
    assert p.repacks(False, a_transpose=False)[1].layout == "nt"
    tn = Problem.dense(4096, 4096, 4096, "tn", a_ptr=1 << 20, b_ptr=2 << 20, d_ptr=3 << 20)
    assert tn.repacks(False, a_transpose=True)[0] == []          # A is column-major already
    assert should_transpose_a(Problem.dense(4096, 2048, 512, "nn"))
    assert should_transpose_a(Problem.dense(4096, 1536, 512, "nn"))
    assert not should_transpose_a(Problem.dense(4096, 1024, 512, "nn"))   # N too small to pay
    assert not should_transpose_a(Problem.dense(64, 4096, 4096, "nn"))    # M too small
    assert not should_transpose_a(tn)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
@pytest.mark.parametrize("M,N,K,batch,bcast,stage", [
    (1100, 300, 257, None, False, "s11"), (130, 129, 95, 3, False, "s11"), (200, 64, 70, 4, True, "s10"),
    (1023, 2049, 33, None, False, "auto"), (257, 2048, 1000, 2, False, "auto")])
def test_gpu_a_transpose(layout, M, N, K, batch, bcast, stage):
    """a_transpose=1 copies a row-major A into a column-major workspace copy (gemmlab_transpose) first."""
    import torch

    import gemmlab
    from gemmlab import api, check

    a, b, c = check.random_operands(M, N, K, layout, batch)
    if bcast:
        a = a[:1]
    out = check.poisoned_like(c)
    fn = gemmlab.gemm_batched if batch else gemmlab.gemm
    cfg = {"a_transpose": 1, "split_k": 2}
    fn(a, b, c, alpha=0.5, beta=3.0, out=out, stage=stage, config=cfg)
    torch.cuda.synchronize()
    assert check.compare(out, check.reference(a, b, c, 0.5, 3.0), K).correct
    plan, _ = api.prepare(a, b, c, 0.5, 3.0, out=out, stage=stage, config=cfg, batched=bool(batch))
    assert any(s.label == "transpose a" for s in plan.steps) == (layout[0] == "n" and M > 1), plan.summary


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nt", "tt"])
@pytest.mark.parametrize("M,N,K,batch,bcast", [(1100, 300, 257, None, False), (130, 129, 95, 3, False),
                                                (200, 64, 70, 4, True), (1024, 1, 33, None, False)])
def test_gpu_transposed_b(layout, M, N, K, batch, bcast):
    """repack=1 turns a K-major B into a row-major workspace copy (gemmlab_transpose) first."""
    import torch

    import gemmlab
    from gemmlab import api, check

    a, b, c = check.random_operands(M, N, K, layout, batch)
    if bcast:
        b = b[:1]
    out = check.poisoned_like(c)
    fn = gemmlab.gemm_batched if batch else gemmlab.gemm
    fn(a, b, c, alpha=0.5, beta=3.0, out=out, stage="s11", config={"repack": 1, "split_k": 2})
    torch.cuda.synchronize()
    assert check.compare(out, check.reference(a, b, c, 0.5, 3.0), K).correct
    plan_, _ = api.prepare(a, b, c, 0.5, 3.0, out=out, stage="s11", config={"repack": 1, "split_k": 2},
                           batched=bool(batch))
    turned = N > 1  # a K-major B of one column is N-major too: nothing to turn
    assert ("gemmlab_transpose" in plan_.kernels) == turned, plan_.kernels


def test_kept_workspace_grows_frees_and_reaches_the_plan(monkeypatch):
    """api._workspace / _execute / clear_plan_cache without a GPU: a torch call's workspace is
    one DeviceMemory per (device, stream) (jit/memory.py; faked here), grown by replacing it (the
    old one freed), handed to the plan as its pointer, freed by clear_plan_cache; calls with
    stream= and calls under capture allocate a tensor per call instead."""
    torch = pytest.importorskip("torch", reason="torch is not installed: the kept workspace is torch's path")
    from gemmlab import api
    from gemmlab.jit import memory

    made, freed = [], []

    class FakeMemory:
        def __init__(self, device_id, floats):
            self.floats, self.ptr = floats, 0x1000 * (len(made) + 1)
            made.append(self)

        def data_ptr(self):
            return self.ptr

        def numel(self):
            return self.floats

        def free(self):
            freed.append(self)

    class FakePlan:
        def __init__(self, floats):
            self.ws_floats, self.runs = floats, []

        def run(self, ptrs, alpha, beta, stream_h):
            self.runs.append((dict(ptrs), stream_h))

    api.clear_plan_cache()
    monkeypatch.setattr(memory, "DeviceMemory", FakeMemory)
    monkeypatch.setattr(api, "_capturing", lambda: False)
    stream = [7]
    monkeypatch.setattr(api, "_raw_stream", lambda dev: stream[0])
    recorded = []
    monkeypatch.setattr(api, "_record_stream", lambda t, s, dev: recorded.append((t.data_ptr(), s)))
    a, out = torch.zeros(4, 4), torch.zeros(4, 4)

    def call(floats, explicit=None):
        e = api._Entry(FakePlan(floats), "torch", 0, (4, 4), {"a": (0, 64), "b": (0, 64), "out": (0, 64)}, False, False)
        ptrs = {"a": 1 << 40, "b": 1 << 41, "c": None, "out": out.data_ptr()}
        if explicit is not None:
            monkeypatch.setattr(api.arrays, "stream_handle", lambda s: s)
        api._execute(e, a, out, ptrs, 1.0, 0.0, explicit)
        return e.plan.runs[0]

    ptrs, s = call(100)
    assert s == 7 and len(made) == 1 and made[0].floats == 1 << 16 and ptrs["ws"] == made[0].ptr
    assert call(5000)[0]["ws"] == made[0].ptr and len(made) == 1          # reused
    assert call(1 << 17)[0]["ws"] == made[1].ptr and freed == [made[0]]   # grown: the old one freed
    stream[0] = 9
    assert call(100)[0]["ws"] == made[2].ptr                              # another stream: its own
    assert set(api._workspaces) == {(0, 7), (0, 9)}
    ptrs, s = call(100, explicit=11)                                      # stream=: a tensor per call
    assert s == 11 and len(made) == 3 and ptrs["ws"] not in {m.ptr for m in made}
    assert recorded == [(ptrs["ws"], 11)]                                 # told to torch's allocator
    monkeypatch.setattr(api, "_capturing", lambda: True)
    assert call(100)[0]["ws"] not in {m.ptr for m in made} and len(made) == 3   # under capture
    api.clear_plan_cache()
    assert not api._workspaces and sorted(map(id, freed)) == sorted(map(id, made))
