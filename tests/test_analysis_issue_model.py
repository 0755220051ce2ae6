"""The issue-slot time model (analysis/issue_model.py): its parts on made-up kernels, the K-loop
nest on hand-written SASS, and its accuracy on the committed H200 measurements (no GPU: the
recorded ladders and ncu durations are data, not timings taken here)."""
import json
import math
from pathlib import Path

import pytest

from gemmlab.analysis import issue_model as im
from gemmlab.analysis import occupancy
from gemmlab.analysis.sass import Insn
from gemmlab.errors import CompileError

ROOT = Path(__file__).resolve().parents[1]
LIM = occupancy.limits("sm_90")


def kernel(**kw):
    base = dict(warps_per_block=8, blocks_per_sm=1, blocks=132, k_tiles=100, instructions_per_tile=1000,
                uses_smem=False)
    base.update(kw)
    return im.Kernel(**base)


# ---- the parts ----------------------------------------------------------------------------------
def test_issue_slots_per_scheduler():
    k = kernel(instructions_per_tile=1000, bank_conflicts_per_tile=200)
    p = im.tile_period(k)
    assert p["warps_per_scheduler"] == 2 and p["issue"] == 2 * 1200   # every instruction, + bank cycles
    assert p["latency"] == 0   # no shared memory, no barriers
    two = im.tile_period(kernel(blocks_per_sm=2))
    assert two["issue"] == 2 * im.tile_period(kernel())["issue"]


def test_smooth_max_of_issue_and_pipe():
    assert im.smooth_max(100, 0) == 100
    assert im.smooth_max(100, 50) == pytest.approx(100 * (1 + 0.5 ** im.P_NORM) ** (1 / im.P_NORM))
    assert 100 < im.smooth_max(100, 100) < 200
    assert im.smooth_max(100, 100, math.inf) == 100


def test_barriers_and_pipeline_depth():
    smem = dict(uses_smem=True, smem_wavefronts_per_tile=100, barriers_per_tile=2, refill_wavefronts=10)
    one = im.tile_period(kernel(pipeline_depth=1, **smem))
    assert one["global_exposed"] == im.L_GLOBAL                     # load and compute the same tile
    assert one["sync"] == 2 * im.L_BARRIER + im.L_SHARED + 8 * 10   # barriers + refill of 8 warps
    deep = im.tile_period(kernel(pipeline_depth=3, **smem))
    assert deep["global_exposed"] == 0 and deep["latency"] == deep["sync"]   # hidden behind 2 tiles
    shallow = im.tile_period(kernel(pipeline_depth=2, instructions_per_tile=100, **smem))
    assert shallow["global_exposed"] == pytest.approx(im.L_GLOBAL - 2 * 100)  # 2 warps x 100 per scheduler
    two_blocks = im.tile_period(kernel(pipeline_depth=1, blocks_per_sm=2, **smem))
    assert two_blocks["latency"] == pytest.approx(one["latency"] / 2)       # the other block fills half


def test_rounds_and_tail():
    k = kernel(blocks=132 * 2 + 10, blocks_per_sm=2)
    p = im.predict(k, 132, 2e9)
    assert p["rounds"] == 2
    assert p["last_round"] is not None   # 10 blocks, one per SM: a cheaper round
    assert p["last_round"]["period"] < p["period"]["period"]
    full = im.predict(kernel(blocks=132 * 2, blocks_per_sm=2), 132, 2e9)
    assert p["cycles"] > full["cycles"] and p["time_s"] == pytest.approx(p["cycles"] / 2e9)


# ---- the K-loop nest from SASS -------------------------------------------------------------------
def _insn(addr, op, operands="R0, R1, R2, R3"):
    return Insn(addr, op, operands, "")


def test_loop_nest_inner_loop_inside_k_tile_loop():
    # outer (K tile) loop at 0x0..0x90: LDGSTS, BAR, then an inner loop 0x20..0x70 of 2 FFMA, 1 LDS.128
    code = [_insn(0x00, "LDGSTS.E.BYPASS.128", "[R4], desc[UR4][R6.64]"), _insn(0x10, "BAR.SYNC.DEFER_BLOCKING", "0x0"),
            _insn(0x20, "LDS.128", "R8, [R5]"), _insn(0x30, "FFMA", "R10, R8, R12, R10"),
            _insn(0x40, "FFMA", "R11, R9, R13, R11"), _insn(0x50, "IADD3", "R5, R5, 0x10, RZ"),
            _insn(0x60, "ISETP.NE.AND", "P0, PT, R5, R7, PT"), _insn(0x70, "@P0 BRA", "0x20"),
            _insn(0x80, "ISETP.NE.AND", "P1, PT, R4, R3, PT"), _insn(0x90, "BRA", "0x0")]
    code[7] = Insn(0x70, "BRA", "0x20", "@P0")
    main_only = im.loop_nest(code)                     # one trip of the inner loop
    assert main_only["instructions"] == 6 and main_only["ffma"] == 2 and main_only["source"] == "main loop"
    nest = im.loop_nest(code, ffma_per_tile=8)         # a K tile is 4 inner trips
    assert nest["inner_trips"] == 4
    assert nest["instructions"] == 4 * 6 + 4           # + LDGSTS, BAR, ISETP, BRA of the K-tile loop
    assert nest["barriers"] == 1 and nest["global_wavefronts"] == 4   # one LDGSTS.128: 512 B
    assert nest["source"].startswith("K-tile loop")
    assert im.loop_nest([_insn(0, "IADD3")]) is None


