"""Tables and CSV from a ladder.json document (also bench.json and sweep.json; no GPU, no torch).

- ``plain(doc)``: the terminal table ``gemmlab ladder`` prints;
- ``markdown(doc)``: the README's table (``gemmlab report FILE --markdown``);
- for a ``gemmlab sweep`` document (kind "sweep") both give one row per entry (shape, batch and
  layout) instead: gemmlab's stage='auto' TFLOPS and what it ran, cuBLAS and Triton, the ratios,
  and their geometric mean and minimum over all entries, per layout and for the batched ones;
- ``csv_text(doc)``: ladder.csv, with the CUTLASS profiler's column names where they apply.
"""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from . import schema, stats

COLUMNS = ("Stage", "Adds", "TFLOPS", "% cuBLAS", "% peak", "Notes expect", "Rel. error",
           "Regs", "Smem/block", "Blocks/SM", "Kernel")


OVERHEAD_SCHEMA = "gemmlab.overhead/1"  # gemmlab bench --overhead (gemmlab/bench/overhead.py)
WRITERS = "gemmlab ladder, bench, sweep or bench --overhead with --out DIR"


def read_json(path):
    """The JSON value in file ``path``; FileNotFoundError or SchemaError saying what is wrong
    (no such file, a directory, not UTF-8 text, not JSON)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such file ({WRITERS} writes one)") from None
    except IsADirectoryError:
        raise schema.SchemaError(f"{p}: a directory; give a file in it (ladder.json, bench.json, sweep.json or "
                                 "overhead.json)", name=str(p)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise schema.SchemaError(f"{p}: not UTF-8 text (byte {e.start} is {raw[e.start]:#04x}), so not a "
                                 f"document gemmlab report reads (the JSON that {WRITERS} writes)", name=str(p)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise schema.SchemaError(f"{p}: not JSON ({e})", name=str(p)) from None


def kind_of(doc) -> str | None:
    """"ladder", "bench", "sweep" (a gemmlab.ladder/1 or /2 document), "overhead", or None for anything
    else (bank_probe.json, a tuning table, ...)."""
    if not isinstance(doc, dict):
        return None
    if doc.get("schema") == OVERHEAD_SCHEMA or (doc.get("kind") == "overhead" and "schema" not in doc):
        return "overhead"
    if doc.get("schema") in schema.READABLE or ("schema" not in doc and doc.get("kind") in schema.KINDS):
        return doc.get("kind") if doc.get("kind") in schema.KINDS else "ladder"
    return None


def load_any(path) -> tuple[str, dict]:
    """(kind, document) of any file ``gemmlab report`` reads: a validated ladder/bench/sweep
    document, or an overhead document; SchemaError naming the file for anything else."""
    p = Path(path)
    doc = read_json(p)
    kind = kind_of(doc)
    if kind is None:
        what = (f"its schema is {doc['schema']!r}" if isinstance(doc, dict) and "schema" in doc else
                f"no 'schema' field; its keys: {', '.join(list(doc)[:6])}" if isinstance(doc, dict)
                else f"its top level is a JSON {type(doc).__name__}")
        raise schema.SchemaError(f"{p}: not a document gemmlab report reads ({what}); it reads "
                                 f"{', '.join(schema.READABLE)} and {OVERHEAD_SCHEMA} documents, the JSON that "
                                 f"{WRITERS} writes", name=str(p))
    if kind == "overhead":
        rows = doc.get("rows")
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "size" in r and "call" in r for r in rows):
            raise schema.SchemaError(f"{p}: an overhead document whose rows are not a list of {{size, call, ...}}",
                                     name=str(p))
        return kind, doc
    return kind, schema.validate(doc, str(p))


def load(path) -> dict:
    """Read and validate a ladder.json (also bench.json, sweep.json: the same schema)."""
    p = Path(path)
    kind, doc = load_any(p)
    if kind == "overhead":
        raise schema.SchemaError(f"{p}: an overhead document ({OVERHEAD_SCHEMA}), not a ladder, bench or sweep "
                                 "one", name=str(p))
    return doc


def dump(doc: dict, path) -> None:
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n")


def write_into(doc: dict, out_dir, name: str) -> Path:
    """``doc`` as ``out_dir``/``name`` (the directory created), said on stderr; returns the path."""
    import sys

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / name
    dump(doc, path)
    print(f"gemmlab: wrote {path}", file=sys.stderr)
    return path


# ---- cells --------------------------------------------------------------------------------

def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _num(x, fmt) -> str:
    return "—" if x is None else format(x, fmt)


def _bytes(b) -> str:
    if b is None:
        return "—"
    return "0" if b == 0 else f"{b / 1024:.1f} KB"


def status(row: dict) -> str:
    """"ok" (timed), "FAIL" (a correctness check failed), "ERROR" (raised, or timing failed) or
    "skip" (the candidate does not run this problem: ``skipped`` says why)."""
    if row.get("tflops") is not None:
        return "ok"
    if row.get("skipped"):
        return "skip"
    return "FAIL" if (row.get("rel_error") is not None and not row.get("correct")) else "ERROR"


def label(row: dict) -> str:
    return f"{row['stage']} {row['name']}" if row["kind"] == "stage" else row["name"]


def cells(row: dict, markdown: bool = False) -> list[str]:
    """The table cells of one row, in COLUMNS order."""
    exp = row.get("expected_pct_cublas")
    exp_s = "—" if not exp else f"{exp[0]:g}–{exp[1]:g}%"
    tfl = status(row) if row.get("tflops") is None else f"{row['tflops']:.2f}"
    vs = _pct(row.get("vs_cublas"))
    if row.get("vs_expected") in ("below", "above") and row.get("vs_cublas") is not None:
        vs += " ↓" if row["vs_expected"] == "below" else " ↑"
    err = _num(row.get("rel_error"), ".1e")
    if row.get("precision") and err != "—":  # each row's error beside the precision it computes at
        err += f" {row['precision']}"
    if row.get("vs_cublas_tf32") is not None and row.get("precision") not in (None, "ieee"):
        vs += f" ({_pct(row['vs_cublas_tf32'])} of TF32)"
    kernel = row.get("kernel") or "—"
    if row.get("fallback"):
        kernel += " (fallback)"
    if markdown and kernel != "—":
        kernel = f"`{kernel}`"
    c = [label(row), row.get("adds", "") or "", tfl, vs, _pct(row.get("vs_peak")), exp_s, err,
         _num(row.get("registers"), "d"), _bytes(row.get("smem_bytes")), _num(row.get("blocks_per_sm"), "d"), kernel]
    if markdown:
        c = [x.replace("|", "\\|") for x in c]
    return c


# ---- grouping -----------------------------------------------------------------------------

problem_key = schema.problem_key    # (m, n, k, layout, batch) of a row
problem_text = schema.problem_text  # 'MxNxK nn' / 'MxNxKxB tt'


def problems(doc: dict) -> list[tuple]:
    """(m, n, k, layout, batch) of every problem, in the document's order (batch 1 in documents
    without batches)."""
    seen = []
    for r in doc["rows"]:
        key = problem_key(r)
        if key not in seen:
            seen.append(key)
    return seen


def rows_of(doc: dict, key: tuple) -> list[dict]:
    return [r for r in doc["rows"] if problem_key(r) == key]


def _shape_text(key: tuple) -> str:
    m, n, k, _, batch = key
    shape = f"{m}³" if m == n == k else f"{m}×{n}×{k}"
    return shape + (f" ×{batch}" if batch != 1 else "")


def problem_title(key: tuple) -> str:
    """'4096³ (nn)', '1000×2000×300 (nt)', '64³ ×128 (tt)' (a batch of 128)."""
    return f"{_shape_text(key)} ({key[3]})"


def _clock(doc: dict, key=None) -> str:
    rows = rows_of(doc, key) if key else doc["rows"]
    clocks = [r["peak_clock_mhz"] for r in rows if r.get("peak_clock_mhz") and r.get("peak_clock_source") == "measured"]
    if not clocks:
        return "SM clock not measured"
    return f"SM clock {min(clocks):.0f}–{max(clocks):.0f} MHz" if max(clocks) - min(clocks) >= 1 else f"SM clock {clocks[0]:.0f} MHz"


def header_lines(doc: dict) -> list[str]:
    p = doc["provenance"]
    gpu = p.get("gpu") or {}
    git = p.get("git") or {}
    commit = (git.get("commit") or "unknown")[:10]
    if git.get("dirty"):
        commit += " (dirty)"
    v = p.get("versions", {})
    soft = ", ".join(f"{k} {v[k]}" for k in ("torch", "cupy-cuda13x", "cupy-cuda12x", "triton", "cuda-core", "compiler")
                     if k in v)
    lines = []
    if p.get("fixture"):
        lines.append("FIXTURE: hand-made numbers for tests and examples, not a measurement.")
    lines.append(f"GPU: {gpu.get('name', 'unknown')} ({gpu.get('arch', '?')}, {gpu.get('sms', '?')} SMs), "
                 f"driver {p.get('driver') or '?'}; {_clock(doc)}")
    lines.append(f"Date: {p.get('date', '?')}; commit {commit}; {soft}")
    lines.append("FP32, D = A·B (alpha 1, beta 0); median of CUDA-event times with L2 flushed; "
                 "every row checked against float64 first")
    return lines


# ---- plain and markdown -------------------------------------------------------------------

def _sweep(doc: dict) -> tuple[list[str], list[list[str]]]:
    keys = problems(doc)
    names, order = {}, []
    for r in doc["rows"]:
        if r["stage"] not in names:
            names[r["stage"]] = label(r)
            order.append(r["stage"])
    head = ["TFLOPS"] + [_shape_text(k) for k in keys]
    body = []
    for sid in order:
        line = [names[sid]]
        for key in keys:
            hit = [r for r in rows_of(doc, key) if r["stage"] == sid]
            t = hit[0].get("tflops") if hit else None
            line.append("—" if not hit else (status(hit[0]) if t is None else f"{t:.2f}"))
        body.append(line)
    return head, body


# ---- gemmlab sweep: one row per shape -----------------------------------------------------

AUTO_STAGES = ("tuned", "auto", "tuned-tf32x3", "tuned-tf32")  # the auto row of an ieee, tf32x3 or tf32 sweep
TRITON_STAGES = ("triton", "triton_tf32x3")
SWEEP_COLUMNS = ("M", "N", "K", "batch", "layout", "gemmlab auto TFLOPS", "ran", "cuBLAS TFLOPS",
                 "Triton TFLOPS", "auto / cuBLAS", "Triton / cuBLAS")
TF32_COLUMN = "cuBLAS TF32 TFLOPS"  # after "cuBLAS TFLOPS" where the sweep has that baseline


def sweep_columns(rows: list[dict]) -> list[str]:
    """SWEEP_COLUMNS, with cuBLAS TF32 after cuBLAS FP32 where any shape has that row."""
    cols = list(SWEEP_COLUMNS)
    if any(r.get("cublas_tf32") for r in rows):
        cols.insert(cols.index("cuBLAS TFLOPS") + 1, TF32_COLUMN)
    return cols


def sweep_precision(doc: dict) -> str:
    """The precision of the sweep's auto rows ("ieee" when there are none)."""
    return next((r.get("precision") or "ieee" for r in doc["rows"] if r["stage"] in AUTO_STAGES), "ieee")


