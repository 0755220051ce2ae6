"""The ladder runner: every chosen stage and baseline on every problem, checked, then timed.

For each problem (M, N, K, batch, layout) one operand set is made (3-D batch-strided tensors when
batch > 1) and its float64 product computed once.
For each candidate, in this order:

1. ``prepare``: poison the output with NaN and launch once on the timed operands (alpha 1,
   beta 0), compiling or autotuning as needed; record which kernel ran and its resources;
2. check that launch's output against the float64 product (``rel_error_timed``);
3. check the candidate on fresh inputs with alpha 0.5, beta 3 and a random C (``rel_error``);
4. only if both pass: time it (gemmlab/bench/timing.py).

A candidate that cannot run a problem at all (the 2-D Triton baseline on a batched one) gets a
row that says so (``skipped``: the reason) instead: not run, not a failure.

cuBLAS runs first on each problem so that the progress lines can give % of cuBLAS as they go;
the rows are stored in ladder order (stages, then baselines). ``finalize`` adds the ratios
(vs_cublas, vs_peak, vs_expected); it is plain arithmetic, tested without a GPU.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field

from . import schema, stats
from .timing import Policy

BASELINE_ORDER = ("cublas", "cublas_tf32", "cupy", "triton", "triton_tf32x3")


@dataclass
class Settings:
    problems: list                      # [(m, n, k), (m, n, k, batch) or (m, n, k, batch, layout), ...]
    layout: str = "nn"                  # the layout of problems that do not give their own
    stages: list | None = None          # stage ids or names; None: every registered stage
    baselines: tuple = BASELINE_ORDER
    policy: Policy = field(default_factory=Policy)
    device: int = 0
    kernel_names: bool = True           # ask the torch profiler for cuBLAS's kernel name
    kind: str = "ladder"

    def entries(self) -> list[tuple]:
        """Every problem as (m, n, k, batch, layout), in order, without duplicates."""
        from .suites import resolve

        return resolve(self.problems, self.layout)


def _say(msg: str, stream=None) -> None:
    print(msg, file=stream or sys.stderr, flush=True)


def parse_stage_token(token: str):
    """'s07' -> (spec, None); 's07[block_m=64,block_n=64]' -> (spec, legal config dict)."""
    from ..stages import get

    name, _, rest = token.partition("[")
    spec = get(name.strip())
    if not rest:
        return spec, None
    if not rest.endswith("]"):
        raise ValueError(f"stage {token!r}: expected STAGE[KEY=VALUE,...]")
    cfg = {}
    for item in rest[:-1].split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"stage {token!r}: expected KEY=VALUE, got {item!r}")
        cfg[key.strip()] = int(value)
    return spec, spec.config(cfg)


AUTO_TOKENS = ("tuned", "auto")


def auto_precision(token: str):
    """'tuned' / 'auto' -> "ieee"; 'tuned-tf32x3' / 'auto-tf32' -> that precision; else None."""
    from ..precision import PRECISIONS

    t = token.strip()
    if t in AUTO_TOKENS:
        return "ieee"
    for base in AUTO_TOKENS:
        for p in PRECISIONS:
            if t == f"{base}-{p}":
                return p
    return None


def select_stages(ids):
    """[(spec, config or None)] for ``ids`` (ids, names or 'id[k=v,...]'; the registry plus the
    'tuned' rows when None). 'tuned' (or 'auto') is (None, "ieee"): gemmlab's stage='auto';
    'tuned-tf32x3' is stage='auto' with precision='tf32x3' (None, "tf32x3")."""
    from ..stages import all_stages

    if not ids:
        return [(s, None) for s in all_stages()] + [(None, "ieee"), (None, "tf32x3")]
    return [(None, auto_precision(s)) if auto_precision(s) else parse_stage_token(s) for s in ids]


def _finite_or_none(x):
    return x if (x is None or math.isfinite(x)) else None


def run(settings: Settings, progress=None) -> dict:
    """Run the ladder; return the ladder.json document (validated; a document that fails the
    schema is still returned, with the problems listed under "schema_errors")."""
    try:
        import torch
    except ImportError:
        from ..errors import GemmlabError

        raise GemmlabError("gemmlab ladder/bench need torch (arrays, the float64 reference and the "
                           "cuBLAS baseline); install it with pip install torch") from None
    from .. import device as _device
    from . import baselines as _baselines, provenance
    from .candidates import AutoCandidate, Operands, StageCandidate
    from .timing import L2Flush, measure

    t_run = time.perf_counter()
    dev = settings.device
    torch.cuda.set_device(dev)
    gpu = _device.info(dev)
    cc = _device.cc_number(gpu.arch)
    clocks = provenance.ClockReader(dev)
    clock_start = clocks.sm_mhz()

    skipped: list[dict] = []
    stage_cands = []
    for spec, cfg in select_stages(settings.stages):
        if spec is None:
            stage_cands.append(AutoCandidate(cfg or "ieee"))
        elif spec.min_cc > cc:
            skipped.append({"stage": spec.id, "reason": f"needs compute capability {spec.min_cc / 10:.1f}; "
                                                        f"this GPU is {gpu.arch}"})
        else:
            stage_cands.append(StageCandidate(spec, cfg))
    base_cands = {}
    for name in settings.baselines:
        try:
            base_cands[name] = _baselines.make(name, settings.kernel_names)
        except _baselines.Unavailable as e:
            skipped.append({"stage": name, "reason": str(e)})
    order = ([base_cands[n] for n in ("cublas", "cupy") if n in base_cands] + stage_cands +
             [base_cands[n] for n in base_cands if n not in ("cublas", "cupy")])
    display = {c.id: i for i, c in enumerate(stage_cands + [base_cands[n] for n in BASELINE_ORDER if n in base_cands])}

    prov = provenance.collect(device_index=dev, clocks=clocks)
    prov["sm_clock_mhz_start"] = clock_start
    ref_clock = clocks.max_sm_mhz() or (gpu.clock_khz / 1000 if gpu.clock_khz else None)
    flush = L2Flush(settings.policy.flush_bytes, dev)
    entries = settings.entries()
    layouts = sorted({e[4] for e in entries})
    batched = sum(1 for e in entries if e[3] > 1)
    flops_note = (f"{len(order)} candidates × {len(entries)} problem(s)" + (f" ({batched} batched)" if batched else ""))
    _say(f"gemmlab {settings.kind}: {gpu.name} ({gpu.arch}, {gpu.sms} SMs), {flops_note}, layout"
         f"{'s' if len(layouts) > 1 else ''} {', '.join(layouts)}; SM clock {clock_start or '?'} MHz "
         f"({clocks.source or 'no clock source'})", progress)
    for s in skipped:
        _say(f"  skipped {s['stage']}: {s['reason']}", progress)

    rows = []
    probes = []  # (row, callable): kernel names learned under the profiler once all timing is done
    total = len(order) * len(entries)
    done = 0
    aborted = None
    try:
        for (m, n, k, batch, layout) in entries:
            ops = Operands.make(m, n, k, layout, dev, batch=batch)
            ops.reference()
            cublas_tflops = None
            size_rows = []
            for cand in order:
                done += 1
                row = measure_candidate(cand, ops, settings.policy, flush, clocks.sm_mhz, measure, probes)
                size_rows.append(row)
                if cand.id in ("cublas", "cupy") and row.get("tflops") and (cublas_tflops is None or cand.id == "cublas"):
                    cublas_tflops = row["tflops"]
                _say(progress_line(done, total, row, cublas_tflops), progress)
            size_rows.sort(key=lambda r: display.get(r["stage"], len(display)))
            rows.extend(size_rows)
            del ops
            torch.cuda.empty_cache()
    except Exception as e:  # e.g. a kernel left the CUDA context broken: keep what was measured
        aborted = f"{type(e).__name__}: {e}"[:500]
        _say(f"gemmlab: run aborted after {len(rows)} row(s): {aborted}", progress)
    prov["aborted"] = aborted

    prov["sm_clock_mhz_end"] = clocks.sm_mhz()
    if probes:
        _say(f"kernel names of {len(probes)} baseline row(s) (torch profiler)", progress)
        for row, fn in probes:
            names = _baselines.cuda_kernel_names(fn)
            if names:
                row["kernel"] = names[0]
                if len(names) > 1:
                    row["kernels"] = names
        probes.clear()
    prov["wall_seconds"] = round(time.perf_counter() - t_run, 1)
    doc = {
        "schema": schema.SCHEMA,
        "kind": settings.kind,
        "provenance": prov,
        "method": method_block(settings),
        "problems": [{"m": m, "n": n, "k": k, "batch": b, "layout": lay} for (m, n, k, b, lay) in entries],
        "rows": finalize(rows, gpu.sms, ref_clock),
        "skipped": skipped,
    }
    try:
        schema.validate(doc)
    except schema.SchemaError as e:  # keep the measurements; say what is off
        _say(f"gemmlab: warning: {e}", progress)
        doc["schema_errors"] = str(e).splitlines()[1:]
    return doc


def method_block(settings: Settings) -> dict:
    from .. import check

    return {
        "timer": "CUDA events around each launch; L2 flushed (buffer rewrite) before each",
        "statistic": "median, p20, p80 of per-launch times",
        "policy": settings.policy.as_dict(),
        "timed_alpha": 1.0, "timed_beta": 0.0,
        "check": {"alpha": check.ALPHA, "beta": check.BETA, "c": "random", "output": "NaN-poisoned",
                  "reference": "float64 product of the same inputs",
                  "tolerance": "base * max(1, sqrt(K / 4096)), base 1e-5 for ieee and tf32x3 rows, 2^-8 for tf32 "
                               "rows; NaN/Inf where the reference is finite fails"},
        "flops": "2*M*N*K*batch",
        "peak": "SMs * 128 FP32 lanes * 2 * SM clock",
    }


def measure_candidate(cand, ops, policy, flush, read_clock, measure, probes=None) -> dict:
    """Prepare, check, and (if correct) time one candidate on ``ops``; return its row (no ratios).
    A candidate whose kernel name needs the profiler leaves (row, callable) in ``probes``."""
    row = cand.describe()
    batch = ops.batch
    row.update(m=ops.M, n=ops.N, k=ops.K, batch=batch, layout=ops.layout, tflops=None, vs_cublas=None,
               rel_error=None, correct=False)
    why_not = cand.unsupported(ops)
    if why_not:
        row["skipped"] = why_not
        return row
    try:
        ops.poison()
        prep = cand.prepare(ops)
        row["config"] = cand.config
        row["kernel"] = prep.kernel
        row.update(prep.info)
        if prep.probe is not None and probes is not None:
            probes.append((row, prep.probe))
        timed_check = ops.check_out(getattr(cand, "precision", "ieee"))
        fresh_check = cand.check(ops.M, ops.N, ops.K, ops.layout, batch=batch)
    except Exception as e:  # one broken candidate must not stop the ladder
        row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:500]
        return row
    row.update(rel_error=_finite_or_none(fresh_check.rel_error), tolerance=fresh_check.tolerance,
               rel_error_timed=_finite_or_none(timed_check.rel_error))
    row["correct"] = bool(fresh_check.correct and timed_check.correct)
    if not row["correct"]:
        why = []
        if not fresh_check.correct:
            why.append(f"check (alpha 0.5, beta 3): rel_error {fresh_check.rel_error:.3g}"
                       + ("" if fresh_check.finite else ", NaN/Inf in the output"))
        if not timed_check.correct:
            why.append(f"timed launch (alpha 1, beta 0): rel_error {timed_check.rel_error:.3g}"
                       + ("" if timed_check.finite else ", NaN/Inf in the output"))
        row["error"] = f"failed {' and '.join(why)} > tolerance {fresh_check.tolerance:.3g}; not timed"
        return row
    try:
        t = measure(prep.launch, policy, flush, read_clock)
    except Exception as e:
        row["error"] = f"timing failed: {type(e).__name__}: {e}"[:500]
        return row
    s = t.summary
    flops = stats.gemm_flops(ops.M, ops.N, ops.K, batch)
    row.update(
        time_ms=s.median, time_ms_p20=s.p20, time_ms_p80=s.p80,
        tflops=stats.tflops(flops, s.median / 1e3),
        tflops_p20=stats.tflops(flops, s.p80 / 1e3), tflops_p80=stats.tflops(flops, s.p20 / 1e3),
        reps=t.reps, capped=t.capped, warmup_launches=t.warmup_launches,
        timed_seconds=round(sum(t.times_ms) / 1e3, 4),
        sm_clock_mhz_before=t.clock_before_mhz, sm_clock_mhz_after=t.clock_after_mhz,
    )
    return row


def finalize(rows: list[dict], sms: int | None, max_clock_mhz: float | None) -> list[dict]:
    """Add vs_cublas, vs_cublas_tf32, peak_tflops, vs_peak and vs_expected to every row (in place;
    returned). The peak is the FP32 FFMA peak for ieee rows and the TF32 tensor-core peak for
    tensor-core rows (tf32, tf32x3)."""
    refs: dict = {}
    tf32_refs: dict = {}
    for r in rows:
        key = schema.problem_key(r)
        if r["stage"] in ("cublas", "cupy") and r.get("tflops"):
            if r["stage"] == "cublas" or key not in refs:
                refs[key] = r["tflops"]
        if r["stage"] == "cublas_tf32" and r.get("tflops"):
            tf32_refs[key] = r["tflops"]
    for r in rows:
        key = schema.problem_key(r)
        ref = refs.get(key)
        t = r.get("tflops")
        r["vs_cublas"] = (t / ref) if (t and ref) else None
        if key in tf32_refs:
            r["vs_cublas_tf32"] = (t / tf32_refs[key]) if t else None
        before, after = r.get("sm_clock_mhz_before"), r.get("sm_clock_mhz_after")
        seen = [c for c in (before, after) if c]
        if seen:
            clock, source = sum(seen) / len(seen), "measured"
        elif max_clock_mhz:
            clock, source = float(max_clock_mhz), "max"
        else:
            clock, source = None, None
        if t and sms and clock:
            r["peak_clock_mhz"] = clock
            r["peak_clock_source"] = source
            tensor = r.get("precision", "ieee") != "ieee"
            r["peak_tflops"] = (stats.tf32_peak_tflops if tensor else stats.fp32_peak_tflops)(sms, clock)
            r["vs_peak"] = t / r["peak_tflops"]
        exp = r.get("expected_pct_cublas")
        if exp and r["vs_cublas"] is not None:
            pct = 100.0 * r["vs_cublas"]
            r["vs_expected"] = "below" if pct < exp[0] else "above" if pct > exp[1] else "within"
        elif "vs_expected" not in r:
            r["vs_expected"] = None
    return rows


def progress_line(i: int, total: int, row: dict, cublas_tflops) -> str:
    w = len(str(total))
    size = schema.problem_text(row)
    label = f"{row['stage']} {row['name']}" if row["kind"] == "stage" else row["name"]
    head = f"[{i:>{w}}/{total}] {size} {label[:34]:<34}"
    if row.get("skipped"):
        return f"{head} skipped: {row['skipped']}"
    if row.get("tflops") is None:
        from .report import status

        return f"{head} {status(row)}: {row.get('error', '')}"
    pct = f"{100 * row['tflops'] / cublas_tflops:6.1f}% cuBLAS" if cublas_tflops else ""
    capped = " (time budget hit)" if row.get("capped") else ""
    return (f"{head} err {row['rel_error']:.1e} ok  {row['reps']:>5} reps{capped}  {row['time_ms']:9.3f} ms  "
            f"{row['tflops']:7.2f} TFLOPS {pct}")
