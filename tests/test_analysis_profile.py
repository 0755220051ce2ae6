"""``gemmlab profile``: argument checks, the model side, the traffic model and the whole command on
recorded ncu output (a stand-in ncu that prints the recorded sample), all without a GPU; and, on
the GPU machine, real ncu runs for a few stages (``pytest -m gpu``)."""
import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import cli
from gemmlab.analysis import ncu, profile, waves

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "ncu" / "h200_stages_2048_raw.csv"
SAMPLE_STAGES = "s05,s07,s08a,s09"


def run(argv, capsys):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---- arguments: exit 2, one line naming the argument, before any GPU or ncu -------------------------
@pytest.mark.parametrize("argv, needle", [
    (["profile"], "name a STAGE"),
    (["profile", "s99"], "unknown stage 's99'"),
    (["profile", "s07", "--all"], "one of STAGE, --stages and --all"),
    (["profile", "s07", "--size", "0"], "--size 0"),
    (["profile", "s07", "--size", "big"], "--size 'big'"),
    (["profile", "s07", "--shape", "12x3"], "--shape '12x3'"),
    (["profile", "s07", "--size", "64", "--shape", "64x64x64"], "--size or --shape"),
    (["profile", "s07", "--layout", "xy"], "--layout 'xy'"),
    (["profile", "s07", "--config", "nonsense_key=1"], "nonsense_key"),
    (["profile", "s07", "--config", "block_m"], "--config"),
    (["profile", "auto", "--config", "block_m=64"], "named stage"),
    (["profile", "s07", "--timeout", "0"], "--timeout"),
    (["profile", "s07", "--from-raw", "/no/such/file.csv"], "--from-raw"),
    (["profile", "auto", "--model-only"], "--model-only"),
    (["profile", "s07", "--model-only", "--from-raw", str(SAMPLE)], "exclude each other"),
])
def test_bad_arguments_exit_2(argv, needle, capsys, monkeypatch):
    monkeypatch.setenv("GEMMLAB_NCU", "/bin/false-ncu-that-must-not-run")
    try:
        code, out, err = run(argv, capsys)
    except SystemExit as e:      # parse_config of older cli versions exits by itself
        code, err = e.code, str(e)
        code = 2 if not isinstance(code, int) else code
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("gemmlab:") and needle in err, err


def test_ncu_missing_exit_1(capsys, monkeypatch):
    monkeypatch.setenv("GEMMLAB_NCU", "/no/such/ncu")
    code, out, err = run(["profile", "s07", "--size", "256"], capsys)
    assert code == 1
    assert err.strip() == "gemmlab: ncu not found: install Nsight Compute or set GEMMLAB_NCU"


# ---- the model side ---------------------------------------------------------------------------------
def test_model_side_s07_4096():
    m = profile.model_side("s07", 4096, 4096, 4096)
    q = m["quantities"]
    assert q["l2_read_bytes"] == 4 * 4096 ** 3 * (1 / 128 + 1 / 128)   # 002: block tiles
    assert q["l2_write_bytes"] == 4 * 4096 ** 2
    assert 2 * 4 * 4096 ** 2 <= q["dram_read_bytes"] < q["l2_read_bytes"]
    assert q["l2_read_hit"] == pytest.approx(1 - q["dram_read_bytes"] / q["l2_read_bytes"])
    assert q["smem_ld_wavefronts_per_inst"] == 5.0            # (2 + 8) / 2: H200 measured 5.00
    assert q["smem_st_wavefronts_per_inst"] == pytest.approx(2.4)
    assert q["achieved_occupancy"] == 0.25
    assert 0.3 < q["fma_pipe"] < 0.8 and 0.0 < q["time_s"] < 0.01
    assert m["issue_model"]["available"]


def test_model_side_cp_async_has_no_store_instructions():
    q = profile.model_side("s10", 2048, 2048, 2048)["quantities"]
    assert q["smem_st_wavefronts_per_inst"] is None          # LDGSTS fills shared memory, no STS
    assert q["smem_ld_wavefronts_per_inst"] == 4.0


