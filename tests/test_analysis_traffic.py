"""The traffic and intensity model against the notes' numbers (002; 000 §3.2, §4.3, §5.2, §6.2)."""
import math

import pytest

from gemmlab.analysis import traffic


def test_block_tile_128_gives_32_flop_per_byte():
    # 000 §4.3: 128 * 128 / (2 * 256) = 32
    assert traffic.block_intensity(128, 128) == 32.0
    # square is best for a fixed BM + BN (AM-GM)
    assert traffic.block_intensity(128, 128) > traffic.block_intensity(64, 192)
    assert traffic.block_intensity(64, 64) == 16.0


def test_naive_and_thread_tile_intensity():
    assert traffic.levels(64, 64, 64, bm=None, bn=None, rm=1, rn=1)["global_intensity"] == 0.25  # 000 §3.2
    assert traffic.thread_intensity(8, 8) == 2.0                      # 000 §5.2: 64 / (2 * 16)
    assert traffic.thread_intensity(8, 8) > traffic.thread_intensity(4, 12)
    # outer product vs inner product, in elements: 64 FMAs per 16 reads = 4x (000 §5.2)
    assert (8 * 8) / (8 + 8) == 4 * (1 / (1 + 1)) * 2


def test_warp_shape_ratio_and_best_shapes():
    # 000 §6.2: 16 * TM / (x + y); 4x8 and 8x4 (x + y = 12) are the best of x * y = 32
    assert traffic.warp_shape_ratio(4, 8, 8) == pytest.approx(16 * 8 / 12)
    for x, y in ((1, 32), (2, 16), (4, 8), (8, 4), (16, 2), (32, 1)):
        assert traffic.warp_intensity(x, y, 8, 8) == pytest.approx(traffic.warp_shape_ratio(x, y, 8))
    assert sorted(traffic.best_warp_shapes(8, 8)) == [(4, 8), (8, 4)]
    ranking = [(x, y) for x, y, _ in traffic.warp_shapes(8, 8)]
    assert set(ranking[:2]) == {(4, 8), (8, 4)}
    assert set(ranking[-2:]) == {(1, 32), (32, 1)}        # the worst: x + y = 33
    # 2x16 (x + y = 18) is worse than 4x8, as §6.1 / §8.3 argue
    assert traffic.warp_intensity(2, 16, 8, 8) < traffic.warp_intensity(4, 8, 8, 8)


def test_worked_example_2048():
    # 002 "一个具体的例子": 2048^2, bm = bn = 128, bk = 8, rm = rn = 8
    m = n = k = 2048
    p = traffic.tiling_plan(m, n, k, 128, 128, 8, 8, 8)
    assert p["blocks"] == 256
    assert p["c_per_block"] == 16384
    assert p["threads_per_block"] == 256
    assert p["c_per_thread"] == 64
    assert p["big_iterations"] == 256
    assert p["small_iterations"] == 8
    assert p["ffma_per_small_iteration"] == 64
    assert p["a_tile_elements"] == 128 * 8 and p["b_tile_elements"] == 8 * 128
    # reads for all of C: mnk(1/bm + 1/bn), mnk(1/rm + 1/rn), 2mnk
    assert p["global_reads"] == m * n * k / 64 == 134_217_728
    assert p["shared_reads"] == m * n * k / 4 == 2_147_483_648
    assert p["register_reads"] == 2 * m * n * k == 17_179_869_184
    # consistency: per block per big iteration the block reads bm*bk + bk*bn from global
    assert p["global_reads"] == p["blocks"] * p["big_iterations"] * (p["a_tile_elements"] + p["b_tile_elements"])
    # and each thread reads rm + rn from shared per small iteration
    per_thread = p["blocks"] * p["threads_per_block"] * p["big_iterations"] * p["small_iterations"] * (8 + 8)
    assert p["shared_reads"] == per_thread


def test_levels_reduce_to_the_untiled_forms():
    m, n, k = 96, 80, 64
    assert traffic.global_reads(m, n, k) == 2 * m * n * k
    assert traffic.shared_reads(m, n, k, 1, 1) == 2 * m * n * k
    lv = traffic.levels(m, n, k, bm=32, bn=32, rm=4, rn=2)
    assert lv["global_reads"] == m * n * k * (1 / 32 + 1 / 32)
    assert lv["shared_reads"] == m * n * k * (1 / 4 + 1 / 2)
    assert lv["flops"] / lv["global_bytes"] == pytest.approx(traffic.block_intensity(32, 32))
    assert math.isclose(traffic.compulsory_bytes(2, 3, 4), 4 * (8 + 12 + 6))
