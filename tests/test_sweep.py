"""gemmlab sweep: its document, tables and plot from a hand-made document (no GPU), the command
without a GPU, and (marked gpu) a small real sweep.

The synthetic document says "fixture": true in its provenance: its numbers are made up.
"""
import copy
import csv
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab.bench import ladder, report, schema, stats
from fakes import fixture_provenance

ROOT = Path(__file__).resolve().parents[1]

# (m, n, k): (auto TFLOPS or None when it failed, what it ran, cuBLAS TFLOPS, Triton TFLOPS or None)
SHAPES = {
    (4096, 4096, 4096): (49.0, ("s11", 128, 256, 1, False, "tuned"), 51.0, 45.0),
    (64, 64, 65536): (3.1, ("s11", 64, 64, 64, False, "tuned"), 2.5, 0.9),
    (4095, 4097, 1023): (40.0, ("s11", 256, 128, 1, True, "tuned"), 44.0, None),
    (1, 4096, 4096): (0.9, ("skinny", None, None, 4, False, "skinny"), 0.8, 0.3),
    (3000, 5000, 7000): (None, ("s11", 128, 256, 3, False, "heuristic"), 50.0, 46.0),
}


def _row(stage, name, kind, shape, tflops, config=None):
    m, n, k = shape
    row = {"stage": stage, "name": name, "kind": kind, "adds": "", "notes": "", "expected_pct_cublas": None,
           "m": m, "n": n, "k": k, "layout": "nn", "tflops": None, "vs_cublas": None, "rel_error": 1e-6,
           "rel_error_timed": 1e-6, "tolerance": 1e-5, "correct": tflops is not None, "config": config}
    if tflops is None:
        row.update(correct=False, rel_error=0.3, error="failed check (alpha 0.5, beta 3): rel_error 0.3 > tolerance; not timed")
        return row
    ms = stats.gemm_flops(m, n, k) / (tflops * 1e12) * 1e3
    row.update(tflops=tflops, time_ms=ms, time_ms_p20=ms * 0.99, time_ms_p80=ms * 1.01,
               tflops_p20=tflops / 1.01, tflops_p80=tflops / 0.99, reps=20, capped=False,
               sm_clock_mhz_before=1980, sm_clock_mhz_after=1980)
    return row


def _plan(stage, bm, bn, split, repack, source):
    cfg = {} if bm is None else {"block_m": bm, "block_n": bn, "block_k": 32}
    return {"stage": stage, "config": cfg, "split_k": split, "repack": repack, "source": source,
            "kernels": [f"gemmlab_{stage}_x"] + (["gemmlab_splitk_reduce"] if split > 1 else []),
            "variant": {}, "workspace_bytes": 0, "grid": [1, split, 1], "block": 256, "smem": 0}


def make_doc(shapes=SHAPES, triton=True):
    rows = []
    for shape, (auto, ran, cub, tri) in shapes.items():
        plan = _plan(*ran)
        r = _row("tuned", "gemmlab auto", "stage", shape, auto, plan)
        r["plan"] = plan
        rows.append(r)
        rows.append(_row("cublas", "cuBLAS (torch.mm)", "baseline", shape, cub))
        if triton:
            rows.append(_row("triton", "Triton (ieee)", "baseline", shape, tri,
                             {"block_m": 64, "block_n": 128, "block_k": 32, "num_warps": 4, "num_stages": 4}))
    prov = fixture_provenance("2026-12-01T00:00:00+00:00", "gemmlab sweep --suite issue9")
    doc = {"schema": schema.SCHEMA, "kind": "sweep", "provenance": prov, "method": {},
           "problems": [{"m": m, "n": n, "k": k, "layout": "nn"} for (m, n, k) in shapes],
           "rows": ladder.finalize(rows, 132, 1980), "skipped": [] if triton else
           [{"stage": "triton", "reason": "Triton is not importable"}]}
    return schema.validate(doc)


@pytest.fixture
def doc():
    return make_doc()


def _ratios():
    return {s: (a / c if a else None) for s, (a, _, c, _) in SHAPES.items()}


