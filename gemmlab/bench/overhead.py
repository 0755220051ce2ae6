"""``gemmlab bench --overhead``: what one call costs, on the host and end to end, against torch.mm.

For each size N (default 64, 256, 1024; N x N x N, row-major float32) and each way of calling
(``CALLS``: ``gemmlab.matmul(a, b)``, ``gemmlab.matmul(a, b, out=out)``, ``torch.ops.gemmlab.mm(a,
b)``, ``torch.mm(a, b)`` while ``gemmlab.torch.enable()`` is on, ``torch.mm(a, b)``,
``torch.mm(a, b, out=out)``, and two rows that take the op path apart: ``torch.ops.gemmlab.mm``
with gemmlab's call replaced by returning a precomputed result (the operator's dispatch alone),
a ``torch.library.custom_op`` wrapper around ``gemmlab.matmul`` (the design the operators had
before, for comparison in the same run), and three rows whose operands move: each call takes the
next of ``POOL`` copies of a and b, so every call sees new addresses, as calls on fresh
activations do (for gemmlab: the TMA descriptors point at new addresses every call)):

1. one call is checked against the float64 product (a call that fails is not timed);
2. warm-up calls, then a synchronize;
3. ``calls`` (default 500) back-to-back calls with no synchronize in the loop, one synchronize
   after it: host time per call = wall time of the loop / calls (what the CPU spends to enqueue
   one GEMM; once the GPU is the slower side the queue fills and it waits), end-to-end time per
   call = wall time of loop + synchronize / calls;
4. step 3 is repeated ``repeats`` times (default 5); the median of each is reported, and every
   repetition is kept in the JSON.

Small GEMMs take a few microseconds on the GPU, so at 64³ both numbers are the call's Python and
launch cost; at 1024³ the end-to-end number is the kernels' time.

``api_vs_kernel``: at 4096³, ``gemmlab.matmul(a, b, out=out)`` timed through the public API with
the ladder's harness (gemmlab/bench/timing.py: CUDA events around each call, L2 flushed before
each, median) next to ``torch.mm(a, b, out=out)`` timed the same way, and the kernel without the
API (``gemmlab.api.prepare``: a callable that enqueues exactly the work of that call). The API path should be within 2% of the
kernel alone.

``targets``: the issue's target for the operator, its host time at 64³ within 1.3x torch.mm's.

torch is imported inside the functions: this module imports on machines without it.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import stats
from .timing import Policy

SCHEMA = "gemmlab.overhead/1"
DEFAULT_SIZES = (64, 256, 1024)
DEFAULT_CALLS = 500
DEFAULT_REPEATS = 5
DEFAULT_WARMUP = 50
API_SIZE = 4096
API_TARGET = 1.02          # the API path's median within 2% of the kernel alone
BASELINE = "torch.mm"
OP_CALL = "torch.ops.gemmlab.mm"
ENABLED_CALL = "torch.mm [gemmlab.torch.enable()]"
DISPATCH_CALL = "torch.ops.gemmlab.mm [dispatch only]"
CUSTOM_OP_CALL = "custom_op wrapper [previous design]"
MOVING = " [operands move]"  # the call cycles through POOL copies of a and b: new addresses every call
POOL = 8
CALLS = ("gemmlab.matmul", "gemmlab.matmul(out=)", OP_CALL, ENABLED_CALL, "torch.mm", "torch.mm(out=)",
         DISPATCH_CALL, CUSTOM_OP_CALL, "gemmlab.matmul" + MOVING, OP_CALL + MOVING, "torch.mm" + MOVING)
TARGETS = ((OP_CALL, 64, 1.3),)   # (call, size, host time / torch.mm's at most)


@dataclass
class Settings:
    sizes: tuple = DEFAULT_SIZES
    calls: int = DEFAULT_CALLS
    repeats: int = DEFAULT_REPEATS
    warmup: int = DEFAULT_WARMUP
    api_size: int = API_SIZE            # 0: no api_vs_kernel row
    policy: Policy = field(default_factory=Policy)
    device: int = 0


# ---- the timing loop (no GPU needed to test it: sync and clock are passed in) ---------------

def time_calls(fn, calls: int, sync, clock=time.perf_counter) -> tuple[float, float]:
    """(host seconds per call, end-to-end seconds per call) of ``calls`` back-to-back ``fn()``
    with one ``sync()`` after the loop (and one before it, so earlier work is not counted)."""
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    sync()
    t0 = clock()
    for _ in range(calls):
        fn()
    t1 = clock()
    sync()
    t2 = clock()
    return (t1 - t0) / calls, (t2 - t0) / calls


def measure_calls(fn, *, calls: int, repeats: int, warmup: int, sync, clock=time.perf_counter) -> dict:
    """Warm up, then ``repeats`` runs of :func:`time_calls`; medians and every run, in µs."""
    for _ in range(warmup):
        fn()
    sync()
    runs = {"host_us_runs": [], "e2e_us_runs": []}
    for _ in range(max(1, repeats)):
        _add_run(runs, *time_calls(fn, calls, sync, clock))
    return _medians(runs, calls, warmup)


def _add_run(runs: dict, host_s: float, e2e_s: float) -> None:
    runs["host_us_runs"].append(host_s * 1e6)
    runs["e2e_us_runs"].append(e2e_s * 1e6)


def _medians(runs: dict, calls: int, warmup: int) -> dict:
    """measure_calls' result: the medians of the runs, the runs, and how they were taken."""
    return {**runs, "host_us": stats.median(runs["host_us_runs"]), "e2e_us": stats.median(runs["e2e_us_runs"]),
            "calls": calls, "repeats": len(runs["host_us_runs"]), "warmup": warmup}


