"""``gemmlab explain``: every registered stage, the JSON contract of DESIGN.md, the notes' numbers."""
import json
import subprocess
import sys

import pytest

from gemmlab.analysis import banks, explain
from gemmlab.errors import CompileError
from gemmlab.stages import all_stages

STAGE_IDS = [s.id for s in all_stages()]


def run_cli(*args):
    r = subprocess.run([sys.executable, "-m", "gemmlab", *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def report(stage, **kw):
    try:
        return explain.report(stage, **kw)
    except CompileError as e:  # a stage that does not compile fails test_stages_compile, not this
        pytest.skip(f"{stage} does not compile: {str(e)[:200]}")


def test_explain_s01_json_contract():
    r = json.loads(run_cli("explain", "s01", "--json"))
    for k in ("stage", "config", "intensity", "occupancy", "waves", "smem", "predicted"):
        assert k in r, k
    from gemmlab.stages import get

    cfg = get("s01").default_config
    assert r["stage"] == "s01" and r["config"] == cfg
    assert set(r["smem"]) == {"a_load", "b_load", "a_store", "b_store"}
    for kind in r["smem"].values():            # s01 has no shared memory: n/a, not a crash
        assert kind["wavefronts"] is None and kind["note"] == "n/a"
    assert r["intensity"]["global"] == 0.25                      # 000 §3.2
    assert r["occupancy"]["blocks_per_sm"] >= 1 and r["occupancy"]["limited_by"]
    assert r["waves"]["blocks"] == -(-4096 // cfg["block_m"]) * -(-4096 // cfg["block_n"])
    assert r["predicted"]["bound"] in ("ffma_peak", "issue", "dram", "shared", "issue_slots")
    assert r["machine"]["sms"] == 132


def test_explain_text_and_options():
    out = run_cli("explain", "s01", "--size", "1024", "--sms", "114")
    assert "s01 naive" in out and "occupancy" in out and "predicted" in out and "n/a" in out
    assert "114 SMs" in out and "1024³" in out
    r = json.loads(run_cli("explain", "s01", "--config", "block_m=4,block_n=64", "--json"))
    assert r["config"]["block_m"] == 4 and r["config"]["block_n"] == 64
    bad = subprocess.run([sys.executable, "-m", "gemmlab", "explain", "s01", "--config", "block_n=48"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "multiple of 32" in bad.stderr


@pytest.mark.parametrize("stage_id", STAGE_IDS)
def test_every_stage_explains(stage_id):
    r = report(stage_id, size=2048)
    text = explain.format_text(r)
    assert r["stage"] == stage_id and stage_id in text
    assert r["occupancy"]["blocks_per_sm"] >= 1
    assert r["predicted"]["tflops"] > 0
    tc = r.get("tensor_core")
    peak = tc["tensor_peak_tflops"] / tc["products_per_output"] if tc else r["machine"]["fp32_tflops"]
    assert r["predicted"]["tflops"] <= peak + 1e-9
    json.dumps(r)                                           # serialisable
    for kind, s in r["smem"].items():
        assert s["wavefronts"] is None or s["wavefronts"] >= s["ideal"] >= 1, (kind, s)


def test_tiled_stage_numbers_follow_the_notes():
    # a stage with the notes' block tile (128 x 128) has 32 FLOP/B at the block level
    tiled = [s for s in all_stages() if s.default_config.get("block_m") == 128
             and s.default_config.get("block_n") == 128 and s.smem_bytes(s.default_config, s.variants(s.default_config)[0])]
    if not tiled:
        pytest.skip("no registered stage with a 128 x 128 block tile")
    r = report(tiled[0].id)
    assert r["intensity"]["block"] == 32.0
    assert r["traffic"]["global_reads"] == 4096 ** 3 * (2 / 128)


def test_warp_intensity_from_the_real_addressing():
    # s06 (warp tiling, 4x8 lanes, 8x8 thread tiles) reads 4*8 + 8*8 distinct floats per k: 16*8/12
    if "s06" not in STAGE_IDS:
        pytest.skip("s06 not registered")
    r = report("s06")
    if r["traffic"].get("thread_tile_source") != "smem_accesses":
        pytest.skip("s06 reports no shared-memory addressing")
    assert r["intensity"]["thread"] == 2.0
    assert r["intensity"]["warp"] == pytest.approx(16 * 8 / 12)


def test_tile_from_addressing():
    lanes = range(32)
    # per k step: 8 A floats (two float4) and 8 B floats: rm = rn = 8, one step
    acc = {"a_load": [(16, [16 * i for i in lanes]), (16, [16 * i + 512 for i in lanes])],
           "b_load": [(16, [16 * i for i in lanes]), (16, [16 * i + 512 for i in lanes])]}
    assert explain.tile_from_addressing(acc, 64) == (8, 8, 1)
    # the same over 4 k steps
    acc4 = {k: v * 4 for k, v in acc.items()}
    assert explain.tile_from_addressing(acc4, 64) == (8, 8, 4)
    assert explain.tile_from_addressing({}, 64) is None
    assert explain.tile_from_addressing(acc, 7) is None


def test_notes_check_for_the_bank_stages():
    present = [s for s in banks.STAGE_PATTERN if s in STAGE_IDS]
    if not present:
        pytest.skip("no s07/s08 stage registered")
    for sid in present:
        r = report(sid)
        nc = r["smem_notes"]
        assert nc["notes"]["total"] == sum(banks.NOTES_TABLE[banks.STAGE_PATTERN[sid]])
        text = explain.format_text(r)
        assert "notes §8.4-8.5" in text