def ran_text(cfg) -> str:
    """What the auto row's plan ran, from its description: 's11 128x256 split 4 (tuned)'; a plan
    cut into whole waves and a tail (plan.Tail) says where and what the tail ran:
    's11 128x256, m 2816+: 32x256 split 7 repack A^T (nearest)'."""
    if not isinstance(cfg, dict) or "stage" not in cfg:
        return "—"
    text = _kernel_text(cfg)
    tail = cfg.get("tail")
    if isinstance(tail, dict) and "stage" in tail:
        tail_text = _kernel_text(tail)
        if tail.get("stage") == cfg["stage"]:
            tail_text = tail_text.removeprefix(f"{cfg['stage']} ")
        text += f", {tail.get('axis', '?')} {tail.get('start', '?')}+: {tail_text}"
    if cfg.get("repack"):
        text += " repack"
    if cfg.get("a_transpose"):
        text += " A^T"
    if cfg.get("source"):
        text += f" ({cfg['source']})"
    return text


def _kernel_text(cfg: dict) -> str:
    """'s11 128x256 split 4': a kernel's stage, tile and K slices from a plan's (or tail's) description."""
    inner = cfg.get("config") if isinstance(cfg.get("config"), dict) else {}
    text = str(cfg["stage"])
    if "block_m" in inner and "block_n" in inner:
        text += f" {inner['block_m']}x{inner['block_n']}"
    if (cfg.get("split_k") or 1) > 1:
        text += f" split {cfg['split_k']}"
    return text


