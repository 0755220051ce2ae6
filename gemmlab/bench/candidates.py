"""What the ladder measures: a *candidate* is one gemmlab stage or one baseline.

Every candidate can
- ``prepare(ops)``: launch once on the timed operands (alpha = 1, beta = 0, ``ops.out`` poisoned
  with NaN first) and return a :class:`Prepared`: a no-argument ``launch`` that repeats exactly
  that launch, and what is known about the kernel that ran;
- ``check(M, N, K, layout)``: the correctness check on fresh inputs (alpha 0.5, beta 3.0, random
  C, NaN-poisoned output, float64 reference; gemmlab/check.py) -> ``check.CheckResult``.

Stages are timed through ``api.prepare``: the plan ``gemmlab.gemm`` runs for these arrays (the
kernels, their geometry and parameter buffers, TMA descriptors, workspace), bound to fixed
pointers, so the timed region holds the plan's launches (one kernel, or several for split-K and
repacking) and none of the per-call argument checking. A strided-batched problem (3-D operands)
gets gemm_batched's plan (``api.prepare(..., batched=True)``): the batch is the plan's, one
launch over every matrix, on the same tensors.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import check as _check


@dataclass
class Operands:
    """The timed problem: torch tensors a (M x K), b (K x N) in ``layout``, out (M x N, row-major);
    for a strided-batched problem a (batch x M x K), b (batch x K x N) and out (batch x M x N),
    batch outermost, each matrix in ``layout`` (for 't' column-major: strides (M*K, 1, M) for a)."""

    M: int
    N: int
    K: int
    layout: str
    a: object
    b: object
    out: object
    device: int
    _ref: object = None

    @staticmethod
    def make(M: int, N: int, K: int, layout: str = "nn", device: int = 0, seed: int = 1234,
             batch: int = 1) -> "Operands":
        """Fresh operands on CUDA device ``device`` (an index; a torch device string such as "cpu"
        also works, for tests). ``batch`` > 1: 3-D batch-strided contiguous tensors."""
        import torch

        where = device if isinstance(device, str) else f"cuda:{device}"
        lead = (batch,) if batch > 1 else ()
        a, b, _ = _check.random_operands(M, N, K, layout, batch=batch if batch > 1 else None, device=where,
                                         seed=seed)
        out = torch.full(lead + (M, N), float("nan"), dtype=torch.float32, device=where)
        return Operands(M, N, K, layout, a, b, out, device)

    @property
    def batch(self) -> int:
        """Matrices in the problem: 1 for 2-D operands, else the leading extent of ``out``."""
        return int(self.out.shape[0]) if self.out.dim() == 3 else 1

    @property
    def batched(self) -> bool:
        """3-D operands (gemmlab's gemm_batched / torch.bmm), even with a batch of 1."""
        return self.out.dim() == 3

    @property
    def stream_handle(self) -> int:
        import torch

        return int(torch.cuda.current_stream(self.device).cuda_stream)

    def poison(self) -> None:
        self.out.fill_(float("nan"))

    def reference(self):
        """float64 a @ b (every batch element), computed once per operand set."""
        if self._ref is None:
            self._ref = _check.reference(self.a, self.b, None, 1.0, 0.0)
        return self._ref

    def check_out(self, precision: str = "ieee") -> _check.CheckResult:
        """Compare ``out`` (after a launch with alpha 1, beta 0) with the float64 reference,
        within the tolerance of ``precision``; a batched ``out`` passes only when every matrix
        of it does (:func:`compare_each`)."""
        import torch

        if getattr(self.out, "is_cuda", False):
            torch.cuda.synchronize(self.device)
        return compare_each(self.out, self.reference(), self.K, precision)


def compare_each(out, ref, K: int, precision: str = "ieee") -> _check.CheckResult:
    """gemmlab.check.compare, for a batch one matrix at a time: the result holds the largest
    relative error of any batch element, and passes only when every element passes (a wrong or
    unwritten matrix cannot hide in the norm of the whole batch). 2-D: ``check.compare``."""
    if out.dim() != 3 or out.shape[0] == 0:
        return _check.compare(out, ref, K, precision)
    each = [_check.compare(out[i], ref[i], K, precision) for i in range(out.shape[0])]
    worst = max(each, key=lambda r: r.rel_error)
    return _check.CheckResult(worst.rel_error, worst.tolerance, all(r.finite for r in each),
                              all(r.correct for r in each))


@dataclass
class Prepared:
    launch: object                   # no-argument callable: enqueue the timed work once
    kernel: str | None = None        # the instantiation that ran
    info: dict = field(default_factory=dict)  # registers, smem_*_bytes, threads, grid, blocks_per_sm, ...
    probe: object = None             # callable to run under the profiler for the kernel names (after timing)


@dataclass
class Candidate:
    id: str
    name: str
    kind: str                        # "stage" or "baseline"
    adds: str = ""
    notes: str = ""
    expected_pct_cublas: tuple | None = None
    config: dict | None = None
    precision: str = "ieee"          # what it computes at: "ieee", "tf32" or "tf32x3" (check tolerance)

    def check(self, M, N, K, layout, batch: int = 1):  # pragma: no cover - overridden
        raise NotImplementedError

    def unsupported(self, ops) -> str | None:
        """Why this candidate does not run on ``ops`` (its row is recorded as skipped, not as an
        error), or None when it does."""
        return None

    def prepare(self, ops: Operands) -> Prepared:  # pragma: no cover - overridden
        raise NotImplementedError

    def describe(self) -> dict:
        return {"stage": self.id, "name": self.name, "kind": self.kind, "adds": self.adds,
                "notes": self.notes,
                "expected_pct_cublas": list(self.expected_pct_cublas) if self.expected_pct_cublas else None,
                "config": self.config, "precision": self.precision}


def check_callable(fn, M, N, K, layout, precision: str = "ieee", batch: int = 1) -> _check.CheckResult:
    """gemmlab.check's procedure for anything that computes ``out = alpha a b + beta c``:
    ``fn(a, b, c, alpha, beta, out)``; ``batch`` > 1: 3-D operands, every matrix checked."""
    import torch

    a, b, c = _check.random_operands(M, N, K, layout, batch=batch if batch > 1 else None)
    out = _check.poisoned_like(c)
    ref = _check.reference(a, b, c, _check.ALPHA, _check.BETA)
    fn(a, b, c, _check.ALPHA, _check.BETA, out)
    torch.cuda.synchronize()
    return compare_each(out, ref, K, precision)


def _gemmlab_check(stage, M, N, K, layout, batch, config=None, precision=None) -> _check.CheckResult:
    """gemmlab's own check (check.check_stage) for 2-D; for a batch, gemm_batched on 3-D operands
    through :func:`check_callable`, so that every matrix of the batch is checked."""
    if batch <= 1:
        return _check.check_stage(stage, M, N, K, layout, config=config, precision=precision)
    import gemmlab

    def run(a, b, c, alpha, beta, out):
        gemmlab.gemm_batched(a, b, c, alpha=alpha, beta=beta, out=out, stage=stage, config=config,
                             precision=precision)
    return check_callable(run, M, N, K, layout, precision or _check.stage_precision(stage), batch)


# ---- gemmlab stages ----------------------------------------------------------------------

def _attr(obj, name):
    v = getattr(obj, name)
    return v() if callable(v) else v


def kernel_info(ck, device: int, threads: int, dynamic_smem: int) -> dict:
    """Registers, shared memory and blocks per SM of a loaded gemmlab kernel (CUDA occupancy API)."""
    from ..jit import launch as launch_mod

    info = {"threads": threads, "smem_dynamic_bytes": int(dynamic_smem), "registers": None,
            "smem_static_bytes": None, "smem_bytes": None, "local_bytes": None, "blocks_per_sm": None}
    kernel, _ = launch_mod.load(ck, device)
    for key, attr in (("registers", "num_regs"), ("smem_static_bytes", "shared_size_bytes"),
                      ("local_bytes", "local_size_bytes")):
        try:
            info[key] = int(_attr(kernel.attributes, attr))
        except Exception:
            pass
    if info["smem_static_bytes"] is not None:
        info["smem_bytes"] = info["smem_static_bytes"] + info["smem_dynamic_bytes"]
    try:
        info["blocks_per_sm"] = int(kernel.occupancy.max_active_blocks_per_multiprocessor(threads, dynamic_smem))
    except Exception:
        pass
    return info


class StageCandidate(Candidate):
    def __init__(self, spec, config=None):
        cfg = spec.config(config)
        custom = config is not None and cfg != spec.default_config
        sid = spec.id + ("[" + ",".join(f"{k}={v}" for k, v in cfg.items() if v != spec.default_config[k]) + "]"
                         if custom else "")
        super().__init__(id=sid, name=spec.name, kind="stage", adds=spec.adds, notes=spec.notes,
                         expected_pct_cublas=tuple(spec.expected_pct_cublas) if spec.expected_pct_cublas else None,
                         config=cfg, precision=spec.precision)
        self.spec = spec

    def check(self, M, N, K, layout, batch: int = 1):
        return _gemmlab_check(self.spec.id, M, N, K, layout, batch, config=self.config)

    def prepare(self, ops: Operands) -> Prepared:
        from ..api import prepare

        plan, enqueue = prepare(ops.a, ops.b, out=ops.out, stage=self.spec.id, config=self.config,
                                batched=ops.batched)
        return _prepared(plan, enqueue, ops, self.spec)


def _prepared(plan, enqueue, ops, spec=None) -> Prepared:
    """Launch once (the caller checks the output) and describe what ran."""
    enqueue()
    ck = plan.ck
    info = kernel_info(ck, ops.device, int(plan.main.block), plan.main.smem)
    info.update(grid=list(plan.main.grid), launches=len(plan.steps),
                compile_seconds=round(ck.compile_seconds, 3), plan=plan.describe())
    if spec is not None:
        info["fallback"] = not ck.name.startswith(f"gemmlab_{spec.id}_{spec.name}")
    kernel = ck.name if len(plan.steps) == 1 else " + ".join(plan.kernels)
    return Prepared(enqueue, kernel, info)


class AutoCandidate(Candidate):
    """gemmlab as a user calls it: stage="auto" (the tuned table, else the heuristic), through the
    same plan ``gemmlab.gemm`` runs (split-K and repacking included)."""

    def __init__(self, precision: str = "ieee"):
        suffix = "" if precision == "ieee" else f"-{precision}"
        super().__init__(id="tuned" + suffix, name="gemmlab auto" + (f" ({precision})" if suffix else ""),
                         kind="stage", adds="stage='auto': tuned table or waves heuristic, split-K, skinny kernel"
                         + (f"; precision={precision!r}" if suffix else ""), notes="001, 000 §12",
                         precision=precision)

    def check(self, M, N, K, layout, batch: int = 1):
        return _gemmlab_check("auto", M, N, K, layout, batch, precision=self.precision)

    def prepare(self, ops: Operands) -> Prepared:
        from ..api import prepare

        # 3-D operands go through gemm_batched's plan (one launch over the batch, no copies)
        plan, enqueue = prepare(ops.a, ops.b, out=ops.out, stage="auto", precision=self.precision,
                                batched=ops.batched)
        prep = _prepared(plan, enqueue, ops)
        self.config = plan.describe()
        return prep
