"""The correctness harness: fresh random inputs, float64 reference, poisoned output.

Tolerance rule (the one place it is written): FP32 accumulation error grows about like sqrt(K),
so a result passes when

    ||out - ref||_F / ||ref||_F  <=  base(precision) * max(1, sqrt(K / 4096))

with base 1e-5 for "ieee" and "tf32x3" (FP32-accurate), and 2^-8 (3.9e-3) for "tf32": TF32 keeps
10 of FP32's 23 mantissa bits, so each product carries a relative error of up to 2^-10 per
input (the tensor core truncates; positive data does not average it away: about 1e-3 measured
at every K), far above the FP32 sums' growth. Every element of ``out`` must be finite wherever
the reference is finite (NaN/Inf always fail). FP32 SIMT stages land near 1e-6 at K = 4096.
When the reference is all zeros the absolute norm is compared instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, asdict

ALPHA, BETA = 0.5, 3.0


TOLERANCE_BASE = {"ieee": 1e-5, "tf32x3": 1e-5, "tf32": 2.0 ** -8}


def tolerance(K: int, precision: str = "ieee") -> float:
    return TOLERANCE_BASE[precision] * max(1.0, math.sqrt(max(K, 1) / 4096))


@dataclass
class CheckResult:
    rel_error: float
    tolerance: float
    finite: bool
    correct: bool

    def as_dict(self):
        return asdict(self)


def compare(out, ref, K: int, precision: str = "ieee", scale: float = 0.0) -> CheckResult:
    """``out`` float32 and ``ref`` float64 torch tensors of the same shape: ||out - ref|| over
    ||ref|| (finite elements), or over ``scale`` where that is larger (:func:`terms_scale`: the
    larger term of alpha A B + beta C, so that the two cancelling does not inflate the error)."""
    import torch

    out_finite_where = bool(torch.isfinite(out.double())[torch.isfinite(ref)].all()) if ref.numel() else True
    diff = (out.double() - ref)
    diff = torch.where(torch.isfinite(ref), diff, torch.zeros_like(diff))
    num = float(torch.linalg.vector_norm(diff))
    den = _finite_norm(ref)
    den = max(den, scale) if math.isfinite(scale) else den
    rel = num / den if den > 0 else num
    if not math.isfinite(rel):
        rel = float("inf")
    tol = tolerance(K, precision)
    ok = out_finite_where and rel <= tol
    return CheckResult(rel, tol, out_finite_where, ok)


def random_operands(M, N, K, layout="nn", batch=None, device="cuda", seed=None, c_layout="row"):
    """Fresh random a, b, c (uniform in [-1, 1)) as torch tensors in the requested layouts."""
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(seed if seed is not None else torch.seed() % (2**62))
    lead = (batch,) if batch else ()

    def mat(r, c, trans):
        if trans:
            t = torch.rand(lead + (c, r), generator=g, device=device) * 2 - 1
            return t.transpose(-1, -2)
        return torch.rand(lead + (r, c), generator=g, device=device) * 2 - 1

    a = mat(M, K, layout[0] == "t")
    b = mat(K, N, layout[1] == "t")
    c = mat(M, N, c_layout == "col")
    return a, b, c


DATA_KINDS = ("uniform", "normal", "positive", "wide")


def contract_data(kind: str, shape, generator, device="cuda"):
    """The accuracy contract's inputs (README, Correctness): U(-1,1), N(0,1), U(0,1), or U(-1,1)
    scaled by 2^e with e uniform in [-10, 10] ("wide" exponents)."""
    import torch

    g = generator
    if kind == "uniform":
        return torch.rand(shape, generator=g, device=device) * 2 - 1
    if kind == "normal":
        return torch.randn(shape, generator=g, device=device)
    if kind == "positive":
        return torch.rand(shape, generator=g, device=device)
    if kind == "wide":
        e = torch.randint(-10, 11, shape, generator=g, device=device).float()
        return (torch.rand(shape, generator=g, device=device) * 2 - 1) * torch.exp2(e)
    raise ValueError(f"kind={kind!r}: expected one of {DATA_KINDS}")


def _finite_norm(t) -> float:
    """||t||_F in float64 over its finite elements."""
    import torch

    t = t.double()
    return float(torch.linalg.vector_norm(torch.where(torch.isfinite(t), t, torch.zeros_like(t))))


def _terms(a, b, c, alpha, beta):
    """alpha A B and beta C in float64 (None for the second when beta is 0 or there is no C)."""
    ab = alpha * (a.double() @ b.double())
    return ab, (beta * c.double() if c is not None and beta != 0.0 else None)


def _larger_term(ab, bc) -> float:
    return _finite_norm(ab) if bc is None else max(_finite_norm(ab), _finite_norm(bc))


def reference(a, b, c, alpha, beta):
    ab, bc = _terms(a, b, c, alpha, beta)
    return ab if bc is None else ab + bc


def terms_scale(a, b, c, alpha, beta) -> float:
    """max(||alpha A B||, ||beta C||) in float64 (finite elements): the size of the larger term.
    A result where the two nearly cancel (a 1x1x1 product, say) is small against the rounding of
    its terms, which a tensor-core stage makes at 2^-11 of the product: its error is measured
    against the product then, not against what is left of the sum."""
    return _larger_term(*_terms(a, b, c, alpha, beta))


def poisoned_like(c):
    import torch

    return torch.full_like(c, float("nan"))


def stage_precision(stage) -> str:
    """The precision a stage id computes at ("ieee" for "auto" and unknown ids)."""
    from .stages import get

    try:
        return get(stage).precision
    except Exception:
        return "ieee"


def check_stage(stage, M, N, K, layout="nn", *, config=None, batch=None, alpha=ALPHA, beta=BETA, seed=None,
                precision=None):
    """Run ``stage`` once on fresh data into a NaN-poisoned output and compare with float64
    (within the tolerance of ``precision``, passed on to the call; None: the stage's own)."""
    import gemmlab

    a, b, c = random_operands(M, N, K, layout, batch, seed=seed)
    out = poisoned_like(c)  # separate from c: the kernel must write every element
    ab, bc = _terms(a, b, c, alpha, beta)  # the product once, for the reference and the scale
    ref = ab if bc is None else ab + bc
    fn = gemmlab.gemm_batched if batch else gemmlab.gemm
    fn(a, b, c, alpha=alpha, beta=beta, out=out, stage=stage, config=config, precision=precision)
    import torch

    torch.cuda.synchronize()
    return compare(out, ref, K, precision or stage_precision(stage), _larger_term(ab, bc))


def check_stage_poisoned(stage, M, N, K, layout="nn", *, config=None, alpha=ALPHA, seed=None):
    """beta = 0 into an output full of NaN: every element must be written and NaN must not leak."""
    import gemmlab
    import torch

    a, b, c = random_operands(M, N, K, layout, seed=seed)
    out = torch.full_like(c, float("nan"))
    gemmlab.gemm(a, b, out, alpha=alpha, beta=0.0, out=out, stage=stage, config=config)
    torch.cuda.synchronize()
    return compare(out, reference(a, b, None, alpha, 0.0), K, stage_precision(stage))
