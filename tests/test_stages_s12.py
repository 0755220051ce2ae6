"""s12 wgmma_tf32: constraints, the operands it takes as they are, tensor maps, the generated
wgmma wrappers, the build failing on serialized wgmma, and GPU runs against float64 within the
TF32 tolerance (gemmlab/check.py) over odd shapes, all layouts, strided views, batches, split-K."""
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gemmlab import check
from gemmlab.errors import CompileError, ConfigError
from gemmlab.jit.cache import KernelCache
from gemmlab.jit.compiler import compile_cubin
from gemmlab.stages import get, tensor_map
from gemmlab.stages.base import Problem
from gemmlab.stages.s12_wgmma_tf32 import operand_maps, operand_view

S12 = get("s12")
ALIGNED = 1 << 40
ROOT = Path(__file__).resolve().parent.parent


def dense(M, N, K, layout="nn", batch=1, **kw):
    return Problem.dense(M, N, K, layout, batch, a_ptr=ALIGNED, b_ptr=2 * ALIGNED, d_ptr=3 * ALIGNED, **kw)


def test_spec_declares_precision_and_k_major_operands():
    assert S12.precision == "tf32" and S12.operands_k_major
    assert get("s11").precision == "ieee" and not get("s11").operands_k_major
    assert S12.describe()["precision"] == "tf32"
    assert S12.threads(S12.default_config) == 384  # two consumer warpgroups + the producer
    assert S12.compile_arch(S12.default_config, "sm_90") == "sm_90a"
    # 1 KB alignment slack + 4 stages of (128 + 256) rows x 128 B + 8 mbarriers
    assert S12.smem_bytes(S12.default_config, {}) == 1024 + 4 * 384 * 128 + 64


@pytest.mark.parametrize("override,message", [
    ({"block_m": 96}, "block_m=96 must be 64, 128, 192 or 256"),
    ({"block_n": 48}, "block_n=48 must be a multiple of 32"),
    ({"block_n": 288}, "block_n=288 must be a multiple of 32 in 32..256"),
    ({"block_k": 16}, "block_k=16 must be 32"),
    ({"stages": 1}, "stages=1 must be 2..8"),
    ({"stages": 8}, "exceeds 232448 B"),
    ({"block_m": 256, "block_n": 256, "stages": 2}, "accumulators \\+ 40 exceed"),
])
def test_constraints_name_the_rule(override, message):
    with pytest.raises(ConfigError, match=message):
        S12.config(override)


@pytest.mark.parametrize("layout,a_ready,b_ready", [("nn", True, False), ("nt", True, True),
                                                    ("tn", False, False), ("tt", False, True)])
def test_operands_must_be_k_major(layout, a_ready, b_ready):
    p = dense(256, 256, 256, layout)
    assert S12.operand_ready(p, "a") is a_ready
    assert S12.operand_ready(p, "b") is b_ready
    if not (a_ready and b_ready):
        with pytest.raises(ConfigError, match="not K-major"):
            S12.check_problem(S12.default_config, p)


def test_unaligned_rows_are_not_ready():
    p = dense(64, 64, 7, "nt")  # rows of 7 floats: TMA needs 16-byte strides
    assert not S12.operand_ready(p, "a") and not S12.operand_ready(p, "b")
    q = Problem.dense(64, 64, 64, "nt", a_ptr=ALIGNED + 4, b_ptr=2 * ALIGNED)
    assert not S12.operand_ready(q, "a") and S12.operand_ready(q, "b")


def test_operand_maps_are_k_major_boxes_with_the_128b_swizzle():
    p = dense(300, 200, 100, "nt", batch=3)
    maps = operand_maps(S12.default_config, p)
    assert maps["a"][1:] == ((3, 300, 100), (300 * 100, 100, 1), (1, 128, 32), 128)
    assert maps["b"][1:] == ((3, 200, 100), (200 * 100, 100, 1), (1, 256, 32), 128)
    assert maps["batch_mask"] == 3
    # the boxes may hang off small matrices (TMA zero-fills); every other rule holds
    for w in ("a", "b"):
        ptr, shape, strides, box, sw = maps[w]
        assert tensor_map.problems(ptr, shape, strides, box, sw, overhang=True) == []
    small = operand_maps(S12.default_config, dense(7, 9, 5, "nt"))
    assert small["a"][1][1:] == (7, 5) and small["a"][3] == (1, 128, 32)
    assert operand_view(dense(1, 64, 64, "nt"), "a")[0]  # one row: its stride is never used


