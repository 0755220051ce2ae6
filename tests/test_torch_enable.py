"""gemmlab.torch.enable() / disable(): torch's own float32 GEMMs on gemmlab, no model change.

Without a GPU (CI) the overrides are registered on the CPU dispatch key instead of CUDA
(``gemmlab.torch._KEY``), and the one gemmlab call of gemmlab/torch.py (``_gemm``) is replaced
by a float64 product that records its arguments: so every aten operator's routing, its arguments
(alpha, beta, the broadcast self, out=), the fall-through to torch's own kernel for everything
gemmlab does not take, autograd through torch's formulas, torch.compile's calls, nesting and
removal are checked on the CPU. With a GPU (marked ``gpu``): the real kernels, a
TransformerEncoder trained under enable() against torch, CUDA graphs and torch.compile.
"""
import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0 for the CPU build)")

import gemmlab  # noqa: E402
import gemmlab.torch as gt  # noqa: E402
from gemmlab import check  # noqa: E402
from gemmlab.errors import ArgumentError  # noqa: E402

F = torch.nn.functional


def rel(x, ref) -> float:
    x, ref = x.detach().double().to(ref.device), ref.detach().double()
    den = float(torch.linalg.vector_norm(ref))
    num = float(torch.linalg.vector_norm(x - ref))
    return num / den if den > 0 else num


def product64(a, b):
    """a @ b in float64 without calling any aten GEMM (those are the overridden operators)."""
    return (a.double().unsqueeze(-1) * b.double().unsqueeze(-3)).sum(-2)


@pytest.fixture(autouse=True)
def always_disabled_after():
    yield
    gt.disable()
    assert not gt.is_enabled() and gt._lib is None


@pytest.fixture
def cpu_gemmlab(monkeypatch):
    """The overrides on the CPU key, gemmlab replaced by a recording float64 stand-in; yields the
    calls: dicts with the shapes and strides of a and b, c's shape and strides (or None), alpha,
    beta, whether out was given, precision."""
    assert gt._lib is None
    monkeypatch.setattr(gt, "_KEY", "CPU")
    calls = []

    def stand_in(a, b, c, alpha, beta, out, precision):
        calls.append({"a": tuple(a.shape), "b": tuple(b.shape), "a_strides": a.stride(), "b_strides": b.stride(),
                      "c": None if c is None else tuple(c.shape), "c_strides": None if c is None else c.stride(),
                      "alpha": alpha, "beta": beta, "out": out is not None, "precision": precision})
        r = alpha * product64(a, b)
        if c is not None and beta != 0:
            r = r + beta * c.double()
        if out is None:
            return r.float()
        out.copy_(r)
        return out

    monkeypatch.setattr(gt, "_gemm", stand_in)
    gt.reset_stats()
    return calls


def ran(op):
    return gt.stats()[op]["gemmlab"]


def fell(op):
    return gt.stats()[op]["torch"]


def rnd(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + sum(shape))
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)


# ---- switching -----------------------------------------------------------------------------------

def test_enable_disable_and_blocks_nest(cpu_gemmlab):
    a, b = rnd(4, 6), rnd(6, 5)
    assert not gt.is_enabled() and gt.settings() is None
    torch.mm(a, b)
    assert cpu_gemmlab == []                                   # not enabled: torch alone, no kernel of ours
    gt.enable()
    assert gt.is_enabled() and gt.settings() == gt.Settings(None, False)
    torch.mm(a, b)
    assert len(cpu_gemmlab) == 1 and cpu_gemmlab[-1]["precision"] is None
    with gt.enable(precision="tf32x3"):
        torch.mm(a, b)
        assert cpu_gemmlab[-1]["precision"] == "tf32x3"
        with gt.disable():
            assert not gt.is_enabled()
            torch.mm(a, b)
            assert len(cpu_gemmlab) == 2                       # torch ran it
            with gt.enable(precision="ieee", strict=True):
                torch.mm(a, b)
                assert cpu_gemmlab[-1]["precision"] == "ieee" and gt.settings().strict
            assert not gt.is_enabled()
        torch.mm(a, b)
        assert cpu_gemmlab[-1]["precision"] == "tf32x3"
    assert gt.settings() == gt.Settings(None, False)           # the state before the block
    gt.disable()
    torch.mm(a, b)
    assert len(cpu_gemmlab) == 4 and gt._lib is None