def sweep_rows(doc: dict) -> list[dict]:
    """Per problem (shape, batch, layout): the auto row's TFLOPS and plan, cuBLAS's and Triton's
    TFLOPS, the ratios."""
    out = []
    for key in problems(doc):
        rs = rows_of(doc, key)
        pick = lambda ids: next((r for i in ids for r in rs if r["stage"] == i), None)  # noqa: E731
        auto, cub, tri = pick(AUTO_STAGES), pick(("cublas", "cupy")), pick(TRITON_STAGES)
        tf32 = pick(("cublas_tf32",))
        t = lambda r: None if r is None else r.get("tflops")  # noqa: E731
        out.append({"m": key[0], "n": key[1], "k": key[2], "layout": key[3], "batch": key[4],
                    "auto": auto, "cublas": cub, "triton": tri, "cublas_tf32": tf32,
                    "auto_tflops": t(auto), "ran": ran_text((auto or {}).get("config")),
                    "cublas_tflops": t(cub), "triton_tflops": t(tri), "cublas_tf32_tflops": t(tf32),
                    "ratio": None if auto is None else auto.get("vs_cublas"),
                    "triton_ratio": None if tri is None else tri.get("vs_cublas")})
    return out


def ratio_summary(rows: list[dict]) -> dict | None:
    """Geometric mean and minimum of auto / cuBLAS over the entries (of ``sweep_rows``) that have
    one; ``min_shape`` names the worst entry ('MxNxK[xB] layout')."""
    have = [r for r in rows if r["ratio"]]
    if not have:
        return None
    geo = math.exp(sum(math.log(r["ratio"]) for r in have) / len(have))
    worst = min(have, key=lambda r: r["ratio"])
    return {"geomean": geo, "min": worst["ratio"], "min_shape": problem_text(worst),
            "shapes": len(have), "of": len(rows)}