# ---- schema ------------------------------------------------------------------------------------

def test_schema_accepts_sweep_documents_and_plan_rows(doc):
    assert doc["kind"] == "sweep"
    assert all("plan" in r for r in doc["rows"] if r["stage"] == "tuned")
    bad = copy.deepcopy(doc)
    bad["kind"] = "sweeep"
    with pytest.raises(schema.SchemaError, match="kind 'sweeep'"):
        schema.validate(bad)
    bad = copy.deepcopy(doc)
    bad["rows"][0]["plan"] = "s11"
    with pytest.raises(schema.SchemaError, match="plan"):
        schema.validate(bad)


# ---- tables ------------------------------------------------------------------------------------

def _md_rows(md):
    lines = [ln for ln in md.splitlines() if ln.startswith("| ") and not ln.startswith("| ---")]
    return [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines]


def test_sweep_markdown_one_row_per_shape(doc):
    md = report.markdown(doc)
    assert md.startswith("> **FIXTURE")
    table = _md_rows(md)
    assert table[0] == list(report.SWEEP_COLUMNS)
    body = table[1:]
    assert len(body) == len(SHAPES)
    ratios = _ratios()
    for cells, (shape, (auto, ran, cub, tri)) in zip(body, SHAPES.items()):
        assert tuple(int(c) for c in cells[:3]) == shape
        assert cells[3:5] == ["1", "nn"]                        # batch, layout
        assert cells[5] == (f"{auto:.2f}" if auto else "FAIL")
        assert cells[7] == f"{cub:.2f}"
        assert cells[8] == (f"{tri:.2f}" if tri else "FAIL")
        assert cells[9] == (f"{ratios[shape]:.3f}" if auto else "—")
        assert cells[6].startswith(ran[0]) and f"({ran[5]})" in cells[6]
    by = {tuple(int(c) for c in cells[:3]): cells for cells in body}
    assert by[(64, 64, 65536)][6] == "s11 64x64 split 64 (tuned)"
    assert by[(4095, 4097, 1023)][6] == "s11 256x128 repack (tuned)"
    assert by[(1, 4096, 4096)][6] == "skinny split 4 (skinny)"
    have = [v for v in ratios.values() if v]
    geo = math.exp(sum(map(math.log, have)) / len(have))
    summary = next(ln for ln in md.splitlines() if ln.startswith("gemmlab auto / cuBLAS"))
    assert f"geometric mean {geo:.3f}" in summary and f"min {min(have):.3f} (4095x4097x1023 nn)" in summary
    assert "* layout" not in md and "batched:" not in md      # one layout, no batch: no breakdown
    assert "over 4 of 5 shape(s)" in summary
    assert "gemmlab auto at 3000×5000×7000 (nn): failed" in md      # the failed row is explained


def test_sweep_tf32x3_table_names_its_precision_and_the_tf32_baseline():
    """A --precision tf32x3 sweep: the auto row is "tuned-tf32x3", Triton's is "triton_tf32x3", and
    cuBLAS TF32 gets a column; ratios stay against cuBLAS FP32."""
    d = make_doc()
    extra = []
    for r in d["rows"]:
        if r["stage"] == "tuned":
            r.update(stage="tuned-tf32x3", name="gemmlab auto (tf32x3)", precision="tf32x3")
        elif r["stage"] == "triton":
            r.update(stage="triton_tf32x3", name="Triton (tf32x3)", precision="tf32x3")
        elif r["stage"] == "cublas":
            t = dict(r, stage="cublas_tf32", name="cuBLAS TF32 (torch.mm)", precision="tf32")
            t.update(tflops=r["tflops"] * 6.5, vs_cublas=6.5)
            extra.append(t)
    d["rows"] += extra
    md = report.markdown(d)
    assert "precision='tf32x3'" in md
    table = _md_rows(md)
    assert table[0] == report.sweep_columns(report.sweep_rows(d))
    assert table[0][8] == report.TF32_COLUMN and table[0][7] == "cuBLAS TFLOPS"
    ratios = _ratios()
    for cells, (shape, (auto, ran, cub, tri)) in zip(table[1:], SHAPES.items()):
        assert cells[5] == (f"{auto:.2f}" if auto else "FAIL")
        assert cells[8] == f"{cub * 6.5:.2f}"
        assert cells[9] == (f"{tri:.2f}" if tri else "FAIL")
        assert cells[10] == (f"{ratios[shape]:.3f}" if auto else "—")
    assert report.TF32_COLUMN in report.plain(d)
    assert report.TF32_COLUMN not in report.markdown(make_doc())  # an ieee sweep: no such column


