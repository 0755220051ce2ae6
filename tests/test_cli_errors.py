"""Every bad command-line argument: one line on stderr, ``gemmlab: `` then the argument and what
would be valid, exit status 2, checked before the GPU is looked for (no GPU needed: the GPU is
hidden, so a message about it would mean the argument was not checked first).

Also what ``stages`` and ``sass`` report about kernels that are not plain ladder rungs (skinny,
tensor-core stages): listed, their compiled config, their dynamic shared memory.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab import cli, device
from gemmlab.stages import all_stages, every_stage, requirement

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
OVERHEAD = ROOT / "results" / "h200" / "overhead" / "overhead.json"
BANK_PROBE = ROOT / "results" / "h200" / "bank_probe.json"
IDS = ", ".join(s.id for s in every_stage())


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(device, "has_gpu", lambda: False)
    monkeypatch.setattr(device, "device_count", lambda: 0)


def run(capsys, *args):
    """(exit status, stdout, stderr) of ``gemmlab ARGS`` run in this process."""
    try:
        code = cli.main([str(a) for a in args])
    except SystemExit as e:  # argparse's own errors
        code = e.code
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def one_line_error(capsys, args, *needles):
    code, out, err = run(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 2, (args, code, err)
    assert len(lines) == 1, (args, err)
    assert lines[0].startswith("gemmlab: "), lines[0]
    assert "no CUDA GPU" not in lines[0], f"{args}: the GPU was looked for before the arguments"
    assert "Traceback" not in err and out == "", (args, out)
    for n in needles:
        assert n in lines[0], (args, n, lines[0])
    return lines[0]


def bad_bytes(tmp_path):
    p = tmp_path / "latin1.json"
    p.write_bytes(b'{"name": "caf\xe9"}\xff')
    return p


def missing(tmp_path):
    return tmp_path / "missing.json"


def tmp_dir(tmp_path):
    return tmp_path


def broken_ladder(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"schema": "gemmlab.ladder/1"}')
    return p


CASES = [
    # report
    (("report", bad_bytes), ("latin1.json: not UTF-8 text", "byte 13 is 0xe9")),
    (("report", missing), ("missing.json: no such file",)),
    (("report", tmp_dir), ("a directory",)),
    (("report", broken_ladder), ("broken.json does not follow the gemmlab.ladder/1 schema",
                                              "missing top-level field 'kind'", "and 7 more")),
    (("report", BANK_PROBE), ("bank_probe.json: not a document gemmlab report reads",)),
    (("report", DATA / "ladder.json", "--markdown", "--csv"),
     ("argument --csv: not allowed with argument --markdown",)),
    (("report", OVERHEAD, "--csv"), ("--csv:", "overhead document")),
    # explain
    (("explain", "s07", "--sms", "-1"), ("--sms -1: must be positive",)),
    (("explain", "s07", "--sms", "0"), ("--sms 0: must be positive",)),
    (("explain", "s07", "--sms", "many"), ("--sms 'many': expected an integer",)),
    (("explain", "s07", "--size", "0"), ("--size 0: must be positive",)),
    (("explain", "auto"), ("explain: stage 'auto' is not one kernel", IDS)),
    (("explain", "s99"), ("explain: unknown stage 's99'", IDS)),
    (("explain", "s07", "--arch", "sm_75"), ("--arch sm_75: the models have tables for", "sm_90")),
    (("explain", "s07", "--config", "block_m"), ("--config 'block_m': expected KEY=VALUE",)),
    (("explain", "s07", "--config", "tile=3"), ("stage s07: unknown config key 'tile'",)),
    (("explain", "s07", "--bank-model", "x"), ("argument --bank-model: invalid choice: 'x'",)),
    # sass
    (("sass", "auto"), ("sass: stage 'auto' is not one kernel", IDS)),
    (("sass", "s99"), ("sass: unknown stage 's99'", IDS)),
    (("sass", "s11", "--arch", "sm_80"), ("--arch sm_80: s11 needs sm_90 (TMA)",)),
    (("sass", "s01", "--arch", "sm_50"), ("--arch sm_50:", "does not build for it", "sm_90")),
    (("sass", "s01", "--arch", "hopper"), ("--arch 'hopper': expected sm_NN",)),
    (("sass", "s01", "--config", "block_m=x"), ("--config block_m='x': values are integers",)),
    (("sass", "s01", "--config", "block_n=40"), ("stage s01:", "block_n must be a multiple of 32")),
    (("sass",), ("the following arguments are required: stage", "gemmlab sass --help")),
    # ladder
    (("ladder", "--size", "0"), ("--size 0: must be positive",)),
    (("ladder", "--size", "-5"), ("--size -5: must be positive",)),
    (("ladder", "--size", "big"), ("--size 'big': expected an integer",)),
    (("ladder", "--size", "512", "--sizes", "256,512"), ("--size or --sizes, not both",)),
    (("ladder", "--sizes", "0,256"), ("--sizes:",)),
    (("ladder", "--stages", "s99"), ("--stages: unknown stage 's99'",)),
    (("ladder", "--stages", "s01,s07[block_m=x]"), ("--stages 's07[block_m=x]': config values are integers",)),
    (("ladder", "--stages", "s07[tile=3]"), ("--stages: stage s07: unknown config key 'tile'",)),
    (("ladder", "--baselines", "mkl"), ("--baselines 'mkl': unknown mkl", "cublas")),
    (("ladder", "--device", "-1"), ("--device -1: must be >= 0",)),
    (("ladder", "--target-seconds", "0"), ("--target-seconds 0: must be > 0",)),
    (("ladder", "--min-reps", "5", "--max-reps", "2"), ("--max-reps 2: must be >= --min-reps",)),
    (("ladder", "--layout", "nx"), ("argument --layout: invalid choice: 'nx'",)),
    # bench
    (("bench",), ("bench needs M N K (or --overhead)",)),
    (("bench", "0", "16", "16"), ("M 0: must be positive",)),
    (("bench", "16", "16", "k"), ("K 'k': expected an integer",)),
    (("bench", "64", "64", "64", "--stage", "s99"), ("--stage: unknown stage 's99'",)),
    (("bench", "64", "64", "64", "--baselines", "mkl"), ("--baselines 'mkl': unknown mkl",)),
    (("bench", "64", "64", "64", "--sizes", "64"), ("--sizes: only with --overhead",)),
    (("bench", "--overhead", "--calls", "0"), ("--calls 0: must be >= 1",)),
    (("bench", "--overhead", "--sizes", "64,x"), ("--sizes:",)),
    # sweep and tune
    (("sweep", "--baselines", "mkl"), ("--baselines 'mkl': unknown mkl",)),
    (("sweep", "--suite", "issue10"), ("--suite: unknown suite 'issue10'",)),
    (("tune", "--shapes", "10x20"), ("--shapes", "'10x20'")),
    (("tune", "--top", "-1"), ("--top must be >= 0",)),
    (("bank-probe", "--out", "never-written", "--patterns", "nonsense"), ("--patterns: unknown nonsense",)),
    # the command itself
    ((), ("the following arguments are required: COMMAND",)),
    (("frobnicate",), ("invalid choice: 'frobnicate'",)),
]


def _case_id(case) -> str:
    args = case[0]
    return " ".join(a.__name__ if callable(a) else Path(a).name if isinstance(a, Path) else str(a)
                    for a in args) or "(none)"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_bad_argument_is_one_line_and_exit_2(case, capsys, tmp_path, no_gpu):
    args, needles = case
    one_line_error(capsys, [a(tmp_path) if callable(a) else a for a in args], *needles)


@pytest.mark.parametrize("spec", [s for s in every_stage() if s.min_cc > 75], ids=lambda s: s.id)
def test_every_stage_names_the_arch_it_needs(spec, capsys, no_gpu):
    """Generic over the registry: any stage newer than sm_75 says what it needs, and why."""
    line = one_line_error(capsys, ("sass", spec.id, "--arch", "sm_75"), f"{spec.id} needs {requirement(spec)}")
    assert f"needs sm_{spec.min_cc}" in line


def test_requirement_text():
    from gemmlab.stages import get

    assert requirement(get("s11")) == "sm_90 (TMA)"
    assert requirement(get("s10")) == "sm_80 (cp.async)"
    assert requirement(get("s01")) == "sm_70"
    for s in every_stage():  # a stage compiled for an arch-specific target says which
        target = s.compile_arch(s.default_config, f"sm_{s.min_cc}")
        if target != f"sm_{s.min_cc}":
            assert f"compiled for {target}" in requirement(s)


def test_the_gpu_is_looked_for_after_the_arguments(capsys, no_gpu):
    code, out, err = run(capsys, "ladder", "--size", "256", "--stages", "s01", "--baselines", "cublas")
    assert code == 2 and err.startswith("gemmlab: no CUDA GPU is available") and len(err.strip().splitlines()) == 1


def test_exit_codes_as_a_process():
    """The same convention through ``python -m gemmlab`` (the console entry point's path)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    for args in (("ladder", "--size", "0"), ("bench", "1", "2", "0"), ("sass", "auto"), ("explain", "s07", "--sms", "0")):
        r = subprocess.run([sys.executable, "-m", "gemmlab", *args], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("gemmlab: ") and r.stdout == ""


# ---- report reads what gemmlab writes ------------------------------------------------------------

def test_report_shows_an_overhead_file(capsys):
    code, out, err = run(capsys, "report", OVERHEAD)
    assert code == 0, err
    assert "host µs/call" in out and "gemmlab.matmul(out=)" in out and "api_vs_kernel" in out
    code, md, err = run(capsys, "report", OVERHEAD, "--markdown")
    assert code == 0 and md.startswith("```\n") and md.rstrip().endswith("```") and out in md


def test_report_names_the_file_not_ladder_json(tmp_path, capsys):
    doc = json.loads((DATA / "ladder_sweep.json").read_text())
    del doc["rows"][0]["stage"]
    p = tmp_path / "sweep.json"
    p.write_text(json.dumps(doc))
    line = one_line_error(capsys, ("report", p), f"{p} does not follow")
    assert "ladder.json" not in line


# ---- stages and sass ---------------------------------------------------------------------------

def test_stages_lists_every_kernel_gemm_takes(capsys):
    code, out, _ = run(capsys, "stages")
    assert code == 0
    listed = [line.split()[0] for line in out.splitlines() if line and not line.startswith(" ") and ":" not in line.split()[0]]
    assert [s.id for s in every_stage()] == [x for x in listed if x in {s.id for s in every_stage()}]
    assert "skinny" in listed and "not rungs of the ladder" in out
    code, out, _ = run(capsys, "stages", "--json")
    rows = json.loads(out)
    assert [r["id"] for r in rows] == [s.id for s in every_stage()]
    rungs = {s.id for s in all_stages()}
    for r in rows:
        assert {"id", "name", "adds", "notes", "ladder", "needs"} <= set(r)
        assert r["ladder"] == (r["id"] in rungs)
    assert next(r for r in rows if r["id"] == "skinny")["ladder"] is False


def test_sass_skinny_reports_the_config_it_compiled(capsys):
    code, out, err = run(capsys, "sass", "skinny", "--json")
    assert code == 0, err
    rep = json.loads(out)
    cfg = rep["config"]
    from gemmlab.stages.skinny import AUTO_KEYS
    assert all(cfg[k] != 0 for k in AUTO_KEYS), cfg                    # no auto (0) keys left
    assert f"threads{cfg['threads']}" in rep["kernel"] and f"bb{cfg['block_big']}" in rep["kernel"]
    from gemmlab.analysis import explain

    assert explain.report("skinny", size=256)["config"] == cfg


def test_sass_reports_dynamic_shared_memory(capsys):
    from gemmlab.stages import get

    spec = get("s11")
    cfg = spec.default_config
    want = spec.smem_bytes(cfg, spec.variants(cfg)[0])
    assert want > 100_000
    code, out, err = run(capsys, "sass", "s11", "--json")
    assert code == 0, err
    assert json.loads(out)["dynamic_shared_bytes"] == want
    code, out, err = run(capsys, "sass", "s11")
    assert f"+ {want} B ({want / 1024:.1f} KB) dynamic" in out
