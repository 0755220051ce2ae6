"""s10's kernel and the SIMT epilogues run on the CPU: the kernels' own headers compiled as C++,
with the CUDA built-ins stood in for (tests/host/cuda_host.h: a CUDA thread is a std::thread,
__syncthreads a barrier of the block's) and the PTX-level headers replaced by host versions
(tests/host/ptx/: a cp.async copy lands when issued, or with host_cp_async_land_at_wait at the
latest wait that must see it; a cluster's CTAs are arrays), under the
address and undefined-behaviour sanitizers. What the GPU tests check on the H200 end to end, these
check on every CI run, without a GPU:
- epilogue_host.cpp: WarpTileCore::store and the cluster reduce's store, thread by thread, for s10's
  tiles with the edge blocks in place and moved (EDGE_SHIFT): every output written once with the
  value of its place, beta read in place, the padding untouched, no misaligned 16-byte store;
- s10_host.cpp: the whole s10 kernel on 4-byte copies (the copies' interior and edge paths,
  transpose_in, the FFMAs, the epilogue), every layout, with and without EDGE_SHIFT,
  FRAG_CARRY and FFMA_SERPENTINE, against an exact integer reference; a read past an operand fails the address
  sanitizer. Run twice: copies landing when issued show a copy into a stage that another thread
  may still read (the carried loop's copies moved above its barrier: 12 of 588 cases wrong), copies
  landing at their wait show a stage read before its wait (its wait_group one group too lax: 156
  of 588);
- copies_host.cpp: the plan's copy kernels gemmlab_transpose and gemmlab_copy on their grids and
  on grids too small for them: every element in place, nothing else written, edges, batches past
  the grid, broadcast and strided sources;
- s11_host.cpp: the whole s11 kernel (its TMA boxes, the full and empty mbarriers of the ring, the
  producer warpgroup or thread 0, the FFMAs, the epilogue), every layout, batched with a broadcast
  B, on persistent grids (a block's tiles through one ring: epilogue/stream_k.cuh
  PersistentTiles), against an exact integer reference, the tensor maps built as the host builds
  them. Run twice: copies landing when issued show a stage overwritten while a warp reads it,
  copies landing at the wait that needs them show a stage read before its wait; a wait that never
  completes (a phase's arrivals or parity wrong, as when the producer skips the empty barrier's
  wait between two tiles of a persistent block) stops the run with the barrier's state
  (tests/host/ptx/mbarrier.cuh) instead of hanging it;
- tma_rules_host.cpp: the TMA stand-in refuses what the hardware refuses (a box start off 16 bytes,
  which faults on the GPU; a base or stride the driver will not encode), so a kernel that issues
  such a copy fails on the CPU."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOST = ROOT / "tests" / "host"


def _compiler():
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name):
            return name
    return None


def _run(tmp_path, source, cases, runs=((),)):
    """Build tests/host/``source`` (:func:`_build`), run it once per item of ``runs`` (its
    arguments; the runs side by side), and check each run's last line says none of ``cases``
    cases was wrong."""
    exe = _build(tmp_path, source)
    procs = [(args, subprocess.Popen([str(exe), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
             for args in runs]
    for args, proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0 and out.strip().endswith(f"0 of {cases} cases wrong"), (
            f"{source} {' '.join(args)}:\n" + out[-3000:] + err[-3000:])


def _build(tmp_path, source):
    """Build tests/host/``source`` against a copy of gemmlab/kernels with tests/host/ptx/ over its
    ptx/ (the copy: a header's own folder is searched first, so the real ptx/ headers would win),
    under the address and undefined-behaviour sanitizers where this compiler has them; returns
    the executable."""
    cxx = _compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++, c++ or clang++) on this machine")
    kernels = tmp_path / "kernels"
    shutil.copytree(ROOT / "gemmlab" / "kernels", kernels)
    for stub in (HOST / "ptx").glob("*.cuh"):
        shutil.copy(stub, kernels / "ptx" / stub.name)
    exe = tmp_path / source.removesuffix(".cpp")

    def build(sanitize):
        flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"] if sanitize else []
        return subprocess.run([cxx, "-std=c++20", "-O1", "-Wno-unknown-pragmas", "-pthread", *flags,
                               "-I", str(kernels), "-I", str(HOST), str(HOST / source), "-o", str(exe)],
                              capture_output=True, text=True)

    built = build(sanitize=True)
    if built.returncode and any(s in built.stderr for s in ("asan", "ubsan", "sanitize")):
        built = build(sanitize=False)  # no sanitizer runtime here: the values are still checked
    assert built.returncode == 0, built.stderr[-3000:]
    return exe


def test_the_epilogues_store_each_output_once_in_place_and_moved(tmp_path):
    # 9 tiles x 8 shapes x 2 betas x 4 shifts, and 3 cluster-reduce tiles x 8 x 2 x 4
    _run(tmp_path, "epilogue_host.cpp", 768)


# 10 tiles (6 with FRAG_CARRY, 2 of them with CARRY_COPY_K, 3 with CARRY_CHUNK; 3 with
# FFMA_SERPENTINE) x (4 layouts + 3 with one operand 16-byte) x 6 shapes x with and without EDGE_SHIFT
S10_HOST_CASES = 840


def test_s10_on_4_byte_copies_matches_an_exact_reference_with_copies_landing_when_issued_and_at_their_wait(tmp_path):
    # one build (its compile is 2/3 of the work), both runs at once: copies landing when issued,
    # and ("at-wait") at the wait that covers them
    _run(tmp_path, "s10_host.cpp", S10_HOST_CASES, runs=((), ("at-wait",)))


def test_s11_matches_an_exact_reference_with_copies_landing_when_issued_and_at_their_wait(tmp_path):
    # 4 tiles (a producer warpgroup, a producer warp with the consumers kept in step and B
    # transposed, thread 0 producing, fragment prefetch) x 5 layouts x (5 shapes + 2 batched + 2
    # persistent grids) with the copies landing when issued, and (2 shapes + 1 batched + 2
    # persistent) with them landing at the wait that needs them
    _run(tmp_path, "s11_host.cpp", 4 * 5 * (5 + 2 + 2) + 4 * 5 * (2 + 1 + 2))


def test_the_copy_kernels_move_every_element_and_nothing_else(tmp_path):
    # 16 shapes x 2 batchings and grids and one broadcast transpose; 6 line lengths x 3 grids x 3 copies
    _run(tmp_path, "copies_host.cpp", 87)


@pytest.fixture(scope="module")
def tma_rules(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("tma_rules"), "tma_rules_host.cpp")


@pytest.mark.parametrize("case,reason", [
    ("start1", "box start not 16-byte aligned"), ("start2", "box start not 16-byte aligned"),
    ("start3", "box start not 16-byte aligned"), ("row", "stride not a multiple of 16 bytes"),
    ("base", "base address not 16-byte aligned")])
def test_the_tma_stand_in_refuses_what_the_hardware_refuses(tma_rules, case, reason):
    """A box that starts off a 16-byte boundary faults on the GPU (results/h100/logs/
    tma-start-probe.txt); the stand-in stops the run there, so a kernel design that issues one
    (docs/stages/s10-s11.md, "Rows that are not 16-byte aligned on TMA") fails on the CPU first."""
    exe = tma_rules
    ok = subprocess.run([str(exe), "ok"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "0 of 256 values wrong" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([str(exe), case], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and reason in bad.stderr and "box landed" not in bad.stdout, bad.stdout + bad.stderr
