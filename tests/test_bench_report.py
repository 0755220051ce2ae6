"""Reports, CSV, plot and the JSON schema, from the hand-made fixtures in tests/data/ (no GPU).

The fixtures carry "fixture": true in their provenance: their numbers are plausible, not measured.
"""
import copy
import csv
import io
import json
import re
from pathlib import Path

import pytest

from gemmlab.bench import ladder, report, schema, stats

DATA = Path(__file__).parent / "data"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmark.md"


@pytest.fixture
def doc():
    return report.load(DATA / "ladder.json")


@pytest.fixture
def sweep():
    return report.load(DATA / "ladder_sweep.json")


def test_fixtures_are_marked_and_valid(doc, sweep):
    for d in (doc, sweep):
        assert d["provenance"]["fixture"] is True
        assert d["schema"] in schema.READABLE          # the fixtures are gemmlab.ladder/1 documents
        for r in d["rows"]:
            for key in ("stage", "tflops", "vs_cublas", "rel_error", "correct"):
                assert key in r


# ---- schema ---------------------------------------------------------------------------------

def _broken(doc, fn):
    d = copy.deepcopy(doc)
    fn(d)
    return d


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["rows"][0].pop("tflops"), "missing 'tflops'"),
    (lambda d: d["rows"][0].pop("correct"), "missing 'correct'"),
    (lambda d: d["rows"][1].update(tflops=d["rows"][1]["tflops"] * 1.1), "does not match"),
    (lambda d: d["rows"][1].update(vs_cublas=0.99), "vs_cublas"),
    (lambda d: d["rows"][1].update(time_ms_p20=d["rows"][1]["time_ms"] * 2), "out of order"),
    (lambda d: d["rows"][1].update(correct=False), "timed although not correct"),
    (lambda d: d["rows"][1].update(registers=True), "registers"),
    (lambda d: d["rows"][1].update(tflops="fast"), "tflops"),
    (lambda d: d["rows"][1].update(new_field=1), "unknown field 'new_field'"),
    (lambda d: d["rows"][1].update(kind="other"), "kind"),
    (lambda d: d["rows"][1].update(expected_pct_cublas=[40, 25]), "expected_pct_cublas"),
    (lambda d: d["provenance"].pop("fixture"), "fixture"),
    (lambda d: d.pop("rows"), "rows"),
    (lambda d: d.update(schema="gemmlab.ladder/99"), "schema"),
    (lambda d: d["skipped"].append({"stage": "x"}), "skipped"),
])
def test_schema_rejects(doc, mutate, message):
    with pytest.raises(schema.SchemaError, match=re.escape(message)):
        schema.validate(_broken(doc, mutate))


def test_every_field_is_documented():
    text = DOCS.read_text()
    for table in (schema.FIELDS, schema.TOP_FIELDS, schema.PROVENANCE_FIELDS):
        for key in table:
            assert f"| `{key}` |" in text, f"docs/benchmark.md does not document {key!r}"


def test_fixture_rows_use_only_known_fields(doc, sweep):
    for d in (doc, sweep):
        for r in d["rows"]:
            assert set(r) <= set(schema.FIELDS)


# ---- finalize (the ratios) -------------------------------------------------------------------

def _row(stage, tflops, kind="stage", m=1024, expected=None, clocks=(1980, 1980)):
    ms = stats.gemm_flops(m, m, m) / (tflops * 1e12) * 1e3 if tflops else None
    return {"stage": stage, "name": stage, "kind": kind, "m": m, "n": m, "k": m, "layout": "nn",
            "tflops": tflops, "time_ms": ms, "vs_cublas": None, "rel_error": 1e-6, "correct": tflops is not None,
            "expected_pct_cublas": expected,
            "sm_clock_mhz_before": clocks[0] if tflops else None, "sm_clock_mhz_after": clocks[1] if tflops else None}