def test_disable_removes_the_overrides(cpu_gemmlab):
    before = {op: repr(torch.library.get_kernel(f"aten::{op}", "CPU")) for op in gt.OPS}
    with gt.enable():
        during = {op: repr(torch.library.get_kernel(f"aten::{op}", "CPU")) for op in gt.OPS}
    after = {op: repr(torch.library.get_kernel(f"aten::{op}", "CPU")) for op in gt.OPS}
    assert after == before
    assert all(during[op] != before[op] for op in gt.OPS)
    # on and off again: still torch's kernels underneath, and gemmlab's while on
    for _ in range(3):
        with gt.enable():
            torch.mm(rnd(2, 3), rnd(3, 2))
    assert len(cpu_gemmlab) == 3
    assert {op: repr(torch.library.get_kernel(f"aten::{op}", "CPU")) for op in gt.OPS} == before


def test_bad_precision_is_refused():
    with pytest.raises(ValueError, match="precision='fp16'"):
        gt.enable(precision="fp16")
    assert not gt.is_enabled()


def test_enable_on_the_cuda_key_leaves_cpu_tensors_to_torch(monkeypatch):
    """The real registration (CUDA key) on any build: CPU tensors never reach gemmlab."""
    monkeypatch.setattr(gt, "_gemm", lambda *a: pytest.fail("gemmlab was called for CPU tensors"))
    a, b = rnd(5, 4), rnd(4, 3)
    want = torch.mm(a, b)
    with gt.enable():
        assert torch.equal(torch.mm(a, b), want) and torch.equal(a @ b, want)
        assert torch.equal(F.linear(a, b.t().contiguous(), rnd(3)), F.linear(a, b.t().contiguous(), rnd(3)))
    assert not gt.is_enabled()


# ---- what goes to gemmlab, with which arguments ------------------------------------------------

def test_mm_matmul_and_the_at_operator(cpu_gemmlab):
    a, b = rnd(5, 7), rnd(7, 3)
    with gt.enable():
        for y in (torch.mm(a, b), a @ b, torch.matmul(a, b), a.mm(b)):
            assert y.dtype == torch.float32 and y.shape == (5, 3)
            assert rel(y, product64(a, b)) <= 1e-7
        y = torch.mm(rnd(7, 5).t(), rnd(3, 7).t())              # transposed views are passed as they are
    assert ran("mm") == 5 and fell("mm") == 0
    assert cpu_gemmlab[-1]["a_strides"] == (1, 5) and cpu_gemmlab[-1]["b_strides"] == (1, 7)
    assert all(c["alpha"] == 1.0 and c["beta"] == 0.0 and c["c"] is None and not c["out"] for c in cpu_gemmlab)


def test_matmul_of_3d_by_2d_and_batched(cpu_gemmlab):
    x, w, bx = rnd(2, 4, 7), rnd(7, 3), rnd(2, 7, 3)
    with gt.enable():
        y = x @ w                                               # folded into one mm
        z = x @ bx                                              # bmm
    assert rel(y, product64(x, w)) <= 1e-7 and rel(z, product64(x, bx)) <= 1e-7
    assert ran("mm") == 1 and ran("bmm") == 1
    assert cpu_gemmlab[0]["a"] == (8, 7)


@pytest.mark.parametrize("self_shape", [(3,), (5, 3), (5, 1), (1, 3), ()], ids=lambda s: "self" + "x".join(map(str, s)))
def test_addmm_with_alpha_beta_and_a_broadcast_self(cpu_gemmlab, self_shape):
    a, b, c = rnd(5, 7), rnd(7, 3), rnd(*self_shape)
    with gt.enable():
        y = torch.addmm(c, a, b, beta=0.5, alpha=-2.0)
    assert rel(y, 0.5 * c.double() - 2.0 * product64(a, b)) <= 1e-7
    call, = cpu_gemmlab
    assert (call["alpha"], call["beta"], call["c"]) == (-2.0, 0.5, (5, 3))


def test_addmm_with_beta_0_does_not_read_self(cpu_gemmlab):
    a, b = rnd(5, 7), rnd(7, 3)
    c = torch.full((5, 3), float("nan"))
    with gt.enable():
        y = torch.addmm(c, a, b, beta=0)
    assert torch.isfinite(y).all() and rel(y, product64(a, b)) <= 1e-7
    assert cpu_gemmlab[0]["c"] is None


