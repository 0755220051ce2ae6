"""The bench commands from the outside: no-GPU behaviour, report, imports (subprocesses, no GPU)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemmlab.bench import provenance

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"


def gemmlab(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "gemmlab", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args", [
    ("ladder",),
    ("ladder", "--size", "512", "--stages", "s01", "--out", "never-written"),
    ("bench", "256", "128", "64", "--stage", "s01", "--layout", "tn"),
])
def test_gpu_commands_exit_2_with_one_line_without_a_gpu(args, tmp_path):
    r = gemmlab(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("gemmlab: no CUDA GPU is available")
    assert "report" in lines[0]          # it names the commands that work without a GPU
    assert r.stdout == ""
    assert not (ROOT / "never-written").exists()


def test_report_markdown_and_plain_without_a_gpu():
    r = gemmlab("report", str(DATA / "ladder.json"), "--markdown")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("> **FIXTURE")
    assert "| Stage | Adds | TFLOPS | % cuBLAS |" in r.stdout
    r = gemmlab("report", str(DATA / "ladder.json"))
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("FIXTURE")


def test_report_csv_and_plot(tmp_path):
    png = tmp_path / "p.png"
    r = gemmlab("report", str(DATA / "ladder_sweep.json"), "--csv", "--plot", str(png))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Problem,Provider,OperationKind,Operation,Disposition,Status")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_report_of_a_bad_file_says_why(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "gemmlab.ladder/1"}')
    r = gemmlab("report", str(bad))
    assert r.returncode == 2
    assert r.stderr.startswith(f"gemmlab: {bad} does not follow the gemmlab.ladder/1 schema (10 problems): "
                               "missing top-level field 'kind'")
    assert len(r.stderr.strip().splitlines()) == 1 and "... and 7 more" in r.stderr
    r = gemmlab("report", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "no such file" in r.stderr


def test_bench_modules_import_without_torch_cupy_or_triton():
    code = ("import sys\n"
            "import gemmlab.cli, gemmlab.bench.commands, gemmlab.bench.report, gemmlab.bench.plot, "
            "gemmlab.bench.schema, gemmlab.bench.ladder, gemmlab.bench.timing, gemmlab.bench.candidates, "
            "gemmlab.bench.baselines, gemmlab.bench.provenance, gemmlab.bench.stats\n"
            "gemmlab.cli.build_parser()\n"
            "print(sorted(m for m in ('torch', 'cupy', 'triton') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_help_lists_the_commands():
    r = gemmlab("--help")
    for cmd in ("ladder", "bench", "report"):
        assert cmd in r.stdout
    r = gemmlab("ladder", "--help")
    for opt in ("--size", "--sizes", "--stages", "--out", "--max-seconds", "--baselines", "--layout"):
        assert opt in r.stdout


# ---- provenance helpers ------------------------------------------------------------------------

def test_bus_id_normalization():
    want = (0, 0x3B, 0, 0)
    for s in ("00000000:3B:00.0", "0000:3b:00.0", b"0000:3B:00.0\x00\x00", "3b:00.0"):
        assert provenance.normalize_bus_id(s) == want
    assert provenance.normalize_bus_id("00000001:3B:00.1") == (1, 0x3B, 0, 1)
    assert provenance.normalize_bus_id("garbage") is None
    assert provenance.normalize_bus_id(None) is None


def test_parse_nvidia_smi():
    text = ("00000000:18:00.0, 1980, 1980, NVIDIA H200, 580.95.05\n"
            "00000000:3B:00.0, [N/A], 1980, NVIDIA H200, 580.95.05\n\n")
    rows = provenance.parse_nvidia_smi(text)
    assert rows[0] == {"bus_id": "00000000:18:00.0", "sm_mhz": 1980, "max_sm_mhz": 1980,
                       "name": "NVIDIA H200", "driver": "580.95.05"}
    assert rows[1]["sm_mhz"] is None and len(rows) == 2


def test_collect_without_a_device(monkeypatch):
    monkeypatch.setenv("CUPY_TF32", "0")
    p = provenance.collect(device_index=None, argv=["ladder", "--size", "512"])
    assert p["fixture"] is False
    assert p["command"] == "gemmlab ladder --size 512"
    assert p["env"]["CUPY_TF32"] == "0"
    assert "numpy" in p["versions"] and "python" in p["versions"]
    assert len(p["source_sha256"]) == 64 and p["source_sha256"] == provenance.source_hash()
    assert p["date"].endswith("+00:00")
    git = p["git"]
    if (ROOT / ".git").exists():
        assert len(git["commit"]) == 40 and isinstance(git["dirty"], bool)


def test_clock_reader_without_a_gpu_reads_none():
    c = provenance.ClockReader(0)
    if c.source is None:
        assert c.sm_mhz() is None and c.max_sm_mhz() is None