def test_model_only_json(capsys):
    code, out, err = run(["profile", "s09", "--size", "1024", "--model-only", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["stage"] == "s09" and doc["shape"] == [1024, 1024, 1024]
    assert set(doc["model"]["quantities"]) >= {"dram_read_bytes", "l2_read_bytes", "time_s", "fma_pipe"}


# ---- the traffic model -----------------------------------------------------------------------------
def test_dram_traffic_fits_in_l2():
    t = waves.dram_traffic(2048, 2048, 2048, 128, 256, 132, 1, group_m=8)
    assert t["dram_read_bytes"] == t["compulsory_read_bytes"] == 2 * 4 * 2048 ** 2
    assert t["dram_write_bytes"] == 0            # one round: C is still in L2 when the kernel ends
    assert t["l2_read_bytes"] == 4 * 2048 ** 3 * (1 / 128 + 1 / 256)


def test_dram_traffic_rereads_per_wave_and_group_m():
    row = waves.dram_traffic(16384, 16384, 4096, 128, 128, 132, 2, group_m=1)
    grouped = waves.dram_traffic(16384, 16384, 4096, 128, 128, 132, 2, group_m=8)
    assert row["dram_read_bytes"] > 3 * grouped["dram_read_bytes"]   # squarer waves reuse more in L2
    assert row["l2_read_bytes"] == grouped["l2_read_bytes"]           # the same requests
    assert grouped["l2_read_hit"] > row["l2_read_hit"] > 0.5
    big = waves.dram_traffic(4096, 4096, 4096, 128, 128, 132, 2)
    assert big["dram_read_bytes"] > big["compulsory_read_bytes"]     # A and B (64 MB each) do not stay


# ---- recorded output: the whole command -------------------------------------------------------------
def test_from_raw_sample(capsys):
    code, out, err = run(["profile", "--stages", SAMPLE_STAGES, "--size", "2048", "--from-raw", str(SAMPLE)], capsys)
    assert code == 0, err
    assert out.count("profile s0") == 4
    assert "smem wavefronts / load (A 2, B 8)" in out and "largest miss:" in out and "top stalls" in out
    assert "| s07 | 2048³ |" in out


def test_from_raw_json_matches_committed(capsys):
    code, out, err = run(["profile", "--stages", SAMPLE_STAGES, "--size", "2048", "--from-raw", str(SAMPLE),
                          "--json"], capsys)
    assert code == 0, err
    results = json.loads(out)
    committed = {r["stage"]: r for r in json.loads((ROOT / "results/h200/ncu_stages_2048.json").read_text())["rows"]}
    for r in results:
        x = r["measured"]["quantities"]
        c = committed[r["stage"]]
        assert x["smem_ld_wavefronts_per_inst"] == pytest.approx(c["smem_ld_wavefronts_per_inst"], rel=1e-6)
        assert x["time_s"] == pytest.approx(c["duration_ns"] * 1e-9)
        assert x["fma_pipe"] == pytest.approx(c["fma_pipe_active_pct"] / 100)
        rows = {row["key"]: row for row in r["rows"]}
        assert rows["smem_ld_wavefronts_per_inst"]["ratio"] == pytest.approx(1.0, abs=0.01)   # bank model = ncu
        assert rows["time_s"]["ratio"] == pytest.approx(1.0, abs=0.10)                        # issue model
        assert r["largest_miss"]["key"] in rows


def _fake_ncu(tmp_path, body: str) -> str:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_fake_ncu_end_to_end(tmp_path, capsys, monkeypatch):
    """A stand-in ncu that records its arguments and prints the recorded sample: the command's
    ncu line, progress, JSON and raw files, with the GPU check passed by hand."""
    argv_file = tmp_path / "argv.txt"
    fake = _fake_ncu(tmp_path, f'if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0"; exit 0; fi\n'
                               f'echo "$@" > {argv_file}\ncat {SAMPLE}\n')
    monkeypatch.setenv("GEMMLAB_NCU", fake)
    monkeypatch.setattr("gemmlab.device.has_gpu", lambda: True)
    out_dir, raw = tmp_path / "out", tmp_path / "raw.csv"
    code, out, err = run(["profile", "--stages", SAMPLE_STAGES, "--size", "2048", "--out", str(out_dir),
                          "--save-raw", str(raw)], capsys)
    assert code == 0, err
    args = argv_file.read_text()
    assert "--clock-control none" in args and "--page raw" in args and "--launch-count 4" in args
    assert "gemmlab.analysis.profile --child" in args
    assert "in one ncu session" in err
    doc = json.loads((out_dir / "profile-2048.json").read_text())
    assert doc["schema"] == profile.SCHEMA and len(doc["results"]) == 4
    assert doc["provenance"]["ncu_version"] == "Version 2025.3.1.0"
    assert len(ncu.parse_csv((out_dir / "ncu-raw-2048.csv").read_text())) == 4
    assert len(ncu.parse_csv(raw.read_text())) == 4
    md = profile.format_markdown([doc])
    assert md.splitlines()[0].startswith("| stage | size |") and len(md.splitlines()) == 6


def test_counters_not_permitted_exit_1(tmp_path, capsys, monkeypatch):
    fake = _fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access '
                               'NVIDIA GPU Performance Counters on the target device 0."\nexit 1\n')
    monkeypatch.setenv("GEMMLAB_NCU", fake)
    monkeypatch.setattr("gemmlab.device.has_gpu", lambda: True)
    code, out, err = run(["profile", "s07", "--size", "256"], capsys)
    assert code == 1
    assert err.strip().splitlines()[-1] == f"gemmlab: {ncu.COUNTERS_NOT_PERMITTED}"


def test_match_by_kernel_order():
    jobs = [{"stage": "s07", "kernel": "k_a"}, {"stage": "s07", "kernel": "k_b"}, {"stage": "auto"}]
    tags = {2: {"plan": {"kernels": ["gemmlab_s11_x", "gemmlab_splitk_reduce"]}}}
    launches = [{"kernel": "k_a"}, {"kernel": "k_b"}, {"kernel": "gemmlab_s11_x"}]
    got = profile.match(jobs, tags, launches)
    assert [got[i]["kernel"] for i in range(3)] == ["k_a", "k_b", "gemmlab_s11_x"]
    assert profile.match(jobs[:1], {0: {"error": "boom"}}, launches) == {}


# ---- on the GPU machine --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpu_profile(tmp_path_factory):
    if ncu.find_ncu() is None:
        pytest.skip("ncu (Nsight Compute) is not installed here: set GEMMLAB_NCU")
    out = tmp_path_factory.mktemp("profile")
    r = subprocess.run([sys.executable, "-m", "gemmlab", "profile", "--stages", "s01,s07,auto", "--size", "1024",
                        "--out", str(out), "--json"], capture_output=True, text=True, timeout=900)
    if "ERR_NVGPUCTRPERM" in r.stderr:
        pytest.skip("ncu may not read the performance counters on this machine (ERR_NVGPUCTRPERM)")
    assert r.returncode == 0, r.stderr[-3000:]
    return {x["requested_stage"]: x for x in json.loads(r.stdout)}, out, r.stderr


@pytest.mark.gpu
def test_gpu_profile_runs_and_is_sane(gpu_profile):
    results, out, err = gpu_profile
    assert set(results) == {"s01", "s07", "auto"}
    assert "[1/3]" in err and "ncu session" in err                     # progress while it runs
    assert (out / "profile-1024.json").is_file() and (out / "ncu-raw-1024.csv").is_file()
    for stage, r in results.items():
        assert not r.get("error"), (stage, r.get("error"))
        x, m = r["measured"]["quantities"], r["model"]["quantities"]
        assert x["time_s"] > 0 and 0 < x["achieved_occupancy"] <= 1 and x["issue_active"] > 0
        compulsory = 2 * 4 * 1024 ** 2
        assert 0.5 * compulsory <= x["dram_read_bytes"] <= 20 * m["dram_read_bytes"], stage   # within a factor
        assert 0.25 <= x["time_s"] / m["time_s"] <= 4, stage
        assert r["largest_miss"] is not None


@pytest.mark.gpu
def test_gpu_profile_s07_bank_model_and_traffic(gpu_profile):
    r = gpu_profile[0]["s07"]
    rows = {row["key"]: row for row in r["rows"]}
    assert rows["smem_ld_wavefronts_per_inst"]["ratio"] == pytest.approx(1.0, abs=0.02)   # the bank model
    assert 0.5 <= rows["l2_read_bytes"]["ratio"] <= 2.0
    assert 0.5 <= rows["fma_pipe"]["ratio"] <= 2.0


@pytest.mark.gpu
def test_gpu_profile_auto_names_its_stage(gpu_profile):
    r = gpu_profile[0]["auto"]
    assert r["stage"] != "auto" and r["plan"]["kernels"]
    assert r["kernel"].startswith("gemmlab_")


FAKE_NCU_PY = r'''
import json, sys
args = sys.argv[1:]
jobs = json.loads(args[args.index("--child") + 1])
names = [f"gemmlab_{j['stage']}_fake{j['M']}" for j in jobs]
for i, n in enumerate(names):
    print("GEMMLAB_PROFILE " + json.dumps({"index": i, "plan": {"stage": jobs[i]["stage"], "kernels": [n]}}))
    print(f'==PROF== Profiling "{n}" - {i}: 0%....50%....100% - 9 passes')
keep = names[:1] if len(names) == 3 else names   # the first session "crashes" after its first run
print('"ID","Kernel Name","gpu__time_duration.sum"')
print('"","","nsecond"')
for i, n in enumerate(keep):
    print(f'"{i}","{n}","1,000"')
'''


def test_a_lost_run_is_retried(tmp_path):
    script = tmp_path / "fake_ncu.py"
    script.write_text(FAKE_NCU_PY)
    fake = _fake_ncu(tmp_path, f'exec {sys.executable} {script} "$@"\n')
    jobs = [{"stage": s, "M": 64, "N": 64, "K": 64, "layout": "nn", "config": None} for s in ("s01", "s02", "s03")]
    lines = []
    found, tags, texts, problems = profile.run_jobs(jobs, fake, timeout=60, log=lines.append)
    assert sorted(found) == [0, 1, 2]                 # s02 alone, then s03 with the rest
    assert [found[i]["kernel"] for i in range(3)] == ["gemmlab_s01_fake64", "gemmlab_s02_fake64", "gemmlab_s03_fake64"]
    assert len(texts) == 3 and any("again, alone: s02" in x for x in lines)
    assert any(x.startswith("profile: [1/3] s01 64x64x64 nn") for x in lines)   # progress from the child's tags
    assert any("9 passes" in x for x in lines)


def test_tensor_pipe_derived_where_ncu_has_no_counter():
    """ncu 2025.3 on the H200 reports no gmma pipe counter: the measured share comes from the
    kernel's tensor FLOPs, its measured time and its measured clock (peak scaled to that clock)."""
    from gemmlab.analysis import profile as prof

    model = prof.model_side("s13", 4096, 4096, 4096)
    work = model["tensor_work"]
    assert work["flop"] == 3 * 2 * 4096 ** 3          # three products per output (3xTF32)
    measured = {"quantities": {"tensor_pipe": None, "time_s": 1e-3}, "clock_hz": work["peak_clock_hz"] / 2}
    prof.derive_tensor_pipe(measured, work)
    want = work["flop"] / (1e-3 * work["peak_flop_per_s"] / 2)
    assert measured["quantities"]["tensor_pipe"] == pytest.approx(want)
    assert measured["tensor_pipe_source"].startswith("derived")
    counted = {"quantities": {"tensor_pipe": 0.5, "time_s": 1e-3}, "clock_hz": 1e9}
    prof.derive_tensor_pipe(counted, work)
    assert counted["quantities"]["tensor_pipe"] == 0.5 and counted["tensor_pipe_source"] == "counter"
    assert prof.model_side("s11", 4096, 4096, 4096)["tensor_work"] is None   # SIMT: FMA pipe instead
    # the README table shows the tensor pipe of a wgmma stage, marked TC
    res = {"stage": "s13", "requested_stage": "s13", "shape": [4096] * 3, "model": model,
           "measured": {"quantities": {**measured["quantities"]}}, "largest_miss": None}
    assert "| TC " in prof.format_markdown([res])


def test_split_operands_are_read_twice():
    """s13's kernel reads a hi and a lo TF32 copy of A and B (8 bytes per element): the traffic
    model counts both (H200, 4096³: ncu read 922.8 MB from DRAM; 8 bytes per element gives 922.7)."""
    from gemmlab.analysis import profile as prof

    s13 = prof.model_side("s13", 4096, 4096, 4096)["quantities"]
    assert s13["dram_read_bytes"] == pytest.approx(922.8e6, rel=0.01)      # ncu, results/h200/profile
    assert s13["dram_read_bytes"] >= 8 * 2 * 4096 * 4096                   # at least hi + lo once
    assert s13["l2_write_bytes"] == 4 * 4096 * 4096                       # D stays FP32
    s12 = prof.model_side("s12", 4096, 4096, 4096)["quantities"]
    assert s12["dram_read_bytes"] < 0.45 * s13["dram_read_bytes"]


# ---- recorded output: the L2 request coalescer (H200, 4096³, scripts/ncu_l2_banks.sh) ---------------
LRC_SAMPLE = ROOT / "tests/data/ncu/h200_l2_lrc_4096_raw.csv"
LRC_STAGES = "s05,s06,s07,s08a,s09,s10,s11,s12"


def test_l2_reads_are_compared_where_the_model_counts_them(capsys):
    """The model's L2 reads (every block reads its panels once) against the sectors L2 returns to the
    SMs: exactly the model where L1 serves none of them (s09-s12), the model less L1's hits where it
    does (s05-s08a); the slices' own count is lower by the coalescer's merging, reported beside it and
    not compared."""
    code, out, err = run(["profile", "--stages", LRC_STAGES, "--size", "4096", "--from-raw", str(LRC_SAMPLE),
                          "--json"], capsys)
    assert code == 0, err
    results = {r["stage"]: r for r in json.loads(out)}
    assert set(results) == set(LRC_STAGES.split(","))
    for stage, r in results.items():
        rows = {row["key"]: row for row in r["rows"]}
        x, meas = r["measured"]["quantities"], r["measured"]
        assert x["l2_read_bytes"] == r["ncu_metrics"]["l1tex__m_xbar2l1tex_read_sectors.sum"] * 32
        assert x["l2_slice_read_bytes"] == r["ncu_metrics"]["lts__t_sectors_srcunit_tex_op_read.sum"] * 32
        assert rows["l2_slice_read_bytes"]["model"] is None and rows["l2_slice_read_bytes"]["ratio"] is None
        assert meas["lrc_coalescing"] >= 1.0
        if stage != "s05":  # s05: L1 serves 8.5 % of the panel reads (two blocks per SM)
            assert rows["l2_read_bytes"]["ratio"] == pytest.approx(1.0, abs=0.10), stage
        else:
            served = x["l2_read_bytes"] + meas["l1_hit_bytes"]
            assert served / rows["l2_read_bytes"]["model"] == pytest.approx(1.0, abs=0.03)
    for stage in ("s09", "s10", "s11", "s12"):   # no L1 hits: exactly the model
        assert results[stage]["measured"].get("l1_hit_bytes") in (None, 0.0)
        rows = {row["key"]: row for row in results[stage]["rows"]}
        assert rows["l2_read_bytes"]["ratio"] == pytest.approx(1.0, abs=1e-3), stage
    assert results["s12"]["measured"]["lrc_coalescing"] == pytest.approx(1.46, abs=0.01)
    assert results["s11"]["measured"]["lrc_coalescing"] == pytest.approx(1.03, abs=0.01)
    code, out, err = run(["profile", "--stages", "s12", "--size", "4096", "--from-raw", str(LRC_SAMPLE)], capsys)
    assert "L2 request coalescer: 1.46 sectors to the SMs per sector the slices served" in out


def test_shared_wavefronts_attributed_to_instructions_win_over_the_aggregate():
    """Where ncu attributes shared wavefronts to the instructions (smsp__sass_...), that is what the
    bank model is held against; the aggregate count is kept beside it (s04, H200: 1.667 vs 1.743)."""
    from gemmlab.analysis import ncu as ncu_mod
    from gemmlab.analysis.profile import measured_side

    inst = 100_663_296
    m = {ncu_mod.SMEM[0]: 175_428_775.0, ncu_mod.SMEM[1]: float(inst), ncu_mod.SMEM[2]: 8_388_608.0,
         ncu_mod.SMEM[3]: 8_388_608.0}
    assert measured_side(m)["quantities"]["smem_ld_wavefronts_per_inst"] == pytest.approx(1.7427, abs=1e-4)
    m[ncu_mod.SMEM_BY_INSTRUCTION[0]] = 167_772_160.0
    m[ncu_mod.SMEM_BY_INSTRUCTION[1]] = 8_388_608.0
    side = measured_side(m)
    assert side["quantities"]["smem_ld_wavefronts_per_inst"] == pytest.approx(5 / 3)
    assert side["smem_ld_wavefronts_per_inst_all"] == pytest.approx(1.7427, abs=1e-4)
    assert side["quantities"]["smem_st_wavefronts_per_inst"] == 1.0
