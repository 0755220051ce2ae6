"""Issue 16: gemmlab sweep over entries with their own layout and batch, and the `wide` suite.

CPU only, except the last test (marked gpu): the suite's properties, the ``MxNxK[xB][:LAYOUT]``
token syntax and its errors, the sweep's argument wiring, the report/CSV/plot of a hand-made
sweep document with several layouts and batched entries (its numbers are made up; the document
says "fixture": true), schema v2 arithmetic with batches, old v1 documents, and the batched
operand maker and per-matrix check on CPU tensors (skipped without torch).
"""
import argparse
import copy
import csv
import io
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gemmlab.bench import ladder, report, schema, stats, suites
from fakes import fixture_provenance

ROOT = Path(__file__).resolve().parents[1]
# A version-1 document as `gemmlab sweep` wrote it before batches and layouts per entry (the H200's
# held-out sweep at bcade7c; results/h200 now holds newer ones).
HELDOUT_DOC = ROOT / "tests" / "data" / "sweep_v1_heldout.json"


def gemmlab_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "gemmlab", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


# ---- the wide suite --------------------------------------------------------------------------

def test_wide_suite_size_layouts_and_batches():
    w = suites.WIDE_ENTRIES
    assert len(w) >= 60 and len(set(w)) == len(w)
    assert all(len(e) == 5 and e[4] in suites.LAYOUTS and min(e[:4]) >= 1 for e in w)
    per_layout = Counter(e[4] for e in w)
    assert set(per_layout) == set(suites.LAYOUTS) and min(per_layout.values()) >= 10, per_layout
    batched = [e for e in w if e[3] > 1]
    assert len(batched) >= 10 and len({e[4] for e in batched}) >= 2
    assert all(8 <= e[3] <= 128 and all(64 <= d <= 1024 for d in e[:3]) for e in batched)
    assert (128, 128, 64, 96) in {e[:4] for e in batched} and (128, 64, 128, 96) in {e[:4] for e in batched}


def test_wide_suite_covers_every_kind_of_shape():
    two_d = [e for e in suites.WIDE_ENTRIES if e[3] == 1]
    squares = {e[0] for e in two_d if e[0] == e[1] == e[2]}
    assert {256, 512, 1024, 2048, 4096, 8192} <= squares
    assert any(n % 256 for n in squares)                                     # odd squares (1000, ...)
    assert {e[2] for e in two_d if e[0] >= 2048} >= {512, 768, 1024, 2048, 3072, 4096}   # projections
    decode = [e for e in two_d if min(e[0], e[1]) <= 128 and max(e[0], e[1]) >= 4096 and e[2] >= 4096]
    assert {min(e[0], e[1]) for e in decode} >= {17, 32, 48, 64, 96, 128}
    assert any(e[0] >= 8192 and e[1] <= 256 for e in two_d) and any(e[1] >= 8192 and e[0] <= 256 for e in two_d)
    deep = [e for e in two_d if e[2] >= 16384 and max(e[0], e[1]) <= 1024]
    assert {e[2] for e in deep} >= {16384, 32768, 65536}
    assert (1001, 999, 1003) in {e[:3] for e in two_d} and (2047, 2049, 511) in {e[:3] for e in two_d}
    mid = [e for e in two_d if 1e9 <= stats.gemm_flops(*e[:3]) <= 1e10]
    assert len(mid) >= 5


def test_wide_suite_holds_no_heldout_shape_nor_bucket():
    """HELDOUT is the held-out check and must stay in no table: no wide shape is one of its
    shapes, and none falls in one of its tuning buckets (so tuning on wide cannot tune it)."""
    from gemmlab.heuristics import table

    held = set(suites.HELDOUT)
    assert not held & set(suites.WIDE)
    assert not held & {e[:4] for e in suites.WIDE_ENTRIES}
    held_buckets = {table.bucket(*s) for s in held}
    clash = [e for e in suites.WIDE_ENTRIES if table.bucket(*e[:4]) in held_buckets]
    assert not clash, clash


def test_own_and_grid_suites_keep_the_held_back_shapes_untuned():
    """OWN (our held-back shapes) and HELDOUT are measured, never tuned: GRID (the tuning grid) has
    no shape in one of their buckets, no shipped table holds one of their shapes (HELDOUT: not even
    a bucket, tests/test_sweep.py), and OWN repeats no HELDOUT or wide shape."""
    import json

    from gemmlab.heuristics import table

    own = {e[:4] for e in suites.OWN_ENTRIES}
    assert len(suites.OWN_ENTRIES) >= 16 and len(set(suites.OWN_ENTRIES)) == len(suites.OWN_ENTRIES)
    assert not own & set(suites.HELDOUT) and not own & set(suites.WIDE)
    assert {e[4] for e in suites.OWN_ENTRIES} == set(suites.LAYOUTS) and any(e[3] > 1 for e in suites.OWN_ENTRIES)
    guarded = {table.bucket(*s) for s in own | set(suites.HELDOUT)}
    clash = [e for e in suites.GRID_ENTRIES if table.bucket(*e[:4]) in guarded]
    assert not clash, clash
    tables = sorted((ROOT / "gemmlab" / "tune" / "tables").glob("*.json"))
    shapes = {tuple(e["shape"]) for t in tables for e in json.loads(t.read_text())["entries"]}
    assert not shapes & own