def measure_interleaved(entries, *, calls: int, repeats: int, warmup: int, sync, clock=time.perf_counter,
                        rewarm: int = 10) -> list[dict]:
    """:func:`measure_calls` for several calls at once, in turns: ``entries`` are (fn, context
    factory or None); each is warmed up once, then every run times each entry in turn (inside its
    context, after ``rewarm`` untimed calls), so that a slow stretch of the host falls on every
    entry alike instead of on the one being timed then. One result dict per entry, as
    measure_calls gives, or {"error": ...} for an entry that raised (it is not timed again)."""
    results = [{"host_us_runs": [], "e2e_us_runs": []} for _ in entries]

    def held(context):
        return context() if context is not None else contextlib.nullcontext()

    def attempt(i, body):
        if "error" in results[i]:
            return
        try:
            with held(entries[i][1]):
                body(entries[i][0])
        except Exception as e:  # the other entries still run
            results[i] = {"error": f"{type(e).__name__}: {e}"[:500]}

    def warm(fn, n):
        for _ in range(n):
            fn()
        sync()

    for i in range(len(entries)):
        attempt(i, lambda fn: warm(fn, warmup))
    for _ in range(max(1, repeats)):
        for i in range(len(entries)):
            def timed(fn, i=i):
                warm(fn, rewarm)
                _add_run(results[i], *time_calls(fn, calls, sync, clock))
            attempt(i, timed)
    return [r if "error" in r else _medians(r, calls, warmup) for r in results]


def add_ratios(rows: list[dict]) -> list[dict]:
    """``vs_torch_host`` and ``vs_torch_e2e``: each row's time over torch.mm's at the same size
    (None where either is missing). In place; returned."""
    base = {r["size"]: r for r in rows if r["call"] == BASELINE and r.get("host_us")}
    for r in rows:
        b = base.get(r["size"])
        for key, ratio in (("host_us", "vs_torch_host"), ("e2e_us", "vs_torch_e2e")):
            ok = b is not None and r.get(key) is not None and b.get(key)
            r[ratio] = r[key] / b[key] if ok else None
    return rows