def ratio_groups(rows: list[dict]) -> list[tuple[str, dict | None]]:
    """The summary per group, where the sweep has more than one of a kind: ("layout nn", summary)
    for each layout present (when there are several), then ("batched", ...) and ("2-D", ...) when
    some entries are batched. A group none of whose entries has a ratio gets None."""
    out = []
    layouts = sorted({r["layout"] for r in rows})
    if len(layouts) > 1:
        out += [(f"layout {lay}", ratio_summary([r for r in rows if r["layout"] == lay])) for lay in layouts]
    batched = [r for r in rows if r.get("batch", 1) > 1]
    if batched:
        out.append(("batched", ratio_summary(batched)))
        single = [r for r in rows if r.get("batch", 1) == 1]
        if single:
            out.append(("2-D", ratio_summary(single)))
    return out


def _sweep_cells(r: dict, with_tf32: bool = False) -> list[str]:
    def tf(x, row=None):
        if x is not None:
            return f"{x:.2f}"
        return status(row) if row is not None else "—"
    ratio = lambda x: "—" if x is None else f"{x:.3f}"  # noqa: E731
    cells = [str(r["m"]), str(r["n"]), str(r["k"]), str(r.get("batch", 1)), r["layout"],
             tf(r["auto_tflops"], r["auto"]), r["ran"],
             tf(r["cublas_tflops"], r.get("cublas")), tf(r["triton_tflops"], r.get("triton")),
             ratio(r["ratio"]), ratio(r["triton_ratio"])]
    if with_tf32:
        cells.insert(cells_tf32_at, tf(r["cublas_tf32_tflops"], r.get("cublas_tf32")))
    return cells


