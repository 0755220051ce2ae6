"""The bank probe's parts that need no GPU: patterns, generated kernels (compiled for sm_90 and
checked in SASS), ncu CSV parsing, the batch-then-isolate flow. The run itself is ``gpu``."""
import json
import os
import shutil
import sys

import pytest

from gemmlab.analysis import bank_probe as bp
from gemmlab.analysis import banks, sass

PATTERNS = bp.basic_patterns() + bp.notes_patterns()

# A sample of ncu --csv output in the documented format (ncu 2024/2025: one row per metric),
# with the ==PROF== lines and the child's own output mixed in, and thousands separators.
SAMPLE_CSV = '''\
==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "gemmlab_probe_ld32_stride2" - 0: 0%....50%....100% - 1 pass
GEMMLAB_PROBE {"name": "ld32_stride2", "cycles": 17000, "warps": 8, "instructions_per_warp": 1024, "cycles_per_instruction": 2.07}
==PROF== Profiling "gemmlab_probe_notes_rowmajor_b" - 1: 0%....50%....100% - 1 pass
GEMMLAB_PROBE {"name": "notes_rowmajor_b", "cycles": 66000, "warps": 8, "instructions_per_warp": 1024, "cycles_per_instruction": 8.05}
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","gemmlab_probe_ld32_stride2","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","","16,384"
"0","4242","python3.12","127.0.0.1","gemmlab_probe_ld32_stride2","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum","","0"
"0","4242","python3.12","127.0.0.1","gemmlab_probe_ld32_stride2","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_shared_ld.sum","inst","8,192"
"0","4242","python3.12","127.0.0.1","gemmlab_probe_ld32_stride2","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_shared_st.sum","inst","0"
"1","4242","python3.12","127.0.0.1","gemmlab_probe_notes_rowmajor_b","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","","65,536"
"1","4242","python3.12","127.0.0.1","gemmlab_probe_notes_rowmajor_b","1","13","(256, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","smsp__sass_inst_executed_op_shared_ld.sum","inst","8,192"
'''


def test_patterns_and_models():
    names = [p.name for p in bp.all_patterns()]
    assert len(names) == len(set(names))
    by = {p.name: p for p in PATTERNS}
    assert by["ld32_stride32"].model == {"notes": 32, "hardware": 32}
    assert by["ld128_linear"].model == {"notes": 4, "hardware": 4}
    assert by["notes_rowmajor_b"].model["notes"] == 8
    assert by["notes_zorder_b"].model == {"notes": 2, "hardware": 4}   # where the models part
    # the notes' table is in the probe: A and B of each layout
    for name, (a, b) in banks.NOTES_TABLE.items():
        assert by[f"notes_{name}_a"].model["notes"] == a and by[f"notes_{name}_b"].model["notes"] == b
    # addresses are rebased to a 128-byte boundary: bank behaviour kept, buffers small
    p = bp.Pattern("x", "load", 16, tuple(4096 + 16 * i for i in range(32)))
    assert p.addresses[0] == 0 and p.smem_bytes == 512 and p.model["notes"] == 4
    # every pattern has a distinct kernel name that NVRTC accepts
    kernels = [p.kernel for p in bp.all_patterns()]
    assert len(set(kernels)) == len(kernels) and all(k.replace("_", "").isalnum() for k in kernels)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
def test_generated_kernel_compiles_for_sm90_with_the_right_instruction(pattern):
    ck = bp.compile_pattern(pattern, "sm_90")
    ins = sass.instructions(ck.cubin, pattern.kernel)
    cls = {("load", 4): "LDS", ("load", 8): "LDS.64", ("load", 16): "LDS.128",
           ("store", 4): "STS", ("store", 8): "STS.64", ("store", 16): "STS.128"}[(pattern.op, pattern.width)]
    m = sass.mix(ins)
    shared = {k: v for k, v in m.items() if k.startswith(("LDS", "STS"))}
    assert set(shared) == {cls}, shared           # only the pattern's instruction touches shared memory
    # the hot loop repeats it: a multiple of the unroll factor, never merged away
    body = sass.main_loop(ins) or ins
    loop = [x for x in sass.loops(ins) if any(sass.classify(y.op) == cls for y in ins if x[0] <= y.addr <= x[1])]
    assert loop, "the instruction is not in a loop"
    first, last = max(loop, key=lambda s: s[1] - s[0])
    n = sum(1 for y in ins if first <= y.addr <= last and sass.classify(y.op) == cls)
    assert n % bp.UNROLL == 0 and n >= bp.UNROLL
    assert sass.resources(ck.cubin, pattern.kernel)["local_bytes"] == 0
    assert body


