"""skinny: the memory-bound kernel for M <= 16 or N <= 16 (stages/skinny.py, kernels/skinny.cuh).

CPU: config rules and their messages, the auto resolution and the vec rule, ``choose`` (split-K),
every auto instantiation compiled for sm_90 (no local memory, the opcodes of the mechanism), and
the real kernel source run on the CPU by a small emulator (one fiber per thread, __syncthreads and
warp shuffles as barriers, cp.async landing only at wait_group, bounds-checked global reads,
NaN-filled shared memory, two thread schedules that must give the same bits) on edge shapes,
layouts, strides, misaligned pointers, split-K slices and batches. GPU (marked ``gpu``): through
``gemmlab.gemm`` / ``gemm_batched`` against float64 with the check harness."""
from __future__ import annotations

import dataclasses
import math
import shutil
import struct
import subprocess

import numpy as np
import pytest

from gemmlab.errors import ConfigError
from gemmlab.stages import all_stages, extra_stages, get
from gemmlab.heuristics import skinny as choice
from gemmlab.stages import skinny
from gemmlab.stages.base import Problem

S = get("skinny")
ALIGNED = 1 << 40  # a fake 16-byte-aligned device address
LAYOUTS = ("nn", "nt", "tn", "tt")


def dense(M, N, K, layout="nn", batch=1, a_off=0, b_off=0, **kw):
    return Problem.dense(M, N, K, layout, batch, a_ptr=ALIGNED + 4 * a_off, b_ptr=2 * ALIGNED + 4 * b_off,
                         d_ptr=3 * ALIGNED, **kw)


def resolved(problem, over=None):
    cfg = S.config(over)
    fb = S.fallback(cfg, problem)
    return fb[1] if fb else cfg


# ---- registry and config rules ------------------------------------------------------------------
def test_registered_outside_the_ladder():
    assert S.id == "skinny" and S.header == "skinny.cuh"
    assert S not in all_stages() and S in extra_stages()
    assert get("skinny") is S
    assert S.adds and S.notes


def test_applies():
    assert choice.applies(1, 4096) and choice.applies(4096, 16) and choice.applies(16, 16)
    assert not choice.applies(17, 17) and not choice.applies(4096, 4096)


@pytest.mark.parametrize("override,message", [
    ({"small": 3}, "small=3 must be 1, 2, 4, 8 or 16"),
    ({"small_dim": 3}, "small_dim=3 must be 1"),
    ({"algo": 4}, "algo=4 must be 1 \\(stream\\), 2 \\(dot\\)"),
    ({"threads": 48}, "threads=48 must be a multiple of 32 in 64..1024"),
    ({"threads": 2048}, "threads=2048 must be a multiple of 32"),
    ({"unroll": 9}, "unroll=9 must be 1..8"),
    ({"g_stages": 1}, "g_stages=1 must be 2..8"),
    ({"g_stages": 9}, "g_stages=9 must be 2..8"),
    ({"algo": 1, "threads": 256, "block_big": 128, "unroll": 4, "g_stages": 4, "k_chunk": 64},
     "k_chunk=64 holds 2 iterations; g_stages=4 needs at least 3"),
    ({"k_chunk": 48}, "k_chunk=48 must be a positive multiple of 32"),
    ({"algo": 1, "block_big": 36, "threads": 256}, "block_big/4 threads along g divide threads"),
    ({"algo": 1, "small": 16, "unroll": 8}, "small\\*unroll = 128 must be at most 64"),
    ({"algo": 2, "block_big": 24}, "rows per warp.*must be a power of two"),
    ({"algo": 2, "threads": 256, "block_big": 128}, "rows per warp.*must be a power of two, at most 8"),
    ({"algo": 2, "small": 16, "threads": 256, "block_big": 64}, "128 accumulators must be at most 64"),
    ({"algo": 2, "small": 1, "threads": 256, "block_big": 64, "unroll": 2}, "copies per iteration must be at most 8"),
    ({"algo": 2, "unroll": 1, "k_chunk": 96}, "k_chunk=96 must be a multiple of the \\d+ k rows"),
    ({"algo": 1, "small": 16, "k_chunk": 4096, "block_big": 32, "unroll": 4}, "exceeds 232448 B"),
    ({"algo": 1, "threads": 256, "block_big": 32, "k_groups": 3}, "k_groups=3 must be threads/\\(block_big/4\\) = 32"),
    ({"algo": 2, "threads": 256, "k_groups": 3}, "k_groups=3 must divide the 8 warps"),
    ({"k_groups": -1}, "k_groups=-1 must be positive"),
    ({"algo": 1, "threads": 768, "block_big": 32, "unroll": 3, "k_chunk": 288}, "staging threads"),
])
def test_constraints_name_the_rule(override, message):
    with pytest.raises(ConfigError, match=message):
        S.config(override)


def test_defaults_are_auto_and_legal():
    cfg = S.default_config
    assert all(v == 0 for k, v in cfg.items() if k != "evict_first") and S.constraints(cfg) == []
    assert cfg["evict_first"] == 1  # not an auto key: the L2 policy of the big operand's copies
    with pytest.raises(ConfigError, match="evict_first=2 must be 0 or 1"):
        S.config({"evict_first": 2})
    with pytest.raises(ConfigError, match="unknown config key 'no_such'"):
        S.config({"no_such": 1})
    # Without a problem the autos resolve for the nominal GEMV (1 x 4096 x 4096, B streamed).
    nominal = S.resolve(cfg)
    assert (nominal["small_dim"], nominal["small"], nominal["algo"]) == (1, 1, 1)
    assert S.block_tile(cfg) == (1, nominal["block_big"]) and S.threads(cfg) == nominal["threads"]
    assert S.kernel_name(cfg, {"vec": 1}) == S.kernel_name(nominal, {"vec": 1})


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,small_dim,small", [(1, 4096, 4096, 1, 1), (4096, 1, 4096, 2, 1),
                                                   (16, 8192, 8192, 1, 16), (8192, 16, 8192, 2, 16),
                                                   (3, 129, 1000, 1, 4), (129, 5, 1000, 2, 8),
                                                   (17, 33, 65, 1, 16), (100, 200, 300, 1, 16)])
