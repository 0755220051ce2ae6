"""The repetition logic of gemmlab.bench.timing.measure, driven by a fake GPU and a fake clock.

Nothing is timed here: the fake clock advances by the kernel time each fake launch claims.
"""
import pytest

from gemmlab.bench import timing


class FakeGPU:
    def __init__(self, kernel_s, flush_s=1e-4):
        self.now = 0.0
        self.kernel_s = kernel_s
        self.flush_s = flush_s
        self.launches = 0
        self.flushes = 0
        self.batch_syncs = 0

    def clock(self):
        return self.now

    def launch(self):
        self.now += self.kernel_s
        self.launches += 1

    def flush(self):
        self.now += self.flush_s
        self.flushes += 1


class FakeEvent:
    def __init__(self, gpu):
        self.gpu = gpu
        self.t = None

    def record(self):
        self.t = self.gpu.now

    def synchronize(self):
        self.gpu.batch_syncs += 1

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class FakeEvents:
    def __init__(self, gpu):
        self.gpu = gpu

    def pair(self):
        return FakeEvent(self.gpu), FakeEvent(self.gpu)

    def synchronize(self):
        pass


def run(kernel_s, **policy):
    gpu = FakeGPU(kernel_s)
    clocks = iter([1980, 1965])
    t = timing.measure(gpu.launch, timing.Policy(**policy), gpu.flush, lambda: next(clocks),
                       events=FakeEvents(gpu), clock=gpu.clock)
    return gpu, t


def test_reps_follow_the_target():
    gpu, t = run(1e-3, target_seconds=0.4, max_seconds=100, min_reps=10, max_reps=2000, warmup_seconds=0.05)
    assert t.reps == 400 and len(t.times_ms) == 400
    assert not t.capped
    assert t.times_ms == pytest.approx([1.0] * 400)   # the flush is outside the events
    assert t.summary.median == pytest.approx(1.0)
    assert t.warmup_launches == 1 + 50               # one timed warm-up + 0.05 s worth
    assert gpu.launches == t.warmup_launches + t.reps
    assert gpu.flushes == 1 + t.reps                 # every timed launch is flushed first
    assert (t.clock_before_mhz, t.clock_after_mhz) == (1980, 1965)


def test_short_kernels_stop_at_max_reps_in_batches():
    gpu, t = run(1e-6, target_seconds=0.4, max_seconds=100, min_reps=10, max_reps=1000, max_batch=256)
    assert t.reps == 1000
    assert gpu.batch_syncs >= 1000 // 256 + 1       # never more than max_batch per synchronize
    assert t.warmup_launches == 1 + 500             # warm-up is capped too


def test_min_reps_for_long_kernels():
    gpu, t = run(0.1, target_seconds=0.4, max_seconds=100, min_reps=10, max_reps=2000)
    assert t.reps == 10 and not t.capped


def test_budget_caps_slow_kernels_and_says_so():
    gpu, t = run(0.5, target_seconds=0.4, max_seconds=4.0, min_reps=10, max_reps=2000)
    assert t.capped
    assert 1 <= t.reps < 10
    assert t.wall_seconds <= 4.0 + 0.5 + 0.01       # at most one launch past the budget


def test_at_least_one_rep_even_past_the_budget():
    gpu, t = run(5.0, target_seconds=0.4, max_seconds=1.0, min_reps=10, max_reps=2000)
    assert t.reps == 1 and t.capped


def test_nonpositive_event_times_are_an_error():
    gpu = FakeGPU(0.0)
    with pytest.raises(RuntimeError, match="non-positive"):
        timing.measure(gpu.launch, timing.Policy(max_seconds=1, min_reps=2, max_reps=2), gpu.flush,
                       events=FakeEvents(gpu), clock=gpu.clock)