def test_fallback_for_what_tma_cannot_take(monkeypatch):
    monkeypatch.setattr(tensor_map, "available", lambda: True)
    assert S12.fallback(S12.default_config, dense(256, 256, 256, "nt")) is None
    spec, _ = S12.fallback(S12.default_config, dense(256, 256, 0, "nt"))
    assert spec.id == "s10"
    spec, _ = S12.fallback(S12.default_config, dense(4, 4, 4, "nt", batch=70000))
    assert spec.id == "s10"


def test_generated_wgmma_header_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_wgmma.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("block_m,block_n,stages", [(128, 256, 4), (128, 128, 6), (64, 128, 8), (64, 256, 4)])
def test_configs_compile_to_hgmma_without_spills(block_m, block_n, stages):
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    cfg = S12.config({"block_m": block_m, "block_n": block_n, "stages": stages})
    ck = kernel_for(S12, cfg, {}, "sm_90")
    assert ck.arch == "sm_90a"
    insns = sass.instructions(ck.cubin)
    assert sass.resources(ck.cubin)["local_bytes"] == 0
    assert not sass.has_opcode(insns, "LDL") and not sass.has_opcode(insns, "STL")
    for op in ("HGMMA", "UTMALDG", "SYNCS"):
        assert sass.has_opcode(insns, op), op
    shapes = {(i.op + i.operands).split()[0] for i in insns if i.op.startswith("HGMMA")}
    assert shapes == {f"HGMMA.64x{block_n}x8.F32.TF32"}, shapes
    assert not sass.has_opcode(insns, "LDS") and not sass.has_opcode(insns, "LDS.128")  # operands via descriptors


def test_serialized_wgmma_fails_the_build():
    # A wgmma in a separate (non-inlined) function: ptxas inserts warpgroup arrive/wait (C7517,
    # C7519) and serializes it; the compiler must refuse such a kernel.
    src = r'''
#include "ptx/wgmma.cuh"
__device__ __noinline__ void step(float (&d)[16], unsigned long long a, unsigned long long b) {
    gemmlab::wgmma::mma_tf32_ss<32>(d, a, b, 1);
}
extern "C" __global__ void __launch_bounds__(128, 1) serialized(float* out, unsigned long long a,
                                                                  unsigned long long b) {
    float d[16];
    for (int i = 0; i < 16; ++i) d[i] = 0.f;
    gemmlab::wgmma::fence();
    step(d, a, b);
    gemmlab::wgmma::commit();
    gemmlab::wgmma::wait<0>();
    for (int i = 0; i < 16; ++i) out[threadIdx.x * 16 + i] = d[i];
}
'''
    with pytest.raises(CompileError, match="C751"):
        compile_cubin(src, "serialized", "sm_90a", cache=KernelCache(tempfile.mkdtemp()))


def test_tf32_tolerance_is_written_once():
    assert check.tolerance(4096, "tf32") == 2.0 ** -8
    assert check.tolerance(16384, "tf32") == 2.0 ** -8 * 2
    assert check.tolerance(4096, "tf32x3") == check.tolerance(4096) == 1e-5
    assert check.stage_precision("s12") == "tf32" and check.stage_precision("s07") == "ieee"


def test_compare_measures_a_cancelling_sum_against_its_larger_term():
    """A 1x1x1 alpha a b + beta c that nearly cancels: a TF32 product's rounding (2^-11 of a b)
    is large against what is left, and check_stage flaked on it (s12, 1x1x1 tn, 1.0e-2 against
    2^-8). Against the larger term the same result passes; a wrong one still fails."""
    torch = pytest.importorskip("torch", reason="torch is not installed: check.compare takes torch tensors")
    a, b, c = torch.tensor([[1.5]]), torch.tensor([[1.25]]), torch.tensor([[-1.0]])
    alpha, beta = 1.0, 1.87
    ref = check.reference(a, b, c, alpha, beta)                    # 1.875 - 1.87 = 0.005
    tf32_like = (ref + 1.875 * 2.0 ** -11).float()                # the product rounded at 2^-11
    scale = check.terms_scale(a, b, c, alpha, beta)
    assert scale == pytest.approx(1.875)
    assert not check.compare(tf32_like, ref, 1, "tf32").correct   # against the sum: 0.1
    assert check.compare(tf32_like, ref, 1, "tf32", scale).correct
    assert not check.compare((ref + 0.05).float(), ref, 1, "tf32", scale).correct
    assert check.terms_scale(a, b, None, 2.0, 0.0) == pytest.approx(3.75)