def test_fallback_fills_the_autos_for_the_problem(layout, M, N, K, small_dim, small):
    p = dense(M, N, K, layout)
    spec, cfg = S.fallback(S.default_config, p)
    assert spec is S and S.combination_constraints(cfg) == [] and all(cfg[k] for k in skinny.AUTO_KEYS)
    assert (cfg["small_dim"], cfg["small"]) == (small_dim, small)
    # The algorithm follows the big operand's unit stride: B (M small) or A (N small).
    big_along_k = layout[1] == "t" if small_dim == 1 else layout[0] == "n"
    assert cfg["algo"] == (2 if big_along_k else 1)
    assert S.fallback(cfg, p) is None  # complete: nothing left to fill
    bm, bn = S.block_tile(cfg)
    assert (bm if small_dim == 1 else bn) == small


def test_fallback_keeps_the_callers_keys_and_reports_conflicts():
    p = dense(1, 4096, 4096, "nt")  # algo 2
    cfg = resolved(p, {"unroll": 2})
    assert cfg["unroll"] == 2 and skinny.rows_per_warp(cfg) * 2 <= 8
    cfg = resolved(p, {"k_chunk": 128})
    assert cfg["k_chunk"] == 128 and skinny.iteration_k(cfg) == 128
    cfg = resolved(dense(8, 4096, 4096), {"threads": 128, "small": 16})
    assert cfg["threads"] == 128 and cfg["small"] == 16
    cfg = resolved(p, {"threads": 512, "k_groups": 2})
    assert (cfg["threads"], cfg["k_groups"], skinny.rows_per_warp(cfg)) == (512, 2, 8)
    with pytest.raises(ConfigError, match="cannot run this problem.*at most 8"):
        S.fallback(S.config({"block_big": 128, "threads": 256}), p)  # legal for algo 1 (nominal), not for algo 2


def test_vec_rule_checks_alignment_exactly():
    cfg = resolved(dense(1, 4096, 4096))
    assert S.variant(cfg, dense(1, 4096, 4096)) == {"vec": 1}
    assert S.variant(cfg, dense(1, 4096, 4096, b_off=1)) == {"vec": 0}       # B base not 16-byte aligned
    assert S.variant(cfg, dense(1, 4096, 4096, a_off=1)) == {"vec": 1}       # A (small) is read 4 bytes at a time
    assert S.variant(cfg, dense(1, 4094, 4096)) == {"vec": 0}                # rows 4094 floats apart
    p = Problem(1, 4092, 64, 64, 1, 4096, 1, 4092, b_ptr=ALIGNED)            # padded rows (ld 4096)
    assert S.variant(cfg, p) == {"vec": 1}
    p = Problem(1, 4093, 64, 64, 1, 4096, 1, 4093, b_ptr=ALIGNED)            # a partial float4 at the edge
    assert S.variant(cfg, p) == {"vec": 0}
    p = Problem(1, 64, 64, 64, 1, 64, 1, 64, batch=2, a_bs=64, b_bs=64 * 64 + 2, d_bs=64, b_ptr=ALIGNED)
    assert S.variant(cfg, p) == {"vec": 0}                                   # the batch stride misaligns batch 1
    # algo 2 (B column-major): the vector runs along K, which must be a multiple of 4.
    cfg2 = resolved(dense(1, 4096, 4096, "nt"))
    assert cfg2["algo"] == 2
    assert S.variant(cfg2, dense(1, 4096, 4096, "nt")) == {"vec": 1}
    assert S.variant(cfg2, dense(1, 4096, 4095, "nt")) == {"vec": 0}
    assert S.variant(cfg2, dense(1, 4096, 4096, "nt", b_off=2)) == {"vec": 0}
    # A strided operand (no unit stride at all) is never vec.
    p = Problem(1, 64, 64, 64, 1, 128, 2, 64, b_ptr=ALIGNED)
    assert S.variant(resolved(p), p) == {"vec": 0}


def test_huge_k_is_refused():
    with pytest.raises(ConfigError, match="2\\^36"):
        S.check_problem(S.default_config, dense(1, 1, 1 << 36))


# ---- choose: config and split-K ------------------------------------------------------------------
HEADLINE = [(1, 4096, 4096), (4096, 1, 4096), (16, 8192, 8192), (8192, 16, 8192)]


