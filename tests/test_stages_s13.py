"""s13 tf32x3: constraints, the split pre-pass in the plan, compiling to HGMMA with promotion adds,
and on the GPU: odd shapes, all layouts, batches, special values, and the accuracy contract (no
worse than cuBLAS FP32 on the same inputs; every element within the FP32 dot-product bound)."""
import math

import pytest

from gemmlab import check
from gemmlab.errors import ConfigError
from gemmlab.stages import get

S13 = get("s13")


def test_spec():
    assert S13.precision == "tf32x3" and S13.operands_k_major and S13.operand_split and S13.needs_workspace
    assert S13.threads(S13.default_config) == 384
    # 1 KB slack + 3 stages of four boxes (A hi/lo 128 rows, B hi/lo 128 rows) x 128 B + 6 mbarriers
    assert S13.smem_bytes(S13.default_config, {}) == 1024 + 3 * 2 * 256 * 128 + 48
    names = [d.split()[-1] for d, _ in S13.extra_params(S13.default_config, {})]
    assert names == ["a_map", "a_lo_map", "b_map", "b_lo_map", "tma_batch_mask"]


@pytest.mark.parametrize("override,message", [
    ({"promote_k": 48}, "promote_k=48 must be a multiple of 32"),
    ({"block_n": 256}, "3 accumulator sets"),
    ({"stages": 4}, "exceeds 232448 B"),
    ({"block_m": 96}, "block_m=96 must be"),
])
def test_constraints_name_the_rule(override, message):
    with pytest.raises(ConfigError, match=message):
        S13.config(override)


@pytest.mark.parametrize("cfg", [{}, {"promote_k": 32}, {"promote_k": 256}, {"split_partials": 0}, {"block_m": 64, "stages": 4}])
def test_compiles_to_hgmma_with_promotion_and_no_spills(cfg):
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    c = S13.config(cfg)
    ck = kernel_for(S13, c, {}, "sm_90")
    insns = sass.instructions(ck.cubin)
    assert sass.resources(ck.cubin)["local_bytes"] == 0
    for op in ("HGMMA", "UTMALDG", "FADD"):
        assert sass.has_opcode(insns, op), op
    shapes = {(i.op + i.operands).split()[0] for i in insns if i.op.startswith("HGMMA")}
    assert shapes == {f"HGMMA.64x{c['block_n']}x8.F32.TF32"}
    # 4 k8 steps x 3 products per tile
    assert sum(1 for i in insns if i.op.startswith("HGMMA")) % 12 == 0


def test_split_kernel_compiles():
    from gemmlab.jit.compiler import compile_cubin

    ck = compile_cubin('#include "copy/split_tf32.cuh"\n', "gemmlab_split_tf32", "sm_90")
    assert ck.cubin


# ---- the variants that split one operand in registers ------------------------------------------
RS_CFG = {"block_m": 128, "block_n": 128, "split_partials": 0, "b_regs": 1}   # B split in registers
RA_CFG = {"block_m": 128, "block_n": 128, "split_partials": 0, "a_regs": 1}   # A split in registers
RS64 = {**RS_CFG, "block_n": 64, "stages": 4}
RA64 = {"block_m": 128, "block_n": 64, "stages": 4, "a_regs": 1}