def test_linear_2d_and_3d_with_and_without_bias(cpu_gemmlab):
    w, bias = rnd(4, 7), rnd(4)
    with gt.enable():
        for x in (rnd(5, 7), rnd(2, 3, 7), rnd(7, 6).t()):
            for b in (bias, None):
                y = F.linear(x, w, b)
                ref = product64(x, w.t()) + (0 if b is None else b.double())
                assert y.shape == (*x.shape[:-1], 4) and rel(y, ref) <= 1e-7
    assert ran("addmm") + ran("mm") == 6 and fell("addmm") == fell("mm") == 0
    assert any(c["c"] == (5, 4) and c["c_strides"] == (0, 1) for c in cpu_gemmlab)   # the bias, stride 0


def test_bmm_baddbmm(cpu_gemmlab):
    a, b, c = rnd(3, 5, 7), rnd(3, 7, 4), rnd(3, 5, 4)
    with gt.enable():
        y = torch.bmm(a, b)
        z = torch.baddbmm(c, a, b, beta=2.0, alpha=0.25)
        w = torch.baddbmm(rnd(4), a, b)                             # self broadcast over batch and rows
        u = torch.bmm(a.transpose(1, 2).contiguous().transpose(1, 2), b)
    assert rel(y, product64(a, b)) <= 1e-7
    assert rel(z, 2.0 * c.double() + 0.25 * product64(a, b)) <= 1e-7
    assert rel(w, rnd(4).double() + product64(a, b)) <= 1e-7
    assert rel(u, product64(a, b)) <= 1e-7
    assert ran("bmm") == 2 and ran("baddbmm") == 2
    assert cpu_gemmlab[2]["c"] == (3, 5, 4) and cpu_gemmlab[2]["c_strides"] == (0, 0, 1)


def test_out_forms(cpu_gemmlab):
    a, b, c = rnd(5, 7), rnd(7, 3), rnd(3)
    ba, bb = rnd(2, 5, 7), rnd(2, 7, 3)
    outs = [torch.full((5, 3), float("nan")) for _ in range(2)] + [torch.full((2, 5, 3), float("nan")) for _ in range(2)]
    with gt.enable():
        r = [torch.mm(a, b, out=outs[0]), torch.addmm(c, a, b, alpha=3.0, out=outs[1]),
             torch.bmm(ba, bb, out=outs[2]), torch.baddbmm(c, ba, bb, beta=-1.0, out=outs[3])]
    assert all(x is o for x, o in zip(r, outs))
    assert rel(outs[0], product64(a, b)) <= 1e-7
    assert rel(outs[1], c.double() + 3.0 * product64(a, b)) <= 1e-7
    assert rel(outs[2], product64(ba, bb)) <= 1e-7
    assert rel(outs[3], -c.double() + product64(ba, bb)) <= 1e-7
    assert all(ran(op) == 1 for op in ("mm.out", "addmm.out", "bmm.out", "baddbmm.out"))
    assert all(call["out"] for call in cpu_gemmlab)


def test_addmm_in_place_out_is_self(cpu_gemmlab):
    a, b, c = rnd(5, 7), rnd(7, 3), rnd(5, 3)
    want = c.double() + product64(a, b)
    with gt.enable():
        r = torch.addmm(c, a, b, out=c)
    assert r is c and rel(c, want) <= 1e-7 and ran("addmm.out") == 1


def test_autograd_uses_torchs_formulas_on_gemmlab(cpu_gemmlab):
    x = rnd(3, 4, 7).requires_grad_()
    w, bias = rnd(5, 7).requires_grad_(), rnd(5).requires_grad_()
    u = rnd(3, 4, 5)
    with gt.enable():
        (F.linear(x, w, bias) * u).sum().backward()
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, bias))
    ((x64 @ w64.t() + b64) * u.double()).sum().backward()
    for t, r in ((x, x64), (w, w64), (bias, b64)):
        assert rel(t.grad, r.grad) <= 1e-6
    assert ran("addmm") == 1 and ran("mm") == 2                    # forward; grad_x and grad_W


