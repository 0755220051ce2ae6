"""Run-time compilation and the disk cache (no GPU needed: NVRTC compiles for an explicit arch)."""
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gemmlab.errors import CompileError
from gemmlab.jit import compile_cubin, KernelCache
from gemmlab.jit.compiler import cache_key, options_for, included_headers
from gemmlab.analysis import sass

ROOT = Path(__file__).resolve().parent.parent


def _kernel_source(tag: int, header: str = "") -> str:
    inc = f'#include "{header}"\n' if header else ""
    return inc + textwrap.dedent(f"""
        extern "C" __global__ void k_{tag}(float* x) {{ x[threadIdx.x] += {tag}.0f; }}
    """)


def test_compile_for_explicit_arch_without_gpu(tmp_path):
    tag = random.randrange(1 << 30)
    ck = compile_cubin(_kernel_source(tag), f"k_{tag}", "sm_90", cache=KernelCache(tmp_path))
    assert not ck.cached
    assert ck.cubin[:4] == b"\x7fELF"
    text = sass.disassemble(ck.cubin)
    assert f"k_{tag}" in text and "sm_90" in text


def test_cache_hit_returns_same_cubin(tmp_path):
    cache = KernelCache(tmp_path)
    tag = random.randrange(1 << 30)
    first = compile_cubin(_kernel_source(tag), f"k_{tag}", "sm_90", cache=cache)
    second = compile_cubin(_kernel_source(tag), f"k_{tag}", "sm_90", cache=cache)
    assert not first.cached and second.cached
    assert first.cubin == second.cubin and first.key == second.key
    assert cache.path(first.key).is_file()


def test_key_changes_with_arch_source_and_included_header(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMLAB_DEV", "1")  # edits seen at once (else headers are read once per process)
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "h.cuh").write_text('#include "g.cuh"\n#define SCALE 2.0f\n')
    (inc / "g.cuh").write_text("#define OFFSET 1.0f\n")
    src = '#include "h.cuh"\nextern "C" __global__ void kh(float* x){ x[0] = SCALE + OFFSET; }\n'
    opts = options_for("sm_90", (inc,))
    k1 = cache_key(src, "sm_90", opts, (inc,))
    assert set(included_headers(src, (inc,))) == {"h.cuh", "g.cuh"}
    assert cache_key(src, "sm_80", options_for("sm_80", (inc,)), (inc,)) != k1
    assert cache_key(src + "\n", "sm_90", opts, (inc,)) != k1
    (inc / "g.cuh").write_text("#define OFFSET 3.0f\n")  # a header included by a header
    k2 = cache_key(src, "sm_90", opts, (inc,))
    assert k2 != k1
    # and compiling really picks up the change: a new entry, not the old cubin
    cache = KernelCache(tmp_path / "c")
    a = compile_cubin(src, "kh", "sm_90", cache=cache, include_dirs=(inc,))
    (inc / "g.cuh").write_text("#define OFFSET 5.0f\n")
    b = compile_cubin(src, "kh", "sm_90", cache=cache, include_dirs=(inc,))
    assert not b.cached and a.key != b.key