def check_targets(rows: list[dict]) -> list[dict]:
    """The TARGETS against the rows (after add_ratios): one entry each, ``met`` None where the
    size was not measured."""
    out = []
    for call, size, limit in TARGETS:
        r = next((r for r in rows if r["call"] == call and r["size"] == size), None)
        ratio = None if r is None else r.get("vs_torch_host")
        out.append({"call": call, "size": size, "measure": "host / torch.mm host", "target": limit,
                    "value": ratio, "met": None if ratio is None else ratio <= limit})
    return out


# ---- the run (GPU) ---------------------------------------------------------------------------

def _candidates(a, b, out_g, out_t):
    """(name, callable returning the result array, context manager factory or None) for every
    way of calling; out_g/out_t are the preallocated outputs of the out= variants. The context
    (gemmlab.torch.enable(), a stubbed gemmlab call) is held around the row's check and timing."""
    import torch

    import gemmlab
    import gemmlab.torch as gtorch
    import gemmlab.torch_ops  # noqa: F401  (registers torch.ops.gemmlab.*)

    mm_op = torch.ops.gemmlab.mm
    custom = _custom_op_mm()
    pool = [(a.clone(), b.clone()) for _ in range(POOL)]

    def moving(f):
        turn = itertools.cycle(pool)
        return lambda: f(*next(turn))

    return [
        ("gemmlab.matmul", lambda: gemmlab.matmul(a, b), None),
        ("gemmlab.matmul(out=)", lambda: gemmlab.matmul(a, b, out=out_g), None),
        (OP_CALL, lambda: mm_op(a, b), None),
        (ENABLED_CALL, lambda: torch.mm(a, b), lambda: gtorch.enable(strict=True)),
        ("torch.mm", lambda: torch.mm(a, b), None),
        ("torch.mm(out=)", lambda: torch.mm(a, b, out=out_t), None),
        (DISPATCH_CALL, lambda: mm_op(a, b), lambda: _stubbed_run(gemmlab.matmul(a, b))),
        (CUSTOM_OP_CALL, lambda: custom(a, b), None),
        ("gemmlab.matmul" + MOVING, moving(gemmlab.matmul), None),
        (OP_CALL + MOVING, moving(mm_op), None),
        ("torch.mm" + MOVING, moving(torch.mm), None),
    ]


class _stubbed_run:
    """torch_ops' gemmlab call replaced by returning ``result`` (computed once by gemmlab): what is
    left of a torch.ops.gemmlab.mm call is the operator's own dispatch."""

    def __init__(self, result):
        self.result = result

    def __enter__(self):
        from .. import torch_ops

        self._saved = torch_ops._run
        torch_ops._run = lambda *args: self.result
        return self

    def __exit__(self, *exc):
        from .. import torch_ops

        torch_ops._run = self._saved
        return False


_custom_mm = None


def _custom_op_mm():
    """``gemmlab_bench::mm``: gemmlab.matmul as a torch.library.custom_op with a fake
    implementation and an autograd formula, as torch_ops defined its operators before."""
    global _custom_mm
    if _custom_mm is None:
        import torch

        import gemmlab

        @torch.library.custom_op("gemmlab_bench::mm", mutates_args=(), schema="(Tensor a, Tensor b) -> Tensor")
        def mm(a, b):
            return gemmlab.matmul(a, b)

        @mm.register_fake
        def _(a, b):
            return a.new_empty((a.shape[0], b.shape[1]))

        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return mm(g, b.t()), mm(a.t(), g)

        mm.register_autograd(backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(*inputs))
        _custom_mm = mm
    return _custom_mm


def _operands(n: int, dev: int, seed: int):
    """a, b (N x N, gemmlab.check's random operands), their float64 product, and two outputs for
    the out= calls."""
    import torch

    from .. import check

    a, b, _ = check.random_operands(n, n, n, "nn", device=f"cuda:{dev}", seed=seed)
    out = [torch.empty((n, n), device=f"cuda:{dev}") for _ in range(2)]
    return a, b, check.reference(a, b, None, 1.0, 0.0), out[0], out[1]


