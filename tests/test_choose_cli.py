"""``gemmlab choose``: what stage="auto" picks for a shape on a GPU and why, read from the runtime
(heuristics.choose, the tables, the waves model), never decided again; no GPU needed."""
import json

import pytest

from gemmlab import cli, heuristics
from gemmlab.analysis import choose
from gemmlab.heuristics import choice, model, space, table
from gemmlab.jit.compiler import compiler_version
from gemmlab.problem import Problem
from gemmlab.stages import get

H200 = model.Gpu(sms=132, cc=90)
IDENT = table.identity("NVIDIA H200", "sm_90", compiler_version())

# one shape per step of the choice (on the shipped H200 table): the model on 4-byte copies, a
# tuned bucket (unaligned, batched), the nearest neighbours, the model where it refuses their tile,
# a repacked problem, skinny, tensor cores
CASES = [(1697, 171, 1055, 1, "nt", "ieee"), (333, 555, 777, 8, "tt", "ieee"), (1500, 1500, 1500, 1, "nn", "ieee"),
         (4096, 768, 768, 1, "nn", "ieee"), (3333, 1111, 2222, 1, "nt", "ieee"), (16, 4096, 4096, 1, "nn", "ieee"),
         (1024, 1024, 1024, 1, "nn", "tf32")]


def run(capsys, *args):
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as e:
        code = e.code
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _runtime(M, N, K, batch, layout, precision):
    p = Problem.dense(M, N, K, layout, batch, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    return p, heuristics.choose(p, H200, IDENT, precision=precision)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}x{c[3]} {c[4]} {c[5]}" for c in CASES])
def test_the_report_is_the_runtimes_choice(case):
    M, N, K, batch, layout, precision = case
    p, c = _runtime(*case)
    rep = choose.report(M, N, K, batch, layout, precision=precision)
    shown = {k: v for k, v in rep["choice"].items() if k != "label"}
    if "tail" in shown:  # the tail's tile named as the choice's is
        assert shown["tail"].pop("label") == choose._label(c.tail.spec.id, c.tail.config, H200.cc)
    assert shown == c.describe()
    step = rep["why"]["step"]
    if c.spec.id in ("s12", "s13"):
        assert step == "tensor cores"
    else:
        assert step == c.source
    if step == "tuned":  # the entry the runtime read, with what it measured
        seen = p.repacks(c.repack, c.a_transpose)[1]
        e = table.lookup(IDENT, M, N, K, batch, seen.layout, seen.operands_aligned() or c.repack)
        assert rep["why"]["entry"]["time_us"] == pytest.approx(1e3 * e["time_ms"], abs=0.05)
        assert (e["stage"], get(e["stage"]).config(e.get("config") or {})) == (c.spec.id, c.config)
        measured = rep["why"]["entry"]["measured"]  # the tuner's shortlist, fastest first: its pick leads
        assert len(measured) > 1 and measured[0][2] == rep["why"]["entry"]["time_us"]
        assert [m[2] for m in measured] == sorted(m[2] for m in measured)
    if step == "nearest":  # the neighbours that voted, nearest first, and the tile is one of theirs
        near = rep["why"]["neighbours"]
        assert near and [n["distance"] for n in near] == sorted(n["distance"] for n in near)
        assert any(get(n["stage"]).config(n["config"]) == c.config for n in near)
    # operands TMA cannot take: the plan's stand-in, on 4-byte copies
    if c.spec.aligned_path and not p.repacks(c.repack, c.a_transpose)[1].operands_aligned():
        assert rep["runs"]["stage"] == "s10"
        assert rep["runs"]["config"] == dict(c.spec.fallback(c.config, p)[1])
    else:
        assert rep["runs"] is None
    # the model's ranking marks the pick, once, with the model's own time for it
    if step in ("tuned", "nearest", "heuristic") and c.spec.id in {x.stage for x in space.SM90}:
        chosen = [r for r in rep["ranking"] if r["chosen"]]
        assert len(chosen) == 1 and chosen[0]["split_k"] == c.split_k
        aligned = p.operands_aligned() or c.repack
        mine = model.predict(space.candidate_for(c.spec.id, c.config), M, N, K, batch, c.split_k, H200,
                             aligned=aligned, problem=None if aligned else p)
        assert chosen[0]["us"] == pytest.approx(mine.seconds * 1e6, abs=0.05)
        best = model.best(M, N, K, batch, H200, aligned=aligned, problem=None if aligned else p)
        assert rep["ranking"][0]["us"] == pytest.approx(best.seconds * 1e6, abs=0.05)


def test_the_steps_that_decided_are_all_covered():
    steps = {choose.report(*c[:5], precision=c[5])["why"]["step"] for c in CASES}
    assert steps == {"tuned", "nearest", "heuristic", "skinny", "tensor cores"}


def test_the_heuristics_reason_follows_the_rules(monkeypatch):
    """Why no neighbour: 4-byte problems take none (NEAREST_ALIGNED_ONLY); with that rule off the
    reason is what the table holds."""
    assert "4-byte copies take no neighbour" in choose.report(1697, 171, 1055, 1, "nt")["why"]["detail"]
    assert "within 1 octave" in choose.report(3333, 1111, 2222, 1, "nt")["why"]["detail"]
    # 4096x512x512's 64x256 is 1.23x the model's best at 4096x768x768
    assert "more than 1.15x the model's best" in choose.report(4096, 768, 768, 1, "nn")["why"]["detail"]
    monkeypatch.setattr(choice, "NEAREST_MODEL_SLACK", 0.0)  # every neighbour's tile is refused
    rep = choose.report(1500, 1500, 1500, 1, "nn")
    assert rep["why"]["step"] == "heuristic"
    assert "more than 0x the model's best" in rep["why"]["detail"]


