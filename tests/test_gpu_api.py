"""GPU correctness of every registered stage (marked ``gpu``; skipped without a GPU).

Fresh random inputs every run, alpha 0.5 and beta 3.0 with a random c, output poisoned with NaN,
float64 reference, the tolerance rule of gemmlab.check."""
import math

import pytest

from gemmlab.check import ALPHA, BETA, check_stage, check_stage_poisoned, reference, stage_precision
from gemmlab.check import compare as _compare
from gemmlab.stages import all_stages

pytestmark = pytest.mark.gpu

STAGE_IDS = [s.id for s in all_stages()] + ["auto"]

SHAPES = [(1, 1, 1), (1, 7, 5), (7, 1, 5), (7, 5, 1), (127, 129, 7), (129, 127, 33), (128, 128, 8),
          (256, 256, 256), (1023, 129, 257), (129, 1023, 100), (4095, 257, 129), (257, 4095, 17),
          (300, 200, 4095), (64, 64, 0)]
LAYOUTS = ["nn", "nt", "tn", "tt"]


def compare(out, ref, K, stage):
    """Within the tolerance of the stage's own precision (tf32 for s12; ieee for "auto")."""
    return _compare(out, ref, K, stage_precision(stage))


def torch_mod():
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


@pytest.mark.parametrize("stage", STAGE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_shapes_nn(stage, shape):
    r = check_stage(stage, *shape, "nn")
    assert r.correct, r


@pytest.mark.parametrize("stage", STAGE_IDS)
@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("shape", [(129, 127, 33), (256, 256, 256), (1023, 129, 257), (7, 5, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_transposed_layouts(stage, layout, shape):
    r = check_stage(stage, *shape, layout)
    assert r.correct, r


@pytest.mark.parametrize("stage", STAGE_IDS)
@pytest.mark.parametrize("shape", [(129, 255, 63), (512, 512, 512)], ids=lambda s: "x".join(map(str, s)))
def test_beta_zero_never_reads_nan_output(stage, shape):
    r = check_stage_poisoned(stage, *shape)
    assert r.correct, r


@pytest.mark.parametrize("stage", STAGE_IDS)
def test_in_place_and_column_major_out(stage):
    import gemmlab

    torch = torch_mod()
    M, N, K = 200, 136, 72
    a = torch.rand(M, K, device="cuda") - 0.5
    b = torch.rand(K, N, device="cuda") - 0.5
    c = torch.rand(M, N, device="cuda") - 0.5
    ref = reference(a, b, c, ALPHA, BETA)
    inplace = c.clone()
    gemmlab.gemm(a, b, inplace, alpha=ALPHA, beta=BETA, out=inplace, stage=stage)
    assert compare(inplace, ref, K, stage).correct
    colmajor = torch.full((N, M), float("nan"), device="cuda").t()
    gemmlab.gemm(a, b, c, alpha=ALPHA, beta=BETA, out=colmajor, stage=stage)
    assert compare(colmajor, ref, K, stage).correct
    c_col = c.t().contiguous().t()  # c column-major, out row-major: c is copied across layouts
    out = torch.full((M, N), float("nan"), device="cuda")
    gemmlab.gemm(a, b, c_col, alpha=ALPHA, beta=BETA, out=out, stage=stage)
    torch.cuda.synchronize()
    assert compare(out, ref, K, stage).correct


def _addends(torch, B, M, N):
    """c forms the epilogue reads where they lie (no copy): (name, c) with c broadcastable to
    (B, M, N) when B, else (M, N)."""
    lead = (B,) if B else ()
    bias = torch.rand(N, device="cuda") - 0.5
    col = torch.rand(M, 1, device="cuda") - 0.5
    flat = torch.rand(1 + B * M * N if B else 1 + M * N, device="cuda") - 0.5
    wide = torch.rand(*lead, M, N + 5, device="cuda") - 0.5
    return [
        ("bias row (stride 0, 1)", bias.expand(*lead, M, N)),
        ("bias column (stride 1, 0)", col.expand(*lead, M, N)),
        ("column-major", (torch.rand(*lead, N, M, device="cuda") - 0.5).transpose(-1, -2)),
        ("4-byte aligned", flat[1:].view(*lead, M, N)),
        ("leading dimension N + 5", wide[..., :N]),
        ("scalar (stride 0, 0)", torch.tensor(0.25, device="cuda").expand(*lead, M, N)),
    ]


@pytest.mark.parametrize("stage", STAGE_IDS)
@pytest.mark.parametrize("split", [1, 3])
def test_addend_read_where_it_lies(stage, split):
    """A separate c of any layout (a broadcast bias, a column vector, column-major, misaligned,
    padded rows), with a row- and a column-major out, split-K or not, batched with c broadcast
    over the batch: the epilogue reads c in place, and out = alpha a b + beta c."""
    import gemmlab

    torch = torch_mod()
    if split > 1 and stage == "auto":
        pytest.skip("auto chooses its own split")
    cfg = {"split_k": split} if split > 1 else None
    M, N, K = 97, 70, 260
    a = torch.rand(M, K, device="cuda") - 0.5
    b = torch.rand(K, N, device="cuda") - 0.5
    for name, c in _addends(torch, 0, M, N):
        ref = reference(a, b, c, ALPHA, BETA)
        for out in (torch.full((M, N), float("nan"), device="cuda"),
                    torch.full((N, M), float("nan"), device="cuda").t()):
            gemmlab.gemm(a, b, c, alpha=ALPHA, beta=BETA, out=out, stage=stage, config=cfg)
            torch.cuda.synchronize()
            r = compare(out, ref, K, stage)
            assert r.correct, (name, out.stride(), r)
        plan, _ = gemmlab.api.prepare(a, b, c, alpha=ALPHA, beta=BETA, out=out, stage=stage, config=cfg)
        assert "gemmlab_copy" not in plan.kernels, (name, plan.kernels)  # no pass over c first
    B = 3
    a3 = torch.rand(B, M, K, device="cuda") - 0.5
    b3 = torch.rand(B, K, N, device="cuda") - 0.5
    for name, c in _addends(torch, B, M, N) + [("batch broadcast", (torch.rand(M, N, device="cuda") - 0.5).expand(B, M, N))]:
        out = torch.full((B, M, N), float("nan"), device="cuda")
        gemmlab.gemm_batched(a3, b3, c, alpha=ALPHA, beta=BETA, out=out, stage=stage, config=cfg)
        torch.cuda.synchronize()
        ref = ALPHA * (a3.double() @ b3.double()) + BETA * c.double()
        r = compare(out, ref, K, stage)
        assert r.correct, (name, "batched", r)


@pytest.mark.parametrize("stage", STAGE_IDS)
def test_strided_and_misaligned_views(stage):
    import gemmlab

    torch = torch_mod()
    M, N, K = 131, 97, 75
    big_a = torch.rand(2 * M, K + 9, device="cuda") - 0.5
    a_ld = big_a[:M, 3:3 + K]            # leading dimension wider than the row, misaligned start
    a_step = big_a[::2, :K]              # every other row
    big_b = torch.rand(K * 2, N * 2, device="cuda") - 0.5
    b_both = big_b[::2, ::2]             # no unit stride at all: copied
    flat = torch.rand(1 + K * N, device="cuda") - 0.5
    b_mis = flat[1:].view(K, N)          # 4-byte aligned only
    for a in (a_ld, a_step):
        for b in (b_both, b_mis):
            c = torch.rand(M, N, device="cuda") - 0.5
            out = torch.full((M, N), float("nan"), device="cuda")
            gemmlab.gemm(a, b, c, alpha=ALPHA, beta=BETA, out=out, stage=stage)
            torch.cuda.synchronize()
            r = compare(out, reference(a, b, c, ALPHA, BETA), K, stage)
            assert r.correct, (a.stride(), b.stride(), r)


@pytest.mark.parametrize("stage", STAGE_IDS)
def test_batched_and_broadcast(stage):
    import gemmlab

    torch = torch_mod()
    B, M, N, K = 3, 67, 130, 45
    a = torch.rand(B, M, K, device="cuda") - 0.5
    b = torch.rand(B, K, N, device="cuda") - 0.5
    c = torch.rand(B, M, N, device="cuda") - 0.5
    out = torch.full((B, M, N), float("nan"), device="cuda")
    gemmlab.gemm_batched(a, b, c, alpha=ALPHA, beta=BETA, out=out, stage=stage)
    torch.cuda.synchronize()
    ref = ALPHA * (a.double() @ b.double()) + BETA * c.double()
    assert compare(out, ref, K, stage).correct
    b1 = b[:1]
    out2 = gemmlab.gemm_batched(a, b1.transpose(1, 2).contiguous().transpose(1, 2), stage=stage)
    torch.cuda.synchronize()
    assert compare(out2, a.double() @ b1.double(), K, stage).correct


@pytest.mark.parametrize("stage", STAGE_IDS)
def test_zero_sizes_and_alpha_zero(stage):
    import gemmlab

    torch = torch_mod()
    for M, N in ((0, 5), (5, 0), (0, 0)):
        out = gemmlab.matmul(torch.rand(M, 3, device="cuda"), torch.rand(3, N, device="cuda"), stage=stage)
        assert tuple(out.shape) == (M, N)
    a, b = torch.rand(9, 0, device="cuda"), torch.rand(0, 11, device="cuda")
    c = torch.rand(9, 11, device="cuda")
    out = gemmlab.gemm(a, b, c, alpha=ALPHA, beta=BETA, stage=stage)  # K = 0: beta * c
    torch.cuda.synchronize()
    assert torch.equal(out, BETA * c)
    a = torch.full((9, 4), float("nan"), device="cuda")
    b = torch.rand(4, 11, device="cuda")
    out = gemmlab.gemm(a, b, c, alpha=0.0, beta=BETA, stage=stage)  # alpha = 0 never reads a, b
    torch.cuda.synchronize()
    assert torch.equal(out, BETA * c)


@pytest.mark.parametrize("stage", STAGE_IDS)
def test_cupy_arrays_and_output_kind(stage):
    cupy = pytest.importorskip("cupy")
    import gemmlab

    torch = torch_mod()
    M, N, K = 77, 130, 66
    a = cupy.random.rand(M, K, dtype=cupy.float32) - 0.5
    b = cupy.random.rand(K, N, dtype=cupy.float32) - 0.5
    b_t = cupy.ascontiguousarray(b.T).T
    for bb in (b, b_t):
        out = gemmlab.matmul(a, bb, stage=stage)
        assert isinstance(out, cupy.ndarray)
        cupy.cuda.get_current_stream().synchronize()
        ref = torch.from_dlpack(a).double() @ torch.from_dlpack(cupy.ascontiguousarray(bb)).double()
        assert compare(torch.from_dlpack(out), ref, K, stage).correct


@pytest.mark.parametrize("stage", ["s01", "auto"])
def test_cupy_non_default_stream(stage):
    cupy = pytest.importorskip("cupy")
    import gemmlab

    torch = torch_mod()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a = cupy.random.rand(300, 200, dtype=cupy.float32)
        b = cupy.random.rand(200, 100, dtype=cupy.float32)
        out = gemmlab.matmul(a, b, stage=stage)
    s.synchronize()
    ref = torch.from_dlpack(a).double() @ torch.from_dlpack(b).double()
    assert compare(torch.from_dlpack(out), ref, 200, stage).correct


@pytest.mark.parametrize("stage", STAGE_IDS)
def test_runs_on_the_callers_torch_stream(stage):
    """A non-blocking stream whose earlier work (a sleep, then writing a) must finish before
    gemmlab reads a: right only if gemmlab launched on that stream."""
    import gemmlab

    torch = torch_mod()
    M, N, K = 256, 256, 128
    a = torch.zeros(M, K, device="cuda")
    b = torch.rand(K, N, device="cuda")
    new_a = torch.rand(M, K, device="cuda")
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)
        a.copy_(new_a)
        out = gemmlab.matmul(a, b, stage=stage)
    s.synchronize()
    assert compare(out, new_a.double() @ b.double(), K, stage).correct


def test_nothing_written_on_error():
    import gemmlab

    torch = torch_mod()
    a, b = torch.rand(64, 32, device="cuda"), torch.rand(32, 48, device="cuda")
    out = torch.rand(64, 48, device="cuda")
    before = out.clone()
    with pytest.raises(gemmlab.ConfigError):
        gemmlab.gemm(a, b, torch.rand(64, 48, device="cuda"), beta=1.0, out=out, stage="s01",
                     config={"block_n": 33})
    with pytest.raises(TypeError):
        gemmlab.gemm(a, b.double(), out=out)
    torch.cuda.synchronize()
    assert torch.equal(out, before)


def test_host_tensor_and_dtype_errors_with_torch():
    import gemmlab

    torch = torch_mod()
    with pytest.raises(ValueError, match="a: a host"):
        gemmlab.matmul(torch.rand(4, 4), torch.rand(4, 4, device="cuda"))
    with pytest.raises(TypeError, match="b: dtype torch.float16"):
        gemmlab.matmul(torch.rand(4, 4, device="cuda"), torch.rand(4, 4, device="cuda").half())


@pytest.mark.parametrize("stage", STAGE_IDS)
def test_past_2_31_elements(stage):
    """An output of more than 2^31 elements: 64-bit offsets everywhere."""
    import gemmlab

    torch = torch_mod()
    M, N, K = 65536 + 3, 32768 + 1, 3
    assert M * N > 2**31
    a = torch.rand(M, K, device="cuda") - 0.5
    b = torch.rand(K, N, device="cuda") - 0.5
    out = _big_out(torch, M, N)
    out.fill_(float("nan"))
    gemmlab.matmul(a, b, out=out, stage=stage)
    torch.cuda.synchronize()
    rows = [0, 1, M // 2, 2**31 // N, 2**31 // N + 1, M - 2, M - 1]
    ref = a[rows].double() @ b.double()
    assert compare(out[rows], ref, K, stage).correct
    assert not torch.isnan(out).any()


_BIG = {}


def _big_out(torch, M, N):
    if (M, N) not in _BIG:
        _BIG[(M, N)] = torch.empty(M, N, device="cuda")
    return _BIG[(M, N)]


def test_compile_times_cold_and_warm(tmp_path, monkeypatch, capsys):
    """Not a timing assertion: prints the cold and warm compile times of s01 for the record."""
    import time

    from gemmlab.api import kernel_for
    from gemmlab.jit import compiler
    from gemmlab.stages import get

    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_memory", {})
    spec = get("s01")
    t0 = time.perf_counter()
    cold = kernel_for(spec, spec.default_config, {}, "sm_90")
    t1 = time.perf_counter()
    monkeypatch.setattr(compiler, "_memory", {})
    warm = kernel_for(spec, spec.default_config, {}, "sm_90")
    t2 = time.perf_counter()
    assert not cold.cached and warm.cached
    with capsys.disabled():
        print(f"\ns01 compile: cold {1e3 * (t1 - t0):.1f} ms, warm (disk cache) {1e3 * (t2 - t1):.1f} ms")
