"""The benchmark harness on a real GPU (marked ``gpu``; skipped without one).

These check what the harness writes and that every row passed its correctness check; no timing
value is asserted (timings are benchmarks, never test assertions).
"""
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab.bench import report, schema
from gemmlab.stages import all_stages

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
QUICK = ["--target-seconds", "0.02", "--max-seconds", "0.5", "--min-reps", "3"]


def test_small_ladder_writes_three_files_and_every_row_is_correct(tmp_path):
    out = tmp_path / "ladder"
    stages = ",".join(s.id for s in all_stages())
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    r = subprocess.run([sys.executable, "-m", "gemmlab", "ladder", "--size", "512", "--stages", stages,
                        "--out", str(out), *QUICK], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    for name in ("ladder.json", "ladder.csv", "ladder.png"):
        assert (out / name).stat().st_size > 0
    doc = report.load(out / "ladder.json")          # validates the schema
    assert "schema_errors" not in doc
    assert doc["provenance"]["fixture"] is False and doc["provenance"]["aborted"] is None
    assert doc["provenance"]["gpu"]["name"]
    rows = doc["rows"]
    ran = {r["stage"] for r in rows}
    skipped = {s["stage"] for s in doc["skipped"]}
    for spec in all_stages():
        assert spec.id in ran or spec.id in skipped
    assert "cublas" in ran
    for row in rows:
        assert row["correct"], row
        assert row["tflops"] is not None and row["reps"] >= 1, row
        assert (row["m"], row["n"], row["k"]) == (512, 512, 512)
        assert row["rel_error"] <= row["tolerance"]
        assert row["vs_cublas"] is not None
        if row["kind"] == "stage":
            # the plan's launches, " + "-joined (a transposing copy or a 3xTF32 split may come first);
            # one of them is a stage's main kernel
            kernels = row["kernel"].split(" + ")
            assert any(re.match(r"gemmlab_(s\d\d[a-z]?_|skinny)", k) for k in kernels), row["kernel"]
            if row["stage"] != "tuned" and not row.get("fallback"):
                assert any(k.startswith(f"gemmlab_{row['stage']}_") for k in kernels), row["kernel"]
            assert row["registers"] and row["blocks_per_sm"] >= 1 and row["threads"] >= 32
            assert row["local_bytes"] in (0, None)
    cublas = next(r for r in rows if r["stage"] == "cublas")
    assert "tf32" not in (cublas["kernel"] or "").lower()
    lines = list(csv.DictReader((out / "ladder.csv").open()))
    assert len(lines) == len(rows) and all(c["Disposition"] == "passed" for c in lines)
    assert (out / "ladder.png").read_bytes()[:4] == b"\x89PNG"
    # one progress line per candidate, then the table on stdout
    progress = [ln for ln in r.stderr.splitlines() if re.match(r"\[\s*\d+/\d+\] ", ln)]
    assert len(progress) == len(rows)
    assert "TFLOPS" in r.stdout


def test_bench_odd_shape_and_transposed_layout_in_process():
    from gemmlab.bench import ladder
    from gemmlab.bench.timing import Policy

    ids = [s.id for s in all_stages()][:3]
    settings = ladder.Settings(problems=[(129, 65, 33)], layout="tn", stages=ids,
                               baselines=("cublas", "cupy", "triton"),
                               policy=Policy(target_seconds=0.01, max_seconds=0.3, min_reps=2), kind="bench")
    doc = ladder.run(settings)
    schema.validate(doc)
    assert [r["stage"] for r in doc["rows"] if r["kind"] == "stage"] == ids
    for row in doc["rows"]:
        assert row["correct"], row
        assert row["layout"] == "tn"
    json.dumps(doc)


def test_replayed_launch_writes_the_right_answer():
    """The recorded launch the timer repeats computes the same product as gemmlab.gemm."""
    from gemmlab import device
    from gemmlab.bench.candidates import Operands, StageCandidate

    cc = device.cc_number(device.arch(0))
    for spec in all_stages():
        if spec.min_cc > cc:
            continue
        ops = Operands.make(257, 129, 65, "nn")
        prep = StageCandidate(spec).prepare(ops)
        assert ops.check_out(spec.precision).correct, spec.id
        ops.poison()
        prep.launch()
        res = ops.check_out(spec.precision)
        assert res.correct, (spec.id, res)
        assert prep.kernel and prep.info["threads"] >= 32
