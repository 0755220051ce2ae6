"""Training-step benchmark: torch's FP32 GEMMs against gemmlab's in a real model, one process.

    python -m gemmlab.bench.training --out results/h200/training               # d_model 512
    python -m gemmlab.bench.training --d-model 2048 --precision tf32x3 --skip-compile --out DIR

The model: ``torch.nn.TransformerEncoder`` of ``--layers`` (4) ``TransformerEncoderLayer``s
(d_model ``--d-model`` 512, 8 heads, feed-forward 4 x d_model = 2048, batch_first, dropout
``--dropout`` 0: so that every run, compiled or not, sees the same arithmetic and the losses can
be compared), input ``--batch`` 32 x ``--seq`` 128 tokens, MSE loss against a random target, Adam
(lr 1e-4). Every run starts from the same initial weights and the same data (4 batches, cycled)
and takes ``--steps`` (30) steps:

- ``torch eager``: the model as it is, TF32 off (cuBLAS FP32);
- ``enable() eager``: the same model under ``gemmlab.torch.enable(precision=--precision,
  strict=True)``: every float32 GEMM of forward and backward on gemmlab, no model change;
- ``torch compiled``: ``torch.compile(model, fullgraph=True)``;
- ``nn.Linear compiled``: the model's Linear layers replaced by ``gemmlab.nn.Linear``
  (``gemmlab.nn.replace_linear``: the feed-forward layers; attention's projections stay torch's),
  compiled the same way;
- ``compiled + enable()``: the compiled torch model (the same compiled code, no recompilation)
  run under enable(): Inductor's mm/addmm calls on gemmlab too;
- ``torch compiled (graphs)`` and ``nn.Linear compiled (graphs)``: the two compiled models with
  ``mode="reduce-overhead"`` (forward and backward replayed as CUDA graphs; ``--skip-graphs``
  leaves them out): the host's cost per kernel is gone, so these two compare GPU time.

Step time: CUDA events at every step boundary (no synchronize inside the loop), the median over
the steps after ``--warmup`` (5; the first compiled step holds the compilation, reported as
``first_step_s``) of ``--rounds`` (3) rounds: every row runs once per round, in turn. Losses: the largest relative difference to torch eager's (eager runs) or to
torch compiled's (compiled runs) over all steps. ``gemmlab.torch.stats()`` of the enable() runs
shows how many GEMMs ran on gemmlab and how many fell through to torch. A precision the API does
not take (``gemmlab.matmul(..., precision=P)`` raises) skips the rows that need it with a message.

Writes ``training.json`` (schema ``gemmlab.training/1``: provenance as in ladder.json, the
settings, rows with every step's time (steps_ms) and loss, the targets) with ``--out``, and prints a table.
Exit status 0; 1 when a row failed; 2 without a GPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SCHEMA = "gemmlab.training/1"

TORCH_EAGER = "torch eager"
ENABLE_EAGER = "enable() eager"
TORCH_COMPILED = "torch compiled"
LINEAR_COMPILED = "nn.Linear compiled"
ENABLE_COMPILED = "compiled + enable()"
TORCH_GRAPHS = "torch compiled (graphs)"
LINEAR_GRAPHS = "nn.Linear compiled (graphs)"
ROWS = (TORCH_EAGER, ENABLE_EAGER, TORCH_COMPILED, LINEAR_COMPILED, ENABLE_COMPILED, TORCH_GRAPHS, LINEAR_GRAPHS)
BASELINE = {ENABLE_EAGER: TORCH_EAGER, LINEAR_COMPILED: TORCH_COMPILED, ENABLE_COMPILED: TORCH_COMPILED,
            TORCH_COMPILED: TORCH_EAGER, TORCH_GRAPHS: TORCH_COMPILED, LINEAR_GRAPHS: TORCH_GRAPHS}
GRAPHS_MODE = "reduce-overhead"  # torch.compile's mode of the (graphs) rows: Inductor's CUDA graph trees


@dataclass
class Settings:
    d_model: int = 512
    layers: int = 4
    heads: int = 8
    ff_mult: int = 4
    batch: int = 32
    seq: int = 128
    steps: int = 30
    warmup: int = 5
    dropout: float = 0.0
    lr: float = 1e-4
    precision: str | None = None
    compile: bool = True
    graphs: bool = True
    rounds: int = 3
    seed: int = 0
    device: int = 0


# ---- the model and one run -----------------------------------------------------------------------

def _dev(s: Settings) -> str:
    """Where the runs go (tests on machines without a GPU put them on the CPU)."""
    return f"cuda:{s.device}"


def build_model(s: Settings):
    import torch

    torch.manual_seed(s.seed)
    layer = torch.nn.TransformerEncoderLayer(s.d_model, s.heads, dim_feedforward=s.ff_mult * s.d_model,
                                             dropout=s.dropout, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, s.layers, enable_nested_tensor=False)
    return model.to(_dev(s)).train()


def make_data(s: Settings, n: int = 4):
    import torch

    g = torch.Generator(device=_dev(s)).manual_seed(s.seed + 1)
    shape = (s.batch, s.seq, s.d_model)
    return [(torch.randn(shape, device=_dev(s), generator=g), torch.randn(shape, device=_dev(s), generator=g))
            for _ in range(n)]


def train_steps(model, forward, data, s: Settings, step_begin=None) -> dict:
    """``s.steps`` Adam steps of ``forward`` (the model or its compiled form) on ``data`` cycled;
    every step's loss and GPU-timeline time (CUDA events at the boundaries). ``step_begin``:
    called before each step's forward (CUDA graph trees: torch.compiler.cudagraph_mark_step_begin)."""
    import torch

    torch.manual_seed(s.seed + 2)           # dropout, where there is any: the same masks in every eager run
    opt = torch.optim.Adam(model.parameters(), lr=s.lr)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(s.steps + 1)]
    losses = []
    t0 = time.perf_counter()
    first = None
    events[0].record()
    for i in range(s.steps):
        x, y = data[i % len(data)]
        opt.zero_grad(set_to_none=True)
        if step_begin is not None:
            step_begin()
        loss = torch.nn.functional.mse_loss(forward(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        events[i + 1].record()
        if i == 0:
            torch.cuda.synchronize()
            first = time.perf_counter() - t0
    torch.cuda.synchronize()
    steps_ms = [events[i].elapsed_time(events[i + 1]) for i in range(s.steps)]
    return {"losses": [float(v) for v in torch.stack(losses).cpu()], "steps_ms": steps_ms,
            "first_step_s": first, "wall_s": time.perf_counter() - t0}


def summarize(run: dict, warmup: int) -> dict:
    return summarize_rounds([run["steps_ms"]], warmup)


def summarize_rounds(rounds: list, warmup: int) -> dict:
    """The step time over every round's steps after its first ``warmup``: median, 20th and 80th
    percentiles, and each round's median (how much the rounds differ)."""
    from . import stats

    timed = [t for r in rounds for t in (r[warmup:] or r)]
    return {"step_ms": stats.median(timed), "step_ms_p20": stats.percentile(timed, 20),
            "step_ms_p80": stats.percentile(timed, 80), "timed_steps": len(timed),
            "round_step_ms": [stats.median(r[warmup:] or r) for r in rounds]}


def loss_rel_diff(losses, ref) -> float | None:
    if not losses or not ref or len(losses) != len(ref):
        return None
    return max(abs(a - b) / abs(b) if b else abs(a - b) for a, b in zip(losses, ref))


# ---- the benchmark -------------------------------------------------------------------------------

def _compile(model, mode=None):
    import torch

    return torch.compile(model, fullgraph=True, mode=mode)


def _graph_step_begin():
    import torch

    return torch.compiler.cudagraph_mark_step_begin()


def precision_ok(precision, device: str) -> str | None:
    """None if gemmlab computes at ``precision`` (a small probe GEMM), else why not."""
    if precision is None:
        return None
    import torch

    import gemmlab

    try:
        a = torch.rand(256, 256, device=device)
        gemmlab.matmul(a, a, precision=precision)
        torch.cuda.synchronize()
    except TypeError as e:
        return f"the API does not take precision= ({e})"
    except Exception as e:
        return f"gemmlab.matmul(precision={precision!r}) failed: {type(e).__name__}: {e}"[:300]
    return None


def run(s: Settings, progress=None) -> dict:
    import torch

    import gemmlab.nn as gnn
    import gemmlab.torch as gtorch

    from .. import device as _device
    from . import baselines, provenance

    def say(msg):
        print(msg, file=progress or sys.stderr, flush=True)

    t_run = time.perf_counter()
    torch.cuda.set_device(s.device)
    tf32 = baselines.disable_tf32()
    gpu = _device.info(s.device)
    clocks = provenance.ClockReader(s.device)
    prov = provenance.collect(device_index=s.device, clocks=clocks)
    prov["sm_clock_mhz_start"] = clocks.sm_mhz()
    say(f"gemmlab training benchmark: {gpu.name}; TransformerEncoder {s.layers} x d_model {s.d_model}, "
        f"ff {s.ff_mult * s.d_model}, batch {s.batch} x {s.seq}, {s.steps} Adam steps; precision "
        f"{s.precision or 'default'}")
    data = make_data(s)
    init = {k: v.detach().clone() for k, v in build_model(s).state_dict().items()}
    no_precision = precision_ok(s.precision, _dev(s))
    if no_precision:
        say(f"  precision {s.precision!r}: {no_precision}; the rows that need it are skipped")
    rows = {}

    def record(name, fn, rnd):
        """Round ``rnd`` of the row ``name``: its steps join the row's; the first round also gives
        the losses, the first step's time (the compilation) and the GEMM counts. A row that
        failed once is not run again."""
        row = rows.setdefault(name, {"run": name, "error": None, "skipped": None, "round_steps_ms": []})
        if row["error"] or row["skipped"]:
            return
        try:
            if rnd == 0:
                gtorch.reset_stats()
            out = fn()
            if out is None:
                return
            if rnd == 0:
                row.update(out)
            row["round_steps_ms"].append(out["steps_ms"])
        except Exception as e:  # one row's failure is reported, the others still run
            row["error"] = f"{type(e).__name__}: {e}"[:600]
        if row["round_steps_ms"]:
            row.update(summarize_rounds(row["round_steps_ms"], s.warmup))
        say(f"  {name:<22} " + (f"{row['step_ms']:8.2f} ms/step" + (f" (round {rnd + 1}/{s.rounds})" if s.rounds > 1 else "")
                                if row.get("step_ms") and not row["error"] else row["error"] or ""))

    def skip(name, why):
        rows[name] = {"run": name, "error": None, "skipped": why}
        say(f"  {name:<22} skipped: {why}")

    def fresh(replace=False):
        model = build_model(s)
        model.load_state_dict(init)
        if replace:
            gnn.replace_linear(model, precision=s.precision)
        return model

    def gemm_stats():
        return {op: v for op, v in gtorch.stats().items() if v["gemmlab"] or v["torch"]}

    def eager_torch():
        model = fresh()
        return train_steps(model, model, data, s)

    def eager_enabled():
        model = fresh()
        with gtorch.enable(precision=s.precision, strict=True):
            out = train_steps(model, model, data, s)
        return {**out, "gemms": gemm_stats()}

    compiled = {}

    def compiled_model(key, replace, mode=None):
        """The compiled model of row ``key``, built and compiled once; later rounds start it again
        from the initial weights, in place (no recompilation)."""
        if key not in compiled:
            if not compiled:
                torch._dynamo.reset()
            model = fresh(replace)
            compiled[key] = (model, _compile(model, mode))
        else:
            compiled[key][0].load_state_dict(init)
        return compiled[key]

    def compiled_torch():
        model, fn = compiled_model("torch", False)
        return train_steps(model, fn, data, s)

    def compiled_linear():
        model, fn = compiled_model("linear", True)
        return {**train_steps(model, fn, data, s), "replaced_linears": 2 * s.layers}

    def compiled_enabled():
        if "torch" not in compiled:
            raise RuntimeError("the torch compiled row did not run")
        model, fn = compiled_model("torch", False)      # the same compiled code, under enable()
        with gtorch.enable(precision=s.precision, strict=True):
            out = train_steps(model, fn, data, s)
        return {**out, "gemms": gemm_stats()}

    def graphs_torch():
        model, fn = compiled_model("torch graphs", False, GRAPHS_MODE)
        return train_steps(model, fn, data, s, step_begin=_graph_step_begin)

    def graphs_linear():
        model, fn = compiled_model("linear graphs", True, GRAPHS_MODE)
        return {**train_steps(model, fn, data, s, step_begin=_graph_step_begin), "replaced_linears": 2 * s.layers}

    runs = [(TORCH_EAGER, eager_torch)]
    if no_precision:
        skip(ENABLE_EAGER, no_precision)
    else:
        runs.append((ENABLE_EAGER, eager_enabled))
    if s.compile:
        runs.append((TORCH_COMPILED, compiled_torch))
        for name, fn in ((LINEAR_COMPILED, compiled_linear), (ENABLE_COMPILED, compiled_enabled)):
            if no_precision:
                skip(name, no_precision)
            else:
                runs.append((name, fn))
    else:
        for name in (TORCH_COMPILED, LINEAR_COMPILED, ENABLE_COMPILED):
            skip(name, "--skip-compile")
    if s.compile and s.graphs:
        runs.append((TORCH_GRAPHS, graphs_torch))
        if no_precision:
            skip(LINEAR_GRAPHS, no_precision)
        else:
            runs.append((LINEAR_GRAPHS, graphs_linear))
    else:
        for name in (TORCH_GRAPHS, LINEAR_GRAPHS):
            skip(name, "--skip-compile" if not s.compile else "--skip-graphs")
    # Rounds: every row once per round, in turn, so that a slow stretch of the host (the step is
    # close to host-bound) falls on all rows alike instead of on whichever row ran then.
    for rnd in range(s.rounds):
        for name, fn in runs:
            record(name, fn, rnd)
        torch.cuda.empty_cache()
    gtorch.disable()

    out_rows = [rows[name] for name in ROWS if name in rows]
    add_comparisons(out_rows)
    prov["sm_clock_mhz_end"] = clocks.sm_mhz()
    prov["wall_seconds"] = round(time.perf_counter() - t_run, 1)
    return {"schema": SCHEMA, "kind": "training", "provenance": prov, "settings": asdict(s),
            "method": method_block(s, tf32), "rows": out_rows, "targets": check_targets(out_rows, s)}


def add_comparisons(rows: list[dict]) -> list[dict]:
    """``vs_baseline`` (step time / the baseline row's) and ``loss_rel_diff`` (largest relative
    loss difference over the steps) against each row's baseline (BASELINE). In place; returned."""
    by = {r["run"]: r for r in rows}
    for r in rows:
        base = by.get(BASELINE.get(r["run"]))
        r["baseline"] = base["run"] if base else None
        ok = base is not None and r.get("step_ms") and base.get("step_ms")
        r["vs_baseline"] = r["step_ms"] / base["step_ms"] if ok else None
        r["loss_rel_diff"] = loss_rel_diff(r.get("losses"), base.get("losses")) if base else None
    return rows


def check_targets(rows: list[dict], s: Settings) -> list[dict]:
    """The issue's targets, each with the measured value and met (None: not measured)."""
    by = {r["run"]: r for r in rows}

    def get(name, key):
        return (by.get(name) or {}).get(key)

    def entry(what, value, limit, met):
        return {"what": what, "value": value, "target": limit, "met": None if value is None else met}

    out = []
    v = get(LINEAR_COMPILED, "vs_baseline")
    out.append(entry("compiled step, gemmlab.nn.Linear / torch", v, 1.03, v is not None and v <= 1.03))
    v = get(ENABLE_EAGER, "vs_baseline")
    out.append(entry("eager step under enable() / torch", v, 1.05, v is not None and v <= 1.05))
    v = get(ENABLE_EAGER, "loss_rel_diff")
    if s.precision in (None, "ieee"):
        out.append(entry(f"losses under enable() vs torch eager, max relative over {s.steps} steps",
                         v, 1e-5, v is not None and v <= 1e-5))
    if s.precision == "tf32x3":
        t = get(ENABLE_EAGER, "vs_baseline")
        out.append(entry(f"tf32x3 eager step / torch FP32 (d_model {s.d_model})", t, 1.0, t is not None and t < 1.0))
        noise = get(TORCH_COMPILED, "loss_rel_diff")      # torch eager vs torch compiled: FP32 rounding alone
        limit = max(1e-5, 2 * noise) if noise is not None else 1e-5
        out.append(entry("tf32x3 losses vs torch eager (FP32 noise: max(1e-5, 2 x torch eager vs compiled))",
                         v, limit, v is not None and v <= limit))
    return out


def method_block(s: Settings, tf32: dict | None = None) -> dict:
    return {
        "step_time": (f"CUDA events at every step boundary (zero_grad, forward, MSE loss, backward, Adam step), "
                      f"no synchronize in the loop; median over steps {s.warmup}..{s.steps - 1} of {s.rounds} round(s): "
                      f"every row runs once per round, in turn (round_step_ms: each round's median)"),
        "losses": "every step's loss; loss_rel_diff: max over the steps of |loss - baseline| / |baseline|",
        "runs": "same process, same initial weights and data; baseline: torch eager for eager runs, "
                "torch compiled for compiled runs",
        "compile": ("torch.compile(model, fullgraph=True), default mode; the (graphs) rows "
                    f"mode={GRAPHS_MODE!r} (forward and backward replayed as CUDA graphs, Adam eager, "
                    "cudagraph_mark_step_begin before each forward); first_step_s holds the compilation"),
        "tf32_settings": tf32 or {},
    }


# ---- output --------------------------------------------------------------------------------------

def _f(x, fmt) -> str:
    return "—" if x is None else format(x, fmt)


def plain(doc: dict) -> str:
    prov = doc.get("provenance") or {}
    st = doc.get("settings") or {}
    gpu = (prov.get("gpu") or {}).get("name", "?")
    lines = [f"gemmlab training benchmark on {gpu}; {prov.get('date', '')} commit "
             f"{str((prov.get('git') or {}).get('commit') or '?')[:7]}",
             f"TransformerEncoder {st.get('layers')} x d_model {st.get('d_model')} (ff "
             f"{(st.get('ff_mult') or 0) * (st.get('d_model') or 0)}), batch {st.get('batch')} x {st.get('seq')}, "
             f"{st.get('steps')} Adam steps, dropout {st.get('dropout')}, precision {st.get('precision') or 'default'}",
             ""]
    head = ("run", "ms/step", "vs baseline", "baseline", "loss rel. diff", "first step s", "GEMMs gemmlab/torch")
    body = []
    for r in doc.get("rows", []):
        g = r.get("gemms")
        gemms = "—" if not g else (f"{sum(v['gemmlab'] for v in g.values())}/"
                                   f"{sum(v['torch'] for v in g.values())}")
        if r.get("skipped") or r.get("error"):
            body.append((r["run"], "—", "—", "—", "—", "—", "skipped" if r.get("skipped") else "ERROR"))
            continue
        body.append((r["run"], _f(r.get("step_ms"), ".2f"), _f(r.get("vs_baseline"), ".3f"), r.get("baseline") or "—",
                     _f(r.get("loss_rel_diff"), ".1e"), _f(r.get("first_step_s"), ".1f"), gemms))
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]

    def fmt(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    lines += [fmt(head), "  ".join("-" * w for w in widths)] + [fmt(b) for b in body]
    for r in doc.get("rows", []):
        if r.get("skipped"):
            lines.append(f"skipped: {r['run']}: {r['skipped']}")
        if r.get("error"):
            lines.append(f"error: {r['run']}: {r['error']}")
    for t in doc.get("targets") or []:
        verdict = "—" if t.get("met") is None else ("met" if t["met"] else "NOT met")
        val = t.get("value")
        lines.append(f"target: {t['what']}: {_f(val, '.3g')} (target {t['target']:g}: {verdict})")
    return "\n".join(lines) + "\n"


def write(doc: dict, out_dir) -> Path:
    """Write training.json into ``out_dir`` (created); return its path."""
    from .report import write_into

    return write_into(doc, out_dir, "training.json")


def failed(doc: dict) -> list[str]:
    return [f"{r['run']}: {r['error']}" for r in doc.get("rows", []) if r.get("error")]


# ---- command line --------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gemmlab.bench.training",
                                description="Training steps of a TransformerEncoder: torch FP32 against gemmlab "
                                            "(enable() in eager mode, gemmlab.nn.Linear compiled), same process.")
    d = Settings()
    p.add_argument("--d-model", type=int, default=d.d_model, help=f"model width (default {d.d_model})")
    p.add_argument("--layers", type=int, default=d.layers, help=f"encoder layers (default {d.layers})")
    p.add_argument("--heads", type=int, default=d.heads, help=f"attention heads (default {d.heads})")
    p.add_argument("--ff-mult", type=int, default=d.ff_mult, help=f"feed-forward width / d_model (default {d.ff_mult})")
    p.add_argument("--batch", type=int, default=d.batch, help=f"sequences per step (default {d.batch})")
    p.add_argument("--seq", type=int, default=d.seq, help=f"tokens per sequence (default {d.seq})")
    p.add_argument("--steps", type=int, default=d.steps, help=f"Adam steps per run (default {d.steps})")
    p.add_argument("--warmup", type=int, default=d.warmup, help=f"first steps left out of the timing (default {d.warmup})")
    p.add_argument("--dropout", type=float, default=d.dropout, help="dropout of the layers (default 0: comparable losses)")
    p.add_argument("--precision", default=None, help="gemmlab's precision for the gemmlab runs: ieee, tf32, tf32x3 "
                                                     "(default: gemmlab's default)")
    p.add_argument("--rounds", type=int, default=d.rounds,
                   help=f"times every row runs, in turn; the step time pools the rounds (default {d.rounds})")
    p.add_argument("--skip-compile", action="store_true", help="eager runs only (no torch.compile)")
    p.add_argument("--skip-graphs", action="store_true",
                   help=f"no (graphs) rows: torch.compile(mode={GRAPHS_MODE!r}), the step replayed as CUDA graphs")
    p.add_argument("--out", default=None, help="directory for training.json")
    p.add_argument("--json", action="store_true", help="print the JSON document instead of the table")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.warmup >= args.steps:
        print("gemmlab: --steps >= 1 and 0 <= --warmup < --steps", file=sys.stderr)
        return 1
    if args.rounds < 1:
        print(f"gemmlab: --rounds {args.rounds}: at least 1", file=sys.stderr)
        return 1
    if args.precision is not None and args.precision not in ("ieee", "tf32", "tf32x3"):
        print(f"gemmlab: --precision {args.precision!r}: ieee, tf32 or tf32x3", file=sys.stderr)
        return 1
    from .. import device as _device

    if not _device.has_gpu():
        print("gemmlab: no CUDA GPU is available; the training benchmark needs one", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("gemmlab: the training benchmark needs torch (pip install torch)", file=sys.stderr)
        return 2
    s = Settings(d_model=args.d_model, layers=args.layers, heads=args.heads, ff_mult=args.ff_mult, batch=args.batch,
                 seq=args.seq, steps=args.steps, warmup=args.warmup, dropout=args.dropout, precision=args.precision,
                 compile=not args.skip_compile, graphs=not args.skip_graphs, rounds=args.rounds)
    doc = run(s)
    if args.out:
        write(doc, args.out)
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=1, default=str) + "\n")
    else:
        sys.stdout.write(plain(doc))
    bad = failed(doc)
    for b in bad:
        print(f"gemmlab: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