cells_tf32_at = SWEEP_COLUMNS.index("cuBLAS TFLOPS") + 1  # where the cuBLAS TF32 cell goes


def _sweep_title(doc: dict, rows: list[dict]) -> str:
    lays = sorted({r["layout"] for r in rows})
    what = ("layouts " if len(lays) > 1 else "layout ") + ", ".join(lays)
    batched = sum(1 for r in rows if r.get("batch", 1) > 1)
    if batched:
        what += f"; {batched} of {len(rows)} entries strided-batched"
    prec = sweep_precision(doc)
    if prec == "ieee":
        return f"**gemmlab stage='auto' against cuBLAS and Triton** ({what})"
    return (f"**gemmlab stage='auto', precision={prec!r}, against cuBLAS FP32, cuBLAS TF32 and Triton "
            f"{prec}** ({what}; ratios are to cuBLAS FP32)")


def _summary_text(s: dict | None, what: str = "shape(s)") -> str:
    if s is None:
        return "no entry has gemmlab auto and cuBLAS both timed"
    return (f"over {s['shapes']} of {s['of']} {what}: geometric mean {s['geomean']:.3f}, "
            f"min {s['min']:.3f} ({s['min_shape']})")


def summary_lines(rows) -> list[str]:
    """The summary under a sweep's table: over every entry, then (where the sweep has several)
    per layout, and for the batched and the 2-D entries."""
    s = ratio_summary(rows)
    if s is None:
        head = "gemmlab auto / cuBLAS: no shape has both timed"
    else:
        head = f"gemmlab auto / cuBLAS {_summary_text(s)}"
    return [head] + [f"{name}: {_summary_text(g, 'entries')}" for name, g in ratio_groups(rows)]


def sweep_markdown(doc: dict) -> str:
    out = []
    for i, line in enumerate(header_lines(doc)):
        out.append(f"> **{line}**" if (i == 0 and doc["provenance"].get("fixture")) else f"> {line}")
    rows = sweep_rows(doc)
    cols = sweep_columns(rows)
    out += ["", _sweep_title(doc, rows), ""]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(" --- " if c == "ran" else " ---: " for c in cols) + "|")
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in _sweep_cells(r, TF32_COLUMN in cols)) + " |")
    lines = summary_lines(rows)
    out += ["", lines[0]] + [f"* {ln}" for ln in lines[1:]]  # "*": a list of its own, apart from the notes
    notes = _footnotes(doc)
    if notes:
        out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def sweep_plain(doc: dict) -> str:
    out = list(header_lines(doc))
    rows = sweep_rows(doc)
    cols = sweep_columns(rows)
    out += [""] + _align(cols, [_sweep_cells(r, TF32_COLUMN in cols) for r in rows],
                         right={i for i, c in enumerate(cols) if c not in ("ran", "layout")})
    lines = summary_lines(rows)
    out += ["", lines[0]] + [f"  {ln}" for ln in lines[1:]]
    notes = _footnotes(doc, plain=True)
    if notes:
        out += [""] + notes
    return "\n".join(out) + "\n"


