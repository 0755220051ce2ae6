"""The README and docs say what the code does: every example block is the output of its command
now (``python3 scripts/update_readme.py --examples`` rewrites them), and the claims in prose and
help texts that the code decides are checked against it. No GPU needed."""
import json
import re
import sys
from pathlib import Path

import pytest

from gemmlab import cli
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "docs" / "models.md"


UPDATE = load_script("update_readme")
BLOCKS = [(path, m.group("cmd"), m.group("body")) for path in UPDATE.example_files()
          for m in UPDATE.EXAMPLE.finditer(path.read_text())]


def test_there_are_examples_where_the_issue_found_stale_ones():
    cmds = {(p.name, c) for p, c, _ in BLOCKS}
    for want in [("README.md", "gemmlab explain s11"), ("README.md", "gemmlab sass s11"),
                 ("models.md", "gemmlab explain s07")]:
        assert want in cmds, want
    assert any(p.name == "models.md" and c.startswith("gemmlab explain s01 --json") for p, c, _ in BLOCKS)
    assert any(p.name == "models.md" and c.startswith("gemmlab sass s01 --json") for p, c, _ in BLOCKS)


@pytest.mark.parametrize("path, cmd, body", BLOCKS, ids=[f"{p.name}: {c}" for p, c, _ in BLOCKS])
def test_example_block_is_the_commands_output(path, cmd, body):
    want = UPDATE.example_text(cmd)
    assert body == want, (f"{path.relative_to(ROOT)}: the block of `{cmd}` is stale; run "
                          "python3 scripts/update_readme.py --examples")


def test_check_mode_reports_a_stale_block(tmp_path, monkeypatch):
    doc = tmp_path / "x.md"
    doc.write_text("<!-- example: gemmlab sass s11 --arch sm_80 2>&1 -->\n```\nold\n```\n<!-- example:end -->\n")
    monkeypatch.setattr(UPDATE, "ROOT", tmp_path)
    assert UPDATE.update_examples(doc, check=True) == ["x.md: gemmlab sass s11 --arch sm_80 2>&1"]
    assert "old" in doc.read_text()
    UPDATE.update_examples(doc)
    assert "gemmlab: --arch sm_80: s11 needs sm_90 (TMA)" in doc.read_text()
    assert UPDATE.update_examples(doc, check=True) == []


# ---- prose in docs/models.md that the code decides ----------------------------------------------

def test_models_md_predicted_bounds():
    """'At 4096³ s01 is DRAM bound ... and s02–s11 are bound by issue slots' (The predicted bound)."""
    from gemmlab.analysis import explain

    text = " ".join(MODELS.read_text().split())
    assert "At 4096³ s01 is DRAM bound" in text and "s02–s11 are bound by issue slots" in text
    stages = ["s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08a", "s08b", "s08c", "s08d", "s09", "s10", "s11"]
    got = {s: explain.report(s, size=4096)["predicted"]["bound"] for s in stages}
    assert got == {s: "dram" if s == "s01" else "issue_slots" for s in stages}


def test_models_md_validation_table_model_columns():
    """The model's A and B load wavefronts in 'Validation on the H200' are what explain says."""
    from gemmlab.analysis import explain

    section = MODELS.read_text().split("## Validation on the H200", 1)[1]
    rows = re.findall(r"^\| (s\d\d[a-z]?) \| (\d+) \| (\d+) \|", section, re.M)
    assert len(rows) >= 10
    for stage, a, b in rows:
        smem = explain.report(stage, size=2048, model="hardware")["smem"]
        assert (smem["a_load"]["wavefronts"], smem["b_load"]["wavefronts"]) == (int(a), int(b)), stage


def test_models_md_on_the_bank_model_default_and_the_probe():
    from gemmlab.analysis import banks

    text = MODELS.read_text()
    assert "not yet run on the H200" not in text and "**`notes`** (default)" not in text
    assert "**`hardware`** (the default" in text and banks.MODELS == ("notes", "hardware")
    assert (ROOT / "results" / "h200" / "bank_probe.json").is_file()
    probe = json.loads((ROOT / "results" / "h200" / "bank_probe.json").read_text())
    s = probe["summary"]
    assert s["agree"]["hardware"] == s["measured"]             # "the H200 follows it on every pattern"
    assert f"agree on all {s['measured']}, the `notes` rules on {s['agree']['notes']}" in " ".join(text.split())


# ---- help texts -----------------------------------------------------------------------------------

def _help(*args) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main([*args, "--help"])
    return " ".join(out.getvalue().split())


def test_explain_help_names_the_real_default_bank_model(monkeypatch):
    text = _help("explain")
    assert "else hardware" in text and "the notes' (default)" not in text


def test_bench_help_names_the_files_it_writes():
    text = _help("bench")
    assert "bench.json, bench.csv and bench.png" in text and "ladder.json" not in text and "ladder.csv" not in text
    assert "ladder.json, ladder.csv and ladder.png" in _help("ladder")
    assert "sweep.json, sweep.csv and sweep.png" in _help("sweep")


def test_report_help_names_every_file_it_reads():
    text = _help("report")
    for name in ("ladder.json", "bench.json", "sweep.json", "overhead.json"):
        assert name in text
    assert "[--markdown | --csv]" in text


def test_pyproject_license_is_an_spdx_string():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11+")
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"             # a table is deprecated (setuptools warns)
    req = [r for r in meta["build-system"]["requires"] if r.startswith("setuptools")]
    assert req and int(re.search(r">=(\d+)", req[0]).group(1)) >= 77   # SPDX strings: setuptools 77+