def test_the_reason_names_the_call_layouts_entries_a_transposed_a_leaves_unused(monkeypatch):
    """256x8192x4096 nt has an nt entry (the wide suite) and no tt one: with A transposed (N >=
    1536) the entry, timed without the transpose, is not used (choice.A_TRANSPOSE_WITHOUT_ITS_ENTRY);
    the report says so, and with the old rule the entry decides."""
    rep = choose.report(256, 8192, 4096, 1, "nt")
    assert rep["choice"]["a_transpose"] and rep["why"]["step"] == "heuristic"
    assert "no tuned tt bucket" in rep["why"]["detail"]
    assert "the nt table's entries, timed without A transposed, are not used" in rep["why"]["detail"]
    monkeypatch.setattr(choice, "A_TRANSPOSE_WITHOUT_ITS_ENTRY", None)
    rep = choose.report(256, 8192, 4096, 1, "nt")
    assert rep["why"]["step"] == "tuned" and not rep["choice"]["a_transpose"]


def test_an_entry_used_off_its_shape_shows_the_models_regret(monkeypatch):
    """1792^3 nt reads the tn entry measured at 2048^3 (256x128: 0.97 of a wave there, 0.74 here):
    the report gives choice.off_shape_regret for it; with TUNED_MODEL_SLACK on (1.15) the entry is
    passed over, and the report says so with the entry; at the entry's own shape, no such line."""
    monkeypatch.setattr(choice, "TUNED_MODEL_SLACK", None)
    rep = choose.report(1792, 1792, 1792, 1, "nt")
    assert rep["why"]["step"] == "tuned" and rep["why"]["entry"]["shape"][:3] == [2048, 2048, 2048]
    assert 1.15 < rep["why"]["off_shape_regret"] < 1.3
    assert f"{rep['why']['off_shape_regret']}x further behind" in choose.format_text(rep)
    assert choose.report(2048, 2048, 2048, 1, "tn")["why"]["off_shape_regret"] is None
    monkeypatch.setattr(choice, "TUNED_MODEL_SLACK", 1.15)
    rep = choose.report(1792, 1792, 1792, 1, "nt")
    assert rep["why"]["step"] != "tuned" and rep["why"]["passed_over"]["shape"][:3] == [2048, 2048, 2048]
    text = choose.format_text(rep)
    assert "no tuned bucket" not in text and "passed over" in text


def test_the_stand_in_line_names_the_moved_edges(capsys, monkeypatch):
    """With s11's stand-in moving its edge blocks inside (STAND_IN_EDGE_SHIFT), the runs line says
    so, and the json's config carries it; on (the runtime since 2026-12-05) it does, off neither does."""
    from gemmlab.stages import s11_tma

    for on in (False, True):
        monkeypatch.setattr(s11_tma, "STAND_IN_EDGE_SHIFT", on)
        code, out, _ = run(capsys, "choose", "333x555x777x8", "--layout", "tt")
        line = next(x for x in out.splitlines() if x.startswith("  runs: s10 "))
        assert code == 0 and ("edge_shift" in line) == on, line
        assert choose.report(333, 555, 777, 8, "tt")["runs"]["config"]["edge_shift"] == int(on)


def test_the_command_prints_each_entry_and_its_json(capsys):
    code, out, err = run(capsys, "choose", "1697x171x1055:nt,333x555x777x8:tt,1500x1500x1500", "--top", "2")
    assert code == 0 and err == ""
    blocks = out.strip().split("\n\n")
    heads = [b.splitlines()[0].split(",")[0] for b in blocks]
    assert heads == ["1697x171x1055 nt", "333x555x777x8 tt", "1500x1500x1500 nn"]
    assert "  <- auto" in blocks[0] and "runs: s10 64x64" in blocks[0]
    code, out, _ = run(capsys, "choose", "1697x171x1055", "--layout", "nt", "--json")
    rep = json.loads(out)[0]
    assert code == 0 and rep["layout"] == "nt" and rep["choice"] == choose.report(1697, 171, 1055, 1, "nt")["choice"]
    code, out, _ = run(capsys, "choose", "64x64x64", "--gpu", "Some GPU", "--arch", "sm_80", "--sms", "108", "--json")
    rep = json.loads(out)[0]
    assert code == 0 and rep["choice"]["stage"] == "s10" and rep["why"]["step"] == "heuristic"  # no table: the model


@pytest.mark.parametrize("args, needle", [
    (["12x3"], "SPEC: '12x3' is not a shape"),
    (["64x64x64:xy"], "layout 'xy' is not one of nn, nt, tn, tt"),
    (["nosuch"], "unknown suite 'nosuch'"),
    (["64x64x64", "--sms", "0"], "--sms 0"),
    (["64x64x64", "--top", "x"], "--top 'x'"),
    (["64x64x64", "--arch", "90"], "--arch '90': expected sm_NN"),
])
def test_bad_arguments_are_one_line_naming_the_argument(capsys, args, needle):
    code, out, err = run(capsys, "choose", *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("gemmlab: ") and needle in err, err
