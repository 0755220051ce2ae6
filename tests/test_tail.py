"""Wave quantization answered in the plan (plan.Tail): D's rows or columns cut into a first part of
whole waves of one tile and a tail with a plan of its own, two GEMM kernels on views of the same
operands. CPU: the views' offsets (Problem.part), the waves model's cut (model.tail_split), when
the heuristic takes it (choice.TAIL_MIN_GAIN and its bounds) and what `gemmlab choose` says. GPU:
plans with a cut, every layout, odd shapes, batched, a separate c, c in place, against float64."""
from dataclasses import replace

import pytest

from gemmlab.heuristics import choice, model
from gemmlab.heuristics.choice import choose
from gemmlab.heuristics.table import identity
from gemmlab.plan import Choice, Tail
from gemmlab.problem import Problem
from gemmlab.stages import get

H200 = model.Gpu(sms=132, clock_hz=1.98e9, cc=90)
ALIGNED = 1 << 40


def _dense(M, N, K, layout="nn", batch=1):
    return Problem.dense(M, N, K, layout, batch, a_ptr=ALIGNED, b_ptr=2 * ALIGNED, d_ptr=3 * ALIGNED)


def _no_table():
    return identity("no such GPU", "sm_90", "nvrtc-13.0")


# ---- the views ----------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_part_rows_moves_a_d_and_c_by_whole_rows(layout):
    p = replace(_dense(300, 200, 50, layout, batch=3), c_rs=7, c_cs=300 * 7, c_bs=10**5)
    sub, offs = p.part("m", 128, 300)
    assert (sub.M, sub.N, sub.K) == (172, 200, 50)
    assert offs == {"a": 4 * 128 * p.a_rs, "b": 0, "d": 4 * 128 * p.ldd, "c": 4 * 128 * 7}
    assert (sub.a_ptr, sub.b_ptr, sub.d_ptr) == (p.a_ptr + offs["a"], p.b_ptr, p.d_ptr + offs["d"])
    # element (m, k) of the part's A is element (m + 128, k) of the whole, in every batch
    for m, k, bt in ((0, 0, 0), (171, 49, 2), (5, 7, 1)):
        assert sub.a_ptr + 4 * (m * sub.a_rs + k * sub.a_cs + bt * sub.a_bs) == \
            p.a_ptr + 4 * ((m + 128) * p.a_rs + k * p.a_cs + bt * p.a_bs)
    first, offs0 = p.part("m", 0, 128)
    assert first.M == 128 and first.a_ptr == p.a_ptr and set(offs0.values()) == {0}


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_part_columns_moves_b_d_and_c_by_whole_columns(layout):
    p = _dense(300, 200, 50, layout)
    sub, offs = p.part("n", 64, 200)
    assert (sub.M, sub.N) == (300, 136)
    assert offs == {"a": 0, "b": 4 * 64 * p.b_cs, "d": 4 * 64, "c": 4 * 64}  # c is D itself
    for k, n in ((0, 0), (49, 135), (3, 9)):
        assert sub.b_ptr + 4 * (k * sub.b_rs + n * sub.b_cs) == p.b_ptr + 4 * (k * p.b_rs + (n + 64) * p.b_cs)


@pytest.mark.parametrize("args", [("k", 0, 10), ("m", -1, 10), ("m", 10, 10), ("n", 0, 201), ("m", 0, 301)])
def test_part_refuses_what_is_not_a_part(args):
    with pytest.raises(ValueError):
        _dense(300, 200, 50).part(*args)