def test_register_banks_are_two():
    # R10 and R12 are both even: one bank of two on Volta+ (not a conflict with the notes' 4 banks)
    insns = [Insn(0x0, "FFMA", "R1, R10, R12, R3", ""), Insn(0x10, "BRA", "0x0", "")]
    assert im.loop_nest(insns)["bank_conflict_cycles"] == 1
    assert im.loop_nest(insns, banks=4)["bank_conflict_cycles"] == 0


# ---- accuracy on the committed measurements -------------------------------------------------------
def _ladder(path):
    return {r["stage"]: r for r in json.loads((ROOT / path).read_text())["rows"]}


LADDER_4096 = "results/h200/ladder-4096/ladder.json"
LADDER_8192 = "results/h200/ladder-8192/ladder.json"
TARGET = ("s07", "s08a", "s08b", "s08c", "s08d", "s09", "s10", "s11")


def _model(stage, n):
    try:
        return im.stage_model(stage, n, n, n)
    except CompileError as e:
        pytest.skip(f"{stage} does not compile: {str(e)[:200]}")


@pytest.mark.parametrize("stage", TARGET)
def test_time_within_15_percent_at_4096(stage):
    """Issue 18's target: predicted time within 15% of the measured ladder for s07-s11 (4096³,
    H200, results/h200/ladder-4096). The model was fitted to these (two constants), so this
    guards it; the 8192³ and ncu checks below are the ones it was not fitted to."""
    row = _ladder(LADDER_4096)[stage]
    m = _model(stage, 4096)
    assert m["available"]
    ratio = m["time_s"] / (row["time_ms"] * 1e-3)
    assert 0.85 <= ratio <= 1.15, f"{stage}: model {m['tflops']:.1f} TFLOPS, measured {row['tflops']:.1f}"


@pytest.mark.parametrize("stage", TARGET + ("s03", "s04", "s05", "s06"))
def test_time_at_8192_not_fitted(stage):
    row = _ladder(LADDER_8192)[stage]
    m = _model(stage, 8192)
    ratio = m["time_s"] / (row["time_ms"] * 1e-3)
    assert 0.85 <= ratio <= 1.15, f"{stage}: model {m['tflops']:.1f} TFLOPS, measured {row['tflops']:.1f}"


def test_issue_active_and_time_against_ncu_2048():
    """ncu at 2048³ (results/h200/ncu_*_2048.json): the issue-active and FMA-pipe shares the
    model predicts and the duration, for the stages whose recorded kernel is today's default
    (s10 and s11 were recorded before min_blocks joined the kernel name: same code)."""
    from gemmlab.stages import get

    rows = {}
    for f in ("ncu_stages_2048.json", "ncu_s10_s11_2048.json"):
        for r in json.loads((ROOT / "results" / "h200" / f).read_text())["rows"]:
            rows[r["kernel"]] = r
    checked = 0
    for stage in ("s05", "s06", "s07", "s08a", "s08b", "s08c", "s08d", "s09", "s10", "s11"):
        spec = get(stage)
        cfg = spec.config(None)
        name = spec.kernel_name(cfg, spec.variants(cfg)[0])
        r = rows.get(name) or rows.get(name.replace("_mb1_", "_"))
        if r is None:
            continue
        m = _model(stage, 2048)
        clock = r["raw"]["sm__cycles_elapsed.avg.per_second"]
        t = m["time_s"] * LIM.clock_ghz * 1e9 / clock
        assert t * 1e9 / r["duration_ns"] == pytest.approx(1.0, abs=0.10), stage
        assert m["issue_active_active"] == pytest.approx(r["issue_active_pct"] / 100, abs=0.05), stage
        assert m["fma_pipe_active"] == pytest.approx(r["fma_pipe_active_pct"] / 100, abs=0.05), stage
        checked += 1
    assert checked >= 8