def _launch(cfg, split, p, sms=132):
    r = skinny.renamed(p, cfg["small_dim"])
    tiles = choice.tiles_of(cfg, r, p.batch)
    k_split = -(-(-(-p.K // split)) // 32) * 32 if split > 1 else p.K  # what the host computes
    slices = -(-p.K // k_split) if split > 1 else 1
    return tiles, k_split, slices


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", HEADLINE + [(8, 4096, 4096), (1, 8192, 8192), (3, 129, 1000), (16, 8192, 257),
                                               (1, 1, 4096), (2, 65536, 1024)])
def test_choose_gives_legal_configs_and_enough_blocks(layout, M, N, K):
    p = dense(M, N, K, layout)
    cfg, split = choice.choose(p, 132)
    assert S.constraints(cfg) == [] and all(cfg[k] for k in skinny.AUTO_KEYS)
    assert S.fallback(cfg, p) is None
    tiles, k_split, slices = _launch(cfg, split, p)
    assert slices == split, "choose returns the number of slices the host will run"
    wave = 132 * S.blocks_per_sm(cfg)
    if split > 1:
        assert k_split % 32 == 0 and k_split >= choice.MIN_K_SPLIT
        assert tiles * split <= wave, "split-K fills at most one wave (no idle partial second wave)"
        assert 4 * tiles < 3 * wave, "split-K only when the tiles alone leave a quarter of the wave empty"
    if M * N >= 4096 and K >= 4096:
        gemv = (cfg["algo"], cfg["small"], cfg["threads"], cfg["unroll"]) == (1, 1, skinny.GEMV_THREADS, skinny.GEMV_UNROLL)
        if gemv:  # one 256-thread block of 8-row copies per SM: tiles on (almost) every SM
            assert 4 * tiles * split >= 3 * 132
        else:
            assert tiles * split * cfg["threads"] >= 0.75 * 132 * 512, "threads on (almost) every SM"
        # Bytes in flight per SM: resident threads x float4 loads each (the register budget's promise).
        per_sm = min(S.blocks_per_sm(cfg), math.ceil(tiles * split / 132))
        loads = cfg["unroll"] * (skinny.rows_per_warp(cfg) if cfg["algo"] == 2 else 1)
        assert per_sm * cfg["threads"] * loads * 16 >= 32 * 1024


def test_choose_headline_splits():
    # GEMV, B row-major: 128 tiles of 32 columns, 256 threads = 32 k groups of 8 rows each, no split-K
    # (H200: 23.5 us, against 24.8 for 768 threads x 4 rows; scripts/gemv_gap.py).
    cfg, split = choice.choose(dense(1, 4096, 4096), 132)
    assert (cfg["algo"], cfg["block_big"], cfg["threads"], cfg["k_groups"], cfg["unroll"], split) == (1, 32, 256, 32, 8, 1)
    # GEMV, A row-major (y = A x): a warp per 8 rows and 4 warps splitting k, 256 tiles, no split-K.
    cfg, split = choice.choose(dense(4096, 1, 4096), 132)
    assert (cfg["algo"], cfg["small_dim"], cfg["k_groups"], split) == (2, 2, 4, 1)
    # N small, A row-major: a warp per 4 rows, 256 tiles already fill the GPU.
    cfg, split = choice.choose(dense(8192, 16, 8192), 132)
    assert (cfg["algo"], cfg["small_dim"], cfg["k_groups"], split) == (2, 2, 1, 1)
    # Few tiles: split-K, at most one wave, slices of at least MIN_K_SPLIT.
    cfg, split = choice.choose(dense(3, 129, 4000), 132)
    assert split > 1 and choice.tiles_of(cfg, skinny.renamed(dense(3, 129, 4000), 1), 1) * split <= 132
    # Batched: the batch gives the blocks.
    assert choice.choose(dense(1, 4096, 4096, batch=64), 132)[1] == 1
    # Short K is never split below MIN_K_SPLIT.
    assert choice.choose(dense(1, 64, 100), 132)[1] == 1
    assert choice.choose(dense(1, 64, 300), 132)[1] == 2


# ---- compiled SASS -----------------------------------------------------------------------------
def _auto_cases():
    for small in skinny.SMALLS:
        for small_dim in (1, 2):
            if small_dim == 2 and small not in (1, 16):
                continue
            for algo in (1, 2):
                yield {"small": small, "small_dim": small_dim, "algo": algo}
    # What choose() runs on the headline shapes (other tile widths and k_chunks).
    seen = set()
    for M, N, K in HEADLINE:
        for layout in LAYOUTS:
            cfg, _ = choice.choose(dense(M, N, K, layout), 132)
            key = tuple(sorted(cfg.items()))
            if key not in seen:
                seen.add(key)
                yield cfg


@pytest.mark.parametrize("over", list(_auto_cases()), ids=lambda o: "-".join(f"{k}{v}" for k, v in o.items()))
def test_instantiations_compile_without_spills_and_show_their_sass(over):
    from gemmlab.analysis import sass
    from gemmlab.plan import kernel_for

    cfg = S.config(over)
    c = S.resolve(cfg)
    for variant in S.variants(cfg):
        ck = kernel_for(S, cfg, variant, "sm_90")
        res = sass.resources(ck.cubin, ck.name)
        insns = sass.instructions(ck.cubin, ck.name)
        assert res["local_bytes"] == 0 and res["stack_bytes"] == 0, f"{ck.name}: {res}"
        assert not sass.has_opcode(insns, "LDL") and not sass.has_opcode(insns, "STL"), f"{ck.name} spills"
        assert res["registers"] <= skinny.register_budget(c), (ck.name, res["registers"])
        wanted = S.sass if variant["vec"] else S.sass_scalar
        wanted += ("BAR",) + (("SHFL",) if c["algo"] == 2 else ())
        missing = [op for op in wanted if not sass.has_opcode(insns, op)]
        assert not missing, f"{ck.name}: {missing} not in {sass.mix(insns)}"
        if not variant["vec"]:
            assert not sass.has_opcode(insns, "LDGSTS.E.BYPASS.128"), f"{ck.name}: 16-byte copies in the scalar kernel"


@pytest.mark.parametrize("prefetch", [0, 64, 128, 256])
def test_g_prefetch_widens_the_big_operand_copies_only(prefetch):
    """g_prefetch N: the vec kernel's 16-byte copies of G carry the L2 prefetch size (LTC<N>B in
    SASS), evict_first or not; 0 leaves them plain; the scalar kernel's 4-byte copies never do."""
    from gemmlab.analysis import sass
    from gemmlab.plan import kernel_for

    for ef in (0, 1):
        cfg = S.config({"g_prefetch": prefetch, "evict_first": ef})
        ops = {v: {i.op for i in sass.instructions(ck.cubin, ck.name) if i.op.startswith("LDGSTS")}
               for v in (0, 1) for ck in [kernel_for(S, cfg, {"vec": v}, "sm_90")]}
        wide = {op for op in ops[1] if op.endswith(".128")}
        assert wide, ops
        if prefetch:
            assert wide == {f"LDGSTS.E.BYPASS.LTC{prefetch}B.128"}, ops
        else:
            assert not any("LTC" in op for op in ops[1]), ops
        assert not any("LTC" in op for op in ops[0]), ops
    with pytest.raises(ConfigError, match="g_prefetch=32 must be 0, 64, 128 or 256"):
        S.config({"g_prefetch": 32})


@pytest.mark.parametrize("over", [{}, {"small": 16, "algo": 2, "small_dim": 2}])
def test_compiles_for_sm_80(over):
    """min_cc 80 (cp.async): the A100 build compiles (its register budget is tuned for sm_90)."""
    from gemmlab.analysis import sass
    from gemmlab.plan import kernel_for

    cfg = S.config(over)
    for variant in S.variants(cfg):
        ck = kernel_for(S, cfg, variant, "sm_80")
        insns = sass.instructions(ck.cubin, ck.name)
        assert sass.has_opcode(insns, "LDGSTS") and sass.has_opcode(insns, "FFMA")


def test_shared_memory_size_is_the_kernels(monkeypatch):
    # The template carries the spec's byte count and the .cuh static_asserts it: a wrong count
    # does not compile.
    from gemmlab.errors import CompileError
    from gemmlab.plan import kernel_for

    cfg = S.config({"small": 4, "algo": 1, "threads": 256, "block_big": 128, "unroll": 4, "g_stages": 3, "k_chunk": 256})
    ring = 3 * 4 * 256 * 16   # 3 stages x 4 rows x 256 threads x 16 bytes
    assert S.smem_bytes(cfg, {"vec": 1}) == ring + 2 * 256 * 4 * 4  # + two S stages of 256 rows of 4 floats
    kernel_for(S, cfg, {"vec": 1}, "sm_90")
    real = skinny.layout
    monkeypatch.setattr(skinny, "layout", lambda c: {**real(c), "SMEM_BYTES": 4})
    with pytest.raises(CompileError, match="disagree on shared memory"):
        kernel_for(S, cfg, {"vec": 1}, "sm_90")


# ---- the kernel source on the CPU ---------------------------------------------------------------
_PRELUDE = r'''
// CPU emulation of the CUDA subset skinny.cuh and the generated wrapper use.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __restrict__
#define __shared__
#define __align__(n)
#define __launch_bounds__(...)
struct emu_dim3 { unsigned x, y, z; };
extern emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
inline float2 make_float2(float a, float b) { return float2{a, b}; }
unsigned long long __cvta_generic_to_shared(const void* p);
void __syncthreads();
float __shfl_xor_sync(unsigned mask, float v, int offset);
namespace emu {
void copy(unsigned dst, const void* src, int bytes, int src_bytes);
void commit();
void wait(int pending);
}
struct Range { const char* lo; const char* hi; };
int emu_run(void (*kernel_body)(), unsigned gx, unsigned gy, unsigned gz, int threads, size_t smem_bytes, int order,
            std::vector<Range> ranges);
'''

_ASYNC = r'''
// Emulated ptx/cp_async.cuh: the copies land when the issuing thread waits for their group.
#pragma once
namespace gemmlab {
namespace async {
inline unsigned smem_address(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
inline void copy_16(unsigned dst, const void* src, int src_bytes) { emu::copy(dst, src, 16, src_bytes); }
inline void copy_4(unsigned dst, const void* src, int src_bytes) { emu::copy(dst, src, 4, src_bytes); }
// the L2 policy changes nothing a single thread can see
inline unsigned long long l2_evict_first_policy() { return 0x12ull; }
inline void copy_16(unsigned dst, const void* src, int src_bytes, unsigned long long) { copy_16(dst, src, src_bytes); }
inline void copy_4(unsigned dst, const void* src, int src_bytes, unsigned long long) { copy_4(dst, src, src_bytes); }
inline unsigned long long l2_evict_normal_policy() { return 0x13ull; }
template <int PREFETCH>
inline void copy_16_prefetch(unsigned dst, const void* src, int src_bytes, unsigned long long) { copy_16(dst, src, src_bytes); }
inline void commit_group() { emu::commit(); }
template <int PENDING>
inline void wait_group() { emu::wait(PENDING); }
}  // namespace async
}  // namespace gemmlab
'''

_RUNTIME = r'''
#include "prelude.h"
#include <ucontext.h>
#include <algorithm>
#include <random>
emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
static const size_t SMEM_CAP = 240 * 1024;
alignas(128) unsigned char smem[SMEM_CAP];
static size_t smem_used = 0;
static std::vector<Range> readable;
static long errors = 0;
static void report(const char* what, const void* p) {
    if (errors++ < 10)
        fprintf(stderr, "emu: %s at %p (thread %u, block %u,%u,%u)\n", what, p, threadIdx.x, blockIdx.x, blockIdx.y,
                blockIdx.z);
}
static bool check_read(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    for (auto& r : readable)
        if (c >= r.lo && c + n <= r.hi) return true;
    report("global read out of bounds", p);
    return false;
}
unsigned long long __cvta_generic_to_shared(const void* p) {
    const unsigned char* c = static_cast<const unsigned char*>(p);
    if (c < smem || c >= smem + SMEM_CAP) report("not a shared-memory address", p);
    return static_cast<unsigned long long>(c - smem);
}
enum { RUNNABLE, AT_BARRIER, AT_WARP, DONE };
struct Copy { unsigned dst; const void* src; int bytes, src_bytes; };
struct Fiber {
    ucontext_t ctx;
    std::vector<char> stack;
    int state = RUNNABLE;
    std::vector<std::vector<Copy>> groups;  // committed cp.async groups, oldest first
    std::vector<Copy> open;
};
static std::vector<Fiber> fibers;
static ucontext_t sched_ctx;
static int cur = 0, nthreads = 0, at_barrier = 0;
static int warp_count[32];
static float warp_buf[32][32];
static void (*body)() = nullptr;
static void trampoline() {
    body();
    fibers[cur].state = DONE;
    swapcontext(&fibers[cur].ctx, &sched_ctx);
}
static void yield() { swapcontext(&fibers[cur].ctx, &sched_ctx); }
void __syncthreads() {
    fibers[cur].state = AT_BARRIER;
    if (++at_barrier == nthreads) {
        at_barrier = 0;
        for (auto& f : fibers)
            if (f.state == AT_BARRIER) f.state = RUNNABLE;
    }
    yield();
}
static void warp_barrier() {
    const int w = cur / 32, lanes = std::min(32, nthreads - w * 32);
    fibers[cur].state = AT_WARP;
    if (++warp_count[w] == lanes) {
        warp_count[w] = 0;
        for (int i = w * 32; i < w * 32 + lanes; ++i) fibers[i].state = RUNNABLE;
    }
    yield();
}
float __shfl_xor_sync(unsigned, float v, int offset) {
    const int w = cur / 32, lane = cur % 32;
    warp_buf[w][lane] = v;
    warp_barrier();
    const float r = warp_buf[w][lane ^ offset];
    warp_barrier();
    return r;
}
namespace emu {
void copy(unsigned dst, const void* src, int bytes, int src_bytes) {
    if (dst + bytes > smem_used) report("cp.async past the dynamic shared memory", smem + dst);
    if (dst % bytes) report("misaligned cp.async destination", smem + dst);
    if (src_bytes > 0) check_read(src, src_bytes);
    fibers[cur].open.push_back(Copy{dst, src, bytes, src_bytes});
}
void commit() {
    fibers[cur].groups.push_back(fibers[cur].open);
    fibers[cur].open.clear();
}
void wait(int pending) {
    auto& g = fibers[cur].groups;
    while (static_cast<int>(g.size()) > pending) {
        for (auto& c : g.front()) {
            unsigned char tmp[16] = {0};  // bytes past src_bytes are zero-filled
            if (c.src_bytes > 0 && check_read(c.src, c.src_bytes)) memcpy(tmp, c.src, c.src_bytes);
            if (c.dst + c.bytes <= SMEM_CAP) memcpy(smem + c.dst, tmp, c.bytes);
        }
        g.erase(g.begin());
    }
}
}  // namespace emu
// Blocks one after another; the threads of a block are fibers run in `order` (0 forward,
// 1 reverse, more: shuffled with that seed) between barriers.
int emu_run(void (*kernel_body)(), unsigned gx, unsigned gy, unsigned gz, int threads, size_t smem_bytes, int order,
            std::vector<Range> ranges) {
    readable = ranges;
    body = kernel_body;
    nthreads = threads;
    smem_used = smem_bytes;
    blockDim = {static_cast<unsigned>(threads), 1, 1};
    gridDim = {gx, gy, gz};
    std::mt19937 rng(order);
    std::vector<int> seq(threads);
    for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x) {
                blockIdx = {x, y, z};
                memset(smem, 0xff, SMEM_CAP);  // NaN: what is read before it is written shows in the result
                fibers.assign(threads, Fiber());
                at_barrier = 0;
                memset(warp_count, 0, sizeof warp_count);
                for (int t = 0; t < threads; ++t) {
                    Fiber& f = fibers[t];
                    f.stack.resize(256 * 1024);
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = f.stack.data();
                    f.ctx.uc_stack.ss_size = f.stack.size();
                    f.ctx.uc_link = nullptr;
                    makecontext(&f.ctx, trampoline, 0);
                }
                for (int t = 0; t < threads; ++t) seq[t] = order == 1 ? threads - 1 - t : t;
                for (;;) {
                    if (order >= 2) std::shuffle(seq.begin(), seq.end(), rng);
                    bool ran = false, all_done = true;
                    for (int t : seq) {
                        if (fibers[t].state == DONE) continue;
                        all_done = false;
                        if (fibers[t].state != RUNNABLE) continue;
                        cur = t;
                        threadIdx = {static_cast<unsigned>(t), 0, 0};
                        swapcontext(&sched_ctx, &fibers[t].ctx);
                        ran = true;
                    }
                    if (all_done) break;
                    if (!ran) {
                        fprintf(stderr, "emu: deadlock (a barrier not every thread reaches) in block %u,%u,%u\n", x, y, z);
                        return 2;
                    }
                }
                for (auto& f : fibers)
                    if (!f.groups.empty() || !f.open.empty()) report("cp.async still pending at exit", nullptr);
                for (size_t i = smem_bytes; i < SMEM_CAP; ++i)
                    if (smem[i] != 0xff) {
                        report("shared-memory write past the dynamic size", smem + i);
                        break;
                    }
            }
    return errors ? 1 : 0;
}
'''

_DRIVER = r'''
// Reads the launch and the arrays, runs the grid, writes D back.
static const float *g_A, *g_B;
static float* g_D;
static long long g_p[14];
static float g_alpha, g_beta;
static void body() {
    EMU_KERNEL(g_A, g_B, g_D, g_p[0], g_p[1], g_p[2], g_p[3], g_p[4], g_p[5], g_p[6], g_p[7], g_alpha, g_beta,
               g_p[8], g_p[9], g_p[10], g_p[11], g_p[12], g_p[13],
               g_D, g_p[7], 1, g_p[11]);  // C is D (c = out): its strides are D's
}
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "rb");
    long long h[12];  // gx gy gz threads smem order a_len a_off b_len b_off d_len d_off
    float ab[2];
    if (!f || fread(h, sizeof h, 1, f) != 1 || fread(g_p, sizeof g_p, 1, f) != 1 || fread(ab, sizeof ab, 1, f) != 1)
        return 3;
    g_alpha = ab[0], g_beta = ab[1];
    std::vector<float> A(h[6]), B(h[8]), D(h[10]);  // malloc'd: 16-byte aligned at index 0
    if (fread(A.data(), 4, h[6], f) != (size_t)h[6] || fread(B.data(), 4, h[8], f) != (size_t)h[8] ||
        fread(D.data(), 4, h[10], f) != (size_t)h[10])
        return 3;
    fclose(f);
    g_A = A.data() + h[7];
    g_B = B.data() + h[9];
    g_D = D.data() + h[11];
    std::vector<Range> r = {{(const char*)A.data(), (const char*)(A.data() + h[6])},
                            {(const char*)B.data(), (const char*)(B.data() + h[8])}};
    const int rc = emu_run(body, h[0], h[1], h[2], (int)h[3], (size_t)h[4], (int)h[5], r);
    FILE* o = fopen(argv[2], "wb");
    fwrite(D.data(), 4, h[10], o);
    fclose(o);
    return rc;
}
'''


class Emulator:
    """Builds (per config and variant, once) and runs the generated kernel on the CPU."""

    def __init__(self, root):
        self.root = root
        self.built = {}

    def build(self, cfg, variant):
        from gemmlab.jit.compiler import KERNEL_DIR
        from gemmlab.jit.source import generate

        key = (tuple(sorted(cfg.items())), tuple(sorted(variant.items())))
        if key not in self.built:
            name, src = generate(S, cfg, variant)
            d = self.root / name
            d.mkdir()
            for f in ("common.cuh", "skinny.cuh"):  # the real kernel source, unchanged
                shutil.copy(KERNEL_DIR / f, d)
            (d / "prelude.h").write_text(_PRELUDE)
            (d / "ptx").mkdir(exist_ok=True)
            (d / "ptx" / "cp_async.cuh").write_text(_ASYNC)  # the emulated kernels/ptx/cp_async.cuh
            shutil.copy(KERNEL_DIR / "ptx" / "grid_dependency.cuh", d / "ptx")  # real: empty off the GPU
            (d / "runtime.cpp").write_text(_RUNTIME)
            (d / "driver.cpp").write_text(f'#include "prelude.h"\n{src}\n#define EMU_KERNEL {name}\n{_DRIVER}')
            r = subprocess.run(["g++", "-std=c++17", "-O1", "-fno-strict-aliasing", "-w", "-I", str(d), "-o",
                                str(d / "k"), str(d / "driver.cpp"), str(d / "runtime.cpp")],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-3000:]
            self.built[key] = d / "k"
        return self.built[key]

    def run(self, cfg, variant, prob, A, a_off, B, b_off, D, order):
        exe = self.build(cfg, variant)
        grid = S.grid(cfg, prob)
        h = [*grid, S.threads(cfg), S.smem_bytes(cfg, variant), order, A.size, a_off, B.size, b_off, D.size, 0]
        p = [prob.M, prob.N, prob.K, prob.a_rs, prob.a_cs, prob.b_rs, prob.b_cs, prob.ldd, prob.batch, prob.a_bs,
             prob.b_bs, prob.d_bs, prob.k_split, prob.d_ss]
        inp, out = exe.parent / "in.bin", exe.parent / "out.bin"
        with open(inp, "wb") as fh:
            fh.write(struct.pack("<12q", *h) + struct.pack("<14q", *p) + struct.pack("<2f", prob.alpha, prob.beta))
            fh.write(A.tobytes() + B.tobytes() + D.tobytes())
        r = subprocess.run([str(exe), str(inp), str(out)], capture_output=True, text=True, timeout=300)
        return r.returncode, r.stderr, np.fromfile(out, dtype=np.float32)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("no g++: the CPU emulation of the kernel needs a C++17 compiler")
    return Emulator(tmp_path_factory.mktemp("skinny_emu"))


def _operand(rng, rows, cols, col_major, ld_pad, off, batch):
    """A rows x cols operand in a flat float32 buffer (nothing after its last element): row- or
    column-major, leading dimension padded by ld_pad, starting at element off; batch copies."""
    inner, outer = (rows, cols) if col_major else (cols, rows)
    ld = inner + ld_pad
    bs = ld * outer + 3 if batch > 1 else 0
    size = off + (batch - 1) * bs + ld * (outer - 1) + inner if rows and cols else off + 1
    buf = rng.uniform(-1, 1, size).astype(np.float32)
    rs, cs = (1, ld) if col_major else (ld, 1)
    mats = [np.lib.stride_tricks.as_strided(buf[off + b * bs:], (rows, cols), (4 * rs, 4 * cs)).astype(np.float64)
            if rows and cols else np.zeros((rows, cols)) for b in range(batch)]
    return buf, rs, cs, bs, mats


def emulate(emulator, M, N, K, layout="nn", config=None, *, splits=1, batch=1, alpha=0.5, beta=3.0, ld_pad=(0, 0),
            offs=(0, 0), ldd_pad=0, orders=(0, 1), seed=0):
    """Run the kernel on the CPU as gemmlab would launch it (split-K slices reduced here) and
    compare with float64; returns (config, variant) that ran."""
    rng = np.random.default_rng(seed)
    Abuf, a_rs, a_cs, a_bs, As = _operand(rng, M, K, layout[0] == "t", ld_pad[0], offs[0], batch)
    Bbuf, b_rs, b_cs, b_bs, Bs = _operand(rng, K, N, layout[1] == "t", ld_pad[1], offs[1], batch)
    ldd = N + ldd_pad
    d_bs = M * ldd + 7 if batch > 1 else 0
    prob = Problem(M, N, K, a_rs, a_cs, b_rs, b_cs, ldd, batch, a_bs, b_bs, d_bs, ALIGNED + 4 * offs[0],
                   2 * ALIGNED + 4 * offs[1], 3 * ALIGNED, alpha, beta)
    if splits > 1 and K > 0:
        k_split = -(-(-(-K // splits)) // 32) * 32
        if -(-K // k_split) > 1:
            prob = dataclasses.replace(prob, splits=-(-K // k_split), k_split=k_split, d_ss=batch * (M * ldd + 7) + 13,
                                       alpha=1.0, beta=0.0)
    cfg = resolved(prob, config)
    variant = S.variant(cfg, prob)
    n = prob.splits
    span = (n - 1) * prob.d_ss + (batch - 1) * d_bs + M * ldd + 16
    C = rng.uniform(-1, 1, span).astype(np.float32)
    D = C.copy() if n == 1 and beta != 0 else np.full(span, np.nan, np.float32)
    outs = []
    for order in orders:
        rc, err, out = emulator.run(cfg, variant, prob, Abuf, offs[0], Bbuf, offs[1], D, order)
        assert rc == 0, f"{cfg} {variant}: {err}"
        outs.append(out)
    for o in outs[1:]:
        assert np.array_equal(o, outs[0], equal_nan=True), "the result depends on the thread schedule (a race)"
    out = outs[0]

    def view(buf, base):
        return np.lib.stride_tricks.as_strided(buf[base:], (M, N), (4 * ldd, 4)).astype(np.float64)

    written = np.zeros(span, bool)
    tol = 1e-5 * max(1.0, math.sqrt(max(K, 1) / 4096))
    for b in range(batch):
        ref = alpha * (As[b] @ Bs[b]) + (beta * view(C, b * d_bs) if beta != 0 else 0.0)
        if n == 1:
            got = view(out, b * d_bs)
        else:
            got = sum(view(out, s * prob.d_ss + b * d_bs) for s in range(n))
            got = alpha * got + (beta * view(C, b * d_bs) if beta != 0 else 0.0)
        for s in range(n):
            for i in range(M):
                start = s * prob.d_ss + b * d_bs + i * ldd
                written[start:start + N] = True
        assert np.isfinite(got).all(), f"{cfg} {variant}: NaN or Inf in the output"
        den = np.linalg.norm(ref)
        rel = np.linalg.norm(got - ref) / (den if den > 0 else 1.0)
        assert rel <= tol, f"{cfg} {variant}: relative error {rel:.2e} > {tol:.1e}"
    assert np.array_equal(out[~written], D[~written], equal_nan=True), "wrote outside the output"
    return cfg, variant


EMU_CASES = [
    # shape, layout, config, options
    ((1, 300, 700), "nn", None, {}),                               # GEMV, algo 1, float4
    ((1, 300, 700), "nt", None, {}),                               # GEMV, algo 2, float4
    ((300, 1, 700), "tn", None, {"splits": 3}),                    # N = 1, algo 1, split-K
    ((300, 1, 700), "nn", None, {"splits": 3}),                    # N = 1, algo 2, split-K
    ((3, 129, 1000), "nn", None, {}),                              # rows of 129 floats: scalar
    ((3, 129, 1000), "nt", None, {}),
    ((129, 3, 1000), "tn", None, {}),
    ((129, 3, 1000), "tt", None, {}),
    ((16, 200, 257), "nn", None, {"splits": 2}),                   # small 16, algo 1, K odd
    ((200, 16, 257), "nn", None, {}),                              # small 16, algo 2, S staged along s
    ((16, 200, 257), "tt", None, {}),
    ((200, 16, 256), "tn", None, {"batch": 2}),                    # small 16, algo 1, float4, batched
    ((17, 33, 65), "nn", None, {}),                                # both > 16: several small tiles
    ((33, 17, 65), "nt", None, {}),
    ((1, 1, 1), "nn", None, {}),
    ((5, 7, 0), "nn", None, {}),                                   # K = 0: beta * C
    ((5, 7, 0), "tt", None, {"beta": 0.0}),                        # K = 0, beta = 0: zeros over NaN
    ((8, 64, 512), "nn", None, {"beta": 0.0}),                     # beta = 0 never reads D (NaN there)
    ((64, 8, 512), "nt", None, {"beta": 0.0, "splits": 2}),
    ((4, 64, 300), "nn", None, {"offs": (1, 1), "ld_pad": (1, 3)}),   # misaligned pointers and rows
    ((64, 4, 300), "tt", None, {"offs": (2, 3), "ld_pad": (3, 1), "ldd_pad": 3}),
    ((2, 96, 512), "nn", None, {"ld_pad": (0, 4), "batch": 3, "splits": 2}),  # padded ld, float4, batch
    ((96, 2, 512), "nn", None, {"ld_pad": (4, 0), "batch": 3}),
    ((8, 130, 600), "nn", {"k_chunk": 128, "threads": 128}, {}),   # many stages, a partial last one
    ((1, 200, 2000), "nn", {"k_chunk": 768}, {}),                  # 768 threads (96 k groups), 3 stages
    ((2, 96, 1500), "nt", None, {}),                               # algo 2, k groups, 2 stages
    ((8, 130, 600), "nt", {"k_chunk": 128, "threads": 512}, {"splits": 2}),
    ((13, 70, 300), "tn", {"g_stages": 4, "small": 16, "unroll": 2}, {}),
    ((70, 13, 300), "nn", {"g_stages": 2, "block_big": 32}, {}),
    ((70, 13, 3000), "tn", {"g_stages": 5, "k_chunk": 512}, {"splits": 2}),  # a deep ring over several stages
    ((6, 100, 333), "nn", {"algo": 2}, {}),                        # the "wrong" algorithm: still correct
    ((6, 100, 333), "nt", {"algo": 1}, {"batch": 2}),
    ((100, 6, 333), "nn", {"small_dim": 1}, {}),                   # the "wrong" orientation: 7 tiles of 16 rows
]


@pytest.mark.parametrize("shape,layout,config,opts", EMU_CASES,
                         ids=[f"{'x'.join(map(str, s))}-{lay}-{i}" for i, (s, lay, _, _) in enumerate(EMU_CASES)])
def test_kernel_source_on_the_cpu(emulator, shape, layout, config, opts):
    emulate(emulator, *shape, layout, config, **opts)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", HEADLINE)
def test_headline_configs_on_the_cpu(emulator, M, N, K, layout):
    """The instantiation choose() runs on each headline shape, on the shape cut to at most 1024
    along M and N and K = 1000 (several stages and a partial one)."""
    cfg, _ = choice.choose(dense(M, N, K, layout), 132)
    emulate(emulator, min(M, 1024), min(N, 1024), 1000, layout, cfg, orders=(0,))


def test_emulated_cases_cover_every_path():
    """The cases above reach both algorithms, both orientations, float4 and scalar, split-K and
    batches (checked on the configs they resolve to, without running them again)."""
    seen = set()
    for (M, N, K), layout, config, opts in EMU_CASES:
        ld_pad, offs = opts.get("ld_pad", (0, 0)), opts.get("offs", (0, 0))
        _, a_rs, a_cs, _, _ = _operand(np.random.default_rng(0), M, K, layout[0] == "t", ld_pad[0], offs[0], 1)
        _, b_rs, b_cs, _, _ = _operand(np.random.default_rng(0), K, N, layout[1] == "t", ld_pad[1], offs[1], 1)
        p = Problem(M, N, K, a_rs, a_cs, b_rs, b_cs, N, 1, a_ptr=ALIGNED + 4 * offs[0], b_ptr=2 * ALIGNED + 4 * offs[1])
        cfg = resolved(p, config)
        seen.add((cfg["algo"], cfg["small_dim"], S.variant(cfg, p)["vec"], cfg["g_stages"]))
    for algo in (1, 2):
        for small_dim in (1, 2):
            for vec in (0, 1):
                assert any(s[:3] == (algo, small_dim, vec) for s in seen), (algo, small_dim, vec)
    assert {s[3] for s in seen} >= {2, 3, 4, 5}


# ---- GPU ---------------------------------------------------------------------------------------
GPU_SHAPES = [(1, 4096, 4096), (4096, 1, 4096), (3, 129, 1000), (16, 8192, 257), (8192, 16, 257), (17, 33, 65),
              (1, 1, 1), (5, 7, 0), (7, 5, 33), (16, 16, 4097)]


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", GPU_SHAPES)
def test_gpu_results(layout, M, N, K):
    from gemmlab.check import check_stage

    r = check_stage("skinny", M, N, K, layout)
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K,split", [(1, 4096, 4096, 3), (4096, 1, 4096, 5), (16, 1000, 1001, 4),
                                         (1000, 16, 1001, 4)])
def test_gpu_split_k(layout, M, N, K, split):
    """Through the plan layer's split_k (partials + the deterministic reduce kernel)."""
    from gemmlab.check import check_stage

    r = check_stage("skinny", M, N, K, layout, config={"split_k": split})
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (16, 8192, 8192), (8192, 16, 8192), (4096, 1, 4096)])
def test_gpu_split_k_is_deterministic(M, N, K):
    import torch

    import gemmlab

    a, b = torch.rand(M, K, device="cuda") - 0.5, torch.rand(K, N, device="cuda") - 0.5
    first = gemmlab.gemm(a, b, stage="skinny", config={"split_k": 4})
    for _ in range(3):
        assert torch.equal(gemmlab.gemm(a, b, stage="skinny", config={"split_k": 4}), first)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("config", [{"threads": 128}, {"threads": 512}, {"k_chunk": 128}, {"g_stages": 2},
                                    {"g_stages": 4, "small": 16}, {"algo": 1}, {"algo": 2},
                                    {"small_dim": 1}, {"small_dim": 2}])
def test_gpu_other_configs(layout, config):
    from gemmlab.check import check_stage

    for M, N, K in ((5, 700, 1001), (700, 5, 1001)):
        r = check_stage("skinny", M, N, K, layout, config=config)
        assert r.correct, (M, N, K, r)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(1, 1000, 999), (1000, 1, 999), (16, 300, 257), (300, 16, 257)])
@pytest.mark.parametrize("transposed", [False, True])
def test_gpu_misaligned_views(M, N, K, transposed):
    """a[:, 1:]-style views: base pointers 4 bytes past alignment, rows of odd length."""
    import torch

    import gemmlab
    from gemmlab.check import ALPHA, BETA, compare, reference

    def view(rows, cols, trans):
        if trans:
            return (torch.rand(cols, rows + 1, device="cuda") * 2 - 1)[:, 1:].t()
        return (torch.rand(rows, cols + 1, device="cuda") * 2 - 1)[:, 1:]

    a, b = view(M, K, transposed), view(K, N, not transposed)
    c = torch.rand(M, N, device="cuda") * 2 - 1
    out = torch.full((M, N), float("nan"), device="cuda")
    gemmlab.gemm(a, b, c, alpha=ALPHA, beta=BETA, out=out, stage="skinny")
    torch.cuda.synchronize()
    r = compare(out, reference(a, b, c, ALPHA, BETA), K)
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tn"])
@pytest.mark.parametrize("M,N,K", [(1, 513, 300), (513, 2, 300), (16, 64, 1024)])
def test_gpu_batched(layout, M, N, K):
    from gemmlab.check import check_stage

    r = check_stage("skinny", M, N, K, layout, batch=3)
    assert r.correct, r


@pytest.mark.gpu
def test_gpu_batched_broadcast():
    import torch

    import gemmlab
    from gemmlab.check import compare

    a = torch.rand(5, 4, 300, device="cuda") - 0.5  # 5 batches of 4 x 300
    b = torch.rand(1, 300, 1000, device="cuda") - 0.5  # one B for all of them
    out = gemmlab.gemm_batched(a, b, stage="skinny")
    assert compare(out, a.double() @ b.double(), 300).correct
    out = gemmlab.gemm_batched(b.transpose(1, 2).expand(5, -1, -1).contiguous(), a.transpose(1, 2), stage="skinny")
    assert compare(out, b.transpose(1, 2).double() @ a.transpose(1, 2).double(), 300).correct


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("M,N,K", [(2, 1000, 777), (1000, 2, 777)])
def test_gpu_beta0_never_reads_out(layout, M, N, K):
    from gemmlab.check import check_stage_poisoned

    r = check_stage_poisoned("skinny", M, N, K, layout)
    assert r.correct, r


@pytest.mark.gpu
def test_gpu_column_major_out_and_in_place():
    import torch

    import gemmlab
    from gemmlab.check import compare

    a = torch.rand(3, 500, device="cuda") - 0.5
    b = torch.rand(500, 700, device="cuda") - 0.5
    out = torch.full((700, 3), float("nan"), device="cuda").t()  # column-major 3 x 700: the transposed problem
    gemmlab.gemm(a, b, out=out, stage="skinny")
    torch.cuda.synchronize()
    assert compare(out, a.double() @ b.double(), 500).correct
    c = torch.rand(3, 700, device="cuda")
    ref = 2.0 * (a.double() @ b.double()) + 0.25 * c.double()
    gemmlab.gemm(a, b, c, alpha=2.0, beta=0.25, out=c, stage="skinny")
    torch.cuda.synchronize()
    assert compare(c, ref, 500).correct


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (8192, 16, 8192)])
def test_gpu_auto_runs_skinny(monkeypatch, capsys, M, N, K):
    """stage="auto" hands skinny shapes to this kernel (heuristics/skinny.py, with choose()'s split)."""
    import torch

    import gemmlab
    from gemmlab.check import compare

    monkeypatch.setenv("GEMMLAB_PRINT_CONFIG", "1")
    a, b = torch.rand(M, K, device="cuda") - 0.5, torch.rand(K, N, device="cuda") - 0.5
    out = gemmlab.gemm(a, b)
    torch.cuda.synchronize()
    assert "gemmlab_skinny" in capsys.readouterr().err
    assert compare(out, a.double() @ b.double(), K).correct