def test_register_split_variants_follow_the_layout():
    from gemmlab.problem import Problem

    rs, ra, both = S13.config(RS_CFG), S13.config(RA_CFG), S13.config({**RS_CFG, "a_regs": 1})
    nn, nt, tn, tt = (Problem.dense(512, 1024, 256, lay) for lay in ("nn", "nt", "tn", "tt"))
    assert S13.variant(rs, nn) == {"rs": 1} and S13.variant(rs, tn) == {"rs": 1}      # B row-major
    assert S13.variant(rs, nt) == {} and S13.variant(rs, tt) == {}
    assert S13.variant(ra, nn) == {"ra": 1} and S13.variant(ra, nt) == {"ra": 1}      # A K-major
    assert S13.variant(ra, tn) == {} and S13.variant(S13.default_config, nn) == {}   # off unless asked for
    assert S13.variant(both, nn) == {"rs": 1}                                          # B is the larger
    assert S13.variant(both, Problem.dense(1024, 512, 256)) == {"ra": 1}
    assert S13.split_operands(rs, nn) == ("a",) and S13.split_operands(ra, nn) == ("b",)
    assert S13.split_operands(rs, nt) == ("a", "b")

    def names(cfg, v):
        return [d.split()[-1] for d, _ in S13.extra_params(cfg, v)]

    assert names(rs, {"rs": 1}) == ["a_map", "a_lo_map", "b_map", "tma_batch_mask"]
    assert names(ra, {"ra": 1}) == ["a_map", "b_map", "b_lo_map", "tma_batch_mask"]
    assert S13.launch_threads(rs, {"rs": 1}) == 2 * 128 + 128 and S13.launch_threads(ra, {"ra": 1}) == 3 * 128
    assert S13.smem_bytes(rs, {"rs": 1}) == 1024 + 3 * (2 * 128 + 128) * 128 + 48   # A hi, A lo, B raw
    assert S13.smem_bytes(ra, {"ra": 1}) == 1024 + 3 * (128 + 2 * 128) * 128 + 48   # A raw, B hi, B lo
    assert S13.variants(rs) == [{}, {"rs": 1}] and S13.variants(ra) == [{}, {"ra": 1}]
    assert S13.operand_ready(nn, "b", rs) and not S13.operand_ready(nn, "b")
    S13.check_problem(rs, nn)  # B row-major as it is
    S13.check_problem(ra, nt)


def test_the_variant_is_decided_on_the_callers_operands():
    """An A whose rows are not 16-byte aligned (K = 33) must go through the pre-pass; its hi copy is
    aligned, but the kernel must still be the one that reads A's hi and lo copies, not the RA kernel
    on the hi copy alone (H200: 8.8e-5 relative error, the lo part lost, before the plan fixed the
    variant first)."""
    from gemmlab.problem import Problem

    ra, both = S13.config(RA_CFG), S13.config({**RS_CFG, "a_regs": 1})
    odd = Problem.dense(1029, 256, 33)                     # A rows 132 bytes apart; B rows 1 KB
    assert S13.variant(ra, odd) == {} and S13.split_operands(ra, odd) == ("a", "b")
    assert S13.kernel_config(ra, odd)["a_regs"] == 0
    assert S13.variant(both, odd) == {"rs": 1} and S13.split_operands(both, odd) == ("a",)
    k = S13.kernel_config(both, odd)
    assert (k["a_regs"], k["b_regs"]) == (0, 1)
    assert S13.kernel_config(ra, Problem.dense(1024, 256, 64)) == ra   # the RA case itself: unchanged


@pytest.mark.parametrize("override,message", [
    ({**RS_CFG, "block_n": 96}, "b_regs=1: block_n=96 must be 64, 128, 192 or 256"),
    ({**RS_CFG, "split_partials": 1}, "b_regs=1: 3 accumulator sets of block_m/2 = 64"),
    ({"block_m": 64, "block_n": 128, "stages": 4, "a_regs": 1}, "a_regs=1: 3 accumulator sets of block_n/2 = 64"),
    ({**RA_CFG, "a_regs": 2}, "a_regs=2 must be 0 or 1"),
])
def test_register_split_constraints_name_the_rule(override, message):
    with pytest.raises(ConfigError, match=message):
        S13.config(override)


