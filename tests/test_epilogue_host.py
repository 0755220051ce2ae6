"""The SIMT epilogues (mma/warp_tile.cuh WarpTileCore::store, epilogue/cluster_reduce.cuh
reduce_store) and s10's moved edge blocks (common.cuh edge_origin / skipped), run on the CPU: the
kernels' own headers are compiled as C++ with the CUDA built-ins stood in for
(tests/host/cuda_host.h, tests/host/ptx/cluster.cuh) and run thread by thread, block by block, with
the address and undefined-behaviour sanitizers (tests/host/epilogue_host.cpp says what each case
checks: every output written once, with the value of its place, nothing else touched, no
misaligned 16-byte store). What the GPU tests check on the H200 end to end, this checks on every
CI run for the epilogue alone, for s10's tiles with the edge blocks in place and moved."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOST = ROOT / "tests" / "host"
CASES = 768  # epilogue_host.cpp: 9 tiles x 8 shapes x 2 betas x 4 shifts + 3 reduce tiles x 8 x 2 x 4


def _compiler():
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name):
            return name
    return None


def _build(cxx, out, sanitize):
    flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"] if sanitize else []
    return subprocess.run([cxx, "-std=c++17", "-O1", "-g", "-Wno-unknown-pragmas", *flags, "-I", str(HOST),
                           "-I", str(ROOT / "gemmlab" / "kernels"), str(HOST / "epilogue_host.cpp"), "-o", str(out)],
                          capture_output=True, text=True)


def test_the_epilogues_store_each_output_once_in_place_and_moved(tmp_path):
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++, c++ or clang++) on this machine")
    exe = tmp_path / "epilogue_host"
    built = _build(cxx, exe, sanitize=True)
    if built.returncode and ("asan" in built.stderr or "ubsan" in built.stderr or "sanitize" in built.stderr):
        built = _build(cxx, exe, sanitize=False)  # no sanitizer runtime here: the values are still checked
    assert built.returncode == 0, built.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith(f"0 of {CASES} cases wrong"), (
        run.stdout[-3000:] + run.stderr[-3000:])