def _check(fn, ref, k: int):
    import torch

    from .. import check

    res = fn()
    torch.cuda.synchronize()
    return check.compare(res, ref, k)


def kernel_only_launch(a, b, out):
    """(callable, None): enqueues the kernel(s) of ``gemmlab.matmul(a, b, out=out)`` without the
    API's per-call work (``gemmlab.api.prepare``: the same plan, bound to these arrays);
    (None, reason) if that fails."""
    from .. import api

    try:
        _, launch = api.prepare(a, b, out=out)
    except Exception as e:
        return None, f"gemmlab.api.prepare failed: {type(e).__name__}: {e}"[:300]
    return launch, None


def _timed(launch, policy, flush, read_clock) -> dict:
    from .timing import measure

    t = measure(launch, policy, flush, read_clock)
    s = t.summary
    return {"time_ms": s.median, "time_ms_p20": s.p20, "time_ms_p80": s.p80, "reps": t.reps,
            "capped": t.capped}


def _api_calls(a, b, out_g, out_t):
    """(key, callable, its output) of the api_vs_kernel row: the public API and torch.mm."""
    import torch

    import gemmlab

    return [("api", lambda: gemmlab.matmul(a, b, out=out_g), out_g),
            ("torch_mm", lambda: torch.mm(a, b, out=out_t), out_t)]


def api_vs_kernel(n: int, settings: Settings, flush, read_clock, say) -> dict:
    """The 4096³ row: the public API call, torch.mm and (where available) the kernel alone, each
    timed with CUDA events and a flushed L2."""
    import torch

    from .. import check

    a, b, ref, out_g, out_t = _operands(n, settings.device, seed=1234)
    row = {"size": n, "m": n, "n": n, "k": n, "api": None, "torch_mm": None, "kernel": None,
           "kernel_note": None, "api_vs_torch": None, "api_vs_kernel": None, "within_target": None,
           "target": API_TARGET, "errors": []}
    for name, launch, out in _api_calls(a, b, out_g, out_t):
        try:
            out.fill_(float("nan"))
            launch()
            torch.cuda.synchronize()
            chk = check.compare(out, ref, n)
            if not chk.correct:
                row["errors"].append(f"{name}: rel_error {chk.rel_error:.3g} > {chk.tolerance:.3g}; not timed")
                continue
            row[name] = {**_timed(launch, settings.policy, flush, read_clock), "rel_error": chk.rel_error}
        except Exception as e:
            row["errors"].append(f"{name}: {type(e).__name__}: {e}"[:300])
    launch, why = kernel_only_launch(a, b, out_g)
    if launch is None:
        row["kernel_note"] = why
    else:
        try:
            launch()
            row["kernel"] = _timed(launch, settings.policy, flush, read_clock)
        except Exception as e:
            row["kernel_note"] = f"kernel-only timing failed: {type(e).__name__}: {e}"[:300]
    api_ms = (row["api"] or {}).get("time_ms")
    if api_ms and row["torch_mm"]:
        row["api_vs_torch"] = api_ms / row["torch_mm"]["time_ms"]
    if api_ms and row["kernel"]:
        row["api_vs_kernel"] = api_ms / row["kernel"]["time_ms"]
        row["within_target"] = row["api_vs_kernel"] <= API_TARGET
    say(f"api_vs_kernel {n}³: " + _api_line(row))
    del a, b, ref, out_g, out_t
    return row