@pytest.mark.parametrize("cfg,variant", [(RS_CFG, {"rs": 1}), (RS64, {"rs": 1}), (RA_CFG, {"ra": 1}), (RA64, {"ra": 1})])
def test_register_split_variants_compile(cfg, variant):
    """HGMMA with the A operand from registers (the split words), 3 products x 4 k8 steps per tile,
    the fragment loads (RS: 8 LDS.64 of B^T pairs; RA: 16 LDS of A words), the split's conversions,
    the promotion adds, no local memory."""
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    c = S13.config(cfg)
    ck = kernel_for(S13, c, variant, "sm_90")
    insns = sass.instructions(ck.cubin)
    assert sass.resources(ck.cubin)["local_bytes"] == 0
    hg = [i for i in insns if i.op.startswith("HGMMA")]
    n = c["block_m"] if variant.get("rs") else c["block_n"]
    assert {(i.op + i.operands).split()[0] for i in hg} == {f"HGMMA.64x{n}x8.F32.TF32"}
    assert len(hg) == 12 and all(not i.operands.split(",")[1].strip().startswith("gdesc") for i in hg)
    lds = [i.op for i in insns if i.op.startswith("LDS")]
    assert lds == (["LDS.64"] * 8 if variant.get("rs") else ["LDS"] * 16), lds
    for op in ("FADD", "UTMALDG"):
        assert sass.has_opcode(insns, op), op


# ---- GPU ------------------------------------------------------------------------------------------
SHAPES = [(128, 128, 32), (1, 1, 1), (7, 13, 5), (129, 257, 33), (1000, 1000, 1000), (255, 129, 4097),
          (4095, 257, 1023), (64, 300, 64), (3000, 50, 700)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_gpu_s13_against_float64(layout, M, N, K):
    r = check.check_stage("s13", M, N, K, layout)
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("config", [{"promote_k": 32}, {"promote_k": 64}, {"promote_k": 256}, {"split_partials": 0}, {"block_m": 64, "stages": 4},
                                    {"split_k": 3}, {"stages": 2}])
def test_gpu_s13_configs(config):
    # K = 1500: 47 tiles of 32, so whole ping-pong groups and a tail for every promote_k
    for K in (1500, 160, 32):
        r = check.check_stage("s13", 333, 517, K, "nn", config=config)
        assert r.correct, (config, K, r)


@pytest.mark.gpu
def test_gpu_s13_batched_poisoned_in_place():
    import torch

    import gemmlab

    for layout in ("nn", "tt"):
        r = check.check_stage("s13", 130, 70, 90, layout, batch=4)
        assert r.correct, r
    assert check.check_stage_poisoned("s13", 300, 200, 500).correct
    a, b, c = check.random_operands(300, 200, 500)
    ref = check.reference(a, b, c, 0.5, 3.0)
    gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, out=c, stage="s13")
    torch.cuda.synchronize()
    assert check.compare(c, ref, 500, "tf32x3").correct


def _assert_special_rows(o, r):
    """The special-value cases of a 256 x 256 (K = 512) product whose operand rows 0-3 hold inf,
    NaN, 3e38 (times 1 at column 7) and 1e-30: row 1 all NaN, row 0 inf or NaN, o[2, 7] finite
    and close, the other rows and the tiny row within tf32x3's tolerance of the float64 r."""
    import torch

    assert torch.isnan(o[1]).all()
    assert (torch.isinf(o[0]) | torch.isnan(o[0])).all()
    assert torch.isfinite(o[2, 7]) and abs(float(o[2, 7]) / float(r[2, 7]) - 1) < 1e-5
    rest = torch.ones(256, dtype=torch.bool, device="cuda")
    rest[:4] = False
    assert check.compare(o[rest], r[rest], 512, "tf32x3").correct
    assert check.compare(o[3:4], r[3:4], 512, "tf32x3").rel_error < 1e-4


