"""``gemmlab tune``: measure the best (stage, config, split-K) per shape and layout on this GPU
and write it to the tuning database that ``stage="auto"`` reads (tune/db.py writes it,
gemmlab/heuristics/table.py reads it).

Per (shape, layout), a *job*:

1. the shortlist (no GPU needed: :func:`shortlist`): the ``top`` best distinct predictions of
   the runtime's waves model (heuristics/model.rank: tile x split-K over heuristics/space.py),
   the default tile of this GPU's class with no split, and what ``stage="auto"`` picks today
   (tuned table, nearest tuned neighbours or heuristic), without duplicates;
2. every kernel of every shortlist is compiled first, in parallel (threads; NVRTC releases the
   GIL), so that the timing loop only loads cubins from the cache;
3. on the GPU: one operand set (random A and B in the layout, NaN-poisoned D) and its float64
   product; cuBLAS (torch.mm, TF32 off) is checked and timed, then each candidate in shortlist
   order through ``api.prepare`` (exactly the plan ``gemm()`` would run, split-K and repacking
   included): poison D, launch, compare with float64 (a wrong result is dropped and reported),
   time (bench/timing.measure, L2 flushed before every launch, short policy);
4. the fastest correct candidate becomes the job's database entry (fields: tune/db.py).

Shapes where the skinny kernel applies (M or N <= 16) are not tuned (dispatch never consults
the database for them): their ``stage="auto"`` time is measured and reported as one row.

``budget`` is the wall time of the whole run: once it is spent no new candidate is started (a job
already started keeps what it measured; jobs not started are listed as not tuned). Several GPUs:
jobs go round-robin to the devices, one worker thread per device.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from ..bench import suites
from ..bench.timing import Policy
from ..heuristics import model, space
from . import db

LAYOUTS = ("nn", "nt", "tn", "tt")
DEFAULT_TOP = 8
SKINNY_MAX = 16        # M or N at most this: the skinny kernel, not the database
SHORT_POLICY = Policy(target_seconds=0.05, max_seconds=1.0, min_reps=5, max_reps=500)
KEEP_CANDIDATES = 8    # measured candidates kept in an entry (fastest first)
MAX_SPLITS_PER_CONFIG = 3  # shortlist: at most this many split counts of one tile config


# ---- jobs and shortlists (no GPU) ---------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    M: int
    N: int
    K: int
    batch: int
    layout: str

    @property
    def shape(self) -> tuple:
        return (self.M, self.N, self.K, self.batch)

    @property
    def text(self) -> str:
        return suites.text(self.shape)

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.N * self.K * self.batch


@dataclass(frozen=True)
class Item:
    """One candidate of a job: a stage at a full config, with ``split_k`` slices of K."""

    stage: str
    config: tuple          # the full config as sorted (key, value) pairs (hashable)
    split_k: int
    label: str
    origin: str            # "model" (ranked by model.rank), "tile" (--every-tile), "default", "auto" (what stage='auto' picks now)
    predicted_ms: float | None = None

    @property
    def key(self) -> tuple:
        return (self.stage, self.config, self.split_k)

    def config_dict(self) -> dict:
        return dict(self.config)

    def call_config(self, repack: bool) -> dict:
        """The ``config=`` of the gemm() call that runs this candidate."""
        return {**self.config_dict(), "split_k": int(self.split_k), "repack": int(bool(repack))}


def jobs_for(shapes, layouts, entries=None) -> list[Job]:
    """Every shape in every layout; or, given ``entries`` ((M, N, K, batch, layout), ...), each
    shape in its own layout only."""
    if entries is not None:
        return [Job(*e[:4], e[4]) for e in entries]
    return [Job(*s[:3], s[3] if len(s) > 3 else 1, lay) for s in shapes for lay in layouts]


def transposed_jobs(jobs) -> list[Job]:
    """The jobs stage='auto' needs besides ``jobs`` to decide a transposed A: where it would
    transpose a row-major A (heuristics.choice.should_transpose_a), the layout its kernel then sees
    (``tn``, or ``tt`` for an ``nt`` call whose B is not turned), in the same shape, unless already
    there. Dispatch compares that entry's time plus the copy's with the call layout's entry; a
    call-layout entry alone never timed the transposed plan (docs/dispatch.md)."""
    from ..heuristics import choice

    have = {(j.M, j.N, j.K, j.batch, j.layout) for j in jobs}
    extra = []
    for job in jobs:
        p = kernel_problem(job)
        if skinny_applies(job.M, job.N) or not choice.should_transpose_a(p):
            continue
        seen = p.repacks(choice.should_repack(p), True)[1].layout
        key = (job.M, job.N, job.K, job.batch, seen)
        if key not in have:
            have.add(key)
            extra.append(Job(*key))
    return extra


def skinny_applies(M: int, N: int) -> bool:
    """Whether stage='auto' sends this shape to the skinny kernel (dispatch step 1)."""
    try:
        from ..heuristics import skinny
    except ImportError:
        return min(M, N) <= SKINNY_MAX
    return bool(skinny.applies(M, N))


def kernel_problem(job: Job):
    """The kernel-level problem gemm() builds for contiguous operands in ``job.layout`` (a 't'
    operand is a transposed view) and a row-major D, with 16-byte aligned pointers (as torch
    allocates them)."""
    from ..problem import Problem

    p = Problem.dense(job.M, job.N, job.K, job.layout, job.batch)
    if job.batch == 1:
        p = replace(p, a_bs=0, b_bs=0, d_bs=0)
    return p


def compile_problem(job: Job, repack: bool):
    """The problem the GEMM kernel of a float4/TMA stage sees once the plan has made its copies
    (gemmlab/problem.py: ``Problem.repacks``, the one rule the plan runs): with ``repack`` a
    K-major B transposed into row-major, unaligned operands padded to 16 bytes with their
    majorness kept (what decides the instantiation)."""
    return kernel_problem(job).repacks(repack)[1]


def job_facts(job: Job) -> dict:
    """What dispatch decides from the shape alone: its layout letters, whether it repacks and
    whether the entry is for aligned problems (heuristics: operands aligned, or repacked)."""
    from ..heuristics import should_repack

    p = kernel_problem(job)
    repack = should_repack(p)
    return {"layout": p.layout, "repack": bool(repack), "aligned": bool(p.operands_aligned() or repack),
            "problem": p}


@functools.lru_cache(maxsize=None)
def _space_labels() -> dict:
    out = {}
    for cands in (space.SM90, space.SM80, space.FALLBACK):
        for c in cands:
            try:
                out.setdefault((c.stage, tuple(sorted(c.config().items()))), c.label)
            except Exception:  # an illegal space entry: the tests say so
                pass
    return out


def label_of(stage: str, config: dict, split_k: int = 1) -> str:
    """'s11 128x256 w64x64 (default) split 4'; configs outside the space name their overrides."""
    cfg = tuple(sorted(config.items()))
    base = _space_labels().get((stage, cfg))
    if base is None:
        from ..stages import get

        try:
            defaults = get(stage).default_config
        except Exception:
            defaults = {}
        diff = [f"{k}={v}" for k, v in config.items() if defaults.get(k) != v]
        base = ",".join(diff) if diff else "default"
    return f"{stage} {base}" + (f" split {split_k}" if split_k > 1 else "")


def item(stage: str, config: dict, split_k: int, origin: str, predicted_ms=None) -> Item:
    return Item(stage, tuple(sorted(config.items())), int(split_k), label_of(stage, config, split_k), origin,
                predicted_ms)


def shortlist(job: Job, gpu: model.Gpu | None = None, top: int = DEFAULT_TOP, auto=None,
              every_tile: bool = False) -> list[Item]:
    """The candidates a job measures, in order: what stage='auto' picks now (``auto``: a
    plan.Choice, when known), the model's ``top`` best (tile, split) predictions with at most
    MAX_SPLITS_PER_CONFIG split counts per tile, with ``every_tile`` also every other tile of the
    space at the model's best split for it (the waves model ranks tiles by estimates that a
    layout or a register allocation can upset: a tile it puts below the top is measured too), and
    the default tile of this GPU class without split-K; no duplicates."""
    gpu = gpu or model.Gpu()
    out: list[Item] = []
    seen: set = set()

    def add(it: Item) -> None:
        if it.key not in seen:
            seen.add(it.key)
            out.append(it)

    if auto is not None:
        add(item(auto.spec.id, dict(auto.config), auto.split_k, f"auto:{auto.source}"))
    per_config: dict = {}
    n_model = 0
    ranked = model.rank(job.M, job.N, job.K, job.batch, gpu)
    for p in ranked:
        if n_model >= top:
            break
        it = item(p.candidate.stage, p.candidate.config(), p.split_k, "model", p.seconds * 1e3)
        tile = (it.stage, it.config)
        if per_config.get(tile, 0) >= MAX_SPLITS_PER_CONFIG:
            continue  # variety: the model's near-ties are mostly more split counts of one tile
        per_config[tile] = per_config.get(tile, 0) + 1
        n_model += 1
        add(it)
    if every_tile:
        for p in ranked:
            it = item(p.candidate.stage, p.candidate.config(), p.split_k, "tile", p.seconds * 1e3)
            if (it.stage, it.config) not in per_config:  # rank is best first: this tile's best split
                per_config[(it.stage, it.config)] = 1
                add(it)
    default = space.candidates(gpu.cc)[0]
    add(item(default.stage, default.config(), 1, "default",
             model.predict(default, job.M, job.N, job.K, job.batch, 1, gpu).seconds * 1e3))
    return out


def item_kernel(job: Job, it: Item, arch: str, repack: bool) -> tuple:
    """(kernel name, (spec, config, variant, arch)) of the GEMM kernel an item runs (a stage that
    hands the problem to another, e.g. s11 to s10, names the other's kernel)."""
    from ..stages import get

    prob = compile_problem(job, repack)
    spec, cfg = get(it.stage), it.config_dict()
    other = spec.fallback(cfg, prob)
    if other is not None:
        spec, cfg = other
    variant = spec.variant(cfg, prob)
    return spec.kernel_name(cfg, variant), (spec, cfg, variant, arch)


def kernels_of(job: Job, items, arch: str, repack: bool) -> dict:
    """{(kernel name, arch): (spec, config, variant, arch)} of every item's GEMM kernel."""
    out = {}
    for it in items:
        name, what = item_kernel(job, it, arch, repack)
        out[(name, arch)] = what
    return out


def compile_all(kernels: dict, workers: int | None = None, say=None) -> dict:
    """Compile every kernel (disk-cached) with a thread pool; returns {name: error message} of
    the ones that failed. The first compiles alone, so imports happen in one thread."""
    from ..jit import compiler
    from ..plan import kernel_for

    say = say or (lambda msg: None)
    todo = list(kernels.items())
    errors: dict = {}
    if not todo:
        return errors
    workers = max(1, min(workers or (os.cpu_count() or 4), 32, len(todo)))
    t0 = time.perf_counter()
    cached = 0

    def one(entry):
        (name, _), (spec, cfg, variant, arch) = entry
        try:
            return name, kernel_for(spec, cfg, variant, arch).cached, None
        except Exception as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return name, False, f"{type(e).__name__}: {first}"[:300]

    results = [one(todo[0])]
    if len(todo) > 1:
        compiler.preload()  # the first may have come from the disk cache without importing the compiler
        with ThreadPoolExecutor(max_workers=workers) as ex:
            results += list(ex.map(one, todo[1:]))
    for name, was_cached, err in results:
        if err:
            errors[name] = err
            say(f"gemmlab tune: kernel {name} does not compile ({err}); its candidates are dropped")
        cached += bool(was_cached)
    say(f"gemmlab tune: {len(todo)} kernel(s) ready in {time.perf_counter() - t0:.1f} s "
        f"({cached} from the cache, {workers} compile thread(s))")
    return errors


# ---- measuring (GPU) ----------------------------------------------------------------------------

@dataclass
class Settings:
    shapes: list                           # [(M, N, K, batch), ...]
    layouts: tuple = ("nn",)
    budget: float | None = None            # seconds for the whole run; None: no limit
    top: int = DEFAULT_TOP
    every_tile: bool = False               # also every tile of the space at its best split (shortlist)
    devices: tuple | None = None           # None: every visible GPU
    policy: Policy = field(default_factory=lambda: SHORT_POLICY)
    compile_workers: int | None = None
    entries: list | None = None            # [(M, N, K, batch, layout), ...]: instead of shapes x layouts


@dataclass
class Measured:
    label: str
    stage: str
    config: dict
    split_k: int                           # slices of K the plan made
    origin: str
    ms: float | None = None
    rel_error: float | None = None
    kernels: list = field(default_factory=list)
    source: str | None = None              # the plan's choice source (auto: tuned/heuristic/skinny)
    error: str | None = None


@dataclass
class JobResult:
    job: Job
    device: int
    status: str = "pending"                # tuned, partial, skinny, not_run (budget), failed
    facts: dict = field(default_factory=dict)
    cublas_ms: float | None = None
    measured: list = field(default_factory=list)
    entry: dict | None = None
    note: str = ""

    @property
    def best(self) -> Measured | None:
        ok = [m for m in self.measured if m.ms is not None]
        return min(ok, key=lambda m: m.ms) if ok else None

    @property
    def failures(self) -> list:
        return [m for m in self.measured if m.error]

    def row(self) -> dict:
        b = self.best
        tfl = (self.job.flops / (b.ms / 1e3) / 1e12) if b else None
        cub = (self.job.flops / (self.cublas_ms / 1e3) / 1e12) if self.cublas_ms else None
        return {"shape": self.job.text, "m": self.job.M, "n": self.job.N, "k": self.job.K,
                "batch": self.job.batch, "layout": self.job.layout, "device": self.device,
                "status": self.status, "best": b.label if b else None, "time_ms": b.ms if b else None,
                "tflops": tfl, "cublas_ms": self.cublas_ms, "cublas_tflops": cub,
                "ratio": (tfl / cub) if (tfl and cub) else None, "note": self.note,
                "failed": [f"{m.label}: {m.error}" for m in self.failures]}


def make_entry(res: JobResult) -> dict | None:
    """The database entry of a job (tune/db.py's fields), or None without a correct candidate."""
    b = res.best
    if b is None or res.status in ("skinny", "not_run", "failed"):
        return None
    j, f = res.job, res.facts
    timed = sorted((m for m in res.measured if m.ms is not None), key=lambda m: m.ms)
    return {
        "bucket": list(db.bucket(j.M, j.N, j.K, j.batch)),
        "layout": f["layout"],
        "aligned": bool(f["aligned"]),
        "shape": [j.M, j.N, j.K, j.batch],
        "stage": b.stage,
        "config": dict(b.config),
        "split_k": int(b.split_k),
        "repack": bool(f["repack"]),
        "time_ms": round(b.ms, 6),
        "cublas_ms": round(res.cublas_ms, 6) if res.cublas_ms else None,
        "candidates": [[m.label, int(m.split_k), round(m.ms, 6)] for m in timed[:KEEP_CANDIDATES]],
        "complete": res.status == "tuned",
        "tuned": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


class _Progress:
    def __init__(self, total: int, stream=None):
        self.total, self.done = total, 0
        self.stream = stream or sys.stderr
        self.lock = threading.Lock()

    def say(self, msg: str) -> None:
        with self.lock:
            print(msg, file=self.stream, flush=True)

    def step(self, job: Job, label: str, ms=None, cublas_ms=None, error=None, device=None) -> None:
        with self.lock:
            self.done += 1
            w = len(str(self.total))
            dev = f" gpu{device}" if device is not None else ""
            head = f"[{self.done:>{w}}/{self.total}]{dev} {job.text} {job.layout} {label[:50]:<50}"
            if error:
                line = f"{head} {error}"
            else:
                tfl = job.flops / (ms / 1e3) / 1e12
                pct = f"  {100 * cublas_ms / ms:6.1f}% cuBLAS" if cublas_ms else ""
                line = f"{head} {ms:9.4f} ms {tfl:8.2f} TFLOPS{pct}"
            print(line, file=self.stream, flush=True)


class _Clock:
    """The run's budget, shared by the device threads."""

    def __init__(self, budget):
        self.t0 = time.perf_counter()
        self.deadline = None if budget is None else self.t0 + budget
        self.hit = False
        self.lock = threading.Lock()

    def over(self) -> bool:
        if self.deadline is None or time.perf_counter() < self.deadline:
            return False
        with self.lock:
            self.hit = True
        return True


def _first_line(e: Exception) -> str:
    s = str(e).strip()
    return f"{type(e).__name__}: {s.splitlines()[0] if s else ''}"[:300]


def _operands(job: Job, dev: int):
    import torch

    from .. import check
    from ..bench.candidates import Operands

    if job.batch == 1:
        return Operands.make(job.M, job.N, job.K, job.layout, dev)
    a, b, _ = check.random_operands(job.M, job.N, job.K, job.layout, batch=job.batch, device=f"cuda:{dev}",
                                    seed=1234)
    out = torch.full((job.batch, job.M, job.N), float("nan"), dtype=torch.float32, device=f"cuda:{dev}")
    return Operands(job.M, job.N, job.K, job.layout, a, b, out, dev)


def _time(launch, policy, flush) -> float:
    from ..bench.timing import measure

    return measure(launch, policy, flush).summary.median


def _measure_cublas(ops, job, policy, flush) -> tuple:
    """(ms or None, error or None): torch.mm / torch.bmm (TF32 off), checked first."""
    import torch

    a, b, out = ops.a, ops.b, ops.out
    mm = torch.mm if job.batch == 1 else torch.bmm

    def launch():
        mm(a, b, out=out)
    try:
        ops.poison()
        launch()
        chk = ops.check_out()
        if not chk.correct:
            return None, f"cuBLAS failed its check (rel_error {chk.rel_error:.3g}); TF32 on?"
        return _time(launch, policy, flush), None
    except Exception as e:
        return None, _first_line(e)


def _measure_plan(ops, job, stage, config, policy, flush) -> tuple:
    """(plan, ms, rel_error, error): prepare exactly what gemm() runs, check, time."""
    from ..api import prepare

    ops.poison()
    plan, launch = prepare(ops.a, ops.b, out=ops.out, stage=stage, config=config, batched=job.batch > 1)
    launch()
    chk = ops.check_out()
    if not chk.correct:
        why = "" if chk.finite else ", NaN/Inf in the output"
        return plan, None, chk.rel_error, (f"WRONG RESULT: rel_error {chk.rel_error:.3g} > tolerance "
                                           f"{chk.tolerance:.3g}{why}; dropped")
    return plan, _time(launch, policy, flush), chk.rel_error, None


def _run_job(res: JobResult, items: list, settings: Settings, flush, clock: _Clock, prog: _Progress) -> None:
    import torch

    job, dev = res.job, res.device
    if clock.over():
        res.status, res.note = "not_run", "budget spent before this shape"
        return
    ops = None
    try:
        ops = _operands(job, dev)
        ops.reference()
        res.cublas_ms, err = _measure_cublas(ops, job, settings.policy, flush)
        prog.step(job, "cuBLAS (torch.mm, TF32 off)", res.cublas_ms, res.cublas_ms, err, dev)
        if res.status == "skinny":
            m = Measured("auto (skinny)", "auto", {}, 1, "auto")
            try:
                plan, m.ms, m.rel_error, m.error = _measure_plan(ops, job, "auto", None, settings.policy, flush)
                if plan is not None:
                    d = plan.describe()
                    m.stage, m.config, m.split_k = d.get("stage", "auto"), d.get("config", {}), d.get("split_k", 1)
                    m.source, m.kernels = d.get("source"), plan.kernels
                    m.label = f"auto: {label_of(m.stage, m.config, m.split_k)} ({m.source})"
            except Exception as e:
                m.error = _first_line(e)
            res.measured.append(m)
            prog.step(job, m.label, m.ms, res.cublas_ms, m.error, dev)
            return
        for i, it in enumerate(items):
            if i > 0 and clock.over():
                res.status = "partial"
                res.note = f"budget spent after {i} of {len(items)} candidates"
                break
            m = Measured(it.label, it.stage, it.config_dict(), it.split_k, it.origin)
            res.measured.append(m)
            if it.origin.startswith("auto:"):
                m.label = f"{it.label} [{it.origin}]"
            try:
                plan, m.ms, m.rel_error, m.error = _measure_plan(
                    ops, job, it.stage, it.call_config(res.facts["repack"]), settings.policy, flush)
                if plan is not None:
                    m.split_k = plan.choice.split_k if plan.choice else it.split_k
                    m.kernels = plan.kernels
            except Exception as e:
                m.error = _first_line(e)
            prog.step(job, m.label, m.ms, res.cublas_ms, m.error, dev)
        else:
            res.status = "tuned"
        if res.best is None:
            res.status, res.note = "failed", "no candidate passed its check"
    except Exception as e:  # e.g. out of memory for the operands: the other shapes go on
        res.status, res.note = "failed", _first_line(e)
        prog.say(f"gemmlab tune: {job.text} {job.layout}: {res.note}")
    finally:
        del ops
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass


def run(settings: Settings, progress=None) -> dict:
    """Tune every (shape, layout); returns {"results": [JobResult], "entries": {ident key: (ident,
    [entry])}, "budget_hit": bool, "seconds": float, "devices": [...]}. Writes nothing."""
    import torch

    from .. import device as _device, dispatch
    from ..bench.baselines import disable_tf32
    from ..bench.timing import L2Flush

    clock = _Clock(settings.budget)
    n_dev = torch.cuda.device_count()
    devices = list(settings.devices) if settings.devices else list(range(n_dev))
    disable_tf32()

    # Jobs, round-robin over the devices; shortlists on the CPU.
    stream = progress or sys.stderr
    jobs = jobs_for(settings.shapes, settings.layouts, settings.entries)
    extra = transposed_jobs(jobs)
    if extra:
        print(f"gemmlab tune: also {', '.join(f'{j.text} {j.layout}' for j in extra)}: the layout stage='auto' "
              "runs where it transposes A", file=stream, flush=True)
    jobs += extra
    results, plans = [], []
    kernels: dict = {}
    for i, job in enumerate(jobs):
        dev = devices[i % len(devices)]
        gpu, _ident = dispatch._gpu(dev)
        res = JobResult(job, dev)
        items: list = []
        if skinny_applies(job.M, job.N):
            res.status = "skinny"
            res.note = "skinny kernel (M or N <= 16): stage='auto' timed, not tuned"
        else:
            res.facts = job_facts(job)
            try:
                auto = dispatch.choose(res.facts["problem"], dev)
            except Exception:
                auto = None
            items = shortlist(job, gpu, settings.top, auto, settings.every_tile)
            kernels.update(kernels_of(job, items, _device.arch(dev), res.facts["repack"]))
        results.append(res)
        plans.append(items)

    names = sorted({torch.cuda.get_device_name(d) for d in devices})
    what = (f"{len(settings.shapes)} shape(s) x {len(settings.layouts)} layout(s)" if settings.entries is None
            else f"{len(settings.entries)} shape(s) in their own layouts")
    print(f"gemmlab tune: {len(jobs)} job(s) ({what}), {sum(map(len, plans))} candidate(s), on {len(devices)} GPU(s) ({', '.join(names)})"
          + (f"; budget {settings.budget:g} s" if settings.budget else ""), file=stream, flush=True)
    compile_errors = compile_all(kernels, settings.compile_workers,
                                 lambda msg: print(msg, file=stream, flush=True))
    if compile_errors:  # drop (and report) the candidates whose kernel does not compile
        for res, items in zip(results, plans):
            keep = []
            for it in items:
                name, _ = item_kernel(res.job, it, _device.arch(res.device), res.facts["repack"])
                if name in compile_errors:
                    res.measured.append(Measured(it.label, it.stage, it.config_dict(), it.split_k, it.origin,
                                                 error=f"does not compile: {compile_errors[name]}"))
                else:
                    keep.append(it)
            items[:] = keep
    total = sum(len(it) + 1 for it in plans) + sum(1 for r in results if r.status == "skinny")
    prog = _Progress(total, stream)

    def worker(dev: int) -> None:
        mine = [(res, items) for res, items in zip(results, plans) if res.device == dev]
        try:
            torch.cuda.set_device(dev)
            flush = L2Flush(settings.policy.flush_bytes, dev)
            for res, items in mine:
                _run_job(res, items, settings, flush, clock, prog)
            del flush
            torch.cuda.empty_cache()
        except Exception as e:  # the device is unusable: its remaining jobs say why
            why = _first_line(e)
            prog.say(f"gemmlab tune: GPU {dev} stopped: {why}")
            for res, _ in mine:
                if res.status in ("pending", "skinny") and not res.measured:
                    res.status, res.note = "failed", f"GPU {dev} stopped: {why}"

    threads = [threading.Thread(target=worker, args=(d,), name=f"gemmlab-tune-gpu{d}") for d in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    entries: dict = {}
    for res in results:
        res.entry = make_entry(res)
        if res.entry is None:
            continue
        _, ident = dispatch._gpu(res.device)
        key = tuple(sorted(ident.items()))
        entries.setdefault(key, (ident, []))[1].append(res.entry)
    for key, (ident, lst) in entries.items():
        lst[:] = dedupe_buckets(lst, prog.say)
    not_run = [r for r in results if r.status == "not_run"]
    if clock.hit:
        prog.say(f"gemmlab tune: the budget of {settings.budget:g} s is spent: "
                 f"{len(not_run)} job(s) not tuned, "
                 f"{sum(r.status == 'partial' for r in results)} with fewer candidates than planned")
    return {"results": results, "entries": entries, "budget_hit": clock.hit,
            "seconds": time.perf_counter() - clock.t0, "devices": devices}


def dedupe_buckets(entries: list, say=None) -> list:
    """One entry per measurement (db.entry_key: shape, layout, alignment): a shape listed twice
    keeps its first result. Two shapes of one bucket both stay (table.lookup takes the nearest);
    the progress line says so, since a bucket then answers differently across it."""
    out, seen, buckets = [], set(), {}
    for e in entries:
        key = db.entry_key(e)
        if key in seen:
            continue
        seen.add(key)
        b = (tuple(e["bucket"]), e["layout"], bool(e["aligned"]))
        if b in buckets and say:
            say(f"gemmlab tune: {suites.text(e['shape'])} {e['layout']} shares the bucket {list(b[0])} with "
                f"{suites.text(buckets[b]['shape'])}; both are kept (a lookup takes the nearer)")
        buckets.setdefault(b, e)
        out.append(e)
    return out


# ---- output ----------------------------------------------------------------------------------------

def target_path(ident: dict, out=None, ship: bool = False):
    """Where the entries go: ``out``, the package's tables (``ship``) or the user database."""
    from pathlib import Path

    if out:
        return Path(out)
    if ship:
        return db.TABLES / db.user_path(ident).name
    return db.user_path(ident)


def write(result: dict, out=None, ship: bool = False) -> list:
    """db.write each identity's entries (merged with the file's); returns the paths written."""
    paths = []
    for ident, entries in result["entries"].values():
        if entries:
            paths.append(db.write(target_path(ident, out, ship), ident, entries))
    return paths


def table(rows: list[dict]) -> str:
    """shape | layout | best | TFLOPS | cuBLAS TFLOPS | ratio (| note)."""
    head = ["shape", "layout", "best", "TFLOPS", "cuBLAS TFLOPS", "ratio", "note"]
    body = []
    for r in rows:
        f = lambda x, fmt: "—" if x is None else format(x, fmt)  # noqa: E731
        note = r.get("note") or ""
        if r.get("failed"):
            note = (note + "; " if note else "") + f"{len(r['failed'])} candidate(s) failed"
        body.append([r["shape"], r["layout"], r["best"] or "—", f(r["tflops"], ".2f"), f(r["cublas_tflops"], ".2f"),
                     f(r["ratio"], ".3f"), note])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    right = {3, 4, 5}

    def fmt(line):
        return "  ".join(str(x).rjust(w) if i in right else str(x).ljust(w)
                         for i, (x, w) in enumerate(zip(line, widths))).rstrip()
    lines = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body]
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    if ratios:
        import math

        g = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines.append(f"geometric mean of the ratios {g:.3f} over {len(ratios)} row(s); min {min(ratios):.3f}")
    return "\n".join(lines) + "\n"