def test_headers_read_once_per_process_without_dev(tmp_path, monkeypatch):
    monkeypatch.delenv("GEMMLAB_DEV", raising=False)
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "once.cuh").write_text("#define ONCE 1\n")
    src = '#include "once.cuh"\n'
    k1 = cache_key(src, "sm_90", options_for("sm_90", (inc,)), (inc,))
    (inc / "once.cuh").write_text("#define ONCE 2\n")
    assert cache_key(src, "sm_90", options_for("sm_90", (inc,)), (inc,)) == k1  # not re-read per call
    monkeypatch.setenv("GEMMLAB_DEV", "1")
    assert cache_key(src, "sm_90", options_for("sm_90", (inc,)), (inc,)) != k1  # GEMMLAB_DEV re-reads


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip"])
def test_corrupt_entry_is_detected_and_rebuilt(tmp_path, damage):
    cache = KernelCache(tmp_path)
    tag = random.randrange(1 << 30)
    good = compile_cubin(_kernel_source(tag), f"k_{tag}", "sm_90", cache=cache)
    p = cache.path(good.key)
    blob = p.read_bytes()
    if damage == "truncate":
        p.write_bytes(blob[: len(blob) // 2])
    elif damage == "garbage":
        p.write_bytes(b"not a cache entry")
    else:
        p.write_bytes(blob[:-10] + bytes(b ^ 0xFF for b in blob[-10:]))
    assert cache.get(good.key) is None  # detected (and deleted)
    again = compile_cubin(_kernel_source(tag), f"k_{tag}", "sm_90", cache=cache)
    assert not again.cached and again.cubin == good.cubin
    assert cache.get(good.key)[0] == good.cubin


def test_two_processes_compiling_the_same_kernel_both_succeed(tmp_path):
    tag = random.randrange(1 << 30)
    script = textwrap.dedent(f"""
        import sys
        from gemmlab.jit import compile_cubin, KernelCache
        src = {_kernel_source(tag)!r}
        ck = compile_cubin(src, "k_{tag}", "sm_90", cache=KernelCache(sys.argv[1]))
        print(len(ck.cubin), ck.key)
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    assert len({o for o, _ in outs}) == 1  # same key and size everywhere
    key = outs[0][0].split()[1]
    assert KernelCache(tmp_path).get(key) is not None
    leftovers = [f for f in tmp_path.rglob(".tmp-*")]
    assert leftovers == []


def test_compile_error_carries_the_nvrtc_log(tmp_path):
    with pytest.raises(CompileError) as ei:
        compile_cubin('extern "C" __global__ void bad(){ int x = ; }', "bad", "sm_90", cache=KernelCache(tmp_path))
    assert "expected an expression" in ei.value.log
    assert "bad" in str(ei.value)


def test_bad_arch_is_refused(tmp_path):
    with pytest.raises(CompileError, match="arch"):
        compile_cubin(_kernel_source(1), "k_1", "90", cache=KernelCache(tmp_path))


def test_default_cache_dir_follows_environment(tmp_cache):
    from gemmlab.jit import default_cache_dir

    assert default_cache_dir() == tmp_cache


def test_cuobjdump_output_is_kept_per_cubin_in_the_process_and_on_disk(tmp_cache, monkeypatch):
    """jit/disasm.py runs cuobjdump once per (cubin, arguments, tools): later calls, in this
    process or another one on the same cache, read what it printed; another cubin, other
    arguments, another cuobjdump or an entry of the uncompressed format run it again."""
    from gemmlab.jit import disasm

    runs = []

    def fake_tool(args, cubin):
        runs.append((args, cubin))
        return f"{' '.join(args)} of {cubin.hex()} (run {len(runs)})"

    monkeypatch.setattr(disasm, "_run_tool", fake_tool)
    monkeypatch.setattr(disasm, "_outputs", type(disasm._outputs)())
    first = disasm.disassemble(b"\x7fELF one")
    assert disasm.disassemble(b"\x7fELF one") == first and len(runs) == 1         # this process
    assert disasm._run_on_cubin(("--dump-resource-usage",), b"\x7fELF one") != first and len(runs) == 2
    assert disasm.disassemble(b"\x7fELF two") != first and len(runs) == 3
    disasm._outputs.clear()                                                        # as a new process
    assert disasm.disassemble(b"\x7fELF one") == first and len(runs) == 3         # from the disk
    assert list((tmp_cache / "sass").rglob("*.txt"))
    key = disasm._output_key(("--dump-sass",), b"\x7fELF one")                   # an entry not zlib's
    disasm._output_cache().put(key, b"plain text", {"cuobjdump": ["--dump-sass"]})
    disasm._outputs.clear()
    again = disasm.disassemble(b"\x7fELF one")
    assert again != first and len(runs) == 4 and disasm._kept_text(disasm._output_cache().get(key)) == again
    monkeypatch.setattr(disasm, "_tools_identity", lambda: "another cuobjdump")
    assert disasm.disassemble(b"\x7fELF one") not in (first, again) and len(runs) == 5
    for i in range(disasm._OUTPUTS_KEPT + 5):                                       # the process keeps a few
        disasm.disassemble(bytes([i]))
    assert len(disasm._outputs) == disasm._OUTPUTS_KEPT


def test_cuobjdump_output_matches_a_fresh_run(tmp_cache):
    """The kept output is cuobjdump's own: the same text as running it again on the cubin."""
    from gemmlab.jit import disasm

    tag = random.randrange(1 << 30)
    ck = compile_cubin(_kernel_source(tag), f"k_{tag}", "sm_90", cache=KernelCache(tmp_cache / "k"))
    kept = disasm.disassemble(ck.cubin)
    assert kept == disasm._run_tool(("--dump-sass",), ck.cubin) and f"k_{tag}" in kept
