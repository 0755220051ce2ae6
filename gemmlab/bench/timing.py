"""Timing one GPU launch sequence the way docs/benchmark.md says.

Each repetition is: write the L2 flush buffer (256 MB, > 4x the H200's 60 MB L2), record a CUDA
event, launch, record a second event. The flush runs on the GPU for ~80 us, so the CPU has queued
the start event and the launch before the GPU reaches them: Python launch overhead does not land
inside the timed interval. Repetitions are queued in batches and synchronized once per batch.

How many repetitions: enough for ``target_seconds`` of timed kernel work, within
[``min_reps``, ``max_reps``], and never past ``max_seconds`` of wall time per candidate (a naive
stage at 8192³ takes ~0.5 s a launch: it gets a few repetitions, and the row says how many).

torch is imported inside the functions: this module imports on machines without it.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, asdict

from . import stats

FLUSH_BYTES = 256 << 20


@dataclass
class Policy:
    target_seconds: float = 0.4   # timed kernel work per candidate
    max_seconds: float = 4.0      # wall-clock budget per candidate for warm-up + timed runs
    min_reps: int = 10
    max_reps: int = 2000
    warmup_seconds: float = 0.05  # extra warm-up launches for short kernels (after the first)
    max_batch: int = 256          # repetitions queued before one synchronize
    flush_bytes: int = FLUSH_BYTES

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Timing:
    times_ms: list = field(default_factory=list)   # one per timed repetition
    reps: int = 0
    capped: bool = False           # True: the wall-clock budget ended timing before the target
    warmup_launches: int = 0
    wall_seconds: float = 0.0
    clock_before_mhz: int | None = None
    clock_after_mhz: int | None = None

    @property
    def summary(self) -> stats.Summary:
        return stats.summarize(self.times_ms)


class L2Flush:
    """A device buffer whose rewrite evicts everything else from L2."""

    def __init__(self, nbytes: int = FLUSH_BYTES, device_index: int = 0):
        import torch

        self.nbytes = int(nbytes)
        self.buf = torch.empty(self.nbytes // 4, dtype=torch.float32, device=f"cuda:{device_index}")

    def __call__(self) -> None:
        self.buf.zero_()


class TorchEvents:
    """CUDA events and synchronization through torch (on torch's current stream)."""

    def __init__(self):
        import torch

        self._torch = torch

    def pair(self):
        ev = self._torch.cuda.Event
        return ev(enable_timing=True), ev(enable_timing=True)

    def synchronize(self) -> None:
        self._torch.cuda.synchronize()


def _batch(launch, n: int, flush, events) -> list[float]:
    """Queue ``n`` flushed, event-bracketed launches; synchronize once; return their times (ms)."""
    pairs = [events.pair() for _ in range(n)]
    for start, end in pairs:
        flush()
        start.record()
        launch()
        end.record()
    pairs[-1][1].synchronize()
    return [start.elapsed_time(end) for start, end in pairs]


def measure(launch, policy: Policy, flush, read_clock=None, *, events=None, clock=time.perf_counter) -> Timing:
    """Warm up and time ``launch`` (a no-argument callable that enqueues the work on torch's
    current stream). The caller has launched it at least once already (compile, check).

    ``events`` (default: TorchEvents) and ``clock`` are there so the repetition logic can be
    tested without a GPU.
    """
    events = events or TorchEvents()
    read_clock = read_clock or (lambda: None)
    t_start = clock()
    deadline = t_start + policy.max_seconds
    out = Timing()

    # One flushed, timed launch to learn the duration; then warm-up for short kernels.
    first = _batch(launch, 1, flush, events)[0] / 1e3
    out.warmup_launches = 1
    extra = 0 if first <= 0 else min(int(policy.warmup_seconds / first), 500)
    for _ in range(extra):
        launch()
    events.synchronize()
    out.warmup_launches += extra

    out.clock_before_mhz = read_clock()
    batch_wall = []  # wall seconds per repetition, learned from the batches
    while True:
        est = stats.median(out.times_ms) / 1e3 if out.times_ms else first
        want = stats.reps_wanted(est, policy.target_seconds, policy.min_reps, policy.max_reps)
        left = want - len(out.times_ms)
        if left <= 0:
            break
        now = clock()
        if out.times_ms and now >= deadline:
            out.capped = True
            break
        if out.times_ms:
            per_rep = sum(batch_wall) / len(batch_wall)
            fit = max(1, int((deadline - now) / per_rep)) if per_rep > 0 else left
        else:
            fit = 1  # the first batch is one repetition: it measures the wall time per repetition
        n = max(1, min(left, fit, policy.max_batch))
        t0 = clock()
        out.times_ms.extend(_batch(launch, n, flush, events))
        batch_wall.append((clock() - t0) / n)
    out.clock_after_mhz = read_clock()
    out.reps = len(out.times_ms)
    out.wall_seconds = clock() - t_start
    if not all(math.isfinite(t) and t > 0 for t in out.times_ms):
        raise RuntimeError(f"CUDA events returned non-positive times: {out.times_ms[:8]}")
    return out
