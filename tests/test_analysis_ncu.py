"""The ncu CSV parser (analysis/ncu.py) on recorded output, no GPU: the raw page (what ``gemmlab
profile`` asks for) and the details page (what scripts/ncu_stages.py read on the H200), both built
from the committed H200 measurements in results/h200/ncu_stages_2048.json."""
import csv
import io
import json
import stat
from pathlib import Path

import pytest

from gemmlab.analysis import ncu

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "ncu" / "h200_stages_2048_raw.csv"
COMMITTED = ROOT / "results" / "h200" / "ncu_stages_2048.json"


def committed_rows():
    return {r["stage"]: r for r in json.loads(COMMITTED.read_text())["rows"]}


def test_raw_sample_parses_to_the_committed_numbers():
    launches = ncu.parse_csv(SAMPLE.read_text())
    rows = committed_rows()
    assert [x["id"] for x in launches] == [0, 1, 2, 3]
    for launch, stage in zip(launches, ("s05", "s07", "s08a", "s09")):
        rec = rows[stage]
        assert launch["kernel"] == rec["kernel"]
        for name, value in rec["raw"].items():   # thousands separators, units: all back to the numbers
            assert launch["metrics"][name] == pytest.approx(value, rel=1e-6, abs=0.006), name
        st = ncu.stalls(launch["metrics"])
        assert st == pytest.approx(rec["stalls_per_issue"], abs=0.006)
        assert list(st)[0] == max(rec["stalls_per_issue"], key=rec["stalls_per_issue"].get)
    # the wavefronts per instruction the scripts derived come out the same
    s07 = launches[1]["metrics"]
    assert s07[ncu.SMEM[0]] / s07[ncu.SMEM[1]] == pytest.approx(rows["s07"]["smem_ld_wavefronts_per_inst"])


def _details_csv(rows: dict, stages) -> str:
    """The details page (one row per metric) as ncu prints it, with scaled units."""
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
                "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"])
    for i, st in enumerate(stages):
        rec = rows[st]
        for name, value in sorted(rec["raw"].items()):
            unit, shown = "", f"{value:,.2f}" if not float(value).is_integer() else f"{int(value):,}"
            if name == "gpu__time_duration.sum":
                unit, shown = "usecond", f"{value / 1e3:,.2f}"      # ncu scales units on this page
            elif name.endswith("per_second"):
                unit, shown = "Ghz", f"{value / 1e9:.4f}"
            elif "pct" in name:
                unit = "%"
            w.writerow([str(i), "1", "python3", "host", rec["kernel"], "1", "7", "(256, 1, 1)", "(256, 1, 1)", "0",
                        "9.0", "Command line profiler metrics", name, unit, shown])
    return "==PROF== Connected to process 1\nsome program output\n" + out.getvalue() + "==PROF== Disconnected\n"


def test_details_page_with_scaled_units():
    rows = committed_rows()
    launches = ncu.parse_csv(_details_csv(rows, ["s07", "s09"]))
    assert [x["kernel"] for x in launches] == [rows["s07"]["kernel"], rows["s09"]["kernel"]]
    m = launches[0]["metrics"]
    assert m["gpu__time_duration.sum"] == pytest.approx(rows["s07"]["duration_ns"], rel=1e-5)   # usecond -> ns
    assert m["sm__cycles_elapsed.avg.per_second"] == pytest.approx(1.969375e9, rel=1e-4)        # Ghz -> Hz
    assert m["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 83896189


def test_several_sessions_and_noise():
    text = SAMPLE.read_text()
    two = text + "\nprogram output between sessions\n" + text
    assert len(ncu.parse_csv(two)) == 8
    assert ncu.parse_csv("no table here\n==PROF== nothing\n") == []


def test_number_and_units():
    assert ncu.number("1,024") == 1024
    assert ncu.number("n/a") is None and ncu.number("") is None and ncu.number(None) is None
    assert ncu.number("2.5", "Mbyte") == 2.5e6
    assert ncu.number("3", "usecond") == 3000
    assert ncu.number("75.16", "%") == 75.16
    assert ncu.number("3.1", "inst/cycle") == 3.1


def test_trouble_messages():
    denied = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    assert ncu.counters_denied(denied) and "ERR_NVGPUCTRPERM" in ncu.trouble(denied)
    assert ncu.trouble("==PROF== fine\n") is None
    assert ncu.metric_rejected("==ERROR== Failed to find metric lts__t_sectors_foo.sum")
    assert not ncu.metric_rejected("==ERROR== The application returned an error code (1)")


def test_command_line():
    cmd = ncu.command("/x/ncu", ["python", "-m", "child"], launches=3)
    assert cmd[:3] == ["/x/ncu", "--clock-control", "none"]
    assert "--csv" in cmd and cmd[cmd.index("--page") + 1] == "raw" and cmd[cmd.index("--print-units") + 1] == "base"
    assert cmd[cmd.index("--launch-count") + 1] == "3" and cmd[cmd.index("-k") + 1] == ncu.KERNEL_REGEX
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert set(ncu.CORE) <= set(metrics) and ncu.STALLS in metrics
    assert cmd[-3:] == ["python", "-m", "child"]
    plain = ncu.command("ncu", [], optional=False)
    assert not set(ncu.OPTIONAL) & set(plain[plain.index("--metrics") + 1].split(","))


def test_find_ncu_env(tmp_path, monkeypatch):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("GEMMLAB_NCU", str(fake))
    assert ncu.find_ncu() == str(fake)
    monkeypatch.setenv("GEMMLAB_NCU", str(tmp_path / "missing"))
    assert ncu.find_ncu() is None
    assert ncu.NCU_MISSING == "ncu not found: install Nsight Compute or set GEMMLAB_NCU"