def test_finalize_ratios_peak_and_expectation():
    rows = ladder.finalize([
        _row("s01", 5.0, expected=[6, 11]),
        _row("s02", 10.0, expected=[25, 40], clocks=(1900, 2000)),
        _row("s03", 20.0, expected=[50, 65]),
        _row("s04", 60.0, expected=[80, 87]),
        _row("s05", None, expected=[80, 87]),
        _row("cublas", 50.0, kind="baseline"),
        _row("cupy", 49.0, kind="baseline"),
        _row("s01", 1.0, m=2048),                       # another problem: no cuBLAS there
    ], sms=132, max_clock_mhz=1980)
    by = {(r["stage"], r["m"]): r for r in rows}
    assert by[("s01", 1024)]["vs_cublas"] == pytest.approx(0.1)
    assert by[("cublas", 1024)]["vs_cublas"] == pytest.approx(1.0)
    assert by[("cupy", 1024)]["vs_cublas"] == pytest.approx(0.98)
    assert by[("s01", 2048)]["vs_cublas"] is None
    assert by[("s05", 1024)]["vs_cublas"] is None and "peak_tflops" not in by[("s05", 1024)]
    assert [by[(s, 1024)]["vs_expected"] for s in ("s01", "s02", "s03", "s04", "s05")] == \
        ["within", "below", "below", "above", None]
    assert by[("s01", 1024)]["peak_tflops"] == pytest.approx(stats.fp32_peak_tflops(132, 1980))
    assert by[("s01", 1024)]["vs_peak"] == pytest.approx(5.0 / stats.fp32_peak_tflops(132, 1980))
    assert by[("s02", 1024)]["peak_clock_mhz"] == pytest.approx(1950)   # mean of before and after
    assert by[("s02", 1024)]["peak_clock_source"] == "measured"


def test_finalize_uses_cupy_when_torch_cublas_failed_and_max_clock_without_readings():
    rows = ladder.finalize([_row("s01", 10.0, clocks=(None, None)), _row("cublas", None, kind="baseline"),
                            _row("cupy", 40.0, kind="baseline")], sms=132, max_clock_mhz=1755)
    assert rows[0]["vs_cublas"] == pytest.approx(0.25)
    assert rows[0]["peak_clock_source"] == "max"
    assert rows[0]["peak_tflops"] == pytest.approx(stats.fp32_peak_tflops(132, 1755))


# ---- measure_candidate without a GPU: the order of check, time, and what a failure records ----

class _Check:
    def __init__(self, err, tol=1e-5, finite=True):
        self.rel_error, self.tolerance, self.finite = err, tol, finite
        self.correct = finite and err <= tol


class _Ops:
    M = N = K = 256
    layout = "nn"
    batch = 1

    def __init__(self, timed_err=1e-7):
        self.timed_err = timed_err
        self.poisoned = 0

    def poison(self):
        self.poisoned += 1

    def check_out(self, precision="ieee"):
        return _Check(self.timed_err)


class _Cand:
    def __init__(self, err=1e-6, boom=None):
        from gemmlab.bench.candidates import Candidate, Prepared

        self.c = Candidate(id="s99", name="fake", kind="stage", adds="nothing", notes="-",
                           expected_pct_cublas=(10, 20), config={"block_m": 64})
        self.err, self.boom, self.Prepared = err, boom, Prepared
        self.id, self.config = self.c.id, self.c.config
        self.timed = False

    def describe(self):
        return self.c.describe()

    def prepare(self, ops):
        if self.boom:
            raise self.boom
        return self.Prepared(lambda: None, "gemmlab_s99_fake", {"registers": 40, "blocks_per_sm": 3})

    def unsupported(self, ops):
        return None

    def check(self, M, N, K, layout, batch=1):
        return _Check(self.err)


def _fake_measure(launch, policy, flush, read_clock):
    from gemmlab.bench.timing import Timing

    return Timing(times_ms=[0.010, 0.011, 0.012, 0.013, 0.020], reps=5, capped=False, warmup_launches=3,
                  clock_before_mhz=1980, clock_after_mhz=1980)


