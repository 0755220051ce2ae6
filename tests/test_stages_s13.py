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
    assert torch.isnan(out[1]).all()
    assert (torch.isinf(out[0]) | torch.isnan(out[0])).all()
    assert torch.isfinite(out[2, 7]) and abs(float(out[2, 7]) / float(ref[2, 7]) - 1) < 1e-5
    rest = torch.ones(256, dtype=torch.bool, device="cuda")
    rest[:4] = False
    assert check.compare(out[rest], ref[rest], 512, "tf32x3").correct
    assert check.compare(out[3:4], ref[3:4], 512, "tf32x3").rel_error < 1e-4


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