# ---- the model's cut ------------------------------------------------------------------------------
def test_tail_split_fills_whole_waves_and_is_faster_where_the_waves_are_quantized():
    cut = model.tail_split(5000, 5000, 5000, 1, H200)
    assert cut is not None
    bm, bn = cut.first.candidate.tile()
    step = bm if cut.axis == "m" else bn
    assert cut.start % step == 0 and 0 < cut.start < 5000
    # the first part's blocks fill whole waves, or fall short of them by less than one tile row
    capacity = H200.sms * cut.first.candidate.blocks_per_sm()
    line = -(-5000 // (bn if cut.axis == "m" else bm))
    assert cut.first.waves >= 1 and (-cut.first.blocks) % capacity < line
    assert cut.first.split_k == 1
    single = model.best(5000, 5000, 5000, 1, H200)
    assert cut.seconds < single.seconds
    assert cut.seconds == pytest.approx(cut.first.seconds + cut.rest.seconds + model.LAUNCH_S)


def test_tail_split_none_where_no_tile_runs_a_quantized_wave():
    assert model.tail_split(256, 256, 4096, 1, H200) is None  # less than one wave on every best tile


def test_heuristic_takes_the_cut_only_when_on_and_worth_it(monkeypatch):
    monkeypatch.setattr(choice, "TAIL_MIN_K", 0)  # K = 448: below the runtime's bound (the test after)
    p = _dense(2789, 8100, 448)
    monkeypatch.setattr(choice, "TAIL_MIN_GAIN", None)
    assert choose(p, H200, _no_table()).tail is None
    monkeypatch.setattr(choice, "TAIL_MIN_GAIN", 1.05)
    c = choose(p, H200, _no_table())
    cut = model.tail_split(2789, 8100, 448, 1, H200)
    assert c.tail == Tail(cut.axis, cut.start, cut.rest.candidate.spec(), cut.rest.candidate.config(),
                          cut.rest.split_k)
    assert c.split_k == 1 and c.config == cut.first.candidate.config() and c.source == "heuristic"
    single = model.rank(2789, 8100, 448, 1, H200)[0]
    assert c.describe()["tail"] == {"axis": cut.axis, "start": cut.start, "stage": "s11",
                                    "config": cut.rest.candidate.config(), "split_k": cut.rest.split_k,
                                    "us": round(cut.seconds * 1e6, 1), "single_us": round(single.seconds * 1e6, 1)}
    assert cut.seconds * choice.TAIL_MIN_GAIN <= single.seconds
    monkeypatch.setattr(choice, "TAIL_MIN_GAIN", 10.0)  # no cut is that much faster
    assert choose(p, H200, _no_table()).tail is None
    monkeypatch.setattr(choice, "TAIL_MIN_GAIN", 1.0)
    assert choose(_dense(4096, 4096, 4096), H200, _no_table()).tail is None  # 3.88 waves: no gain
    # no cut for a caller's config, without a workspace, or on operands TMA cannot take
    monkeypatch.setattr(choice, "TAIL_MIN_GAIN", 1.05)
    assert choose(p, H200, _no_table(), config={"k_unroll": 4}).tail is None
    assert choose(p, H200, _no_table(), allow_workspace=False).tail is None
    odd = Problem.dense(2789, 8099, 449, "nn", a_ptr=ALIGNED, b_ptr=2 * ALIGNED, d_ptr=3 * ALIGNED)
    assert not odd.operands_aligned()
    assert choice.tail_cut(odd, H200, model.rank(2789, 8099, 449, 1, H200), False, True) is None


def test_the_cut_is_on_by_default_within_its_k_and_batch_bounds(monkeypatch):
    """On as shipped (TAIL_MIN_GAIN 1.05, also over the neighbours' plan), from K = TAIL_MIN_K on
    and for one matrix only; each bound lifted gives the cut back."""
    assert choice.TAIL_MIN_GAIN is not None and choice.TAIL_OVER_NEAREST
    assert choice.TAIL_MIN_K > 448 and not choice.TAIL_BATCHED
    assert choose(_dense(2789, 8100, 448), H200, _no_table()).tail is None          # K below the bound
    assert choose(_dense(2789, 8100, choice.TAIL_MIN_K), H200, _no_table()).tail is not None
    monkeypatch.setattr(choice, "TAIL_MIN_K", 0)
    assert choose(_dense(2789, 8100, 448), H200, _no_table()).tail is not None
    # batched: 160^3 x 100 is cut only where TAIL_BATCHED allows it
    batched = _dense(160, 160, 160, "nt", batch=100)
    ranked = model.rank(160, 160, 160, 100, H200)
    assert model.tail_split(160, 160, 160, 100, H200, ranked=ranked) is not None
    assert choice.tail_cut(batched, H200, ranked, True, True) is None
    monkeypatch.setattr(choice, "TAIL_BATCHED", True)
    monkeypatch.setattr(choice, "TAIL_MIN_GAIN", 1.0)
    assert choice.tail_cut(batched, H200, ranked, True, True) is not None


def test_the_cut_over_the_neighbours_plan_follows_tail_over_nearest(monkeypatch):
    """5000^3 nn on the H200's shipped table: its tuned neighbours choose the tile; the cut is taken
    over their plan only with TAIL_OVER_NEAREST."""
    from gemmlab.heuristics.table import identity as ident

    h200 = ident("NVIDIA H200", "sm_90", "nvrtc-13.0")
    p = _dense(5000, 5000, 5000)
    on = choose(p, H200, h200)
    assert on.source == "nearest" and on.tail is not None and on.split_k == 1
    monkeypatch.setattr(choice, "TAIL_OVER_NEAREST", False)
    off = choose(p, H200, h200)
    assert off.source == "nearest" and off.tail is None


def test_below_its_k_the_cut_keeps_a_tile_at_most_twice_the_plans_it_replaces(monkeypatch):
    """2896x1897x572 tt on the H200's shipped table (measured 0.90x with the cut): the neighbours'
    64x128 would give way to a first part of 128x256, four times its elements, at K = 572, below
    TAIL_LARGER_TILE_MIN_K; without the bound it is cut. From that K on the same cut is allowed."""
    from gemmlab.heuristics.table import identity as ident

    h200 = ident("NVIDIA H200", "sm_90", "nvrtc-13.0")
    assert 572 < choice.TAIL_LARGER_TILE_MIN_K
    kept = choose(_dense(2896, 1897, 572, "tt"), H200, h200)
    assert kept.source == "nearest" and kept.tail is None
    monkeypatch.setattr(choice, "TAIL_LARGER_TILE_MIN_K", 0)
    cut = choose(_dense(2896, 1897, 572, "tt"), H200, h200)
    assert cut.tail is not None
    first = cut.config["block_m"] * cut.config["block_n"]
    assert first > 2 * kept.config["block_m"] * kept.config["block_n"]
    # the bound is on K alone: the same ranking at K = TAIL_LARGER_TILE_MIN_K keeps the cut
    monkeypatch.setattr(choice, "TAIL_LARGER_TILE_MIN_K", 572)
    assert choose(_dense(2896, 1897, 572, "tt"), H200, h200).tail is not None


def test_choose_cli_says_where_the_cut_is(monkeypatch):
    from gemmlab.analysis import choose as choose_mod

    monkeypatch.setattr(choice, "TAIL_MIN_GAIN", 1.05)
    monkeypatch.setattr(choice, "TAIL_MIN_K", 0)
    rep = choose_mod.report(2789, 8100, 448, 1, "nn", gpu_name="no such GPU")
    t = rep["choice"]["tail"]
    text = choose_mod.format_text(rep)
    what = "rows" if t["axis"] == "m" else "columns"
    assert f"on D's {what} before {t['start']} (whole waves)" in text
    assert f"then D's {what} from {t['start']} on: s11 {t['label']}" in text
    assert t["us"] < t["single_us"]


# ---- GPU ------------------------------------------------------------------------------------------
def _cut_choice(p: Problem, axis: str, frac: float, tail_cfg: dict, split: int) -> Choice:
    """s11 on the first part (its default tile), ``tail_cfg`` with ``split`` on the rest, cut at
    ``frac`` of the axis rounded down to 64."""
    extent = p.M if axis == "m" else p.N
    start = max(64, int(extent * frac) // 64 * 64)
    s11 = get("s11")
    return Choice(s11, s11.default_config, 1, False, "heuristic",
                  tail=Tail(axis, start, s11, s11.config(tail_cfg), split))


SMALL = {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3}
MID = {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2}


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K,axis,frac,tail_cfg,split,batch", [
    (1000, 1100, 900, "m", 0.7, SMALL, 1, None),
    (1000, 1100, 900, "n", 0.5, MID, 3, None),     # split-K in the tail (a cluster or the reduce)
    (777, 1555, 333, "m", 0.4, MID, 2, None),      # odd: the tail's tiles cut by the edges
    (513, 1031, 1027, "n", 0.8, SMALL, 5, None),
    (300, 260, 200, "m", 0.5, SMALL, 1, 6),        # batched: every matrix cut the same way
])
def test_gpu_cut_plans_match_float64(monkeypatch, layout, M, N, K, axis, frac, tail_cfg, split, batch):
    """alpha and beta with a separate c, into a NaN-poisoned out; the plan holds the tail's kernel."""
    from gemmlab import api, dispatch
    from gemmlab.check import check_stage

    seen = []

    def fixed(p, dev=0, **kw):
        c = _cut_choice(p, axis, frac, tail_cfg, split)
        seen.append(c)
        return c

    monkeypatch.setattr(dispatch, "choose", fixed)
    api.clear_plan_cache()
    try:
        r = check_stage("auto", M, N, K, layout, batch=batch)
    finally:
        api.clear_plan_cache()
    assert seen, "auto did not ask dispatch.choose"
    assert r.correct, (seen[-1].tail, r)


