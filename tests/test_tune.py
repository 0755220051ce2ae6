"""gemmlab tune, the tuning database and stage='auto' dispatch (CPU; the GPU tests are marked gpu).

The dispatch tests never touch a GPU: ``dispatch._gpu`` is replaced by a made-up GPU identity
and ``GEMMLAB_TUNING_DB`` points at a file in tmp_path.
"""
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gemmlab import dispatch
from gemmlab.bench import suites
from gemmlab.heuristics import choice, model, space, table
from gemmlab.plan import Choice
from gemmlab.stages import get
from gemmlab.stages.base import Problem
from gemmlab.tune import db, runner

ROOT = Path(__file__).resolve().parents[1]
IDENT = db.identity("Test GPU 9000", "sm_90", "nvrtc-99.9")


def gemmlab_cli(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "gemmlab", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


# ---- shapes and suites ----------------------------------------------------------------------------

def test_suites():
    assert len(suites.ISSUE9) == 11 and len(set(suites.ISSUE9)) == 11
    assert suites.parse("issue9") == list(suites.ISSUE9)
    assert suites.parse("squares") == [(n, n, n, 1) for n in (128, 256, 512, 1024, 2048, 4096, 8192, 16384)]
    both = suites.parse("all")
    assert both[:11] == list(suites.ISSUE9)
    assert len(both) == len(set(suites.ISSUE9) | set(suites.SQUARES)) == 15      # no duplicates
    assert (4095, 4097, 1023, 1) in both and (1, 4096, 4096, 1) in both and (16384,) * 3 + (1,) in both


def test_parse_shapes():
    assert suites.parse("256x128x64") == [(256, 128, 64, 1)]
    assert suites.parse(" 256X128x64x8 , 256x128x64,256x128x64") == [(256, 128, 64, 8), (256, 128, 64, 1)]
    assert suites.parse("1024x1024x1024,squares")[0] == (1024, 1024, 1024, 1)
    assert len(suites.parse("1024x1024x1024,squares")) == 8
    assert suites.text((4, 5, 6, 1)) == "4x5x6" and suites.text((4, 5, 6, 3)) == "4x5x6x3"


@pytest.mark.parametrize("spec, names", [
    ("12x3", "'12x3'"),
    ("4096x4096x4096,4096x4096", "'4096x4096'"),
    ("0x16x16", "'0x16x16'"),
    ("16x16x-4", "'16x16x-4'"),
    ("issue9,foo", "unknown suite 'foo'"),
    ("1x2x3,,4x5x6", "empty item"),
    ("", "empty shape list"),
    ("4096*4096*4096", "'4096*4096*4096'"),
])
def test_parse_errors_name_the_token(spec, names):
    with pytest.raises(suites.ShapeError, match=names.replace("*", r"\*")):
        suites.parse(spec)


def test_tune_bad_shapes_exit_2_naming_the_token():
    r = gemmlab_cli("tune", "--shapes", "1024x1024x1024,10x20")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "'10x20'" in lines[0] and lines[0].startswith("gemmlab: --shapes")
    r = gemmlab_cli("tune", "--shapes", "squares,everything")
    assert r.returncode == 2 and "unknown suite 'everything'" in r.stderr
    r = gemmlab_cli("tune", "--layouts", "nn,nx")
    assert r.returncode == 2 and "'nx'" in r.stderr
    r = gemmlab_cli("tune", "--devices", "0,a")
    assert r.returncode == 2 and "'a'" in r.stderr
    r = gemmlab_cli("tune", "--out", "x.json", "--ship")
    assert r.returncode == 2 and "not allowed with" in r.stderr


def test_tune_without_a_gpu_exits_2_with_one_line(tmp_path):
    r = gemmlab_cli("tune", "--shapes", "256x256x256", "--budget", "20", "--out", str(tmp_path / "db.json"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gemmlab: no CUDA GPU is available")
    assert r.stdout == "" and not (tmp_path / "db.json").exists()


# ---- the database -----------------------------------------------------------------------------------

def _entry(M, N, K, layout="nn", stage="s11", config=None, split_k=1, aligned=True, **kw):
    return {"bucket": list(db.bucket(M, N, K, 1)), "layout": layout, "aligned": aligned, "shape": [M, N, K, 1],
            "stage": stage, "config": config if config is not None else {}, "split_k": split_k, "repack": False,
            "time_ms": 1.0, "cublas_ms": 1.1, "candidates": [["x", split_k, 1.0]], **kw}


def test_buckets():
    assert db.bucket(4096, 4096, 4096) == db.bucket(4095, 4097, 4000)
    assert db.bucket(4096, 4096, 4096) != db.bucket(6144, 4096, 4096)
    assert db.bucket(64, 64, 65536, 1) == (12, 12, 32, 0)
    assert db.bucket(1, 1, 1, 8)[3] == 3


def test_write_read_round_trip_and_merge(tmp_path):
    path = tmp_path / "sub" / "tune.json"
    e1 = _entry(4096, 4096, 4096, config={"block_m": 128})
    e2 = _entry(1024, 1024, 1024, split_k=4)
    db.write(path, IDENT, [e1, e2])
    doc = db.read(path, IDENT)
    assert doc["schema"] == db.SCHEMA and {k: doc[k] for k in IDENT} == IDENT
    assert len(doc["entries"]) == 2
    assert table.lookup(IDENT, 4095, 4097, 4100, 1, "nn", True) is None  # no source points at path yet
    # merge: a new entry of the same bucket/layout/alignment replaces the old, others are kept
    e2b = _entry(1024, 1024, 1024, split_k=8)
    e3 = _entry(1024, 1024, 1024, layout="tn")
    e4 = _entry(1024, 1024, 1024, aligned=False, split_k=2)
    db.write(path, IDENT, [e2b, e3, e4])
    doc = db.read(path, IDENT)
    assert len(doc["entries"]) == 4
    got = {(e["layout"], e["aligned"], tuple(e["bucket"])): e["split_k"] for e in doc["entries"]}
    assert got[("nn", True, tuple(db.bucket(1024, 1024, 1024)))] == 8
    assert got[("nn", False, tuple(db.bucket(1024, 1024, 1024)))] == 2
    # merge=False starts over
    db.write(path, IDENT, [e1], merge=False)
    assert len(db.read(path, IDENT)["entries"]) == 1
    # no temporary files left behind
    assert [p.name for p in path.parent.iterdir()] == ["tune.json"]


@pytest.fixture
def tuning_env(tmp_path, monkeypatch):
    """dispatch on a made-up GPU, with the tuning database at tmp_path/db.json. Its tests write nn
    entries at N >= 1536, where dispatch would transpose A and read the tn table: they pin the old
    rule (choice.A_TRANSPOSE_WITHOUT_ITS_ENTRY None: a call-layout entry alone runs as measured),
    which they are about; tests/test_heuristics.py has the transposed cases."""
    monkeypatch.setattr(choice, "A_TRANSPOSE_WITHOUT_ITS_ENTRY", None)
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "db.json"
    monkeypatch.setenv("GEMMLAB_TUNING_DB", str(path))
    gpu = model.Gpu()
    monkeypatch.setattr(dispatch, "_gpu", lambda dev=0: (gpu, IDENT))
    return path


def test_lookup_by_bucket_layout_and_alignment(tuning_env):
    db.write(tuning_env, IDENT, [_entry(4096, 4096, 4096, split_k=2), _entry(4096, 4096, 4096, layout="tt")])
    e = table.lookup(IDENT, 4100, 4090, 4000, 1, "nn", True)
    assert e["split_k"] == 2 and e["_source"] == str(tuning_env)
    assert table.lookup(IDENT, 4096, 4096, 4096, 1, "tt", True)["layout"] == "tt"
    assert table.lookup(IDENT, 4096, 4096, 4096, 1, "nt", True) is None
    assert table.lookup(IDENT, 4096, 4096, 4096, 1, "nn", False) is None      # aligned entries only
    assert table.lookup(IDENT, 8192, 4096, 4096, 1, "nn", True) is None
    assert table.lookup(IDENT, 4096, 4096, 4096, 2, "nn", True) is None       # another batch bucket


def test_corrupt_file_is_ignored_with_a_warning(tuning_env, capsys):
    tuning_env.write_text("{ this is not json")
    assert table.lookup(IDENT, 4096, 4096, 4096, 1, "nn", True) is None
    err = capsys.readouterr().err
    assert "warning" in err and str(tuning_env) in err and "unreadable" in err
    tuning_env.write_text(json.dumps({"schema": "something-else/1", "entries": []}))
    assert table.lookup(IDENT, 4096, 4096, 4096, 1, "nn", True) is None
    assert "not a gemmlab-tune/1 file" in capsys.readouterr().err


def test_foreign_identity_is_ignored_with_a_warning(tuning_env, capsys):
    other = db.identity("Other GPU", "sm_80", "nvrtc-12.0")
    db.write(tuning_env, other, [_entry(4096, 4096, 4096)])
    assert table.lookup(IDENT, 4096, 4096, 4096, 1, "nn", True) is None
    err = capsys.readouterr().err
    assert "warning" in err and "was made for" in err and "Other GPU" in err


def test_malformed_entries_are_skipped_with_a_warning(tuning_env, capsys):
    good = _entry(4096, 4096, 4096, split_k=3)
    doc = {"schema": db.SCHEMA, **IDENT, "entries": [
        {"layout": "nn", "stage": "s11"},                                   # no bucket
        dict(_entry(2048, 2048, 2048), layout="xy"),                         # bad layout
        dict(_entry(1024, 1024, 1024), split_k="many"),                      # bad split
        dict(_entry(512, 512, 512), bucket=[1, 2]),                          # short bucket
        "not an object",
        good]}
    tuning_env.write_text(json.dumps(doc))
    assert table.lookup(IDENT, 4096, 4096, 4096, 1, "nn", True)["split_k"] == 3
    assert table.lookup(IDENT, 2048, 2048, 2048, 1, "xy", True) is None
    assert "5 malformed entries skipped" in capsys.readouterr().err


# ---- dispatch -----------------------------------------------------------------------------------

def test_dispatch_uses_the_tuned_entry(tuning_env):
    cfg = get("s11").config({"block_m": 128, "block_n": 128, "warp_m": 32, "warp_n": 64, "stages": 3,
                             "min_blocks": 2})
    db.write(tuning_env, IDENT, [_entry(2048, 2048, 2048, config=cfg, split_k=2)])
    c = dispatch.choose(Problem.dense(2048, 2048, 2048))
    assert c.source == "tuned" and c.spec.id == "s11" and c.config == cfg and c.split_k == 2
    # another bucket: the heuristic, which is the model's best
    c = dispatch.choose(Problem.dense(8192, 8192, 8192))
    best = model.best(8192, 8192, 8192, 1, model.Gpu())
    assert c.source == "heuristic" and c.split_k == best.split_k and c.config == best.candidate.config()
    # no workspace (e.g. __cuda_array_interface__ arrays): the entry without split-K
    c = dispatch.choose(Problem.dense(2048, 2048, 2048), allow_workspace=False)
    assert c.source == "tuned" and c.split_k == 1
    # a call's config overrides apply to the tuned choice
    c = dispatch.choose(Problem.dense(2048, 2048, 2048), config={"group_m": 4})
    assert c.config["group_m"] == 4 and c.config["block_n"] == 128


def test_dispatch_only_overrides_what_the_entry_says(tuning_env):
    db.write(tuning_env, IDENT, [_entry(2048, 2048, 2048, config={"block_k": 16, "stages": 8})])
    c = dispatch.choose(Problem.dense(2048, 2048, 2048))
    assert c.source == "tuned" and c.config == get("s11").config({"block_k": 16, "stages": 8})


def test_dispatch_without_a_database_is_the_heuristic(tuning_env):
    assert not tuning_env.exists()
    for shape in ((1024, 1024, 1024), (64, 64, 65536), (3000, 5000, 7000)):
        c = dispatch.choose(Problem.dense(*shape))
        best = model.best(*shape, 1, model.Gpu())
        assert c.source == "heuristic" and (c.spec.id, c.split_k) == (best.candidate.stage, best.split_k)


@pytest.mark.parametrize("bad, why", [
    (dict(config={"block_m": 100}), "not legal"),
    (dict(config={"no_such_key": 1}), "unknown config key"),
    (dict(stage="s99"), "unknown stage"),
])
def test_dispatch_never_runs_a_stale_entry(tuning_env, capsys, bad, why):
    db.write(tuning_env, IDENT, [_entry(2048, 2048, 2048, **bad)])
    c = dispatch.choose(Problem.dense(2048, 2048, 2048))
    assert c.source == "heuristic"
    err = capsys.readouterr().err
    assert "cannot be used" in err and why in err and "heuristic" in err


def test_dispatch_skips_an_entry_for_a_newer_gpu(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "db80.json"
    monkeypatch.setenv("GEMMLAB_TUNING_DB", str(path))
    ident = db.identity("Test GPU 8000", "sm_80", "nvrtc-99.9")
    monkeypatch.setattr(dispatch, "_gpu", lambda dev=0: (model.Gpu(cc=80, sms=108), ident))
    monkeypatch.setattr(choice, "A_TRANSPOSE_WITHOUT_ITS_ENTRY", None)  # the nn entry is read (tuning_env)
    db.write(path, ident, [_entry(2048, 2048, 2048, stage="s11")])
    c = dispatch.choose(Problem.dense(2048, 2048, 2048))
    assert c.source == "heuristic" and c.spec.id == "s10"
    assert "compute capability" in capsys.readouterr().err


# ---- the model and the space ------------------------------------------------------------------------

def test_rank_properties():
    gpu = model.Gpu(sms=132)
    r = model.rank(1024, 1024, 1024, 1, gpu)
    assert r[0].blocks > 32                # the default 128x256 tile alone would give 32 blocks
    assert r == sorted(r, key=lambda p: (p.seconds, p.split_k))
    assert model.rank(64, 64, 65536, 1, gpu)[0].split_k > 1
    assert model.rank(8192, 8192, 8192, 1, gpu)[0].split_k == 1
    assert all(p.split_k == 1 for p in model.rank(1024, 1024, 1024, 1, gpu, allow_split=False))
    # slices are never shorter than MIN_K_SLICE
    for p in model.rank(256, 256, 512, 1, gpu):
        assert p.split_k == 1 or -(-512 // p.split_k) >= model.MIN_K_SLICE - 32
    # a single-SM-class GPU without TMA ranks s10 tiles
    assert {p.candidate.stage for p in model.rank(2048, 2048, 2048, 1, model.Gpu(cc=80, sms=108))} == {"s10"}


def test_every_space_config_is_legal_and_labelled():
    for cands in (space.SM90, space.SM80, space.FALLBACK):
        labels = [c.label for c in cands]
        assert len(set(labels)) == len(labels)
        for c in cands:
            spec = get(c.stage)
            cfg = c.config()                                  # raises ConfigError when illegal
            assert spec.constraints(cfg) == [], (c.label, spec.constraints(cfg))
            assert c.blocks_per_sm() == cfg.get("min_blocks", 1)
            assert 0 < c.efficiency <= 1
        configs = [tuple(sorted(c.config().items())) for c in cands]
        assert len(set(configs)) == len(configs), "two space entries with one config"


def test_every_space_config_compiles_for_sm_90_without_local_memory():
    """The main (aligned, row-major) instantiation of each config; parallel, like gemmlab tune."""
    from gemmlab.analysis import sass
    from gemmlab.plan import kernel_for

    prob = Problem.dense(4096, 4096, 4096)
    todo = {}
    for c in space.SM90 + space.SM80 + space.FALLBACK:
        spec, cfg = c.spec(), c.config()
        variant = spec.variant(cfg, prob)
        if "vec" in variant:
            assert variant["vec"] == 1
        todo[(spec.kernel_name(cfg, variant), "sm_90")] = (spec, cfg, variant, "sm_90")
    errors = runner.compile_all(todo)
    assert errors == {}
    for (name, arch), (spec, cfg, variant, _) in todo.items():
        ck = kernel_for(spec, cfg, variant, arch)                   # from the cache now
        info = sass.inspect(ck.cubin, ck.name)
        assert info["local_bytes"] == 0, f"{ck.name}: {info['local_bytes']} B of local memory (spills)"
        assert info["mix"].get("FFMA", 0) > 0 and info["main_loop_ffma_share"] > 0.5, (ck.name, info["mix"])
        if spec.id == "s11":
            assert info["mix"].get("UTMALDG", 0) > 0, ck.name


# ---- the tuner's plan (no GPU) -------------------------------------------------------------------

def test_job_facts():
    f = runner.job_facts(runner.Job(4096, 4096, 4096, 1, "nn"))
    assert (f["layout"], f["repack"], f["aligned"]) == ("nn", False, True)
    f = runner.job_facts(runner.Job(4095, 4097, 1023, 1, "nn"))      # rows not 16-byte aligned, large
    assert (f["repack"], f["aligned"]) == (True, True)
    f = runner.job_facts(runner.Job(33, 35, 37, 1, "nn"))            # small: not worth a repack
    assert (f["repack"], f["aligned"]) == (False, False)
    for lay in runner.LAYOUTS:
        assert runner.job_facts(runner.Job(256, 256, 256, 1, lay))["layout"] == lay
    p = runner.compile_problem(runner.Job(4095, 4097, 1023, 1, "tn"), True)
    assert p.operands_aligned() and not p.a_k_major and p.b_n_major
    assert not runner.compile_problem(runner.Job(4095, 4097, 1023, 1, "tn"), False).operands_aligned()
    assert runner.compile_problem(runner.Job(63, 65, 67, 4, "nt"), True).operands_aligned()


def test_shortlist():
    gpu = model.Gpu()
    job = runner.Job(1024, 1024, 1024, 1, "nn")
    items = runner.shortlist(job, gpu, 8)
    keys = [it.key for it in items]
    assert len(keys) == len(set(keys))
    default = space.SM90[0]
    assert (default.stage, tuple(sorted(default.config().items())), 1) in keys
    assert sum(it.origin == "model" for it in items) == 8
    ranked = model.rank(1024, 1024, 1024, 1, gpu)
    assert items[0].key == (ranked[0].candidate.stage, tuple(sorted(ranked[0].candidate.config().items())),
                            ranked[0].split_k)
    per = {}
    for it in items:
        if it.origin == "model":
            per[(it.stage, it.config)] = per.get((it.stage, it.config), 0) + 1
    assert max(per.values()) <= runner.MAX_SPLITS_PER_CONFIG
    # the choice stage='auto' makes now comes first, and counts once
    auto = Choice(get("s11"), get("s11").config({"block_k": 16, "stages": 8}), 3, False, "tuned")
    items = runner.shortlist(job, gpu, 2, auto)
    assert items[0].origin == "auto:tuned" and items[0].split_k == 3
    assert [it.origin for it in items].count("model") == 2 and items[-1].origin == "default"
    assert len(runner.shortlist(job, gpu, 0)) == 1                   # the default alone
    # --every-tile: every tile the model ranks here, each once more at most, at its best split
    wide = runner.shortlist(job, gpu, 2, every_tile=True)
    tiles = {(p.candidate.stage, tuple(sorted(p.candidate.config().items()))) for p in ranked}
    assert {(it.stage, it.config) for it in wide} == tiles and len({it.key for it in wide}) == len(wide)
    for it in wide:
        if it.origin == "tile":
            first = next(p for p in ranked if (p.candidate.stage, tuple(sorted(p.candidate.config().items())))
                         == (it.stage, it.config))
            assert it.split_k == first.split_k
    assert runner.label_of("s11", default.config(), 4) == f"s11 {default.label} split 4"
    assert runner.label_of("s11", get("s11").config({"group_m": 4})) == "s11 group_m=4"
    cfg = items[0].call_config(True)
    assert cfg["split_k"] == 3 and cfg["repack"] == 1 and cfg["block_k"] == 16


def test_kernels_of_dedupes_across_splits_and_follows_fallbacks():
    job = runner.Job(4096, 4096, 4096, 1, "nn")
    items = runner.shortlist(job, model.Gpu(), 8)
    ks = runner.kernels_of(job, items, "sm_90", False)
    assert len(ks) == len({(it.stage, it.config) for it in items})
    for (name, arch), (spec, cfg, variant, a) in ks.items():
        assert arch == a == "sm_90" and name == spec.kernel_name(cfg, variant)


# ---- the tuner end to end, with the GPU parts replaced --------------------------------------------

class _FakeOps:
    def __init__(self, job):
        self.job = job

    def reference(self):
        return None


class _FakePlan:
    def __init__(self, split):
        self.choice = type("C", (), {"split_k": split})()
        self.kernels = ["k"]


def _fake_gpu(monkeypatch, ms_of, *, devices=2, fail_label=None, sleep=0.0):
    """Replace the GPU with a model: ms_of(job, stage, config) -> milliseconds. The runner drives
    devices through torch.cuda (replaced here), so these tests need torch installed (CPU build)."""
    import time

    torch = pytest.importorskip("torch", reason="torch is not installed: the tune runner's fake GPU "
                                                "replaces torch.cuda (pip install torch, the CPU build is enough)")

    from gemmlab import device as _device
    from gemmlab.bench import timing

    seen_threads = set()
    monkeypatch.setattr(torch.cuda, "device_count", lambda: devices)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=0: "Test GPU 9000")
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: seen_threads.add((threading.current_thread().name, d)))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(timing, "L2Flush", lambda nbytes, dev: object())
    monkeypatch.setattr(_device, "arch", lambda dev=0: "sm_90")
    monkeypatch.setattr(dispatch, "_gpu", lambda dev=0: (model.Gpu(), IDENT))
    monkeypatch.setattr(runner, "compile_all", lambda kernels, workers=None, say=None: {})
    monkeypatch.setattr(runner, "_operands", lambda job, dev: _FakeOps(job))
    monkeypatch.setattr(runner, "_measure_cublas", lambda ops, job, policy, flush: (10.0, None))

    def measure_plan(ops, job, stage, config, policy, flush):
        time.sleep(sleep)
        if stage == "auto":
            return None, 5.0, 1e-7, None
        label = runner.label_of(stage, {k: v for k, v in config.items() if k not in ("split_k", "repack")},
                                config["split_k"])
        if fail_label and label == fail_label:
            return _FakePlan(config["split_k"]), None, 0.5, "WRONG RESULT: rel_error 0.5 > tolerance; dropped"
        return _FakePlan(config["split_k"]), ms_of(job, stage, config), 1e-7, None

    monkeypatch.setattr(runner, "_measure_plan", measure_plan)
    return seen_threads


def _ms(job, stage, config):
    # split 2 of the 64x64 tile wins everywhere; everything else takes 9 ms
    return 4.0 if (config.get("block_m") == 64 and config.get("block_n") == 64 and config["split_k"] == 2) else 9.0


def test_run_with_a_fake_gpu(monkeypatch, tuning_env, capsys):
    threads = _fake_gpu(monkeypatch, _ms, fail_label=runner.label_of("s11", space.SM90[0].config()))
    shapes = [(256, 256, 256, 1), (512, 512, 512, 1), (1, 4096, 4096, 1)]
    res = runner.run(runner.Settings(shapes=shapes, layouts=("nn", "tn")))
    err = capsys.readouterr().err
    assert {d for _, d in threads} == {0, 1} and len(threads) == 2          # one thread per device
    by = {(r.job.shape, r.job.layout): r for r in res["results"]}
    assert by[((1, 4096, 4096, 1), "nn")].status == "skinny" and by[((1, 4096, 4096, 1), "nn")].entry is None
    r = by[((256, 256, 256, 1), "nn")]
    assert r.status == "tuned" and r.best.ms == 4.0 and r.best.split_k == 2
    assert r.entry["config"]["block_m"] == 64 and r.entry["split_k"] == 2 and r.entry["cublas_ms"] == 10.0
    assert r.entry["candidates"][0][2] == 4.0 and table.valid_entry(r.entry)
    assert len(r.failures) == 1 and "WRONG RESULT" in r.failures[0].error
    assert "WRONG RESULT" in err and "[" in err and "% cuBLAS" in err
    (ident, entries), = res["entries"].values()
    assert ident == IDENT and len(entries) == 4                               # 2 shapes x 2 layouts
    assert {e["layout"] for e in entries} == {"nn", "tn"}
    row = r.row()
    assert row["ratio"] == pytest.approx(10.0 / 4.0) and row["failed"]
    text = runner.table([x.row() for x in res["results"]])
    assert "geometric mean" in text and "256x256x256" in text and "1x4096x4096" in text

    # written, then dispatch uses it
    paths = runner.write(res, out=tuning_env)
    assert paths == [tuning_env]
    c = dispatch.choose(Problem.dense(256, 256, 256))
    assert c.source == "tuned" and c.split_k == 2 and c.config["block_m"] == 64
    c = dispatch.choose(Problem.dense(512, 512, 512, "tn"))
    assert c.source == "tuned" and c.split_k == 2


def test_run_also_tunes_the_layout_a_transposed_a_gives(monkeypatch, tuning_env, capsys):
    """An nn shape where stage='auto' transposes A (N >= 1536): the run tunes tn too, says so, and
    writes both entries, so dispatch can weigh the two (choice._tuned_with_transpose)."""
    _fake_gpu(monkeypatch, _ms, devices=1)
    res = runner.run(runner.Settings(shapes=[(256, 2048, 256, 1)], layouts=("nn",)))
    assert "also 256x2048x256 tn" in capsys.readouterr().err
    assert sorted(r.job.layout for r in res["results"]) == ["nn", "tn"]
    (_, entries), = res["entries"].values()
    assert sorted(e["layout"] for e in entries) == ["nn", "tn"]


def _shape_ms(job, stage, config):
    # a winner that depends on the shape, so a mix-up between workers' results would show
    bm, bn, split = config.get("block_m"), config.get("block_n"), config["split_k"]
    M = job.shape[0]
    best = (64, 64, 2) if M <= 256 else (128, 128, 1) if M <= 512 else (128, 256, 1)
    return 3.0 + 0.001 * M if (bm, bn, split) == best else 9.0


@pytest.mark.parametrize("devices", [3, 4])
def test_several_gpus_give_the_same_database_as_one(monkeypatch, tuning_env, tmp_path, capsys, devices):
    """Issue 19 on the CPU: the jobs split round-robin over N (fake) GPUs, workers finishing
    together, must write the same winners, in one file, with no lost entries, as one GPU does."""
    shapes = [(256, 256, 256, 1), (512, 512, 512, 1), (1024, 1024, 1024, 1), (768, 512, 256, 1),
              (128, 2048, 512, 1)]
    outs = {}
    for n in (1, devices):
        threads = _fake_gpu(monkeypatch, _shape_ms, devices=n)
        res = runner.run(runner.Settings(shapes=shapes, layouts=("nn", "nt")))
        assert {d for _, d in threads} == set(range(n))
        path = tmp_path / f"db-{n}.json"
        runner.write(res, out=path)
        doc = json.loads(path.read_text())
        entries = next(iter(doc["gpus"].values()))["entries"] if "gpus" in doc else doc["entries"]
        outs[n] = sorted((e["bucket"], e["layout"], e["stage"], json.dumps(e["config"], sort_keys=True),
                          e.get("split_k", 1)) for e in entries)
    capsys.readouterr()
    # every shape and layout, nothing lost; and 128x2048x512 in tn and tt, the layouts stage='auto'
    # runs nn and nt in with A transposed (runner.transposed_jobs)
    assert len(outs[1]) == 2 * len(shapes) + 2
    assert outs[devices] == outs[1]


def test_run_respects_the_budget(monkeypatch, tuning_env, capsys):
    _fake_gpu(monkeypatch, _ms, devices=1, sleep=0.1)
    shapes = [(256, 256, 256, 1), (512, 512, 512, 1), (1024, 1024, 1024, 1)]
    res = runner.run(runner.Settings(shapes=shapes, budget=0.3))
    statuses = [r.status for r in res["results"]]
    assert statuses[0] == "partial" and statuses[1:] == ["not_run", "not_run"]
    assert res["budget_hit"]
    assert "budget of 0.3 s is spent" in capsys.readouterr().err
    first = res["results"][0]
    assert 1 <= len(first.measured) < 9 and first.entry is not None and first.entry["complete"] is False


def _fake_cli(monkeypatch):
    """gemmlab.cli with one fake GPU (the runner's fake, and the device queries the command makes)."""
    from gemmlab import cli, device as _device

    _fake_gpu(monkeypatch, _ms, devices=1)
    monkeypatch.setattr(_device, "has_gpu", lambda: True)
    monkeypatch.setattr(_device, "device_count", lambda: 1)
    return cli


def _tune_json(cli, capsys, *args):
    """(the --json document, stderr) of a successful `gemmlab tune ... --json`."""
    code = cli.main(["tune", *args, "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    return json.loads(cap.out), cap.err


def test_cmd_tune_with_a_fake_gpu(monkeypatch, tuning_env, tmp_path, capsys):
    cli = _fake_cli(monkeypatch)
    out = tmp_path / "tuned.json"
    doc, _ = _tune_json(cli, capsys, "--shapes", "256x256x256,8x4096x4096", "--out", str(out))
    assert doc["files"] == [str(out)] and len(doc["entries"]) == 1
    assert [r["status"] for r in doc["results"]] == ["tuned", "skinny"]
    assert db.read(out, IDENT)["entries"][0]["split_k"] == 2
    # a table of another GPU is not overwritten
    db.write(out, db.identity("Other", "sm_80", "nvrtc-1.0"), [_entry(64, 64, 64)], merge=False)
    code = cli.main(["tune", "--shapes", "256x256x256", "--out", str(out)])
    assert code == 2 and "another GPU" in capsys.readouterr().err


def test_cmd_tune_entries_runs_each_shape_in_its_own_layout(monkeypatch, tuning_env, tmp_path, capsys):
    cli = _fake_cli(monkeypatch)
    out = tmp_path / "tuned.json"
    doc, err = _tune_json(cli, capsys, "--entries", "256x256x256:nt,512x256x128x4:tt", "--out", str(out))
    assert sorted((r["shape"], r["layout"]) for r in doc["results"]) == [("256x256x256", "nt"), ("512x256x128x4", "tt")]
    assert sorted(e["layout"] for e in db.read(out, IDENT)["entries"]) == ["nt", "tt"]
    assert "2 shape(s) in their own layouts" in err


def test_jobs_for_entries_and_products():
    jobs = runner.jobs_for([(64, 64, 64, 1)], ("nn", "tt"))
    assert [(j.M, j.layout) for j in jobs] == [(64, "nn"), (64, "tt")]
    jobs = runner.jobs_for(None, ("nn",), [(64, 32, 16, 2, "tn"), (8, 8, 8, 1, "nt")])
    assert [(j.M, j.N, j.K, j.batch, j.layout) for j in jobs] == [(64, 32, 16, 2, "tn"), (8, 8, 8, 1, "nt")]


def test_transposed_jobs_add_the_layout_auto_runs_with_a_transposed_a():
    J = runner.Job
    jobs = [J(4096, 2048, 512, 1, "nn"), J(4096, 2048, 512, 1, "nt"), J(512, 2048, 512, 1, "nt"),
            J(4096, 1024, 512, 1, "nn"), J(4096, 2048, 512, 1, "tn"), J(8, 4096, 4096, 1, "nn")]
    extra = runner.transposed_jobs(jobs)
    # nn and nt with B turned (M >= 1024) see tn, already a job; nt with B as is sees tt; N < 1536,
    # a column-major A and a skinny shape need nothing
    assert [(j.M, j.N, j.K, j.batch, j.layout) for j in extra] == [(512, 2048, 512, 1, "tt")]
    assert [j.layout for j in runner.transposed_jobs(jobs[:1])] == ["tn"]
    assert runner.transposed_jobs(jobs[:1] + runner.transposed_jobs(jobs[:1])) == []


def test_tune_entries_errors_name_the_entry():
    r = gemmlab_cli("tune", "--entries", "256x256x256:nt,100x100x100")
    assert r.returncode == 2 and "--entries: 100x100x100 has no layout" in r.stderr, r.stderr
    r = gemmlab_cli("tune", "--entries", "256x256x256:nx")
    assert r.returncode == 2 and "'256x256x256:nx'" in r.stderr, r.stderr
    r = gemmlab_cli("tune", "--entries", "heldout")
    assert r.returncode == 2 and "has no layout" in r.stderr, r.stderr
    r = gemmlab_cli("tune", "--entries", "grid", "--layouts", "nn")
    assert r.returncode == 2 and "--layouts: not with --entries" in r.stderr, r.stderr
    r = gemmlab_cli("tune", "--entries", "grid", "--shapes", "squares")
    assert r.returncode == 2 and "not allowed with" in r.stderr, r.stderr


def test_cmd_tune_device_out_of_range(monkeypatch, tuning_env, capsys):
    cli = _fake_cli(monkeypatch)
    code = cli.main(["tune", "--shapes", "256x256x256", "--devices", "0,3"])
    assert code == 2 and "device 3 does not exist" in capsys.readouterr().err


# ---- on the GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
def test_tune_writes_a_database_that_dispatch_uses(tmp_path, monkeypatch):
    import torch

    import gemmlab
    from gemmlab import check

    out = tmp_path / "tuned.json"
    env = {"GEMMLAB_TUNING_DB": str(out)}
    env_run = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    r = subprocess.run([sys.executable, "-m", "gemmlab", "tune", "--shapes", "256x256x256", "--budget", "20",
                        "--out", str(out)], cwd=ROOT, env=env_run, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "256x256x256" in r.stdout and "% cuBLAS" in r.stderr
    doc = db.read(out)
    assert doc is not None and doc["schema"] == db.SCHEMA and len(doc["entries"]) == 1
    e = doc["entries"][0]
    assert table.valid_entry(e) and e["shape"] == [256, 256, 256, 1] and e["time_ms"] > 0 and e["cublas_ms"] > 0
    _, ident = dispatch._gpu(0)
    assert {k: doc[k] for k in ident} == ident

    monkeypatch.setenv("GEMMLAB_TUNING_DB", str(out))
    gemmlab.api.clear_plan_cache()
    c = dispatch.choose(Problem.dense(256, 256, 256))
    assert c.source == "tuned" and c.spec.id == e["stage"] and c.split_k == e["split_k"]
    assert c.config == get(e["stage"]).config(e["config"])
    res = check.check_stage("auto", 256, 256, 256)
    assert res.correct, res
    a, b, _ = check.random_operands(256, 256, 256)
    out_t = torch.full((256, 256), float("nan"), device="cuda")
    plan, launch = gemmlab.api.prepare(a, b, out=out_t)
    assert plan.describe()["source"] == "tuned"


def test_one_entry_per_shape_and_every_shape_of_a_bucket_kept():
    a = _entry(4096, 4096, 4096, split_k=1)
    b = _entry(4095, 4097, 4100, split_k=2)
    c = _entry(4096, 4096, 4096, layout="tn")
    again = _entry(4096, 4096, 4096, split_k=3)
    said = []
    assert runner.dedupe_buckets([a, b, c, again], said.append) == [a, b, c]
    assert len(said) == 1 and "4095x4097x4100 nn shares the bucket" in said[0] and "4096x4096x4096" in said[0]


def test_lookup_takes_the_nearest_shape_of_a_bucket(tmp_path, monkeypatch):
    """1024^3 and 1200^3 share a bucket; each is answered with its own measurement, a shape between
    them with the nearer one's, and a re-tune of one shape replaces only its entry."""
    path = tmp_path / "db.json"
    monkeypatch.setenv("GEMMLAB_TUNING_DB", str(path))
    monkeypatch.setenv("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))  # no user database
    monkeypatch.setattr(table, "TABLES", tmp_path / "no-shipped-tables")
    assert db.bucket(1024, 1024, 1024) == db.bucket(1200, 1200, 1200)
    small, large = _entry(1024, 1024, 1024, split_k=2), _entry(1200, 1200, 1200, split_k=4)
    db.write(path, IDENT, [small, large])
    table.clear_cache()
    assert table.lookup(IDENT, 1024, 1024, 1024, 1, "nn", True)["split_k"] == 2
    assert table.lookup(IDENT, 1200, 1200, 1200, 1, "nn", True)["split_k"] == 4
    assert table.lookup(IDENT, 1180, 1190, 1200, 1, "nn", True)["split_k"] == 4
    assert table.lookup(IDENT, 1030, 1000, 1050, 1, "nn", True)["split_k"] == 2
    db.write(path, IDENT, [_entry(1200, 1200, 1200, split_k=8)])
    table.clear_cache()
    doc = db.read(path, IDENT)
    assert sorted(e["split_k"] for e in doc["entries"]) == [2, 8]
    assert table.lookup(IDENT, 1200, 1200, 1200, 1, "nn", True)["split_k"] == 8
