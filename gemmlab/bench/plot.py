"""ladder.png from a ladder.json document (matplotlib's Agg canvas; no pyplot state, no GPU).

Left (or only) panel: % of cuBLAS per candidate at the largest problem, with the p20–p80 spread
as error bars and the range the design notes expect (000 §12.2) as a grey band behind each stage.
Right panel, when the document holds several square sizes: TFLOPS against size per candidate.
A ``gemmlab sweep`` document (kind "sweep", any M, N, K, batch, layout) gets :func:`sweep_figure`
instead: the ratio to cuBLAS per entry for gemmlab's stage='auto' and Triton.
"""
from __future__ import annotations

from pathlib import Path

from . import report

STAGE_COLOR = "#3b6ea8"
BASELINE_COLOR = "#888888"
FAIL_COLOR = "#c0392b"


def _main_problem(doc: dict) -> tuple:
    return max(report.problems(doc), key=lambda key: key[0] * key[1] * key[2])


def figure(doc: dict):
    """Build the figure; returns matplotlib.figure.Figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if doc.get("kind") == "sweep":
        return sweep_figure(doc)
    keys = report.problems(doc)
    sweep = len({k[:3] for k in keys}) > 1
    fig = Figure(figsize=(15 if sweep else 10, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 2, 1) if sweep else fig.add_subplot(1, 1, 1)
    _bars(ax, doc, _main_problem(doc))
    if sweep:
        _sweep(fig.add_subplot(1, 2, 2), doc)
    p = doc["provenance"]
    gpu = (p.get("gpu") or {}).get("name", "unknown GPU")
    title = f"gemmlab FP32 GEMM ladder on {gpu}"
    if p.get("fixture"):
        title = "FIXTURE (not a measurement) — " + title
    fig.suptitle(title)
    return fig


def _bars(ax, doc: dict, key: tuple) -> None:
    rows = report.rows_of(doc, key)
    xs = list(range(len(rows)))
    heights, colors, lo_err, hi_err = [], [], [], []
    for r in rows:
        v = r.get("vs_cublas")
        heights.append(100 * v if v is not None else 0.0)
        colors.append(FAIL_COLOR if r.get("tflops") is None else STAGE_COLOR if r["kind"] == "stage" else BASELINE_COLOR)
        if v is not None and r.get("tflops_p20") is not None and r.get("tflops_p80") is not None:
            scale = 100 * v / r["tflops"]
            lo_err.append(max(0.0, (r["tflops"] - r["tflops_p20"]) * scale))
            hi_err.append(max(0.0, (r["tflops_p80"] - r["tflops"]) * scale))
        else:
            lo_err.append(0.0)
            hi_err.append(0.0)
    for x, r in zip(xs, rows):
        exp = r.get("expected_pct_cublas")
        if exp:
            ax.fill_between([x - 0.45, x + 0.45], exp[0], exp[1], color="#cccccc", alpha=0.7, linewidth=0, zorder=1)
    ax.bar(xs, heights, color=colors, yerr=[lo_err, hi_err], capsize=2, zorder=2, label="measured")
    for x, r, h in zip(xs, rows, heights):
        text = report.status(r) if r.get("tflops") is None else f"{h:.0f}%"
        ax.text(x, h + 1.5, text, ha="center", va="bottom", fontsize=7, zorder=3)
    ax.axhline(100, color="black", linewidth=0.8, linestyle="--", zorder=1)
    ax.set_xticks(xs)
    ax.set_xticklabels([r["stage"] for r in rows], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("% of cuBLAS FP32 (TF32 off)")
    top = max([100.0] + [h + e for h, e in zip(heights, hi_err)] +
              [r["expected_pct_cublas"][1] for r in rows if r.get("expected_pct_cublas")])
    ax.set_ylim(0, top * 1.12)
    ax.set_title(f"{report.problem_title(key)}; grey: the notes' expected range", fontsize=10)


def _sweep(ax, doc: dict) -> None:
    keys = sorted({k for k in report.problems(doc)}, key=lambda k: k[0] * k[1] * k[2])
    order = []
    for r in doc["rows"]:
        if r["stage"] not in order:
            order.append(r["stage"])
    for sid in order:
        xs, ys, kind = [], [], "stage"
        for key in keys:
            for r in report.rows_of(doc, key):
                if r["stage"] == sid and r.get("tflops") is not None:
                    xs.append(key[0])
                    ys.append(r["tflops"])
                    kind = r["kind"]
        if xs:
            ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.2,
                    linestyle="--" if kind == "baseline" else "-", label=sid)
    ax.set_xscale("log", base=2)
    sizes = sorted({k[0] for k in keys})
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("M = N = K")
    ax.set_ylabel("TFLOPS")
    ax.set_title("TFLOPS against size", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


TRITON_COLOR = "#e08a2c"


def sweep_figure(doc: dict):
    """gemmlab sweep: per entry (any M, N, K, batch and layout), gemmlab auto's and Triton's TFLOPS
    as a ratio to cuBLAS's, as grouped bars with x labels 'MxNxK[xBATCH] layout', and a line at 1.0
    (cuBLAS); the title gives the geometric mean and minimum, and the mean per layout and for the
    batched entries where the sweep has them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = report.sweep_rows(doc)
    has_triton = any(r["triton_tflops"] is not None or r["triton_ratio"] is not None for r in rows) or any(
        x["stage"] == "triton" for x in doc["rows"])
    n = len(rows)
    width = 0.75 * n if n <= 24 else 18 + 0.45 * (n - 24)  # a long suite (wide: 73) packs tighter
    fig = Figure(figsize=(max(10.0, width + 3), 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    xs = list(range(len(rows)))
    width = 0.4 if has_triton else 0.6
    series = [("gemmlab auto", "ratio", STAGE_COLOR)]
    if has_triton:
        series.append(("Triton (ieee)", "triton_ratio", TRITON_COLOR))
    top = 1.0
    for i, (label, key, color) in enumerate(series):
        off = (i - (len(series) - 1) / 2) * width
        heights = [r[key] or 0.0 for r in rows]
        ax.bar([x + off for x in xs], heights, width=width, color=color, label=label, zorder=2)
        if key == "ratio":
            for x, r, h in zip(xs, rows, heights):
                text = f"{h:.2f}" if r[key] is not None else (report.status(r["auto"]) if r["auto"] else "—")
                ax.text(x + off, h + 0.01, text, ha="center", va="bottom", fontsize=7, zorder=3)
        top = max([top] + heights)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", zorder=1, label="cuBLAS")
    ax.set_xticks(xs)
    ax.set_xticklabels([report.problem_text(r) for r in rows], rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("TFLOPS / cuBLAS TFLOPS (FP32, TF32 off)")
    ax.set_ylim(0, top * 1.25)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", ncol=3)
    s = report.ratio_summary(rows)
    if s:
        title = (f"gemmlab auto / cuBLAS: geometric mean {s['geomean']:.3f}, min {s['min']:.3f} "
                 f"({s['min_shape']})")
        groups = [f"{name.replace('layout ', '')} {g['geomean']:.3f}" for name, g in report.ratio_groups(rows) if g]
        if groups:
            title += "\ngeometric mean per group: " + ", ".join(groups)
        ax.set_title(title, fontsize=10)
    p = doc["provenance"]
    gpu = (p.get("gpu") or {}).get("name", "unknown GPU")
    title = f"gemmlab stage='auto' against cuBLAS on {gpu}"
    if p.get("fixture"):
        title = "FIXTURE (not a measurement) — " + title
    fig.suptitle(title, fontsize=11)
    return fig


def write(doc: dict, path) -> Path:
    fig = figure(doc)
    path = Path(path)
    fig.savefig(path, dpi=120)
    return path