def test_multihead_attention_runs_its_projections_on_gemmlab(cpu_gemmlab):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True)
    x = rnd(2, 5, 16)
    want, _ = mha(x, x, x, need_weights=False)
    with gt.enable():
        got, _ = mha(x, x, x, need_weights=False)
    assert rel(got, want) <= 1e-5
    assert ran("addmm") + ran("mm") >= 2                           # input and output projections


# ---- what falls through to torch -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.int64], ids=str)
def test_other_dtypes_fall_through_unchanged(cpu_gemmlab, dtype):
    a, b, c = rnd(5, 7, dtype=dtype), rnd(7, 3, dtype=dtype), rnd(3, dtype=dtype)
    ba, bb = rnd(2, 5, 7, dtype=dtype), rnd(2, 7, 3, dtype=dtype)

    def calls():
        return [torch.mm(a, b), torch.addmm(c, a, b), torch.bmm(ba, bb), torch.baddbmm(c, ba, bb),
                torch.mm(a, b, out=torch.empty(5, 3, dtype=dtype))]

    want = calls()
    with gt.enable():
        got = calls()
    assert all(torch.equal(g, w) and g.dtype == dtype for g, w in zip(got, want))
    assert cpu_gemmlab == [] and fell("mm") == 1 and fell("addmm") == 1 and fell("bmm") == 1
    assert fell("baddbmm") == 1 and fell("mm.out") == 1


def torch_error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("call", [
    lambda: torch.mm(rnd(2, 3), rnd(4, 5)),                               # shape mismatch
    lambda: torch.mm(rnd(2, 3), rnd(3, 4, dtype=torch.float64)),          # mixed dtypes
    lambda: torch.mm(rnd(2, 3, 4), rnd(4, 5)),                            # wrong rank
    lambda: torch.bmm(rnd(2, 3, 4), rnd(3, 4, 5)),                        # batches differ
    lambda: torch.addmm(rnd(4), rnd(2, 3), rnd(3, 5)),                    # self does not broadcast
    lambda: torch.mm(rnd(2, 3), rnd(3, 4), out=torch.empty(2, 4, dtype=torch.float64)),  # out dtype
], ids=["mismatch", "mixed_dtypes", "rank", "batches", "self_broadcast", "out_dtype"])
def test_errors_are_torchs_own(cpu_gemmlab, call):
    want = torch_error(call)
    with gt.enable():
        assert torch_error(call) == want
    assert cpu_gemmlab == []


def test_an_out_torch_must_resize_falls_through(cpu_gemmlab):
    a, b = rnd(5, 7), rnd(7, 3)
    out = torch.empty(0)
    with gt.enable():
        torch.mm(a, b, out=out)
    assert out.shape == (5, 3) and rel(out, product64(a, b)) <= 1e-6
    assert cpu_gemmlab == [] and fell("mm.out") == 1