def test_measure_candidate_times_only_correct_candidates():
    ops = _Ops()
    ok = ladder.measure_candidate(_Cand(), ops, None, None, None, _fake_measure)
    assert ops.poisoned == 1
    assert ok["correct"] and ok["reps"] == 5 and ok["time_ms"] == pytest.approx(0.012)
    assert ok["tflops"] == pytest.approx(stats.tflops(stats.gemm_flops(256, 256, 256), 0.012e-3))
    assert ok["tflops_p20"] < ok["tflops"] < ok["tflops_p80"]
    assert ok["kernel"] == "gemmlab_s99_fake" and ok["registers"] == 40

    def must_not_time(*a):
        raise AssertionError("timed a candidate that failed its check")

    bad = ladder.measure_candidate(_Cand(err=1e-2), _Ops(), None, None, None, must_not_time)
    assert bad["correct"] is False and bad["tflops"] is None and "not timed" in bad["error"]
    bad2 = ladder.measure_candidate(_Cand(), _Ops(timed_err=1.0), None, None, None, must_not_time)
    assert bad2["correct"] is False and "timed launch" in bad2["error"]
    err = ladder.measure_candidate(_Cand(boom=RuntimeError("no kernel")), _Ops(), None, None, None, must_not_time)
    assert err["correct"] is False and err["error"] == "RuntimeError: no kernel" and err["rel_error"] is None

    rows = ladder.finalize([ok, bad, bad2, err], sms=132, max_clock_mhz=1980)
    for r in rows:
        assert not schema.validate_row(r), schema.validate_row(r)


def test_progress_line():
    r = ladder.finalize([_row("s01", 5.0)], 132, 1980)[0]
    r.update(reps=12, capped=True)
    line = ladder.progress_line(3, 17, r, 50.0)
    assert line.startswith("[ 3/17] 1024x1024x1024 nn s01 s01")
    assert "12 reps (time budget hit)" in line and "5.00 TFLOPS" in line and "10.0% cuBLAS" in line
    failed = dict(r, tflops=None, correct=False, error="boom")
    assert "FAIL: boom" in ladder.progress_line(4, 17, failed, 50.0)
    timing_broke = dict(r, tflops=None, error="timing failed")
    assert "ERROR: timing failed" in ladder.progress_line(5, 17, timing_broke, 50.0)


# ---- tables ------------------------------------------------------------------------------------

def _md_table(text):
    lines = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| ---")]
    return [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines]


def test_markdown_table(doc):
    md = report.markdown(doc)
    assert md.startswith("> **FIXTURE")
    table = _md_table(md)
    assert table[0] == list(report.COLUMNS)
    body = table[1:]
    assert len(body) == len(doc["rows"])
    for cells, r in zip(body, doc["rows"]):
        assert cells[0] == report.label(r)
        if r["tflops"] is None:
            assert cells[2] == "FAIL"
        else:
            assert cells[2] == f"{r['tflops']:.2f}"
            assert cells[3].startswith(f"{100 * r['vs_cublas']:.1f}%")
            assert cells[4] == f"{100 * r['vs_peak']:.1f}%"
        assert cells[6] == f"{r['rel_error']:.1e}"
        if r.get("registers") is not None:
            assert cells[7] == str(r["registers"])
    # s02 is below the notes' range, s05 within it
    s02 = next(c for c in body if c[0].startswith("s02"))
    s05 = next(c for c in body if c[0].startswith("s05"))
    assert s02[3].endswith("↓") and s02[5] == "25–40%"
    assert not s05[3].endswith(("↓", "↑"))
    assert "s09 double_buffer at 4096³ (nn): failed" in md


def test_an_aborted_run_says_so(doc):
    d = copy.deepcopy(doc)
    d["provenance"]["aborted"] = "CUDAError: an illegal memory access was encountered"
    schema.validate(d)
    assert "the run stopped early (CUDAError" in report.markdown(d)


def test_markdown_without_fixture_has_no_banner(doc):
    d = copy.deepcopy(doc)
    d["provenance"]["fixture"] = False
    assert "FIXTURE" not in report.markdown(d) and "FIXTURE" not in report.plain(d)


def test_sweep_tables(sweep):
    md = report.markdown(sweep)
    assert md.count("| Stage | Adds |") == 3
    assert "**TFLOPS by size**" in md
    by_size = md.split("**TFLOPS by size**")[1]
    rows = _md_table(by_size)
    assert rows[0] == ["TFLOPS", "1024³", "2048³", "8192³"]
    cublas = next(r for r in rows if r[0].startswith("cuBLAS"))
    assert cublas[1:] == ["30.70", "48.40", "50.60"]
    assert "skipped cupy" in md
    text = report.plain(sweep)
    assert "4*" in text and "time budget" in text          # the capped naive row at 8192³