@pytest.mark.gpu
def test_gpu_s13_special_values():
    import torch

    import gemmlab

    a = torch.rand(256, 512, device="cuda") * 2 - 1
    b = torch.rand(512, 256, device="cuda") * 2 - 1
    a[0, 3] = float("inf")
    a[1, 4] = float("nan")
    a[2, 5] = 3.0e38            # rounds to inf in tf32 round-to-nearest: must stay finite here
    b[5, 7] = 1.0               # a[2, 5] * b[5, 7] = 3e38: finite in FP32
    a[3, :] = 1e-30             # tiny values keep their product (lo part may be subnormal)
    out = gemmlab.matmul(a, b, stage="s13")
    ref = a.double() @ b.double()
    torch.cuda.synchronize()
    _assert_special_rows(out, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["uniform", "normal", "positive", "wide"])
@pytest.mark.parametrize("K", [1024, 4096, 16384])
def test_gpu_accuracy_contract(kind, K):
    """precision="tf32x3": relative Frobenius error against float64 no larger than cuBLAS FP32's on
    the same inputs, and every element within the FP32 dot-product bound K * 2^-24 * (|A||B|)_ij."""
    import torch

    import gemmlab
    from gemmlab.bench.baselines import disable_tf32

    disable_tf32()
    g = torch.Generator(device="cuda")
    g.manual_seed(K + len(kind))
    # 2048 x 2048 outputs: cuBLAS's ordinary FP32 kernel. (At 512 x 512 it splits K, which on
    # positive data is more accurate than s13: docs/stages/s12-s13.md has those numbers.)
    a, b = check.contract_data(kind, (2048, K), g), check.contract_data(kind, (K, 2048), g)
    ref = a.double() @ b.double()
    ours = gemmlab.matmul(a, b, stage="s13")
    cublas = a @ b
    torch.cuda.synchronize()
    err = lambda x: float(torch.linalg.vector_norm(x.double() - ref) / torch.linalg.vector_norm(ref))  # noqa: E731
    assert err(ours) <= err(cublas), (kind, K, err(ours), err(cublas))
    bound = K * 2.0 ** -24 * (a.double().abs() @ b.double().abs())
    assert bool(((ours.double() - ref).abs() <= bound).all())
    assert math.isfinite(err(ours))


@pytest.mark.gpu
def test_gpu_precision_tf32x3_dispatch():
    import torch

    import gemmlab

    a, b, _ = check.random_operands(2048, 2048, 2048)
    plan, _ = gemmlab.api.prepare(a, b, out=torch.empty(2048, 2048, device="cuda"), precision="tf32x3")
    assert plan.choice.spec.id == "s13"
    assert any(k == "gemmlab_split_tf32" for k in plan.kernels)
    gemmlab.set_precision("tf32x3")
    try:
        out = gemmlab.matmul(a, b)
    finally:
        gemmlab.set_precision(None)
    assert check.compare(out, a.double() @ b.double(), 2048, "tf32x3").correct
    with pytest.raises(gemmlab.PrecisionError):
        gemmlab.matmul(a, b, stage="s11", precision="tf32x3")