def test_a_call_gemmlab_refuses_warns_once_and_torch_runs_it(cpu_gemmlab, monkeypatch):
    def refuse(a, b, c, alpha, beta, out, precision):
        raise ArgumentError("out: strides are neither row- nor column-major")

    monkeypatch.setattr(gt, "_gemm", refuse)
    monkeypatch.setattr(gt, "_warned", set())
    a, b = rnd(5, 7), rnd(7, 3)
    with gt.enable():
        with pytest.warns(RuntimeWarning, match=r"aten::mm on \(5, 7\) x \(7, 3\) was handed to torch.*ArgumentError"):
            y = torch.mm(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("error")                           # once: no second warning
            torch.mm(a, b)
    assert rel(y, product64(a, b)) <= 1e-6 and fell("mm") == 2 and ran("mm") == 0
    with gt.enable(strict=True):
        with pytest.raises(ArgumentError, match="neither row- nor column-major"):
            torch.mm(a, b)


# ---- torch.compile ---------------------------------------------------------------------------------

def test_compiled_code_calls_gemmlab_through_the_out_forms(cpu_gemmlab):
    """Inductor calls mm/addmm/bmm with out=; compiled before enable(), the same compiled code
    runs on gemmlab while enabled and on torch after (no recompilation)."""
    def f(a, b, c, ba, bb):
        return a @ b, torch.addmm(c, a, b), torch.bmm(ba, bb)

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    args = (rnd(5, 7), rnd(7, 3), rnd(3), rnd(2, 5, 7), rnd(2, 7, 3))
    want = compiled(*args)
    with gt.enable():
        got = compiled(*args)
    assert ran("mm.out") == 1 and ran("addmm.out") == 1 and ran("bmm.out") == 1
    for g, w in zip(got, want):
        assert rel(g, w) <= 1e-6
    compiled(*args)
    assert len(cpu_gemmlab) == 3


def test_enable_inside_compiled_code_says_what_to_do(cpu_gemmlab):
    def f(x):
        with gt.enable():
            return x @ x

    torch._dynamo.reset()
    with pytest.raises(Exception) as info:
        torch.compile(f, backend="aot_eager", fullgraph=True)(rnd(3, 3))
    text = str(info.value) + repr(info.value.__cause__)
    assert "call it outside the compiled function" in text
    assert not gt.is_enabled()
    torch._dynamo.reset()
    y = torch.compile(f, backend="aot_eager")(rnd(3, 3))     # without fullgraph: that frame runs eagerly
    assert rel(y, product64(rnd(3, 3), rnd(3, 3))) <= 1e-6 and len(cpu_gemmlab) == 1 and not gt.is_enabled()


def test_aot_eager_training_step_under_enable(cpu_gemmlab):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    x = rnd(6, 8)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    compiled(x).square().sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with gt.enable():
        compiled(x).square().sum().backward()
    for p, w in zip(model.parameters(), want):
        assert rel(p.grad, w) <= 1e-5
    assert ran("addmm") + ran("mm") >= 4


# ---- a model, unchanged ----------------------------------------------------------------------------

def encoder(d=32, layers=2, seed=0, device="cpu"):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(d, 4, dim_feedforward=2 * d, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).to(device)


def train(model, x, y, steps, lr=1e-3):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def test_a_transformer_encoder_trains_the_same_under_enable(cpu_gemmlab):
    x, y = rnd(4, 8, 32), rnd(4, 8, 32, seed=1)
    want = train(encoder(), x, y, 3)
    with gt.enable():
        got = train(encoder(), x, y, 3)
    assert float(((got - want).abs() / want.abs()).max()) <= 1e-5
    s = gt.stats()
    assert s["addmm"]["gemmlab"] > 0 and s["mm"]["gemmlab"] > 0
    assert all(v["torch"] == 0 for v in s.values()), s


# ==== GPU ==========================================================================================

@pytest.fixture
def gpu():
    from gemmlab.bench import baselines

    baselines.disable_tf32()          # torch's side is cuBLAS FP32
    gt.reset_stats()
    yield "cuda"


def gpu_rnd(*shape, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed + sum(shape))
    return torch.rand(shape, generator=g, device="cuda") * 2 - 1


@pytest.mark.gpu
def test_gpu_every_op_on_gemmlab_against_float64(gpu):
    a, b, c = gpu_rnd(129, 255), gpu_rnd(255, 63), gpu_rnd(63)
    ba, bb, bc = gpu_rnd(3, 65, 33), gpu_rnd(3, 33, 17), gpu_rnd(3, 65, 17)
    with gt.enable(strict=True):
        got = {
            "mm": (torch.mm(a, b), lambda: a.double() @ b.double()),
            "mm_t": (torch.mm(b.t(), a.t()), lambda: (a.double() @ b.double()).t()),
            "addmm": (torch.addmm(c, a, b, beta=0.5, alpha=2.0),
                      lambda: 0.5 * c.double() + 2.0 * (a.double() @ b.double())),
            "linear3d": (F.linear(a.view(3, 43, 255), b.t(), c),
                         lambda: (a.double() @ b.double() + c.double()).view(3, 43, 63)),
            "bmm": (torch.bmm(ba, bb), lambda: ba.double() @ bb.double()),
            "baddbmm": (torch.baddbmm(bc, ba, bb, beta=-1.0), lambda: -bc.double() + ba.double() @ bb.double()),
            "mm_out": (torch.mm(a, b, out=torch.empty(129, 63, device="cuda")), lambda: a.double() @ b.double()),
        }
        torch.cuda.synchronize()
        s = gt.stats()  # the float64 references below fall through to torch: count before them
    for name, (y, ref) in got.items():
        r = check.compare(y, ref(), 255)
        assert r.correct, (name, r)
    assert all(v["torch"] == 0 for v in s.values()), s
    assert s["mm"]["gemmlab"] >= 2 and s["addmm"]["gemmlab"] >= 2 and s["bmm"]["gemmlab"] == 1


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64], ids=str)
def test_gpu_other_dtypes_fall_through_bit_for_bit(gpu, dtype):
    a, b, c = (t.to(dtype) for t in (gpu_rnd(64, 96), gpu_rnd(96, 32), gpu_rnd(32)))
    want = [torch.mm(a, b), torch.addmm(c, a, b), a @ b]
    with gt.enable():
        got = [torch.mm(a, b), torch.addmm(c, a, b), a @ b]
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    assert gt.stats()["mm"] == {"gemmlab": 0, "torch": 2} and gt.stats()["addmm"]["gemmlab"] == 0