def test_plain_table(doc):
    text = report.plain(doc)
    lines = text.splitlines()
    head = next(ln for ln in lines if ln.startswith("Stage"))
    for col in ("TFLOPS", "% cuBLAS", "% peak", "Notes expect", "Reps", "Blocks/SM", "Kernel"):
        assert col in head
    cublas = next(ln for ln in lines if ln.startswith("cuBLAS (torch.mm)"))
    assert "50.80" in cublas and "100.0%" in cublas and "148" in cublas


# ---- CSV ---------------------------------------------------------------------------------------

def test_csv_has_cutlass_columns_and_consistent_numbers(doc):
    rows = list(csv.DictReader(io.StringIO(report.csv_text(doc))))
    assert len(rows) == len(doc["rows"])
    for col in ("Problem", "Provider", "OperationKind", "Operation", "Disposition", "Status", "m", "n", "k",
                "A", "B", "Bytes", "Flops", "Runtime", "GB/s", "GFLOPs"):
        assert col in rows[0]
    for c, r in zip(rows, doc["rows"]):
        assert (int(c["m"]), int(c["n"]), int(c["k"])) == (r["m"], r["n"], r["k"])
        assert int(c["Flops"]) == 2 * r["m"] * r["n"] * r["k"]
        assert int(c["Bytes"]) == 4 * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
        assert c["Problem"] == "1" and c["OperationKind"] == "gemm"
        if r["tflops"] is None:
            assert c["Disposition"] == "failed" and c["GFLOPs"] == "" and c["Runtime"] == ""
        else:
            assert c["Disposition"] == "passed"
            assert float(c["Runtime"]) == pytest.approx(r["time_ms"], rel=1e-5)
            assert float(c["GFLOPs"]) == pytest.approx(1000 * r["tflops"], rel=1e-5)
            assert float(c["GFLOPs"]) == pytest.approx(int(c["Flops"]) / float(c["Runtime"]) / 1e6, rel=1e-3)
        assert c["Provider"] == ("gemmlab" if r["kind"] == "stage" else c["Provider"])
    assert {c["Provider"] for c in rows} == {"gemmlab", "cuBLAS", "Triton"}


def test_csv_problem_numbers_in_a_sweep(sweep):
    rows = list(csv.DictReader(io.StringIO(report.csv_text(sweep))))
    assert sorted({(c["Problem"], c["m"]) for c in rows}) == [("1", "1024"), ("2", "2048"), ("3", "8192")]


# ---- plot --------------------------------------------------------------------------------------

def _bars(ax):
    from matplotlib.container import BarContainer

    return next(c for c in ax.containers if isinstance(c, BarContainer))


def test_plot_bars_are_percent_of_cublas(doc):
    from gemmlab.bench import plot

    fig = plot.figure(doc)
    ax = fig.axes[0]
    heights = [p.get_height() for p in _bars(ax)]
    want = [100 * r["vs_cublas"] if r["vs_cublas"] is not None else 0.0 for r in doc["rows"]]
    assert heights == pytest.approx(want)
    assert [t.get_text() for t in ax.get_xticklabels()] == [r["stage"] for r in doc["rows"]]
    assert "FIXTURE" in fig._suptitle.get_text()


def test_plot_sweep_panel(sweep, tmp_path):
    from gemmlab.bench import plot

    fig = plot.figure(sweep)
    assert len(fig.axes) == 2
    # the bar panel shows the largest problem
    assert [p.get_height() for p in _bars(fig.axes[0])] == pytest.approx(
        [100 * r["vs_cublas"] for r in sweep["rows"] if r["m"] == 8192])
    lines = {ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in fig.axes[1].get_lines()}
    assert lines["cublas"][0] == [1024, 2048, 8192]
    assert lines["cublas"][1] == pytest.approx([30.7, 48.4, 50.6], rel=1e-4)
    path = plot.write(sweep, tmp_path / "ladder.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_outputs(doc, tmp_path):
    from gemmlab.bench.commands import write_outputs

    paths = write_outputs(doc, tmp_path / "out")
    assert [p.name for p in paths] == ["ladder.json", "ladder.csv", "ladder.png"]
    again = report.load(paths[0])
    assert again == json.loads(json.dumps(doc))
    assert paths[1].read_text().splitlines()[0].startswith("Problem,Provider,OperationKind,Operation")
