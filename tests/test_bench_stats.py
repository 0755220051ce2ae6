"""Statistics, FLOP arithmetic and size parsing of gemmlab.bench (pure Python, no GPU)."""
import math

import pytest

from gemmlab.bench import stats


def test_percentile_matches_linear_interpolation():
    xs = [5, 1, 4, 2, 3]  # unsorted on purpose
    assert stats.percentile(xs, 0) == 1
    assert stats.percentile(xs, 100) == 5
    assert stats.percentile(xs, 50) == 3
    assert stats.percentile(xs, 20) == pytest.approx(1.8)
    assert stats.percentile(xs, 80) == pytest.approx(4.2)
    assert stats.percentile([10.0, 20.0], 25) == pytest.approx(12.5)


def test_percentile_single_value_and_errors():
    assert stats.percentile([7.5], 20) == 7.5
    with pytest.raises(ValueError):
        stats.percentile([], 50)
    with pytest.raises(ValueError):
        stats.percentile([1, 2], 101)


def test_median_even_and_odd():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5


def test_summarize_known_list():
    s = stats.summarize(range(1, 11))  # 1..10
    assert s.median == 5.5
    assert s.p20 == pytest.approx(2.8)
    assert s.p80 == pytest.approx(8.2)
    assert (s.n, s.min, s.max) == (10, 1, 10)
    assert s.p20 <= s.median <= s.p80


def test_flops_bytes_and_rates():
    assert stats.gemm_flops(4096, 4096, 4096) == 2 * 4096**3 == 137438953472
    assert stats.gemm_flops(2, 3, 5, batch=4) == 240
    assert stats.gemm_flops(0, 3, 5) == 0
    # A (M x K) + B (K x N) + D (M x N), float32; C too when beta != 0
    assert stats.gemm_bytes(8192, 8192, 8192) == 805306368
    assert stats.gemm_bytes(2, 3, 5) == 4 * (10 + 15 + 6)
    assert stats.gemm_bytes(2, 3, 5, beta_nonzero=True) == 4 * (10 + 15 + 12)
    # cuBLAS at 4096^3 in 2.7055 ms is 50.8 TFLOPS
    assert stats.tflops(stats.gemm_flops(4096, 4096, 4096), 2.7055e-3) == pytest.approx(50.8, rel=1e-3)
    with pytest.raises(ValueError):
        stats.tflops(1.0, 0.0)


def test_fp32_peak():
    # 132 SMs x 128 lanes x 2 x 1980 MHz
    assert stats.fp32_peak_tflops(132, 1980) == pytest.approx(66.908, rel=1e-4)
    assert stats.fp32_peak_tflops(1, 1000, lanes=64) == pytest.approx(0.128)


def test_parse_sizes():
    assert stats.parse_sizes("4096") == [4096]
    assert stats.parse_sizes("256..8192") == [256, 512, 1024, 2048, 4096, 8192]
    assert stats.parse_sizes("256, 512,1024") == [256, 512, 1024]
    assert stats.parse_sizes("128,256..1024,256") == [128, 256, 512, 1024]
    assert stats.parse_sizes("300..1000") == [300, 600]
    assert stats.parse_sizes("256,512,...,8192") == [256, 512, 1024, 2048, 4096, 8192]
    assert stats.parse_sizes("1000,...,4000") == [1000, 2000, 4000]
    assert stats.parse_sizes("256,...,1000") == [256, 512, 1000]
    for bad in ("", "abc", "0", "-5", "8192..256", "1..x", "...,512", "256,...", "512,...,256", "256,...,...,512"):
        with pytest.raises(ValueError):
            stats.parse_sizes(bad)


def test_reps_wanted():
    assert stats.reps_wanted(1e-3, 0.4, 10, 2000) == 400
    assert stats.reps_wanted(1e-6, 0.4, 10, 2000) == 2000
    assert stats.reps_wanted(0.5, 0.4, 10, 2000) == 10
    assert stats.reps_wanted(0.0, 0.4, 10, 2000) == 2000
    assert stats.reps_wanted(0.3, 0.4, 1, 100) == math.ceil(0.4 / 0.3)