def test_sweep_plain(doc):
    text = report.plain(doc)
    assert text.startswith("FIXTURE")
    lines = text.splitlines()
    head = next(ln for ln in lines if ln.split()[:1] == ["M"])
    for col in report.SWEEP_COLUMNS:
        assert col in head
    body = [ln.split() for ln in lines if ln.split()[:1] and ln.split()[0].isdigit()]
    assert [tuple(int(x) for x in b[:3]) for b in body] == list(SHAPES)
    tri_4095 = next(b for b in body if b[0] == "4095")
    assert "FAIL" in tri_4095                                # Triton failed its check there
    assert "geometric mean" in text


def test_sweep_without_triton(tmp_path):
    d = make_doc(triton=False)
    rows = report.sweep_rows(d)
    assert all(r["triton_tflops"] is None for r in rows)
    assert "skipped triton" in report.plain(d)
    from gemmlab.bench import plot

    labels = plot.figure(d).axes[0].get_legend_handles_labels()[1]
    assert "gemmlab auto" in labels and "cuBLAS" in labels and "Triton (ieee)" not in labels


def test_ladder_documents_keep_their_tables():
    d = report.load(Path(__file__).parent / "data" / "ladder.json")
    assert "| Stage | Adds |" in report.markdown(d)


def test_sweep_csv_reads_the_plan_config(doc):
    rows = list(csv.DictReader(io.StringIO(report.csv_text(doc))))
    tuned = [c for c in rows if c["stage"] == "tuned"]
    assert len(tuned) == len(SHAPES)
    assert tuned[0]["cta_m"] == "128" and tuned[0]["cta_n"] == "256" and tuned[0]["Provider"] == "gemmlab"
    assert sorted({c["Problem"] for c in rows}) == [str(i) for i in range(1, len(SHAPES) + 1)]


# ---- plot --------------------------------------------------------------------------------------