def run(settings: Settings, progress=None) -> dict:
    """Measure; return the overhead.json document."""
    try:
        import torch
    except ImportError:
        from ..errors import GemmlabError

        raise GemmlabError("gemmlab bench --overhead needs torch (arrays, torch.mm, the torch op); "
                           "install it with pip install torch") from None
    from .. import device as _device
    from . import baselines, provenance
    from .timing import L2Flush

    def say(msg):
        print(msg, file=progress or sys.stderr, flush=True)

    t_run = time.perf_counter()
    dev = settings.device
    torch.cuda.set_device(dev)
    tf32 = baselines.disable_tf32()
    gpu = _device.info(dev)
    clocks = provenance.ClockReader(dev)
    prov = provenance.collect(device_index=dev, clocks=clocks)
    prov["sm_clock_mhz_start"] = clocks.sm_mhz()
    say(f"gemmlab bench --overhead: {gpu.name} ({gpu.arch}), sizes {', '.join(map(str, settings.sizes))}, "
        f"{settings.calls} calls x {settings.repeats}")

    rows = []
    sync = torch.cuda.synchronize
    for n in settings.sizes:
        a, b, ref, out_g, out_t = _operands(n, dev, seed=n)
        timed = []   # (row, fn, context) of the calls that are correct: timed together, in turns
        first = len(rows)
        for name, fn, context in _candidates(a, b, out_g, out_t):
            row = {"size": n, "m": n, "n": n, "k": n, "call": name, "host_us": None, "e2e_us": None,
                   "rel_error": None, "correct": False}
            try:
                with context() if context is not None else contextlib.nullcontext():
                    out_g.fill_(float("nan"))
                    out_t.fill_(float("nan"))
                    chk = _check(fn, ref, n)
                    row.update(rel_error=chk.rel_error if math.isfinite(chk.rel_error) else None,
                               correct=bool(chk.correct))
                    if chk.correct:
                        timed.append((row, fn, context))
                    else:
                        row["error"] = f"rel_error {chk.rel_error:.3g} > tolerance {chk.tolerance:.3g}; not timed"
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {e}"[:500]
            rows.append(row)
        results = measure_interleaved([(fn, context) for _, fn, context in timed], calls=settings.calls,
                                      repeats=settings.repeats, warmup=settings.warmup, sync=sync)
        for (row, _, _), res in zip(timed, results):
            row.update(res)
        for row in rows[first:]:
            say(f"  {n:>5}³ {row['call']:<36} " + (f"host {row['host_us']:8.1f} µs  e2e {row['e2e_us']:8.1f} µs"
                                                   if row["host_us"] is not None else row.get("error", "")))
        del a, b, ref, out_g, out_t
        torch.cuda.empty_cache()
    add_ratios(rows)
    targets = check_targets(rows)

    api_row = None
    if settings.api_size:
        flush = L2Flush(settings.policy.flush_bytes, dev)
        try:
            api_row = api_vs_kernel(settings.api_size, settings, flush, clocks.sm_mhz, say)
        finally:
            del flush
            torch.cuda.empty_cache()

    prov["sm_clock_mhz_end"] = clocks.sm_mhz()
    prov["wall_seconds"] = round(time.perf_counter() - t_run, 1)
    return {
        "schema": SCHEMA,
        "kind": "overhead",
        "provenance": prov,
        "method": method_block(settings, tf32),
        "rows": rows,
        "targets": targets,
        "api_vs_kernel": api_row,
    }


def method_block(settings: Settings, tf32: dict | None = None) -> dict:
    return {
        "host": (f"wall time of {settings.calls} back-to-back calls (no synchronize in the loop) / "
                 f"{settings.calls}, after {settings.warmup} warm-up calls and a synchronize"),
        "end_to_end": "the same loop plus one torch.cuda.synchronize, / calls",
        "statistic": (f"median of {settings.repeats} runs (every run in host_us_runs / e2e_us_runs); the calls of a "
                      f"size are timed in turns: run r of every call, then run r + 1, each after 10 untimed calls"),
        "operands": "N x N row-major float32, uniform in [-1, 1); each call checked against float64 first",
        "ratio": f"vs_torch_*: the row's time / {BASELINE}'s at the same size",
        "api_vs_kernel": ("CUDA events around each call, L2 flushed before each (gemmlab/bench/timing.py), "
                          f"median; target: API median <= {API_TARGET} x the kernel alone"),
        "policy": settings.policy.as_dict(),
        "tf32_settings": tf32 or {},
    }