def test_grid_suite_covers_every_layout_unaligned_and_batched():
    g = suites.GRID_ENTRIES
    assert len(set(g)) == len(g) and all(e[4] in suites.LAYOUTS for e in g)
    per = Counter(e[4] for e in g)
    assert set(per) == set(suites.LAYOUTS) and min(per.values()) >= 10, per
    unaligned = [e for e in g if any(d % 4 for d in e[:3])]
    batched = [e for e in g if e[3] > 1]
    assert len(unaligned) >= 30 and len(batched) >= 20 and {e[3] for e in batched} >= {8, 16, 32, 64, 128}
    assert suites.parse_entries("grid") == list(g) and suites.parse_entries("own") == list(suites.OWN_ENTRIES)


def test_tune_still_gets_four_tuples_from_every_suite():
    for name in suites.SUITES:
        shapes = suites.parse(name)
        assert shapes and all(len(s) == 4 and all(isinstance(d, int) for d in s) for s in shapes), name
    wide = suites.parse("wide")
    assert wide == list(suites.WIDE) == list(dict.fromkeys(e[:4] for e in suites.WIDE_ENTRIES))
    assert (64, 64, 64, 128) in wide and len(wide) < len(suites.WIDE_ENTRIES)   # layouts dropped
    assert suites.parse("issue9") == list(suites.ISSUE9)                        # unchanged


def test_docs_state_the_wide_suite_counts():
    text = (ROOT / "docs" / "benchmark.md").read_text()
    w = suites.WIDE_ENTRIES
    per = Counter(e[4] for e in w)
    assert f"**`wide`**, the issue-16 suite: {len(w)} entries" in text
    assert f"(nn {per['nn']}, nt {per['nt']}, tn {per['tn']}, tt {per['tt']})" in text
    assert f"{sum(e[3] > 1 for e in w)}\nstrided-batched entries" in text


# ---- the token syntax ------------------------------------------------------------------------

def test_parse_entries_with_layouts_and_batches():
    got = suites.parse_entries("4096x4096x4096:NT, 64x64x64x128:tt,1000x999x3,4096x4096x4096:nt")
    assert got == [(4096, 4096, 4096, 1, "nt"), (64, 64, 64, 128, "tt"), (1000, 999, 3, 1, None)]
    assert suites.parse_entries("wide") == list(suites.WIDE_ENTRIES)
    assert suites.parse_entries("transformer:tn") == [s + ("tn",) for s in suites.TRANSFORMER]
    assert suites.parse_entries("issue9")[0] == (4096, 4096, 4096, 1, None)
    assert suites.text((64, 64, 64, 128, "tt")) == "64x64x64x128:tt" and suites.text((4, 5, 6, 1)) == "4x5x6"


@pytest.mark.parametrize("spec, message", [
    ("4096x4096x4096:nx", "'4096x4096x4096:nx': layout 'nx' is not one of nn, nt, tn, tt"),
    ("4096x4096x4096:", "'4096x4096x4096:': layout '' is not one of"),
    ("4096x4096:nt", "'4096x4096:nt' is not a shape"),
    ("1x2x3:nn:tt", "'1x2x3:nn:tt': layout 'nn:tt'"),
    ("widest:nt", "unknown suite 'widest'"),
    ("0x4x4:nn", "'0x4x4': every dimension must be positive"),
    ("1x2x3,,4x5x6:tt", "empty item"),
])
def test_parse_entry_errors_name_the_token(spec, message):
    with pytest.raises(suites.ShapeError, match=re.escape(message)):
        suites.parse_entries(spec)


def test_tune_parse_refuses_a_layout_suffix():
    with pytest.raises(suites.ShapeError, match=re.escape("'4096x4096x4096:nt': a :LAYOUT suffix is for gemmlab sweep")):
        suites.parse("1024x1024x1024,4096x4096x4096:nt")
    with pytest.raises(suites.ShapeError, match="layout 'xx'"):     # a bad layout is named as such
        suites.parse("4096x4096x4096:xx")