def test_parse_ncu_csv():
    m = bp.parse_ncu_csv(SAMPLE_CSV)
    assert set(m) == {"gemmlab_probe_ld32_stride2", "gemmlab_probe_notes_rowmajor_b"}
    s2 = m["gemmlab_probe_ld32_stride2"]
    assert s2["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 16384
    assert s2["smsp__sass_inst_executed_op_shared_ld.sum"] == 8192
    assert bp.parse_ncu_csv("no csv here\n") == {}
    r = bp.parse_results(SAMPLE_CSV)
    assert r["notes_rowmajor_b"]["cycles_per_instruction"] == 8.05


def test_tabulate_and_summary_from_sample():
    pats = [p for p in PATTERNS if p.name in ("ld32_stride2", "notes_rowmajor_b", "notes_zorder_b")]
    rows = bp.tabulate(pats, bp.parse_results(SAMPLE_CSV), bp.parse_ncu_csv(SAMPLE_CSV))
    by = {r["name"]: r for r in rows}
    assert by["ld32_stride2"]["measured"]["wavefronts_per_instruction"] == 2.0
    assert by["ld32_stride2"]["matches"] == {"notes": True, "hardware": True}
    assert by["notes_rowmajor_b"]["measured"]["wavefronts_per_instruction"] == 8.0
    assert by["notes_zorder_b"]["measured"]["wavefronts_per_instruction"] is None
    s = bp.summarise(rows)
    assert s["measured"] == 2 and s["failed"] == ["notes_zorder_b"]
    assert s["agree"] == {"notes": 2, "hardware": 2}
    assert s["notes_table"]["rowmajor"]["measured"][1] == 8.0
    text = bp.format_table(rows)
    assert "ld32_stride2" in text and "notes,hardware" in text


def test_ncu_trouble_messages():
    assert "performance counters" in bp.ncu_trouble("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    assert "gVisor" in bp.ncu_trouble("==ERROR== Failed to initialize the profiler: LibraryNotLoaded")
    assert bp.ncu_trouble("==ERROR== something else\n") == "==ERROR== something else"
    assert bp.ncu_trouble(SAMPLE_CSV) is None


def test_find_ncu(monkeypatch, tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("GEMMLAB_NCU", str(fake))
    assert bp.find_ncu() == str(fake)
    monkeypatch.setenv("GEMMLAB_NCU", str(tmp_path / "missing"))
    assert bp.find_ncu() is None
    cmd = bp.ncu_command("ncu", bp.child_command(["a", "b"], "sm_90"))
    assert cmd[:3] == ["ncu", "--clock-control", "none"] and "--csv" in cmd
    assert ",".join(bp.ALL_METRICS) in cmd and cmd[-4:] == ["--run", "a,b", "--arch", "sm_90"]


def test_batch_then_isolated_retry(monkeypatch):
    """The batch run loses two patterns (a crash mid-way); each is then run alone, one fails again
    and is reported with its error while the others keep their numbers."""
    pats = [p for p in PATTERNS if p.name in ("ld32_linear", "ld32_stride2", "ld128_linear")]
    calls = []

    def csv_rows(kernel, wf, inst):
        head = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
        return head + (f'"0","{kernel}","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","","{wf}"\n'
                       f'"0","{kernel}","smsp__sass_inst_executed_op_shared_ld.sum","","{inst}"\n')

    def fake_run(cmd, timeout):
        names = cmd[cmd.index("--run") + 1].split(",")
        calls.append(names)
        if len(names) > 1:   # the batch: only the first pattern made it before the crash
            return 139, (f'{bp.RESULT_TAG} {json.dumps({"name": "ld32_linear", "cycles_per_instruction": 1.0})}\n'
                         + csv_rows("gemmlab_probe_ld32_linear", 8192, 8192) + "Segmentation fault\n")
        if names == ["ld32_stride2"]:
            return 0, (f'{bp.RESULT_TAG} {json.dumps({"name": "ld32_stride2", "cycles_per_instruction": 2.0})}\n'
                       + csv_rows("gemmlab_probe_ld32_stride2", 16384, 8192))
        return 1, f'{bp.RESULT_TAG} {json.dumps({"name": names[0], "error": "CUDA_ERROR_ILLEGAL_ADDRESS"})}\n'

    monkeypatch.setattr(bp, "_run", fake_run)
    results, metrics, problems = bp.measure(pats, "ncu", "sm_90", log=lambda s: None)
    assert calls == [["ld32_linear", "ld32_stride2", "ld128_linear"], ["ld32_stride2"], ["ld128_linear"]]
    rows = {r["name"]: r for r in bp.tabulate(pats, results, metrics)}
    assert rows["ld32_linear"]["measured"]["wavefronts_per_instruction"] == 1.0
    assert rows["ld32_stride2"]["measured"]["wavefronts_per_instruction"] == 2.0
    assert rows["ld128_linear"]["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert problems == []


def test_list_needs_no_gpu(capsys):
    assert bp.main(["--list", "--no-stages"]) == 0
    out = capsys.readouterr().out
    assert "notes_zorder_b" in out and "ld128_halves_conflict" in out


@pytest.mark.gpu
def test_probe_on_the_gpu(tmp_path):
    """A few patterns whose counts no model disputes; the full run is
    ``python -m gemmlab.analysis.bank_probe --out results/h200``."""
    if bp.find_ncu() is None:
        pytest.skip("ncu not found (set GEMMLAB_NCU)")
    rc = bp.main(["--out", str(tmp_path), "--no-stages",
                  "--patterns", "ld32_linear,ld32_stride2,ld32_stride32,ld128_linear,st32_linear"])
    doc = json.loads((tmp_path / "bank_probe.json").read_text())
    if doc["problems"]:
        pytest.skip("; ".join(doc["problems"]))
    assert rc == 0
    got = {r["name"]: r["measured"]["wavefronts_per_instruction"] for r in doc["patterns"]}
    assert got["ld32_linear"] == pytest.approx(1, abs=0.05)
    assert got["ld32_stride2"] == pytest.approx(2, abs=0.05)
    assert got["ld32_stride32"] == pytest.approx(32, abs=0.05)
    assert got["st32_linear"] == pytest.approx(1, abs=0.05)