def test_contract_data_kinds():
    torch = pytest.importorskip("torch", reason="the contract's data generator uses torch")
    g = torch.Generator()
    g.manual_seed(1)
    x = {k: check.contract_data(k, (256, 256), g, device="cpu") for k in check.DATA_KINDS}
    assert all(v.shape == (256, 256) and v.dtype == torch.float32 for v in x.values())
    assert float(x["positive"].min()) >= 0 and float(x["uniform"].min()) < 0
    assert float(x["uniform"].abs().max()) <= 1 and float(x["wide"].abs().max()) > 64  # up to 2^10
    with pytest.raises(ValueError, match="kind='bf16'"):
        check.contract_data("bf16", (2, 2), g, device="cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("cfg,layouts", [(RS_CFG, ("nn", "tn")), (RS64, ("nn",)), (RA_CFG, ("nn", "nt")), (RA64, ("nn",))])
@pytest.mark.parametrize("M,N,K", [(129, 257, 33), (7, 9, 5), (1, 1, 1), (300, 200, 1000), (1000, 1000, 1000),
                                   (64, 300, 64), (255, 129, 4097)])
def test_gpu_s13_register_split_against_float64(cfg, layouts, M, N, K):
    for layout in layouts:
        r = check.check_stage("s13", M, N, K, layout, config=cfg)
        assert r.correct, (layout, r)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg,want", [(RS_CFG, {"rs": 1}), (RA_CFG, {"ra": 1})])
def test_gpu_s13_register_split_plan_batched_split_k_in_place(cfg, want):
    import torch

    import gemmlab

    a, b, _ = check.random_operands(300, 200, 500)
    plan, _ = gemmlab.api.prepare(a, b, out=torch.empty(300, 200, device="cuda"), stage="s13", config=cfg)
    assert plan.variant == want
    assert [k for k in plan.kernels if k == "gemmlab_split_tf32"] == ["gemmlab_split_tf32"]  # one operand
    assert check.check_stage("s13", 130, 70, 90, "nn", batch=4, config=cfg).correct
    assert check.check_stage("s13", 333, 517, 1500, "nn", config={**cfg, "split_k": 3}).correct
    assert check.check_stage_poisoned("s13", 300, 200, 500, config=cfg).correct
    a, b, c = check.random_operands(300, 200, 500)
    ref = check.reference(a, b, c, 0.5, 3.0)
    gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, out=c, stage="s13", config=cfg)
    torch.cuda.synchronize()
    assert check.compare(c, ref, 500, "tf32x3").correct


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [RS_CFG, RA_CFG])
def test_gpu_s13_register_split_special_values(cfg):
    """Inf, NaN, a value that rounds to inf in tf32 and tiny values in the operand split in registers."""
    import torch

    import gemmlab

    a = torch.rand(256, 512, device="cuda") * 2 - 1
    b = torch.rand(512, 256, device="cuda") * 2 - 1
    # x[i, k]: the operand split in registers, i along its own dimension (rows of D for A, columns
    # for B: a view, so writes reach b); y[j, k] the other one
    x, y = (a, b.t()) if cfg.get("a_regs") else (b.t(), a)
    x[0, 3], x[1, 4], x[2, 5] = float("inf"), float("nan"), 3.0e38   # 3e38 rounds to inf in tf32
    x[3, :] = 1e-30
    y[7, 5] = 1.0                                                      # 3e38 * 1: finite in FP32
    out = gemmlab.matmul(a, b, stage="s13", config=cfg)
    ref = a.double() @ b.double()
    torch.cuda.synchronize()
    o, r = (out, ref) if cfg.get("a_regs") else (out.t(), ref.t())   # rows of o: the special rows of x
    _assert_special_rows(o, r)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["uniform", "normal", "positive", "wide"])
@pytest.mark.parametrize("cfg", [RS_CFG, RA_CFG])
def test_gpu_accuracy_contract_register_split(kind, cfg):
    """The contract for the variants that split in registers (one tensor-core partial sum,
    split_partials=0), at K = 4096: no larger error than cuBLAS FP32, every element within the bound."""
    import torch

    import gemmlab
    from gemmlab.bench.baselines import disable_tf32

    disable_tf32()
    K = 4096
    g = torch.Generator(device="cuda")
    g.manual_seed(K + 7 * len(kind))
    a, b = check.contract_data(kind, (2048, K), g), check.contract_data(kind, (K, 2048), g)
    ref = a.double() @ b.double()
    ours = gemmlab.matmul(a, b, stage="s13", config=cfg)
    cublas = a @ b
    torch.cuda.synchronize()
    err = lambda x: float(torch.linalg.vector_norm(x.double() - ref) / torch.linalg.vector_norm(ref))  # noqa: E731
    assert err(ours) <= err(cublas), (kind, err(ours), err(cublas))
    bound = K * 2.0 ** -24 * (a.double().abs() @ b.double().abs())
    assert bool(((ours.double() - ref).abs() <= bound).all())
