"""Plain arithmetic of the benchmark: quantiles, FLOP and byte counts, rates, size lists.

Pure Python so that it is tested anywhere (no numpy, no GPU).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

FP32_LANES_PER_SM = 128  # FP32 FMA lanes per SM on sm_80/sm_86/sm_89/sm_90 (4 SMSPs x 32)


def percentile(values, q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between the two nearest ranks
    (numpy's default "linear" method). Raises ValueError on an empty list."""
    xs = sorted(float(v) for v in values)
    if not xs:
        raise ValueError("percentile of an empty list")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile: q={q} is outside 0..100")
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values) -> float:
    return percentile(values, 50.0)


@dataclass(frozen=True)
class Summary:
    median: float
    p20: float
    p80: float
    n: int
    min: float
    max: float


def summarize(values) -> Summary:
    """Median, 20th and 80th percentiles, count, min and max of ``values``."""
    xs = [float(v) for v in values]
    return Summary(median(xs), percentile(xs, 20), percentile(xs, 80), len(xs), min(xs), max(xs))


def gemm_flops(m: int, n: int, k: int, batch: int = 1) -> int:
    """Floating-point operations of one GEMM, counted as 2·M·N·K (one multiply and one add per
    term; the alpha/beta epilogue is not counted)."""
    return 2 * int(m) * int(n) * int(k) * int(batch)


def gemm_bytes(m: int, n: int, k: int, *, beta_nonzero: bool = False, elem: int = 4) -> int:
    """Bytes a GEMM must move at least once: A and B read, D written, C read when beta != 0."""
    mn = int(m) * int(n)
    return elem * (int(m) * int(k) + int(k) * int(n) + mn + (mn if beta_nonzero else 0))


def tflops(flops: float, seconds: float) -> float:
    """``flops`` done in ``seconds``, in TFLOP/s."""
    if seconds <= 0:
        raise ValueError(f"tflops: seconds must be > 0, got {seconds}")
    return flops / seconds / 1e12


def fp32_peak_tflops(sms: int, clock_mhz: float, lanes: int = FP32_LANES_PER_SM) -> float:
    """FFMA peak: SMs x lanes x 2 FLOP per FMA x clock."""
    return sms * lanes * 2 * clock_mhz * 1e6 / 1e12


TF32_FLOP_PER_CLOCK_PER_SM = 2048  # dense TF32 wgmma: 132 SMs x 2048 x 1.83 GHz = 494.7 TFLOPS (spec)


def tf32_peak_tflops(sms: int, clock_mhz: float) -> float:
    """Dense TF32 tensor-core peak: SMs x 2048 FLOP per clock x clock."""
    return sms * TF32_FLOP_PER_CLOCK_PER_SM * clock_mhz * 1e6 / 1e12


def parse_sizes(text: str) -> list[int]:
    """'256,512,1024', '256..8192' (doubling: 256, 512, ..., 8192), '256,512,...,8192' (doubling
    from the last size given) or a mix ('128,256..1024').

    Returns the sizes in the order given, without duplicates. Raises ValueError with a message
    that says what is wrong.
    """
    out: list[int] = []
    items = [x for x in str(text).replace(" ", "").split(",") if x]
    pending = False  # a bare '...' waits for the size that ends it
    for item in items:
        if item in ("..", "..."):
            if not out or pending:
                raise ValueError(f"sizes {text!r}: '...' needs a size before and after it")
            pending = True
            continue
        if ".." in item:
            lo_s, hi_s = item.split("..", 1)
            lo, hi = _positive(lo_s, text), _positive(hi_s, text)
        else:
            lo = hi = _positive(item, text)
        explicit_end = pending  # '256,...,1000' ends at 1000 even off the doubling
        if pending:
            lo, pending = out[-1] * 2, False
            if hi < out[-1]:
                raise ValueError(f"sizes {text!r}: '...' runs backwards to {hi}")
        if hi < lo and ".." in item:
            raise ValueError(f"sizes {text!r}: range {item} runs backwards; write LOW..HIGH")
        s = lo
        while s <= hi:
            out.append(s)
            s *= 2
        if explicit_end and out[-1] != hi:
            out.append(hi)
    if pending:
        raise ValueError(f"sizes {text!r}: '...' needs a size after it")
    if not out:
        raise ValueError(f"sizes {text!r}: no size given; e.g. 4096 or 256..8192 or 512,1024")
    seen, uniq = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            uniq.append(s)
    return uniq


def _positive(s: str, text: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise ValueError(f"sizes {text!r}: {s!r} is not an integer") from None
    if v <= 0:
        raise ValueError(f"sizes {text!r}: {v} is not a positive size")
    return v


def reps_wanted(est_seconds: float, target_seconds: float, min_reps: int, max_reps: int) -> int:
    """How many timed repetitions make ``target_seconds`` of kernel time, within [min, max]."""
    if est_seconds <= 0:
        return max_reps
    return int(min(max_reps, max(min_reps, math.ceil(target_seconds / est_seconds))))