# ---- GPU ------------------------------------------------------------------------------------------
SHAPES = [(128, 256, 32), (256, 512, 1024), (1, 1, 1), (7, 13, 5), (129, 257, 33), (1000, 1000, 1000),
          (255, 129, 4097), (4095, 257, 1023), (64, 300, 64), (3000, 50, 700)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_gpu_s12_against_float64(layout, M, N, K):
    r = check.check_stage("s12", M, N, K, layout)
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("config", [{"block_n": 128, "stages": 6}, {"block_m": 64, "block_n": 128, "stages": 8},
                                    {"block_m": 64, "block_n": 256}, {"split_k": 4}, {"stages": 2}, {"tma_tf32": 0},
                                    {"block_m": 256, "block_n": 128, "b_regs": 1, "split_k": 3}])
def test_gpu_s12_configs(config):
    for M, N, K in [(333, 517, 1500), (1024, 1024, 4096)]:
        r = check.check_stage("s12", M, N, K, "nn", config=config)
        assert r.correct, (config, M, N, K, r)


def test_rs_variant_for_row_major_b():
    cfg = S12.config({"block_m": 256, "block_n": 128, "b_regs": 1})
    nn, nt = dense(512, 512, 512, "nn"), dense(512, 512, 512, "nt")
    assert S12.variant(cfg, nn) == {"rs": 1} and S12.variant(cfg, nt) == {"rs": 0}
    assert S12.variant(S12.default_config, nn) == {"rs": 0}  # off unless asked for
    assert S12.operand_ready(nn, "b", cfg) and not S12.operand_ready(nn, "b")
    assert S12.launch_threads(cfg, {"rs": 1}) == 128 * 2 + 128   # one consumer warpgroup per 64 columns
    assert S12.launch_threads(cfg, {"rs": 0}) == 128 * 4 + 128
    maps = operand_maps(cfg, nn, 1)
    assert maps["b"][1:] == ((1, 512, 512), (512 * 512, 512, 1), (1, 32, 32), 128)  # (k, n), boxes {32 n, 32 k}
    S12.check_problem(cfg, nn)  # B row-major is fine for the RS variant


@pytest.mark.parametrize("block_m", [256, 128])
def test_rs_variant_compiles_without_spills(block_m):
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    cfg = S12.config({"block_m": block_m, "block_n": 128, "b_regs": 1})
    ck = kernel_for(S12, cfg, {"rs": 1}, "sm_90")
    res = sass.resources(ck.cubin, ck.name)
    assert res["local_bytes"] == 0 and res["stack_bytes"] == 0, res
    insns = sass.instructions(ck.cubin)
    hg = [i for i in insns if i.op.startswith("HGMMA")]
    assert hg and all("gdesc" in i.operands and not i.operands.split(",")[1].strip().startswith("gdesc") for i in hg)
    assert sass.has_opcode(insns, "LDS.64")  # the B^T fragments


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tn"])
@pytest.mark.parametrize("M,N,K", [(256, 128, 32), (300, 200, 100), (1000, 1000, 1000), (129, 257, 33), (7, 9, 5)])
def test_gpu_s12_rs_variant(layout, M, N, K):
    r = check.check_stage("s12", M, N, K, layout, config={"block_m": 256, "block_n": 128, "b_regs": 1})
    assert r.correct, r


@pytest.mark.gpu
def test_gpu_s12_poisoned_beta0_and_in_place():
    import torch

    import gemmlab

    r = check.check_stage_poisoned("s12", 300, 200, 500)
    assert r.correct, r
    a, b, c = check.random_operands(300, 200, 500)
    ref = check.reference(a, b, c, 0.5, 3.0)
    gemmlab.gemm(a, b, c, alpha=0.5, beta=3.0, out=c, stage="s12")
    torch.cuda.synchronize()
    assert check.compare(c, ref, 500, "tf32").correct
    # alpha = 0: beta * c, nothing multiplied
    c2 = torch.randn(64, 64, device="cuda")
    out = gemmlab.gemm(a[:64], b[:, :64], c2, alpha=0.0, beta=2.0, stage="s12")
    assert torch.equal(out, 2.0 * c2)


@pytest.mark.gpu
def test_gpu_s12_nan_and_inf_propagate():
    import torch

    import gemmlab

    a, b, _ = check.random_operands(200, 300, 400)
    a[5, 7] = float("nan")
    b[9, 11] = float("inf")
    out = gemmlab.matmul(a, b, stage="s12")
    ref = a.double() @ b.double()
    torch.cuda.synchronize()
    assert torch.isnan(out[5]).all()
    same = torch.isnan(out) == torch.isnan(ref)
    assert bool(same.all())
    finite = torch.isfinite(ref)
    assert bool((torch.isinf(out) == torch.isinf(ref))[finite.logical_not()].all())


@pytest.mark.gpu
def test_gpu_s12_strided_views_and_column_major_out():
    import torch

    import gemmlab

    big_a = torch.rand(500, 700, device="cuda") * 2 - 1
    big_b = torch.rand(900, 400, device="cuda") * 2 - 1
    a = big_a[3:303, 5:405]           # 300 x 400, leading dimension 700, unaligned base
    b = big_b[1:401, 2:252]           # 400 x 250
    out = gemmlab.matmul(a, b, stage="s12")
    assert check.compare(out, a.double() @ b.double(), 400, "tf32").correct
    every_other = big_a[:, ::2][:300, :350]  # no unit stride: copied
    out = gemmlab.matmul(every_other, big_b[:350, :200], stage="s12")
    assert check.compare(out, every_other.double() @ big_b[:350, :200].double(), 350, "tf32").correct
    col = torch.empty(250, 300, device="cuda").t()  # column-major out
    gemmlab.matmul(a, b, out=col, stage="s12")
    torch.cuda.synchronize()
    assert check.compare(col, a.double() @ b.double(), 400, "tf32").correct


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tt"])
def test_gpu_s12_batched_and_broadcast(layout):
    import torch

    import gemmlab

    r = check.check_stage("s12", 130, 70, 90, layout, batch=5)
    assert r.correct, r
    a = torch.rand(6, 200, 96, device="cuda")
    b = torch.rand(1, 96, 160, device="cuda")  # one B for every batch
    out = gemmlab.gemm_batched(a, b, stage="s12")
    assert check.compare(out, a.double() @ b.double(), 96, "tf32").correct


@pytest.mark.gpu
def test_gpu_precision_dispatch():
    import torch

    import gemmlab

    a, b, _ = check.random_operands(2048, 2048, 2048)
    plan, _ = gemmlab.api.prepare(a, b, out=torch.empty(2048, 2048, device="cuda"), precision="tf32")
    assert plan.choice.spec.id == "s12"
    plan, _ = gemmlab.api.prepare(a, b, out=torch.empty(2048, 2048, device="cuda"))
    assert plan.choice.spec.precision == "ieee"
    out = gemmlab.matmul(a, b, precision="tf32")
    assert check.compare(out, a.double() @ b.double(), 2048, "tf32").correct
    small = gemmlab.matmul(a[:32, :32], b[:32, :32], precision="tf32")  # SIMT: FP32-accurate
    assert check.compare(small, a[:32, :32].double() @ b[:32, :32].double(), 32).correct
    with pytest.raises(gemmlab.PrecisionError, match="precision 'tf32', not precision='ieee'"):
        gemmlab.matmul(a, b, stage="s12", precision="ieee")
    with pytest.raises(gemmlab.PrecisionError, match="precision='fp16'"):
        gemmlab.matmul(a, b, precision="fp16")


@pytest.mark.parametrize("stage,products,boxes", [("s12", 1, 2), ("s13", 3, 4)])
def test_explain_tensor_core_model(stage, products, boxes):
    from gemmlab.analysis import explain

    r = explain.report(stage, size=4096)
    tc = r["tensor_core"]
    assert tc["products_per_output"] == products and tc["pipeline"]["tma_boxes_per_stage"] == boxes
    assert tc["pipeline"]["stages"] == get(stage).default_config["stages"]
    assert 494 < tc["tensor_peak_tflops"] < 560  # 132 SMs x 2048 FLOP/clk at 1.83-2.07 GHz
    assert r["predicted"]["bound"] in ("tensor_peak", "l2_fill", "dram")
    # never faster than the tensor-core peak allows for the products it runs
    assert r["predicted"]["tflops"] <= tc["tensor_peak_tflops"] / products
    text = explain.format_text(r)
    assert "tensor cores" in text and "TMA boxes" in text


@pytest.mark.parametrize("stage,override,variant", [("s12", {}, {"rs": 0}),
                                                    ("s12", {"block_m": 256, "block_n": 128, "b_regs": 1}, {"rs": 1}),
                                                    ("s13", {}, {})])
def test_register_handback_waits_for_every_consumer(stage, override, variant):
    """The TMA pipeline's exit (copy/tma_pipeline.cuh): the producer warpgroup takes its registers
    back only after every consumer warp has released its own (consumers bar.arrive at barrier 2
    after setmaxnreg.dec; the producer bar.syncs on it with the whole block's count), so a
    producer with fewer tiles than stages cannot take them back before the consumers raised theirs."""
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    spec = get(stage)
    cfg = spec.config(override)
    ck = kernel_for(spec, cfg, variant, "sm_90")
    insns = sass.instructions(ck.cubin)
    threads = hex(spec.launch_threads(cfg, variant))
    ops = [(i.op, i.operands.replace(" ", "")) for i in insns]
    dealloc = [n for n, (op, _) in enumerate(ops) if op.startswith("USETMAXREG.DEALLOC")]
    arrive = [n for n, (op, arg) in enumerate(ops) if op == "BAR.ARV" and arg == f"0x2,{threads}"]
    sync2 = [n for n, (op, arg) in enumerate(ops) if op.startswith("BAR.SYNC") and arg == f"0x2,{threads}"]
    assert arrive and sync2, sorted({o for o in ops if o[0].startswith("BAR")})
    assert any(d < arrive[0] for d in dealloc)  # the consumers' decrease comes before their arrival


@pytest.mark.parametrize("stage,override,variant", [("s12", {"block_m": 256, "block_n": 128}, {"rs": 0}),
                                                    ("s12", {"block_m": 64, "block_n": 256, "b_regs": 1}, {"rs": 1}),
                                                    ("s12", {}, {"rs": 0}), ("s12", {"block_m": 64}, {"rs": 0}),
                                                    ("s12", {"block_m": 192, "block_n": 128}, {"rs": 0}),
                                                    ("s13", {"block_m": 256, "block_n": 32}, {})])
def test_setmaxnreg_fits_the_blocks_launch_allocation(stage, override, variant):
    """setmaxnreg draws on the block's own registers (threads x the launch count, multiples of 8),
    not the SM's 64K. With 640 threads (block_m=256: four consumer warpgroups) each thread is
    launched with 96; consumers asking for 112 waited in setmaxnreg.inc forever (H200: every
    block_m=256 s12 test hung). The SASS's requests must fit what the block holds."""
    import re

    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for
    from gemmlab.stages.s12_wgmma_tf32 import PRODUCER_REGS, consumer_regs, launch_regs

    spec = get(stage)
    cfg = spec.config(override)
    threads = spec.launch_threads(cfg, variant)
    consumers = threads - 128
    ck = kernel_for(spec, cfg, variant, "sm_90")
    insns = sass.instructions(ck.cubin)
    asks = [(i.op.split(".")[1], int(re.search(r"0x[0-9a-f]+", i.operands).group(0), 16))
            for i in insns if i.op.startswith("USETMAXREG")]
    pool = launch_regs(threads) * threads
    mine = consumer_regs(cfg, consumers // 128)
    assert consumers * mine + 128 * PRODUCER_REGS <= pool
    if mine > launch_regs(threads):  # rebalanced: producer down and back, consumers up and back
        assert sorted(set(asks)) == sorted({("DEALLOC", PRODUCER_REGS), ("DEALLOC", launch_regs(threads)),
                                            ("TRY_ALLOC", mine), ("TRY_ALLOC", launch_regs(threads))}), asks
    else:
        assert asks == [], asks
    assert consumer_regs(cfg, consumers // 128) <= 240