def test_resolve_default_cross_and_duplicates():
    entries = [(8, 8, 8, 1, None), (8, 8, 8, 1, "nt"), (4, 4, 4, 16, "tt"), (2, 3, 4)]
    assert suites.resolve(entries, "nn") == [(8, 8, 8, 1, "nn"), (8, 8, 8, 1, "nt"), (4, 4, 4, 16, "tt"),
                                             (2, 3, 4, 1, "nn")]
    assert suites.resolve(entries, "nt") == [(8, 8, 8, 1, "nt"), (4, 4, 4, 16, "tt"), (2, 3, 4, 1, "nt")]
    crossed = suites.resolve(entries, "nn", ["tn", "nn"])
    assert crossed == [(8, 8, 8, 1, "tn"), (8, 8, 8, 1, "nn"), (4, 4, 4, 16, "tn"), (4, 4, 4, 16, "nn"),
                       (2, 3, 4, 1, "tn"), (2, 3, 4, 1, "nn")]
    s = ladder.Settings(problems=[(8, 8, 8), (8, 8, 8, 4), (8, 8, 8, 1, "tt")], layout="nt")
    assert s.entries() == [(8, 8, 8, 1, "nt"), (8, 8, 8, 4, "nt"), (8, 8, 8, 1, "tt")]


# ---- the command's arguments -----------------------------------------------------------------

def _sweep_args(*argv):
    from gemmlab.bench import commands

    parser = argparse.ArgumentParser()
    commands.register(parser.add_subparsers())
    return parser.parse_args(["sweep", *argv])


def test_sweep_entries_from_the_arguments():
    from gemmlab.bench.commands import sweep_entries

    wide = sweep_entries(_sweep_args("--suite", "wide"))
    assert wide == list(suites.WIDE_ENTRIES)
    assert sweep_entries(_sweep_args("--suite", "wide", "--layout", "tt")) == list(suites.WIDE_ENTRIES)  # own layouts win
    got = sweep_entries(_sweep_args("--shapes", "256x256x256,64x64x64x8:tt", "--layout", "tn"))
    assert got == [(256, 256, 256, 1, "tn"), (64, 64, 64, 8, "tt")]
    got = sweep_entries(_sweep_args("--shapes", "256x256x256,64x64x64x8:tt", "--layouts", "nn,nt"))
    assert got == [(256, 256, 256, 1, "nn"), (256, 256, 256, 1, "nt"), (64, 64, 64, 8, "nn"), (64, 64, 64, 8, "nt")]
    crossed = sweep_entries(_sweep_args("--suite", "transformer", "--layouts", "nn,nt,tn,tt"))
    assert len(crossed) == 4 * len(suites.TRANSFORMER)
    assert sweep_entries(_sweep_args())[0] == (4096, 4096, 4096, 1, "nn")                # issue9, nn
    assert sweep_entries(_sweep_args("--suite", "heldout:nt"))[0] == (4096, 768, 768, 1, "nt")