def markdown(doc: dict) -> str:
    if doc.get("kind") == "sweep":
        return sweep_markdown(doc)
    out = []
    for i, line in enumerate(header_lines(doc)):
        out.append(f"> **{line}**" if (i == 0 and doc["provenance"].get("fixture")) else f"> {line}")
    for key in problems(doc):
        out += ["", f"**{problem_title(key)}**, {_clock(doc, key)}", ""]
        out.append("| " + " | ".join(COLUMNS) + " |")
        out.append("|" + "|".join(" --- " if c in ("Stage", "Adds", "Kernel") else " ---: " for c in COLUMNS) + "|")
        for r in rows_of(doc, key):
            out.append("| " + " | ".join(cells(r, markdown=True)) + " |")
    if len(problems(doc)) > 1:
        head, body = _sweep(doc)
        out += ["", "**TFLOPS by size**", "", "| " + " | ".join(head) + " |",
                "| --- |" + " ---: |" * (len(head) - 1)]
        out += ["| " + " | ".join(line) + " |" for line in body]
    notes = _footnotes(doc)
    if notes:
        out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def plain(doc: dict) -> str:
    if doc.get("kind") == "sweep":
        return sweep_plain(doc)
    out = list(header_lines(doc))
    cols = list(COLUMNS[:7]) + ["Reps"] + list(COLUMNS[7:])
    for key in problems(doc):
        table = []
        for r in rows_of(doc, key):
            c = cells(r)
            c[1] = c[1] if len(c[1]) <= 40 else c[1][:39] + "…"
            c[-1] = c[-1] if len(c[-1]) <= 72 else c[-1][:71] + "…"
            reps = "—" if r.get("reps") is None else f"{r['reps']}{'*' if r.get('capped') else ''}"
            table.append(c[:7] + [reps] + c[7:])
        out += ["", f"{problem_title(key)}, {_clock(doc, key)}"]
        out += _align(cols, table, right={2, 3, 4, 5, 6, 7, 8, 9, 10})
    if len(problems(doc)) > 1:
        head, body = _sweep(doc)
        out += [""] + _align(head, body, right=set(range(1, len(head))))
    notes = _footnotes(doc, plain=True)
    if notes:
        out += [""] + notes
    return "\n".join(out) + "\n"


def _align(head, body, right) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]

    def fmt(line):
        return "  ".join(str(x).rjust(w) if i in right else str(x).ljust(w)
                         for i, (x, w) in enumerate(zip(line, widths))).rstrip()
    return [fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body]


def _footnotes(doc: dict, plain: bool = False) -> list[str]:
    notes = []
    if doc["provenance"].get("aborted"):
        notes.append(f"the run stopped early ({doc['provenance']['aborted']}); later rows are missing")
    if any(r.get("vs_expected") in ("below", "above") for r in doc["rows"]):
        notes.append("↓/↑: below/above the range the design notes expect (000 §12.2)")
    if plain and any(r.get("capped") for r in doc["rows"]):
        notes.append("*: the per-candidate time budget ended timing early (fewer repetitions)")
    for r in doc["rows"]:
        if r.get("error"):
            notes.append(f"{label(r)} at {problem_title(problem_key(r))}: {r['error']}")
    skips: dict = {}  # (candidate, reason) -> the problems it skipped, said once
    for r in doc["rows"]:
        if r.get("skipped") and not r.get("error"):
            skips.setdefault((label(r), r["skipped"]), []).append(problem_title(problem_key(r)))
    for (who, why), where in skips.items():
        shown = ", ".join(where[:4]) + (f" and {len(where) - 4} more" if len(where) > 4 else "")
        notes.append(f"{who} skipped on {len(where)} problem(s) ({shown}): {why}")
    for s in doc.get("skipped") or []:
        notes.append(f"skipped {s['stage']}: {s['reason']}")
    return notes


