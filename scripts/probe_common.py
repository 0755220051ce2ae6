"""Pieces the H200 probe scripts share (imported from scripts/, which is sys.path[0] when one of
them runs): CUDA-event timing with the L2 flushed, and the training benchmark's model and step."""
import torch

from gemmlab.bench.timing import L2Flush, Policy, measure


def event_timer(target_seconds=0.1, max_seconds=1.0, min_reps=10, max_reps=300, flushed=True):
    """t(fn) -> the median CUDA-event time of fn in microseconds (after one untimed call), each
    repetition after a writing L2 flush (gemmlab/bench/timing.py), or with ``flushed=False``
    back to back as in a training step."""
    torch.backends.cuda.matmul.allow_tf32 = False
    pol = Policy(target_seconds=target_seconds, max_seconds=max_seconds, min_reps=min_reps, max_reps=max_reps)
    flush = L2Flush() if flushed else (lambda: None)

    def t(fn):
        fn()
        torch.cuda.synchronize()
        return measure(fn, pol, flush).summary.median * 1e3

    return t


def tile(bm, bn, wm, wn, mb, bk=32, stages=4, ku=2):
    """A SIMT tile's config (s10/s11): block and warp tile, blocks per SM, block_k, stages, k_unroll."""
    return dict(block_m=bm, block_n=bn, warp_m=wm, warp_n=wn, min_blocks=mb, block_k=bk, stages=stages, k_unroll=ku)


def shapes_arg(default):
    """The probe's shapes: ``M N K layout batch`` groups from the command line, else ``default``
    ((M, N, K, layout, batch) each)."""
    import sys

    v = sys.argv[1:]
    if not v:
        return default
    return [(int(v[i]), int(v[i + 1]), int(v[i + 2]), v[i + 3], int(v[i + 4])) for i in range(0, len(v), 5)]


def compile_first(jobs, workers=16):
    """Build every plan of ``jobs`` ((Operands, stage, config) each) once, ``workers`` at a time, so
    that the kernels are compiled (NVRTC runs outside the GIL) and cached before anything is
    timed; a plan that cannot be built is left for the timing loop to report."""
    from concurrent.futures import ThreadPoolExecutor

    from gemmlab import api

    def one(job):
        ops, stage, cfg = job
        try:
            api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg, batched=ops.batched)
        except Exception:  # noqa: BLE001
            pass

    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(one, jobs))


def _checked_plan(ops, stage, cfg):
    """(plan, fn, None) or (plan, fn, "WRONG ..."): the plan of ``stage``/``cfg`` for ``ops``
    (batched where they are) built, run once on poisoned output and checked against float64
    (bench/candidates.Operands). A plan that cannot be built raises."""
    from gemmlab import api

    plan, fn = api.prepare(ops.a, ops.b, out=ops.out, stage=stage, config=cfg, batched=ops.batched)
    ops.poison()
    fn()
    r = ops.check_out()
    return plan, fn, None if r.correct else f"WRONG {r}"


def run_checked(t, ops, stage, cfg):
    """(us, plan choice's short name, fn): :func:`_checked_plan`, then timed with ``t``; NaN and
    "WRONG ..." where the result is wrong."""
    plan, fn, wrong = _checked_plan(ops, stage, cfg)
    if wrong:
        return float("nan"), wrong, fn
    c = plan.choice
    what = f"{c.spec.id} {c.config.get('block_m')}x{c.config.get('block_n')} s{c.split_k}{' rp' if c.repack else ''}"
    return t(fn), what, fn


def cublas_us(t, ops):
    """cuBLAS on ``ops`` (torch.bmm where they are batched, else torch.mm), timed with ``t``."""
    if ops.batched:
        return t(lambda: torch.bmm(ops.a, ops.b, out=ops.out))
    return t(lambda: torch.mm(ops.a, ops.b, out=ops.out))


def settings_table(t, shapes, rows, apply):
    """Print one line per shape ((M, N, K, layout, batch) each): cuBLAS, then each row (label,
    stage, config, setting) timed with ``t`` after ``apply(setting)`` (a module-level knob of the
    runtime, such as a threshold or a stage's variant rule; ``apply(None)`` restores it), as
    "label us (ratio to cuBLAS) [what ran]"; every plan is built and compiled first and checked
    against float64 before it is timed (:func:`run_checked`)."""
    from gemmlab.bench.candidates import Operands

    small = [Operands.make(M, N, K, lay, 0, batch=batch) for M, N, K, lay, batch in shapes]
    for _, stage, cfg, setting in rows:
        apply(setting)
        compile_first([(o, stage, cfg) for o in small])
    del small
    print("us (ratio to cuBLAS in the same run) [what ran]", flush=True)
    for M, N, K, lay, batch in shapes:
        ops = Operands.make(M, N, K, lay, 0, batch=batch)
        ops.reference()
        cub = cublas_us(t, ops)
        cells = []
        for label, stage, cfg, setting in rows:
            apply(setting)
            try:
                us, what, _ = run_checked(t, ops, stage, cfg)
                cells.append(f"{label} {us:.1f} ({cub / us:.3f}){'' if stage == 's10' else f' [{what}]'}")
            except Exception as e:  # noqa: BLE001
                cells.append(f"{label} {type(e).__name__}: {str(e)[:60]}")
        apply(None)
        print(f"{M}x{N}x{K}{f'x{batch}' if batch > 1 else ''} {lay}: cuBLAS {cub:.1f} | " + " | ".join(cells),
              flush=True)
        del ops


def checked_timer(t, sep=" + "):
    """timed(ops, stage, config) -> (us, kernel names joined by ``sep``): :func:`_checked_plan`,
    then timed with ``t`` (event_timer); NaN and the reason where it cannot be built or is wrong."""

    def timed(ops, stage, cfg):
        try:
            plan, fn, wrong = _checked_plan(ops, stage, cfg)
        except Exception as e:  # noqa: BLE001
            return float("nan"), f"{type(e).__name__}: {e}"
        if wrong:
            return float("nan"), wrong
        return t(fn), sep.join(plan.describe()["kernels"])

    return timed


def strided_randn(spec):
    """A CUDA float32 tensor of (shape, strides) ``spec`` on fresh random storage (None: None)."""
    if spec is None:
        return None
    shape, stride = spec
    span = 1 + sum((n - 1) * st for n, st in zip(shape, stride))
    return torch.randn(span, device="cuda").as_strided(shape, stride)


class TrainingModel:
    """The training benchmark's TransformerEncoder (gemmlab/bench/training.py), its data and
    initial weights: ``fresh()`` builds a model from them, ``step(model, forward)`` an Adam step
    ``one(i)`` on batch i."""

    def __init__(self, d_model=512):
        from gemmlab.bench import baselines
        from gemmlab.bench.training import Settings, build_model, make_data

        self.s = Settings(d_model=d_model)
        baselines.disable_tf32()
        self._build = build_model
        self.data = make_data(self.s)
        self.init = {k: v.detach().clone() for k, v in build_model(self.s).state_dict().items()}

    def fresh(self, replace=False):
        import gemmlab.nn as gnn

        m = self._build(self.s)
        m.load_state_dict(self.init)
        if replace:
            gnn.replace_linear(m)
        return m

    def step(self, model, forward):
        opt = torch.optim.Adam(model.parameters(), lr=self.s.lr)

        def one(i):
            x, y = self.data[i % len(self.data)]
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(forward(x), y).backward()
            opt.step()

        return one