@pytest.mark.gpu
def test_gpu_cut_plan_with_c_in_place_and_a_column_major_out(monkeypatch):
    import torch

    import gemmlab
    from gemmlab import api, dispatch
    from gemmlab.check import compare

    monkeypatch.setattr(dispatch, "choose", lambda p, dev=0, **kw: _cut_choice(p, "m", 0.6, MID, 2))
    api.clear_plan_cache()
    try:
        M, N, K = 1000, 1100, 900
        a, b = torch.randn(M, K, device="cuda"), torch.randn(K, N, device="cuda")
        c = torch.randn(M, N, device="cuda")
        ref = 1.25 * (a.double() @ b.double()) - 0.5 * c.double()
        gemmlab.gemm(a, b, c, alpha=1.25, beta=-0.5, out=c)
        out_t = torch.full((N, M), float("nan"), device="cuda").t()  # column-major out: D^T = B^T A^T, cut too
        gemmlab.gemm(a, b, out=out_t)
        plan, _ = api.prepare(a, b, out=out_t)
        torch.cuda.synchronize()
        assert plan.choice.tail is not None and len(plan.kernels) >= 2, plan.kernels
        assert compare(c, ref, K).correct
        assert compare(out_t, a.double() @ b.double(), K).correct
    finally:
        api.clear_plan_cache()