def test_sweep_plot(doc, tmp_path):
    from matplotlib.container import BarContainer

    from gemmlab.bench import plot

    fig = plot.figure(doc)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 2                                    # gemmlab auto and Triton
    ratios = _ratios()
    assert [p.get_height() for p in bars[0]] == pytest.approx([ratios[s] or 0.0 for s in SHAPES])
    tri = [(t / c if t else 0.0) for (_, _, c, t) in SHAPES.values()]
    assert [p.get_height() for p in bars[1]] == pytest.approx(tri)
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"{m}x{n}x{k} nn" for (m, n, k) in SHAPES]
    assert any(list(ln.get_ydata()) == [1.0, 1.0] for ln in ax.get_lines())   # the cuBLAS line
    assert "FIXTURE" in fig._suptitle.get_text() and "geometric mean" in ax.get_title()
    path = plot.write(doc, tmp_path / "sweep.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_outputs_for_a_sweep(doc, tmp_path):
    from gemmlab.bench.commands import write_outputs

    paths = write_outputs(doc, tmp_path / "out", stem="sweep")
    assert [p.name for p in paths] == ["sweep.json", "sweep.csv", "sweep.png"]
    assert report.load(paths[0]) == json.loads(json.dumps(doc))


# ---- the command -------------------------------------------------------------------------------

def gemmlab_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    return subprocess.run([sys.executable, "-m", "gemmlab", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args", [(), ("--suite", "squares", "--out", "never-written"),
                                  ("--shapes", "256x256x256,100x200x300", "--baselines", "cublas")])
def test_sweep_without_a_gpu_exits_2_with_one_line(args):
    r = gemmlab_cli("sweep", *args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemmlab: no CUDA GPU is available")
    assert r.stdout == "" and not (ROOT / "never-written").exists()


@pytest.mark.parametrize("args, message", [
    (("--suite", "issue10"), "unknown suite 'issue10'"),
    (("--shapes", "256x256"), "'256x256'"),
    (("--shapes", "256x256x256:xy"), "'256x256x256:xy': layout 'xy' is not one of nn, nt, tn, tt"),
    (("--suite", "all", "--shapes", "256x256x256"), "not both"),
])
def test_sweep_argument_errors_exit_2(args, message):
    r = gemmlab_cli("sweep", *args)
    assert r.returncode == 2 and message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_report_reads_a_sweep_document(doc, tmp_path):
    path = tmp_path / "sweep.json"
    report.dump(doc, path)
    r = gemmlab_cli("report", str(path), "--markdown")
    assert r.returncode == 0, r.stderr
    assert "| M | N | K | batch | layout | gemmlab auto TFLOPS |" in r.stdout and "geometric mean" in r.stdout


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_small_sweep_writes_json_csv_png(tmp_path):
    out = tmp_path / "sweep"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "gemmlab", "sweep", "--shapes", "256x256x256,300x200x100",
                        "--baselines", "cublas", "--out", str(out), "--target-seconds", "0.05",
                        "--max-seconds", "1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert {p.name for p in out.iterdir()} >= {"sweep.json", "sweep.csv", "sweep.png"}
    d = report.load(out / "sweep.json")
    assert d["kind"] == "sweep" and not d.get("schema_errors")
    assert [(p["m"], p["n"], p["k"]) for p in d["problems"]] == [(256, 256, 256), (300, 200, 100)]
    assert {r["stage"] for r in d["rows"]} == {"tuned", "cublas"}
    for row in d["rows"]:
        assert row["correct"] and row["tflops"] > 0, row
        if row["stage"] == "tuned":
            assert row["config"]["source"] in ("tuned", "heuristic", "skinny") and row["plan"]["kernels"]
    assert "geometric mean" in r.stdout
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_heldout_shapes_are_in_no_shipped_table():
    """The held-out suite checks stage="auto" where nothing was tuned: no shipped table (any
    layout, either alignment class) may hold one of its buckets, so tuning one by mistake fails here."""
    import json
    from pathlib import Path

    from gemmlab.bench import suites
    from gemmlab.heuristics import table

    tables = sorted((Path(__file__).resolve().parents[1] / "gemmlab" / "tune" / "tables").glob("*.json"))
    assert tables
    buckets = {tuple(e["bucket"]) for t in tables for e in json.loads(t.read_text())["entries"]}
    held = {table.bucket(*s) for s in suites.HELDOUT}
    assert len(suites.HELDOUT) >= 20 and not held & buckets
    assert not set(suites.HELDOUT) & set(suites.ISSUE9 + suites.SQUARES + suites.TRANSFORMER)


def test_ran_text_says_where_a_plan_is_cut_and_what_its_tail_ran():
    """A plan cut into whole waves and a tail (plan.Tail's description under "tail"): the sweep's
    'ran' column names the cut and the tail's kernel; a plan without one reads as before."""
    tile = lambda bm, bn: {"block_m": bm, "block_n": bn, "block_k": 32}  # noqa: E731
    plan = {"stage": "s11", "config": tile(128, 256), "split_k": 1, "repack": True, "a_transpose": True,
            "source": "nearest"}
    assert report.ran_text(plan) == "s11 128x256 repack A^T (nearest)"
    cut = {**plan, "tail": {"axis": "m", "start": 2816, "stage": "s11", "config": tile(32, 256), "split_k": 7}}
    assert report.ran_text(cut) == "s11 128x256, m 2816+: 32x256 split 7 repack A^T (nearest)"
    other = {**plan, "repack": False, "a_transpose": False,
             "tail": {"axis": "n", "start": 1920, "stage": "s10", "config": tile(64, 128), "split_k": 1}}
    assert report.ran_text(other) == "s11 128x256, n 1920+: s10 64x128 (nearest)"
    assert report.ran_text(None) == "—"