@pytest.mark.parametrize("args, message", [
    (("--layout", "nt", "--layouts", "nn,tt"), "give --layout (the layout of entries without their own) or --layouts"),
    (("--layouts", "nn,xx"), "--layouts: 'xx' is not a layout"),
    (("--layouts", ","), "--layouts ','"),
    (("--shapes", "64x64x64x128:tx"), "--shapes: '64x64x64x128:tx': layout 'tx' is not one of nn, nt, tn, tt"),
    (("--shapes", "4096x4096:nt"), "--shapes: '4096x4096:nt' is not a shape"),
    (("--suite", "wide:xy"), "--suite: 'wide:xy': layout 'xy'"),
    (("--suite", "4096x4096x4096"), "--suite: unknown suite '4096x4096x4096'"),
])
def test_sweep_argument_errors_exit_2_with_one_line(args, message):
    r = gemmlab_cli("sweep", *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


@pytest.mark.parametrize("args", [("--suite", "wide"), ("--shapes", "64x64x64x128:tt,256x256x256", "--layouts", "nn,tt"),
                                  ("--suite", "wide", "--layout", "tn")])
def test_sweep_with_batches_and_layouts_gets_as_far_as_the_gpu(args):
    """Batched entries and layouts pass the argument checks (no more "2-D problems only")."""
    r = gemmlab_cli("sweep", *args)
    assert r.returncode == 2 and r.stderr.startswith("gemmlab: no CUDA GPU is available"), r.stderr


def test_tune_refuses_a_layout_token_and_takes_the_wide_suite():
    r = gemmlab_cli("tune", "--shapes", "4096x4096x4096:nt")
    assert r.returncode == 2 and "'4096x4096x4096:nt'" in r.stderr and "--layouts" in r.stderr
    r = gemmlab_cli("tune", "--shapes", "wide")
    assert r.returncode == 2 and "no CUDA GPU" in r.stderr, r.stderr


# ---- a hand-made sweep document with layouts and batches --------------------------------------

# (m, n, k, batch, layout): (auto TFLOPS or None: failed, cuBLAS TFLOPS, Triton TFLOPS or None: failed)
# Triton has no row number for batched entries: its row is skipped.
ENTRIES = {
    (4096, 4096, 4096, 1, "nn"): (49.0, 51.0, 45.0),
    (4096, 4096, 4096, 1, "tt"): (47.0, 50.0, 44.0),                 # the same shape, another layout
    (1000, 1000, 1000, 1, "nt"): (30.0, 33.0, None),
    (2047, 2049, 511, 1, "tn"): (40.0, 38.0, 30.0),
    (64, 64, 64, 128, "tt"): (10.0, 12.5, None),
    (128, 128, 64, 96, "nt"): (7.5, 10.0, None),
    (512, 512, 512, 16, "nn"): (None, 30.0, None),                   # gemmlab failed its check here
    (1024, 1024, 1024, 8, "tn"): (35.0, 36.0, None),
}


def _row(stage, name, kind, entry, tflops, skipped=None, config=None):
    m, n, k, batch, layout = entry
    row = {"stage": stage, "name": name, "kind": kind, "adds": "", "notes": "", "expected_pct_cublas": None,
           "m": m, "n": n, "k": k, "batch": batch, "layout": layout, "tflops": None, "vs_cublas": None,
           "rel_error": 1e-6, "rel_error_timed": 1e-6, "tolerance": 1e-5, "correct": tflops is not None,
           "config": config}
    if skipped:
        row.update(rel_error=None, rel_error_timed=None, tolerance=None, correct=False, skipped=skipped)
        return row
    if tflops is None:
        row.update(correct=False, rel_error=0.3, error="failed check (alpha 0.5, beta 3): rel_error 0.3; not timed")
        return row
    ms = stats.gemm_flops(m, n, k, batch) / (tflops * 1e12) * 1e3
    row.update(tflops=tflops, time_ms=ms, time_ms_p20=ms * 0.99, time_ms_p80=ms * 1.01,
               tflops_p20=tflops / 1.01, tflops_p80=tflops / 0.99, reps=20, capped=False,
               sm_clock_mhz_before=1980, sm_clock_mhz_after=1980)
    return row


PLAN = {"stage": "s11", "config": {"block_m": 128, "block_n": 128, "block_k": 32}, "split_k": 1, "repack": False,
        "source": "heuristic", "kernels": ["gemmlab_s11_x"], "variant": {}, "workspace_bytes": 0}
SKIP = "the Triton baseline (gemmlab/bench/triton_gemm.py) runs 2-D problems only, not strided-batched ones"


def make_doc():
    rows = []
    for e, (auto, cub, tri) in ENTRIES.items():
        r = _row("tuned", "gemmlab auto", "stage", e, auto, config=PLAN)
        r["plan"] = PLAN
        rows += [r, _row("cublas", "cuBLAS (torch.mm)", "baseline", e, cub)]
        rows.append(_row("triton", "Triton (ieee)", "baseline", e, tri, skipped=SKIP if e[3] > 1 else None))
    prov = fixture_provenance("2026-12-02T00:00:00+00:00", "gemmlab sweep --suite wide")
    doc = {"schema": schema.SCHEMA, "kind": "sweep", "provenance": prov, "method": {},
           "problems": [{"m": m, "n": n, "k": k, "batch": b, "layout": lay} for (m, n, k, b, lay) in ENTRIES],
           "rows": ladder.finalize(rows, 132, 1980), "skipped": []}
    return schema.validate(doc)


@pytest.fixture
def doc():
    return make_doc()


def _geo(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def _ratios(select=lambda e: True):
    return {e: a / c for e, (a, c, _) in ENTRIES.items() if a and select(e)}


def _md_rows(md):
    lines = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| ---")]
    return [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines]


def test_schema_v2_counts_the_batch_in_the_flops(doc):
    assert doc["schema"] == "gemmlab.ladder/2"
    bad = copy.deepcopy(doc)
    r = next(r for r in bad["rows"] if r["stage"] == "cublas" and r["batch"] == 128)
    r["tflops"] = stats.tflops(stats.gemm_flops(r["m"], r["n"], r["k"]), r["time_ms"] / 1e3)  # batch forgotten
    r["vs_cublas"] = 1.0
    with pytest.raises(schema.SchemaError, match=re.escape("does not match 2·m·n·k·batch / time_ms")):
        schema.validate(bad)
    bad = copy.deepcopy(doc)
    next(r for r in bad["rows"] if r.get("skipped")).update(tflops=1.0, time_ms=1.0)
    with pytest.raises(schema.SchemaError, match="timed although skipped"):
        schema.validate(bad)
    bad = copy.deepcopy(doc)
    bad["rows"][0]["batch"] = 0
    with pytest.raises(schema.SchemaError, match="batch 0"):
        schema.validate(bad)


def test_finalize_keeps_layouts_and_batches_apart(doc):
    by = {(r["stage"],) + schema.problem_key(r): r for r in doc["rows"]}
    for e, (auto, cub, _) in ENTRIES.items():
        m, n, k, b, lay = e
        key = ("tuned", m, n, k, lay, b)
        assert by[("cublas", m, n, k, lay, b)]["vs_cublas"] == pytest.approx(1.0)
        assert by[key]["vs_cublas"] == (pytest.approx(auto / cub) if auto else None)


def test_sweep_markdown_has_batch_and_layout_columns_and_group_summaries(doc):
    md = report.markdown(doc)
    table = _md_rows(md)
    assert table[0] == list(report.SWEEP_COLUMNS)
    assert table[0][:5] == ["M", "N", "K", "batch", "layout"]
    body = table[1:]
    assert len(body) == len(ENTRIES)
    for cells, (e, (auto, cub, tri)) in zip(body, ENTRIES.items()):
        m, n, k, b, lay = e
        assert cells[:5] == [str(m), str(n), str(k), str(b), lay]
        assert cells[5] == (f"{auto:.2f}" if auto else "FAIL")
        assert cells[7] == f"{cub:.2f}"
        assert cells[8] == ("skip" if b > 1 else f"{tri:.2f}" if tri else "FAIL")
        assert cells[9] == (f"{auto / cub:.3f}" if auto else "—")
    assert "layouts nn, nt, tn, tt; 4 of 8 entries strided-batched" in md

    lines = md.splitlines()
    allr = _ratios()
    head = next(ln for ln in lines if ln.startswith("gemmlab auto / cuBLAS"))
    worst = min(allr, key=allr.get)
    assert head == (f"gemmlab auto / cuBLAS over {len(allr)} of {len(ENTRIES)} shape(s): geometric mean "
                    f"{_geo(allr.values()):.3f}, min {allr[worst]:.3f} ({suites.text(worst[:4])} {worst[4]})")
    for lay in suites.LAYOUTS:
        rs = _ratios(lambda e: e[4] == lay)
        of = sum(1 for e in ENTRIES if e[4] == lay)
        w = min(rs, key=rs.get)
        want = (f"* layout {lay}: over {len(rs)} of {of} entries: geometric mean {_geo(rs.values()):.3f}, "
                f"min {rs[w]:.3f} ({suites.text(w[:4])} {w[4]})")
        assert want in lines, (want, [ln for ln in lines if ln.startswith("* layout")])
    rs = _ratios(lambda e: e[3] > 1)
    assert (f"* batched: over 3 of 4 entries: geometric mean {_geo(rs.values()):.3f}, min {min(rs.values()):.3f} "
            "(128x128x64x96 nt)") in lines
    rs = _ratios(lambda e: e[3] == 1)
    assert f"* 2-D: over 4 of 4 entries: geometric mean {_geo(rs.values()):.3f}" in md
    # the skipped Triton rows are said once, not listed as errors; gemmlab's failure is explained
    assert md.count("runs 2-D problems only") == 1
    assert "Triton (ieee) skipped on 4 problem(s) (64³ ×128 (tt), 128×128×64 ×96 (nt), 512³ ×16 (nn), 1024³ ×8 (tn))" in md
    assert "gemmlab auto at 512³ ×16 (nn): failed check" in md


def test_sweep_plain_has_the_same_summaries(doc):
    text = report.plain(doc)
    lines = text.splitlines()
    head = next(ln for ln in lines if ln.split()[:1] == ["M"])
    assert head.split()[:5] == ["M", "N", "K", "batch", "layout"]
    body = [ln.split() for ln in lines if ln.split()[:1] and ln.split()[0].isdigit()]
    assert [(int(b[0]), int(b[1]), int(b[2]), int(b[3]), b[4]) for b in body] == list(ENTRIES)
    rs = _ratios(lambda e: e[4] == "tt")
    assert any(ln.strip().startswith(f"layout tt: over 2 of 2 entries: geometric mean {_geo(rs.values()):.3f}")
               for ln in lines)
    assert any(ln.strip().startswith("batched: over 3 of 4 entries") for ln in lines)


def test_ratio_groups_only_where_there_is_more_than_one_kind():
    rows = [{"m": 8, "n": 8, "k": 8, "layout": "nn", "batch": 1, "ratio": 0.5},
            {"m": 9, "n": 9, "k": 9, "layout": "nn", "batch": 1, "ratio": 2.0}]
    assert report.ratio_groups(rows) == []
    assert report.ratio_summary(rows)["geomean"] == pytest.approx(1.0)
    rows.append({"m": 8, "n": 8, "k": 8, "layout": "tt", "batch": 4, "ratio": None})
    names = [name for name, _ in report.ratio_groups(rows)]
    assert names == ["layout nn", "layout tt", "batched", "2-D"]
    assert dict(report.ratio_groups(rows))["batched"] is None           # none of them has a ratio
    lines = report.summary_lines(rows)
    assert lines[0].startswith("gemmlab auto / cuBLAS over 2 of 3 shape(s): geometric mean 1.000, min 0.500 (8x8x8 nn)")
    assert "layout tt: no entry has gemmlab auto and cuBLAS both timed" in lines
    assert "batched: no entry has gemmlab auto and cuBLAS both timed" in lines


def test_sweep_csv_has_batch_and_layout(doc):
    rows = list(csv.DictReader(io.StringIO(report.csv_text(doc))))
    assert len(rows) == len(doc["rows"])
    problems = {}
    for c, r in zip(rows, doc["rows"]):
        b = r["batch"]
        assert int(c["batch_count"]) == b
        assert int(c["Flops"]) == 2 * r["m"] * r["n"] * r["k"] * b
        assert int(c["Bytes"]) == 4 * b * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
        assert c["A"] == "f32:" + ("row" if r["layout"][0] == "n" else "column")
        assert c["B"] == "f32:" + ("row" if r["layout"][1] == "n" else "column")
        if r.get("skipped"):
            assert (c["Disposition"], c["Status"]) == ("not_run", "not_supported")
        if r.get("tflops"):
            assert float(c["GFLOPs"]) == pytest.approx(int(c["Flops"]) / float(c["Runtime"]) / 1e6, rel=1e-3)
        problems.setdefault(c["Problem"], set()).add(schema.problem_key(r))
    assert len(problems) == len(ENTRIES) and all(len(v) == 1 for v in problems.values())


def test_sweep_plot_one_bar_per_entry_labelled_by_shape_and_layout(doc, tmp_path):
    from matplotlib.container import BarContainer

    from gemmlab.bench import plot

    fig = plot.figure(doc)
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    want = [(a / c if a else 0.0) for (a, c, _) in ENTRIES.values()]
    assert [p.get_height() for p in bars[0]] == pytest.approx(want)
    assert [t.get_text() for t in ax.get_xticklabels()] == [
        f"{suites.text(e[:4])} {e[4]}" for e in ENTRIES]
    assert "64x64x64x128 tt" in [t.get_text() for t in ax.get_xticklabels()]
    assert "batched" in ax.get_title() and "tt " in ax.get_title()
    path = plot.write(doc, tmp_path / "sweep.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_outputs_and_report_read_it_back(doc, tmp_path):
    from gemmlab.bench.commands import write_outputs

    paths = write_outputs(doc, tmp_path / "out", stem="sweep")
    assert report.load(paths[0]) == json.loads(json.dumps(doc))
    r = gemmlab_cli("report", str(paths[0]), "--markdown")
    assert r.returncode == 0, r.stderr
    assert "| M | N | K | batch | layout | gemmlab auto TFLOPS |" in r.stdout and "* batched:" in r.stdout


def test_progress_line_says_layout_batch_and_skips(doc):
    tri = next(r for r in doc["rows"] if r.get("skipped"))
    line = ladder.progress_line(7, 24, tri, None)
    assert line.startswith("[ 7/24] 64x64x64x128 tt Triton (ieee)") and line.endswith(f"skipped: {SKIP}")
    auto = next(r for r in doc["rows"] if r["stage"] == "tuned" and r["batch"] == 96)
    assert ladder.progress_line(1, 24, auto, 10.0).startswith("[ 1/24] 128x128x64x96 nt tuned gemmlab auto")


# ---- old documents ------------------------------------------------------------------------------

def test_version_1_documents_still_render():
    """A gemmlab.ladder/1 sweep (tests/data/sweep_v1_heldout.json): one layout, no batch field."""
    d = report.load(HELDOUT_DOC)
    assert d["schema"] == "gemmlab.ladder/1" and all("batch" not in r for r in d["rows"])
    md = report.markdown(d)
    body = _md_rows(md)[1:]
    assert len(body) == len(suites.HELDOUT) and all(c[3:5] == ["1", "nn"] for c in body)
    assert "* layout" not in md and "batched" not in md                     # one layout, no batches
    assert [(int(c[0]), int(c[1]), int(c[2]), 1) for c in body] == list(suites.HELDOUT)
    assert all(c["batch_count"] == "1" for c in csv.DictReader(io.StringIO(report.csv_text(d))))
    r = gemmlab_cli("report", str(HELDOUT_DOC))
    assert r.returncode == 0 and "geometric mean" in r.stdout


def test_unknown_schema_versions_are_refused_and_named(doc):
    bad = dict(doc, schema="gemmlab.ladder/3")
    with pytest.raises(schema.SchemaError, match=re.escape("'gemmlab.ladder/1' and 'gemmlab.ladder/2'")):
        schema.validate(bad)


# ---- operands and the per-matrix check on CPU tensors -------------------------------------------

def _torch():
    return pytest.importorskip("torch", reason="the operand tests need torch (CPU is enough)")


@pytest.mark.parametrize("layout", suites.LAYOUTS)
def test_operands_make_batched_layouts(layout):
    torch = _torch()
    from gemmlab.bench.candidates import Operands

    M, N, K, B = 5, 7, 3, 4
    ops = Operands.make(M, N, K, layout, device="cpu", batch=B)
    assert ops.batch == B and ops.batched
    assert tuple(ops.a.shape) == (B, M, K) and tuple(ops.b.shape) == (B, K, N) and tuple(ops.out.shape) == (B, M, N)
    a_strides = (M * K, 1, M) if layout[0] == "t" else (M * K, K, 1)
    b_strides = (K * N, 1, K) if layout[1] == "t" else (K * N, N, 1)
    assert ops.a.stride() == a_strides and ops.b.stride() == b_strides and ops.out.is_contiguous()
    assert bool(torch.isnan(ops.out).all())
    ref = ops.reference()
    assert ref.dtype == torch.float64 and tuple(ref.shape) == (B, M, N)
    for i in range(B):
        assert torch.allclose(ref[i], ops.a[i].double() @ ops.b[i].double())
    two_d = Operands.make(M, N, K, layout, device="cpu")
    assert two_d.batch == 1 and not two_d.batched and tuple(two_d.out.shape) == (M, N)
    assert two_d.a.stride() == ((1, M) if layout[0] == "t" else (K, 1))


def test_check_out_checks_every_matrix_of_a_batch():
    torch = _torch()
    from gemmlab.bench.candidates import Operands

    ops = Operands.make(16, 16, 64, "tt", device="cpu", batch=128)
    torch.bmm(ops.a, ops.b, out=ops.out)
    good = ops.check_out()
    assert good.correct and good.rel_error < 1e-6
    ops.out[77] *= 1 + 1e-4           # one matrix off by 1e-4: the whole batch's norm would hide it
    whole = float(torch.linalg.vector_norm(ops.out.double() - ops.reference()) / torch.linalg.vector_norm(ops.reference()))
    assert whole < 1e-5
    bad = ops.check_out()
    assert not bad.correct and bad.rel_error == pytest.approx(1e-4, rel=0.05)
    torch.bmm(ops.a, ops.b, out=ops.out)
    ops.out[127, 3, 3] = float("nan")
    nan = ops.check_out()
    assert not nan.correct and not nan.finite


class _Bmm:
    """A candidate that computes on the CPU with torch (what measure_candidate sees of one)."""

    def __init__(self, wrong_batch=None, unsupported=None):
        from gemmlab.bench.candidates import Candidate

        self.c = Candidate(id="cublas", name="fake bmm", kind="baseline")
        self.id, self.config, self.precision = "cublas", None, "ieee"
        self.wrong, self.why, self.checked = wrong_batch, unsupported, None

    def describe(self):
        return self.c.describe()

    def unsupported(self, ops):
        return self.why

    def prepare(self, ops):
        import torch

        from gemmlab.bench.candidates import Prepared

        def launch():
            torch.matmul(ops.a, ops.b, out=ops.out)
            if self.wrong is not None:
                ops.out[self.wrong] += 1.0
        launch()
        return Prepared(launch, "bmm", {})

    def check(self, M, N, K, layout, batch=1):
        from gemmlab import check

        self.checked = (M, N, K, layout, batch)
        return check.CheckResult(1e-7, 1e-5, True, True)


def _fake_measure(launch, policy, flush, read_clock):
    from gemmlab.bench.timing import Timing

    launch()
    return Timing(times_ms=[0.010, 0.011, 0.012], reps=3, capped=False, warmup_launches=1,
                  clock_before_mhz=1980, clock_after_mhz=1980)


def test_measure_candidate_on_a_batched_problem():
    _torch()
    from gemmlab.bench.candidates import Operands

    ops = Operands.make(8, 12, 16, "nt", device="cpu", batch=32)
    cand = _Bmm()
    row = ladder.measure_candidate(cand, ops, None, None, None, _fake_measure)
    assert cand.checked == (8, 12, 16, "nt", 32)                      # the fresh check gets the batch
    assert row["correct"] and (row["batch"], row["layout"]) == (32, "nt")
    assert row["tflops"] == pytest.approx(stats.tflops(stats.gemm_flops(8, 12, 16, 32), 0.011e-3))
    assert not schema.validate_row(ladder.finalize([row], 132, 1980)[0])

    wrong = ladder.measure_candidate(_Bmm(wrong_batch=31), ops, None, None, None, _fake_measure)
    assert not wrong["correct"] and wrong["tflops"] is None and "timed launch" in wrong["error"]

    def must_not_run(*a):
        raise AssertionError("a skipped candidate ran")
    skipped = ladder.measure_candidate(_Bmm(unsupported="2-D only"), ops, None, None, None, must_not_run)
    assert skipped["skipped"] == "2-D only" and skipped["tflops"] is None and "error" not in skipped
    assert report.status(skipped) == "skip" and not schema.validate_row(skipped)


def test_triton_baseline_says_it_skips_batched_problems():
    """TritonGemm.unsupported without Triton: call it unbound on a stand-in."""
    from gemmlab.bench.baselines import TritonGemm

    class Ops:
        def __init__(self, batched):
            self.batched = batched
    assert TritonGemm.unsupported(TritonGemm.__new__(TritonGemm), Ops(True)) == TritonGemm.BATCHED_REASON
    assert TritonGemm.unsupported(TritonGemm.__new__(TritonGemm), Ops(False)) is None


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_tiny_sweep_with_layouts_and_a_batched_tt_entry():
    """ladder.run over 2-D entries in two layouts and one batched tt entry: every row that ran is
    correct and says its layout and batch; Triton (if installed) skips the batched one."""
    from gemmlab.bench.timing import Policy

    entries = [(256, 256, 256, 1, "nn"), (300, 200, 100, 1, "nt"), (96, 80, 72, 12, "tt")]
    settings = ladder.Settings(problems=entries, stages=["tuned"], baselines=("cublas", "cupy", "triton"),
                               policy=Policy(target_seconds=0.02, max_seconds=0.5, min_reps=3), kind="sweep")
    doc = ladder.run(settings)
    schema.validate(doc)
    assert not doc.get("schema_errors") and doc["provenance"]["aborted"] is None
    assert [(p["m"], p["n"], p["k"], p["batch"], p["layout"]) for p in doc["problems"]] == entries
    ran = {c["stage"] for c in doc["rows"]}
    assert {"tuned", "cublas"} <= ran
    for e in entries:
        rows = [r for r in doc["rows"] if (r["m"], r["n"], r["k"], r["batch"], r["layout"]) == e]
        assert {r["stage"] for r in rows} == ran
        for row in rows:
            if row["stage"] == "triton" and e[3] > 1:
                assert row["skipped"] and row["tflops"] is None, row
                continue
            assert row["correct"] and row["tflops"] > 0 and row["rel_error"] <= row["tolerance"], row
            want = stats.tflops(stats.gemm_flops(e[0], e[1], e[2], e[3]), row["time_ms"] / 1e3)
            assert row["tflops"] == pytest.approx(want, rel=1e-3)
            if row["stage"] == "tuned":
                assert row["plan"]["kernels"] and row["vs_cublas"] is not None
    rows = report.sweep_rows(doc)
    assert [(r["m"], r["batch"], r["layout"]) for r in rows] == [(256, 1, "nn"), (300, 1, "nt"), (96, 12, "tt")]
    assert "* batched:" in report.markdown(doc)


@pytest.mark.gpu
def test_sweep_command_with_a_batched_entry_exits_0_and_writes_batch_and_layout(tmp_path):
    """The command end to end: a skipped Triton row of a batched entry is no failure (exit 0);
    sweep.json/csv/png say the batch and layout of every row."""
    out = tmp_path / "sweep"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "gemmlab", "sweep", "--shapes", "128x128x128:nt,64x48x32x8:tt",
                        "--baselines", "cublas,triton", "--out", str(out), "--target-seconds", "0.02",
                        "--max-seconds", "0.5", "--min-reps", "3"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    d = report.load(out / "sweep.json")
    assert d["schema"] == schema.SCHEMA and not d.get("schema_errors")
    assert [(p["m"], p["batch"], p["layout"]) for p in d["problems"]] == [(128, 1, "nt"), (64, 8, "tt")]
    assert all(("batch" in row and "layout" in row) for row in d["rows"])
    progress = [ln for ln in r.stderr.splitlines() if re.match(r"\[\s*\d+/\d+\] ", ln)]
    assert any(" 64x48x32x8 tt " in ln for ln in progress) and any(" 128x128x128 nt " in ln for ln in progress)
    lines = list(csv.DictReader((out / "sweep.csv").open()))
    assert {c["batch_count"] for c in lines} == {"1", "8"}
    assert "| 64 | 48 | 32 | 8 | tt |" in report.markdown(d)
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