# ---- CSV ----------------------------------------------------------------------------------

# CUTLASS profiler columns that apply here, then gemmlab's own.
CSV_COLUMNS = ("Problem", "Provider", "OperationKind", "Operation", "Disposition", "Status",
               "gemm_kind", "m", "n", "k", "A", "B", "C", "D", "alpha", "beta", "batch_count",
               "op_class", "accum", "cta_m", "cta_n", "min_cc", "Bytes", "Flops", "Flops/Byte",
               "Runtime", "GB/s", "GFLOPs",
               "stage", "name", "runtime_p20", "runtime_p80", "reps", "vs_cublas", "vs_peak",
               "rel_error", "registers", "smem_bytes", "blocks_per_sm", "sm_clock_mhz")


def csv_rows(doc: dict) -> list[dict]:
    keys = problems(doc)
    out = []
    for r in doc["rows"]:
        m, n, k, layout, batch = key = problem_key(r)
        cfg = r.get("config") or {}
        if isinstance(cfg.get("config"), dict):  # the tuned row: the plan's description
            cfg = cfg["config"]
        provider = "gemmlab" if r["kind"] == "stage" else {"cublas": "cuBLAS", "cupy": "cuBLAS"}.get(r["stage"], r["stage"].capitalize())
        ms = r.get("time_ms")
        nbytes = stats.gemm_bytes(m, n, k) * batch
        flops = stats.gemm_flops(m, n, k, batch)
        disp, state = {"ok": ("passed", "success"), "FAIL": ("failed", "success"),
                       "ERROR": ("not_run", "error"), "skip": ("not_run", "not_supported")}[status(r)]
        clocks = [c for c in (r.get("sm_clock_mhz_before"), r.get("sm_clock_mhz_after")) if c]
        out.append({
            "Problem": keys.index(key) + 1, "Provider": provider, "OperationKind": "gemm",
            "Operation": r.get("kernel") or r["stage"], "Disposition": disp, "Status": state,
            "gemm_kind": "universal", "m": m, "n": n, "k": k,
            "A": "f32:" + ("row" if layout[0] == "n" else "column"),
            "B": "f32:" + ("row" if layout[1] == "n" else "column"),
            "C": "f32:row", "D": "f32:row", "alpha": 1, "beta": 0, "batch_count": batch,
            "op_class": "simt", "accum": "f32",
            "cta_m": cfg.get("block_m", ""), "cta_n": cfg.get("block_n", ""), "min_cc": "",
            "Bytes": nbytes, "Flops": flops, "Flops/Byte": flops // nbytes if nbytes else "",
            "Runtime": _g(ms), "GB/s": _g(nbytes / (ms / 1e3) / 1e9) if ms else "",
            "GFLOPs": _g(r["tflops"] * 1e3) if r.get("tflops") is not None else "",
            "stage": r["stage"], "name": r["name"], "runtime_p20": _g(r.get("time_ms_p20")),
            "runtime_p80": _g(r.get("time_ms_p80")), "reps": r.get("reps") if r.get("reps") is not None else "",
            "vs_cublas": _g(r.get("vs_cublas")), "vs_peak": _g(r.get("vs_peak")),
            "rel_error": _g(r.get("rel_error")), "registers": _e(r.get("registers")),
            "smem_bytes": _e(r.get("smem_bytes")), "blocks_per_sm": _e(r.get("blocks_per_sm")),
            "sm_clock_mhz": _g(sum(clocks) / len(clocks)) if clocks else "",
        })
    return out


def _g(x) -> str:
    return "" if x is None else f"{x:.6g}"


def _e(x):
    return "" if x is None else x


def csv_text(doc: dict) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in csv_rows(doc):
        w.writerow(row)
    return buf.getvalue()
