"""Waves, tail and the L2 estimate (000 §2.3)."""
import pytest

from gemmlab.analysis import waves


def test_waves_and_last_wave():
    # 4096^2 in 128x128 tiles on 132 SMs, 2 blocks each: 1024 / 264 = 3.88 waves
    w = waves.waves(1024, 132, 2)
    assert w["capacity"] == 264
    assert w["waves"] == pytest.approx(1024 / 264)
    assert w["full_waves"] == 3
    assert w["last_wave_blocks"] == 1024 - 3 * 264 == 232
    assert w["last_wave_utilisation"] == pytest.approx(232 / 264)
    assert w["efficiency"] == pytest.approx((1024 / 264) / 4)
    exact = waves.waves(264 * 5, 132, 2)
    assert exact["last_wave_utilisation"] == 1.0 and exact["efficiency"] == 1.0
    small = waves.waves(100, 132, 1)           # fewer blocks than SMs (000 §12.5)
    assert small["waves"] < 1 and small["efficiency"] == pytest.approx(100 / 132)
    assert waves.waves(10, 132, 0)["efficiency"] == 0.0


@pytest.mark.parametrize("tiles_m,tiles_n,group_m", [(32, 32, 1), (32, 32, 8), (7, 5, 3), (5, 9, 8), (1, 1, 4)])
def test_block_order_is_a_bijection(tiles_m, tiles_n, group_m):
    tiles = {waves.tile_of(p, tiles_m, tiles_n, group_m) for p in range(tiles_m * tiles_n)}
    assert tiles == {(m, n) for m in range(tiles_m) for n in range(tiles_n)}


def test_row_major_and_grouped_order():
    assert [waves.tile_of(p, 4, 4, 1) for p in range(5)] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    # grouped 2 rows at a time, column-major inside the group
    assert [waves.tile_of(p, 4, 4, 2) for p in range(5)] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]


def test_l2_hit_by_hand():
    # one wave of 264 blocks over a 32 x 32 tile grid, row-major: rows 0..8 (9), columns 0..31
    spans = waves.wave_spans(32, 32, 264, 1)
    assert spans[0] == (264, 9, 32)
    # hit = 1 - (Wm*BM + Wn*BN) / (P*(BM + BN)) for that wave
    hit0 = 1 - (9 * 128 + 32 * 128) / (264 * 256)
    one_wave = waves.l2_hit(32, 32, 264 * 4, 128, 128, 1)     # capacity >= grid: a single wave
    assert waves.wave_spans(32, 32, 264 * 4, 1) == [(1024, 32, 32)]
    assert one_wave == pytest.approx(1 - (32 * 128 + 32 * 128) / (1024 * 256))
    assert waves.l2_hit(32, 32, 264, 128, 128, 1) == pytest.approx(
        1 - sum(wm * 128 + wn * 128 for _, wm, wn in spans) / (1024 * 256))
    assert hit0 == pytest.approx(0.9223, abs=1e-4)


def test_grouping_raises_the_hit_rate_on_wide_grids():
    # 16384^2 in 128 tiles: a row-major wave is 2 rows x 128 columns; grouped it is nearly square
    row = waves.l2_hit(128, 128, 264, 128, 128, 1)
    grouped = waves.l2_hit(128, 128, 264, 128, 128, 16)
    assert grouped > row + 0.1
    r = waves.report(16384, 16384, 128, 128, 132, 2, group_m=1)
    assert r["best_group_m"] > 1 and r["l2_hit_best_group"] >= r["l2_hit"]


def test_notes_formula_verbatim():
    # 1 - Wm*Wn / (Wm*Wn + Wm*N_block + Wn*M_block)
    assert waves.l2_hit_notes(2, 3, 10, 20) == pytest.approx(1 - 6 / (6 + 2 * 20 + 3 * 10))
    # and the property docs/models.md points out: for a fixed wave size it falls as the wave gets squarer
    assert waves.l2_hit_notes(16, 16, 128, 128) < waves.l2_hit_notes(2, 128, 128, 128)


def test_report_fields():
    r = waves.report(4096, 4096, 128, 128, 132, 2)
    for k in ("blocks", "capacity", "waves", "last_wave_utilisation", "efficiency", "l2_hit",
              "l2_hit_row_major", "best_group_m", "l2_hit_notes_formula", "first_wave_span"):
        assert k in r
    assert r["blocks"] == 1024 and r["tiles_m"] == 32