# ---- output ----------------------------------------------------------------------------------

def _f(x, fmt) -> str:
    return "—" if x is None else format(x, fmt)


def _api_line(r: dict) -> str:
    api = (r.get("api") or {}).get("time_ms")
    tmm = (r.get("torch_mm") or {}).get("time_ms")
    ker = (r.get("kernel") or {}).get("time_ms")
    text = f"gemmlab.matmul(out=) {_f(api, '.4f')} ms, torch.mm {_f(tmm, '.4f')} ms (x{_f(r.get('api_vs_torch'), '.3f')})"
    if ker is not None:
        text += f", kernel alone {ker:.4f} ms"
        if r.get("api_vs_kernel") is not None:
            verdict = "within" if r.get("within_target") else "NOT within"
            text += (f": API/kernel x{r['api_vs_kernel']:.4f} "
                     f"({verdict} {100 * (r.get('target', API_TARGET) - 1):.0f}%)")
    else:
        text += f"; kernel alone: — ({r.get('kernel_note') or 'not measured'})"
    for e in r.get("errors") or []:
        text += f"\n  error: {e}"
    return text


def plain(doc: dict) -> str:
    """The table of an overhead document (µs per call, ratio to torch.mm)."""
    prov = doc.get("provenance") or {}
    gpu = (prov.get("gpu") or {}).get("name", "?")
    m = doc.get("method") or {}
    lines = [f"gemmlab bench --overhead on {gpu}; {prov.get('date', '')} commit "
             f"{str((prov.get('git') or {}).get('commit') or '?')[:7]}",
             f"host: {m.get('host', '')}; end to end: {m.get('end_to_end', '')}; {m.get('statistic', '')}",
             ""]
    head = ("size", "call", "host µs/call", "e2e µs/call", "host / torch.mm", "e2e / torch.mm", "rel. error")
    body = []
    for r in doc.get("rows", []):
        body.append((f"{r['size']}³", r["call"], _f(r.get("host_us"), ".2f"), _f(r.get("e2e_us"), ".2f"),
                     _f(r.get("vs_torch_host"), ".2f"), _f(r.get("vs_torch_e2e"), ".2f"),
                     _f(r.get("rel_error"), ".1e") + ("" if r.get("correct") else " FAIL")))
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    right = (False, False, True, True, True, True, True)

    def fmt(cells):
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    lines.append(fmt(head))
    lines.append("  ".join("-" * w for w in widths))
    lines += [fmt(b) for b in body]
    for r in doc.get("rows", []):
        if r.get("error"):
            lines.append(f"error: {r['size']}³ {r['call']}: {r['error']}")
    for t in doc.get("targets") or []:
        verdict = "—" if t.get("met") is None else ("met" if t["met"] else "NOT met")
        lines.append(f"target: {t['call']} at {t['size']}³, {t['measure']} <= {t['target']}: "
                     f"{_f(t.get('value'), '.2f')} ({verdict})")
    api = doc.get("api_vs_kernel")
    if api:
        lines += ["", f"api_vs_kernel at {api['size']}³ (CUDA events, L2 flushed, median): " + _api_line(api)]
    return "\n".join(lines) + "\n"


def write(doc: dict, out_dir) -> Path:
    """Write overhead.json into ``out_dir`` (created); return its path."""
    from .report import write_into

    return write_into(doc, out_dir, "overhead.json")


def failed(doc: dict) -> list[str]:
    """What went wrong in ``doc`` (rows that failed the check or errored, api_vs_kernel errors)."""
    bad = [f"{r['size']}³ {r['call']}" for r in doc.get("rows", []) if not r.get("correct") or r.get("error")]
    api = doc.get("api_vs_kernel") or {}
    bad += [f"api_vs_kernel {e}" for e in api.get("errors") or []]
    return bad