@pytest.mark.gpu
def test_gpu_transformer_encoder_trains_like_torch_under_enable(gpu):
    """The model unchanged: losses over a few Adam steps equal torch's (FP32 cuBLAS) within 1e-5
    relative, with every float32 GEMM on gemmlab (strict: none refused)."""
    x = torch.randn(8, 64, 128, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    y = torch.randn(8, 64, 128, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    want = train(encoder(128, 2, device="cuda"), x, y, 5)
    with gt.enable(strict=True):
        got = train(encoder(128, 2, device="cuda"), x, y, 5)
    torch.cuda.synchronize()
    assert float(((got - want).abs() / want.abs()).max()) <= 1e-5, (got, want)
    s = gt.stats()
    assert s["addmm"]["gemmlab"] > 0 and s["mm"]["gemmlab"] > 0, s
    assert all(v["torch"] == 0 for v in s.values()), s


@pytest.mark.gpu
def test_gpu_cuda_graph_capture_and_replay_under_enable(gpu):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 32)).cuda()
    x = gpu_rnd(24, 64)
    with gt.enable(strict=True), torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            model(x)                                     # warm-up: compile, load, plan before capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = model(x)
    n = gt.stats()["addmm"]["gemmlab"]
    w1, b1, w2, b2 = (p.detach().double() for p in model.parameters())
    for seed in range(2):                                # replayed with gemmlab off: the graph holds gemmlab's kernels
        x.copy_(gpu_rnd(24, 64, seed=seed + 1))
        graph.replay()
        torch.cuda.synchronize()
        ref = torch.relu(x.double() @ w1.t() + b1) @ w2.t() + b2
        assert rel(y, ref) <= 1e-5
    assert n == 4 and gt.stats()["addmm"]["torch"] == 0


@pytest.mark.gpu
def test_gpu_compile_reduce_overhead_under_enable(gpu):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32)).cuda()
    torch._dynamo.reset()
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    w1, b1, w2, b2 = (p.detach().double() for p in model.parameters())
    runs = []
    with gt.enable(strict=True), torch.no_grad():
        for seed in range(4):                            # warm-up, record, replays
            x = gpu_rnd(24, 64, seed=seed)
            runs.append((x, compiled(x).clone()))
        torch.cuda.synchronize()
        s = gt.stats()                                   # before the float64 references (which fall through)
    for seed, (x, y) in enumerate(runs):
        ref = F.gelu(x.double() @ w1.t() + b1) @ w2.t() + b2
        assert rel(y, ref) <= 1e-5, seed
    assert s["mm.out"]["gemmlab"] + s["addmm.out"]["gemmlab"] + s["mm"]["gemmlab"] + s["addmm"]["gemmlab"] >= 2, s
    assert all(v["torch"] == 0 for v in s.values()), s


@pytest.mark.gpu
def test_gpu_precision_tf32x3_under_enable(gpu):
    a, b = gpu_rnd(256, 512), gpu_rnd(512, 192)
    try:
        gemmlab.matmul(a, b, precision="tf32x3")
    except gemmlab.GemmlabError as e:
        pytest.skip(f"gemmlab has no tf32x3 stage for this yet: {e}")
    with gt.enable(precision="tf32x3", strict=True):
        y = a @ b
    torch.cuda.synchronize()
    r = check.compare(y, a.double() @ b.double(), 512)
    assert r.correct, r
    assert gt.stats()["mm"]["gemmlab"] == 1
