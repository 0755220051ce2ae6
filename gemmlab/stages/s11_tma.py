"""s11 tma (notes 000 §10.5): s10's warp-tiled SIMT FFMA core fed by Hopper TMA bulk tensor
copies that complete on mbarriers (full/empty pair per stage). By default a producer warpgroup
issues the copies (warp specialization; setmaxnreg, so the kernel is compiled for sm_90a) and
the consumer warps meet at a named barrier every K tile (``producer_warp``, ``consumer_sync``).

Variants: the shared layout per operand, as in s10 (``a_k_major``, ``b_n_major``); all four
layouts (nn, nt, tn, tt) run on TMA. A problem TMA cannot describe goes to s10 (``fallback``):
an operand without a unit-stride dimension, a base address or row/batch stride that is not a
multiple of 16 bytes, more than 65535 batches, a dimension of 2^31 or more, or K == 0; also when
this cuda.core cannot build tensor-map arguments. A problem smaller than one tile stays on TMA (the
boxes hang over and are zero-filled). The report names the kernel that ran.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from . import tensor_map
from .base import REG_FILE, Param, Problem
from .s10_cp_async import FRAG_PREFETCH_PARAM, STAGE as S10, CpAsync, fragment_loads

INT32_LIMIT = 2**31
SMEM_PER_SM = 228 * 1024           # sm_90: shared memory an SM holds
SMEM_RESERVED_PER_BLOCK = 1024     # what the driver keeps per resident block


def _round_1k(n: int) -> int:
    return (n + 1023) // 1024 * 1024


def operand_maps(cfg, problem: Problem) -> dict:
    """The tensor map arguments of A and B: {"a": (ptr, shape, strides, box, swizzle), "b": ...}
    (outermost first: (batch, outer, inner)), plus "batch_mask"."""
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    p = problem
    out = {}
    mask = 0
    for which in ("a", "b"):
        if which == "a":
            k_major = p.a_k_major
            inner, outer = (p.K, p.M) if k_major else (p.M, p.K)
            inner_stride, outer_stride = (p.a_cs, p.a_rs) if k_major else (p.a_rs, p.a_cs)
            box = (1, bm, bk) if k_major else (1, bk, bm)
            swizzle = 4 * bk if k_major and cfg.get("a_swizzle", 1) else 0  # As[m][k] rows, swizzled
            ptr, bs = p.a_ptr, p.a_bs
        else:
            n_major = p.b_n_major
            inner, outer = (p.N, p.K) if n_major else (p.K, p.N)
            inner_stride, outer_stride = (p.b_cs, p.b_rs) if n_major else (p.b_rs, p.b_cs)
            box = (1, bk, bn) if n_major else (1, bn, bk)
            swizzle = 0 if n_major else 4 * bk  # Bs[n][k]: rows of block_k floats, swizzled
            ptr, bs = p.b_ptr, p.b_bs
        # A single row or column: its stride is never used; give the map a legal one.
        if outer == 1:
            outer_stride = -(-inner // 4) * 4
        batched = p.batch > 1 and bs != 0
        extent = outer * outer_stride
        batch_stride = bs if batched else -(-extent // 4) * 4
        out[which] = (ptr, (p.batch if batched else 1, outer, inner), (batch_stride, outer_stride, inner_stride),
                      box, swizzle)
        mask |= (1 if which == "a" else 2) if batched else 0
    out["batch_mask"] = mask
    return out


def tma_problems(cfg, problem: Problem) -> list[str]:
    """Why TMA cannot run ``problem`` (empty: it can)."""
    p = problem
    out = []
    if p.K == 0:
        out.append("K == 0 (nothing to load)")
    if max(p.M, p.N, p.K) >= INT32_LIMIT:
        out.append("a dimension of 2^31 or more (TMA coordinates are 32-bit)")
    if p.batch > 65535:
        out.append(f"{p.batch} batches (the batch index is blockIdx.z, at most 65535)")
    if p.splits > 1 and p.k_split % cfg["block_k"]:
        out.append(f"split-K slices of {p.k_split} are not whole K tiles of {cfg['block_k']}")
    if out:
        return out
    maps = operand_maps(cfg, p)
    for which in ("a", "b"):
        ptr, shape, strides, box, swizzle = maps[which]
        # A box may be larger than the tensor (M < block_m, N < block_n or K < block_k): the TMA
        # unit zero-fills what hangs over and still counts the whole box's bytes on the barrier, as
        # for the boxes that hang off the far edge of any matrix that is not a tile multiple.
        out += [f"{which.upper()}: {m}" for m in tensor_map.problems(ptr, shape, strides, box, swizzle, overhang=True)]
        if shape[0] > 1 and strides[0] < shape[1] * strides[1]:
            out.append(f"{which.upper()}: batches overlap (batch stride {strides[0]} elements)")
    return out


class Tma(CpAsync):
    max_stages = 16

    def producer_threads(self, cfg) -> int:
        """S11Tma::PRODUCER_THREADS: a warpgroup when the consumers are whole warpgroups (setmaxnreg
        moves registers per warpgroup), else one warp; 0 without ``producer_warp``."""
        if not cfg.get("producer_warp", 0):
            return 0
        return 128 if self.consumer_threads(cfg) % 128 == 0 else 32

    def threads(self, cfg):
        return self.consumer_threads(cfg) + self.producer_threads(cfg)

    def compile_arch(self, cfg, arch):
        # setmaxnreg (the producer warpgroup's registers to the consumers) needs the sm_90a target;
        # such a cubin runs on compute capability 9.0 only, which is what arch "sm_90" means here.
        return "sm_90a" if arch == "sm_90" and self.producer_threads(cfg) == 128 else arch

    def constraints(self, cfg):
        out = super().constraints(cfg)
        if cfg["block_m"] > 256 or cfg["block_n"] > 256:
            out.append(f"block {cfg['block_m']}x{cfg['block_n']}: a TMA box is at most 256 per dimension")
        for key in ("producer_warp", "consumer_sync", "ffma_rotate", "ffma_serpentine"):
            if cfg.get(key, 0) not in (0, 1):
                out.append(f"{key}={cfg[key]} must be 0 or 1")
        if cfg.get("ffma_rotate", 0) and cfg.get("ffma_serpentine", 0):
            out.append("ffma_rotate=1 and ffma_serpentine=1: one FFMA order at a time")
        if cfg.get("b_scalar", -1) not in (-1, 0, 1):
            out.append(f"b_scalar={cfg['b_scalar']} must be -1 (auto), 0 or 1")
        if cfg.get("persistent", -1) not in (-1, 0, 1):
            out.append(f"persistent={cfg['persistent']} must be -1 (the runtime's rule), 0 or 1")
        if cfg.get("b_transpose", 0) not in (0, 1, 2):
            out.append(f"b_transpose={cfg['b_transpose']} must be 0, 1 or 2")
        elif cfg.get("b_transpose", 0) == 1 and cfg.get("b_scalar", -1) == 1:
            out.append("b_transpose=1 with b_scalar=1: a transposed B is read as an N-major one (b_scalar -1 or 0)")
        if not out and self.threads(cfg) > 1024:
            out.append(f"threads = consumers + producer warp = {self.threads(cfg)} must be at most 1024")
        return out

    @staticmethod
    def stage_buffer_bytes(cfg) -> int:
        """The pipeline's stage buffers: stages x (A tile + B tile), each 1024-byte aligned."""
        return cfg["stages"] * (_round_1k(cfg["block_m"] * cfg["block_k"] * 4) +
                                _round_1k(cfg["block_k"] * cfg["block_n"] * 4))

    @staticmethod
    def transposed_b_bytes(cfg) -> int:
        """S11Tma::BT_BYTES: with ``b_transpose``, one [k][n] tile of B per row of warps (counted
        for every layout: the launch and the constraints see one size per config)."""
        if not cfg.get("b_transpose", 0):
            return 0
        return (cfg["block_m"] // cfg["warp_m"]) * cfg["block_k"] * cfg["block_n"] * 4

    def smem_bytes(self, cfg, variant):
        return 1024 + self.stage_buffer_bytes(cfg) + self.transposed_b_bytes(cfg) + 2 * cfg["stages"] * 8

    def variants(self, cfg):
        layouts = [{"a_k_major": a, "b_n_major": b} for a in (1, 0) for b in (1, 0)]
        persistent = [{**v, "persistent": 1} for v in layouts] if cfg.get("persistent", -1) == 1 else []
        return layouts + [{**v, "stream_k": 1} for v in layouts if v["b_n_major"]] + persistent

    def variant(self, cfg, problem):
        v = {"a_k_major": int(problem.a_k_major), "b_n_major": int(problem.b_n_major)}
        if problem.splits > 1 and problem.d_ss == 0:  # the slices share D: added in a cluster
            v["cluster_k"] = problem.splits
        if self.persistent(cfg, problem):
            v["persistent"] = 1
        return v

    # ---- persistent grids (``persistent``; kernels/epilogue/stream_k.cuh PersistentTiles) -----
    PERSISTENT_MAX_TILES = 2**31 - 1  # the kernel counts a block's tiles in int32

    def persistent(self, cfg, problem) -> bool:
        """Whether ``problem`` runs on a persistent grid: asked for (``persistent`` 1, or -1 with
        ``PERSISTENT_GRID`` on), one slice of K (split-K plans keep one block a tile) and a tile
        count the kernel's int32 holds."""
        want = cfg.get("persistent", -1)
        return (PERSISTENT_GRID if want < 0 else bool(want)) and problem.splits == 1 and \
            self.tiles(cfg, problem.M, problem.N, problem.batch) <= self.PERSISTENT_MAX_TILES

    def resident_blocks(self, cfg) -> int:
        """Blocks of this config an SM holds at once: those its launch bounds ask registers for
        (``min_blocks``), as far as shared memory allows."""
        fit = max(1, SMEM_PER_SM // (self.smem_bytes(cfg, {}) + SMEM_RESERVED_PER_BLOCK))
        return min(cfg.get("min_blocks", 1), fit)

    def persistent_blocks(self, cfg, problem, sms) -> int:
        """The persistent grid: min(SMs x the blocks an SM holds, the problem's tiles)."""
        return int(min(sms * self.resident_blocks(cfg), self.tiles(cfg, problem.M, problem.N, problem.batch)))

    # b_scalar=-1 (the default) reads a K-major B one k at a time (mma/warp_tile.cuh B_SCALAR) where
    # the H200 measured it faster (scripts/b_scalar_probe.py, docs/stages/s10-s11.md; the issue
    # model's slots per FFMA from the SASS predicted each case): in tt with thread tiles of at least
    # B_SCALAR_MIN_ROWS rows, whose runs of FFMAs then share B's value (4096^3, 128x256: 3.69 ->
    # 2.93 ms at k_unroll 2, 3.38 -> 2.83 at 4); in nt only at k_unroll 4 (3.27 -> 3.05 ms: the
    # LDS.128 kernel's 255 registers and 88-byte stack go), as at k_unroll 2 it measured 5% slower.
    # With 8 rows a thread the runs are too short to pay for the 3 more loads per column and 4 k.
    B_SCALAR_MIN_ROWS = 16
    B_SCALAR_NT_K_UNROLL = 4

    def b_transposed(self, cfg, variant) -> bool:
        """Whether the kernel turns a K-major B into [k][n] tiles in shared memory (``b_transpose``)
        and reads it as an N-major one (2, the experiment, makes the copy and does not read it)."""
        return cfg.get("b_transpose", 0) == 1 and not variant["b_n_major"]

    def b_scalar(self, cfg, variant) -> bool:
        """Whether the kernel reads B's fragments one k at a time (``b_scalar``; -1: the rule above)."""
        if variant["b_n_major"] or self.b_transposed(cfg, variant):
            return False
        if cfg.get("b_scalar", -1) >= 0:
            return bool(cfg["b_scalar"])
        if self.thread_tile(cfg)[0] < self.B_SCALAR_MIN_ROWS:
            return False
        return not variant["a_k_major"] or cfg["k_unroll"] == self.B_SCALAR_NT_K_UNROLL

    def template(self, cfg, variant):
        b = lambda x: "true" if x else "false"  # noqa: E731
        return (f"gemmlab::S11Tma<{cfg['block_m']}, {cfg['block_n']}, {cfg['block_k']}, {cfg['warp_m']}, "
                f"{cfg['warp_n']}, {cfg['k_unroll']}, {b(cfg['a_swizzle'])}, {cfg['stages']}, {b(cfg['producer_warp'])}, "
                f"{b(cfg['consumer_sync'])}, {b(variant['a_k_major'])}, {b(variant['b_n_major'])}, "
                f"{variant.get('cluster_k', 1)}, {2 if cfg.get('ffma_serpentine', 0) else cfg.get('ffma_rotate', 0)}, "
                f"{b(self.b_scalar(cfg, variant))}, "
                f"{cfg.get('b_transpose', 0)}, {b(self.frag_prefetch(cfg))}>")

    # ---- stream-K (kernels/epilogue/stream_k.cuh, the wrapper in jit/source.py) -------------
    def stream_k_blocks(self, cfg, problem, sms):
        """One batch, no split-K, on TMA: min(SMs x the blocks an SM holds, K tiles in all)."""
        p = problem
        if p.batch != 1 or p.splits > 1 or p.K <= 0 or tma_problems(cfg, p) or not tensor_map.available():
            return 0
        bm, bn = self.block_tile(cfg)
        k_tiles = -(-p.M // bm) * -(-p.N // bn) * -(-p.K // cfg["block_k"])
        return int(min(sms * self.resident_blocks(cfg), k_tiles))

    # ---- problems TMA cannot take ----------------------------------------------------------
    def fallback(self, cfg, problem):
        if tma_problems(cfg, problem) or not tensor_map.available():
            return S10, s10_config_for(cfg, problem)
        return None

    def fallback_config(self, cfg):
        return S10, s10_config_for(cfg)

    def check_problem(self, cfg, problem):
        bad = tma_problems(cfg, problem)
        if bad:
            raise ConfigError(f"stage {self.id} cannot run this problem on TMA: " + "; ".join(bad) +
                              " (gemm() hands such problems to s10)")

    # ---- kernel parameters: the two tensor maps and the batch mask --------------------------
    def extra_params(self, cfg, variant):
        return [("const __grid_constant__ gemmlab::async::TmaDescriptor a_map", "a_map"),
                ("const __grid_constant__ gemmlab::async::TmaDescriptor b_map", "b_map"),
                ("int tma_batch_mask", "tma_batch_mask")]

    def extra_args(self, cfg, variant, problem):
        maps = operand_maps(cfg, problem)
        return [tensor_map.TensorMapArg(w, *maps[w][1:]) for w in ("a", "b")] + [np.int32(maps["batch_mask"])]

    def smem_accesses(self, cfg, variant=None):
        """Warp 0's fragment loads for one k group (4 k steps), as s10 (B K-major one k at a time
        where ``b_scalar`` says so); TMA writes the tiles, so there are no store instructions."""
        variant = variant or self.variants(cfg)[0]
        if self.b_transposed(cfg, variant):  # the fragments come from the [k][n] copy
            return {**fragment_loads(cfg, {**variant, "b_n_major": 1}), "a_store": [], "b_store": []}
        return {**fragment_loads(cfg, variant, b_scalar=self.b_scalar(cfg, variant)), "a_store": [], "b_store": []}


# s10 stages of more than this many bytes a block, at two or more blocks per SM, go to block_k 16
# with 4 stages (half the bytes a stage, as many k in flight): with its K-major operands turned
# around by 4-byte copies (transpose_in), 64x128 at block_k 32 / 3 stages (76 KB a block) ran
# 333x555x777x8 tt in 110.9 us, at block_k 16 / 4 stages 100.8, 257x4001x999 nt 137.1 -> 129.7,
# 777x555x333 tt 33.1 -> 30.9, 601x901x301 nn 29.9 -> 28.9, 255x255x255x32 nt 51.6 -> 47.0
# (results/h200/logs/s10-tile-probe.txt).
S10_STAGE_BYTES_MULTI_BLOCK = 64 * 1024


# An nt problem on s10's 4-byte copies turns neither operand, so both fragments are K-major (4 k of
# each row and column at once), and where the launch bounds leave 128 registers a thread or fewer
# s10 spilled in its K loop (scripts/s10_spill_scan.py: 6-29 local ops a K step). There the stand-in
# takes one block an SM fewer (H200, scripts/s10_spill_probe.py, results/h200/logs/s10-spill-probe.txt:
# 128x64 w32x32 x2 1.12-1.34x at split 1, 128x128 w32x64 x2 1.29-1.30x, 32x256 x2 1.19-1.21x,
# 32x64 x4 1.09x and 0.92x), and at most 4 groups of k unrolled (128x256 ku8 in a cluster spilled
# 42: ku4 1.03-1.05x). Not for 64x64 x3 (170 registers, 2 local ops; 1.05-1.06x alone), where a
# block fewer costs what the waves model counted: the first rule, for every nt tile, took 417x400x587x4
# from 43.7 to 55.4 us and 496x727x651 from 32.1 to 37.7 (results/h200/logs/variants-16.txt).
NT_STAND_IN_FEWER_BLOCKS = True
# s11 plans with one slice of K on a persistent grid (config persistent=-1, the default, follows
# this; kernels/epilogue/stream_k.cuh PersistentTiles). Off: it failed its rule (H100, thirtieth
# session, results/h100/logs/e38ffd7/persistent.txt: 2-13 us a wave slower than one block a tile,
# 1.002x on 19 auto plans, min 0.934); docs/stages/s10-s11.md, "A persistent grid".
PERSISTENT_GRID = False
# An experiment: no fragment prefetch in a stand-in on 4-byte copies whose launch bounds leave 128
# registers a thread or fewer (128x64 w32x32 x2 spilled 4 local ops a K step in nn and tn; without
# the prefetch: 1.13 and 1.20x in tn, 0.97 and 1.13x in nn in the spill probe; on random shapes one
# plan changed, 0.706 -> 0.713).
STAND_IN_NO_PREFETCH_AT_128_REGISTERS = False
# The stand-in moves its M/N edge blocks inside the operands on 4-byte copies (s10 edge_shift), so
# they copy as interior blocks do (docs/stages/s10-s11.md). H200, one process per seed
# (results/h200/logs/variants-edge-shift-16.txt, -18.txt): the s10 plans 2.0% and 2.1% faster
# (geometric mean over 45 and 26 random shapes; 333x555x777x8 tt 98.4 -> 92.3 us), the worst -6.7%.
STAND_IN_EDGE_SHIFT = True
# The stand-in on 4-byte copies crosses its K tile's barrier with the tile's last k in registers
# (s10 frag_carry), where the core reads the outer-product layout (nn, tn, tt), at 64 accumulators a
# thread (below); docs/stages/s10-s11.md. Measured on an H100 (2026-12-05, fifteenth session;
# results/h100/logs/frag-carry-*.txt), 61 changed plans of 140 shapes: by the accumulators a thread
# holds, 64 (warp tiles 32x64 and 64x32) 21 plans, all faster, 1.040 geometric mean (333x555x777x8
# tt 105.2 -> 93.8 us); 32 (w32x32) 34 plans, 0.971; 128 (w64x64) 6 plans, 0.815. The restriction
# to 64, read off those runs, then held on three fresh seeds (H100, sixteenth session;
# variants-frag-carry-acc64-31/-37/-43.txt): 10, 12 and 15 changed plans, 1.051, 1.055 and 1.039
# geometric mean, the worst 0.998. On since then; not yet timed on an H200.
STAND_IN_FRAG_CARRY = True
# With it: None, every stand-in whose core reads the outer-product layout; a tuple, only those
# whose thread holds that many accumulators (the thread tile's, warp_m * warp_n / 32).
STAND_IN_FRAG_CARRY_ACCUMULATORS = (64,)
# With it: None, the copies right after the barrier; a fraction f of the K tile, the copies after
# the FFMAs of k = f * block_k - 1 of the next tile (s10 carry_copy_k).
STAND_IN_CARRY_COPY_AT = None
# With it (an experiment, 2026-12-05, sixteenth session): where a whole tile a trip would unroll into
# more than CARRY_TRIP_FFMAS FFMAs a thread, the carried loop runs the uncarried kernel's
# 4 * k_unroll k's a trip instead (s10 carry_chunk). At 128 accumulators and block_k 32 a whole tile
# is 4096 FFMAs (79 KB of code), as in s11's k_unroll 8, which the H200 ran 5-30% slower than
# k_unroll 4 (the shipped table's candidates). Measured (H100, results/h100/logs/frag-carry-chunked.txt,
# ncu-carry-chunk.txt): it takes back most of what the whole-tile carry lost at 128 accumulators (7
# shapes: 0.725 -> 0.827 against 0.847 uncarried; 741x552x125x8 tt 66.0 -> 42.9 us against 37.3,
# warps stalled on no_instruction 3.18 -> 1.92 cycles an issued instruction against 1.57), not all:
# off, and 128 accumulators stay uncarried. Not below CARRY_TRIP_FFMAS:
# 128x128 w32x64 x2 (128 registers a thread) spills in the K loop with a trip of 8 k's. Nor where
# the candidate unrolls a whole tile itself (k_unroll 8 at block_k 32).
STAND_IN_FRAG_CARRY_CHUNKED = False
CARRY_TRIP_FFMAS = 2048
# An experiment (2026-12-05, sixteenth session): None, or the most k_unroll the stand-in on 4-byte copies
# keeps (ncu on an H100, 741x552x125x8 tt, 256x128 w64x64: ku4 44.4 us with 1.57 cycles an issued
# instruction stalled on no_instruction, ku2 41.0 with 1.13, ku1 41.0 with 1.08; cuBLAS 0.14).
STAND_IN_MAX_K_UNROLL = None
# An experiment (2026-12-06, twentieth session; off until timed): the stand-in of an nt problem on
# 4-byte copies keeps A K-major in shared memory (As[m][k]; transpose_in turns no operand of nt),
# plain (a_swizzle 0, s11's default), where the bank model puts each of A's LDS.128 at 4 wavefronts
# against 2 swizzled. ncu on an H100 (results/h100/logs/ncu-s10-stalls.txt): 255x255x255x32 nt's
# stand-in, 64x128 w32x64, 43.8 us against cuBLAS's 31.5; 1.05M of its 4.19M shared-load wavefronts
# were bank conflicts (the model: 16 of 64 a k group, 25%), cuBLAS's 2.5K; short_scoreboard 0.48
# cycles an issued instruction. On: a_swizzle 1 there (docs/stages/s10-s11.md, "The nt stand-in's A").
STAND_IN_A_SWIZZLE = False
# On since 2026-12-06 (twenty-first session): the stand-in on 4-byte copies of nn, tn and tt at
# block_k 16 in 4 stages where its tile has block_k 32 (the tiles of one block an SM: the rule above
# moves the others). s10_tile_probe.py --knobs (H100 with the H200 table,
# results/h100/logs/s10-knobs.txt), auto's s10 with one knob changed: "bk16 s4" 0.937x the time at
# 492x109x137x32 tn and 0.919x at 455x97x743x32 nn (256x64, bk32 s3), 0.963 / 0.992 / 0.993 / 1.011
# at four more of nn, tn, tt; in nt 1.016 and 1.052 (64x64 x3): not nt. Timed on the plans it
# changes (H100, H200 table; results/h100/logs/stand-in-flags/): auto / cuBLAS 0.902 -> 0.918
# (min 0.645 -> 0.674) on seed 97's 42, 0.912 -> 0.933 (min 0.583 -> 0.630) on seed 103's 39.
STAND_IN_BLOCK_K16 = True
# An experiment (CPU-built 2026-12-05, not yet measured): the stand-in on 4-byte copies runs its
# FFMAs in serpentine order where the core reads the outer-product layout (s10 ffma_serpentine).
STAND_IN_FFMA_SERPENTINE = False


def _k_tiles_of_16(cfg: dict, otherwise: dict) -> dict:
    """s10's ``cfg`` at K tiles of 16 in 4 stages, or ``otherwise`` where s10 does not take that."""
    try:
        return S10.config({**cfg, "block_k": 16, "stages": 4})
    except ConfigError:
        return otherwise


def s10_config_for(cfg, problem=None) -> dict:
    """s10 at the same tile shape where legal for it, else s10's defaults (block_k 16 and 4 stages
    for tiles of several blocks per SM whose s10 stages would be large). With ``problem``, where
    it runs on 4-byte copies: an nt problem one block an SM fewer where a thread has 128 registers
    or fewer, and k_unroll at most 4 (NT_STAND_IN_FEWER_BLOCKS); with STAND_IN_EDGE_SHIFT, the edge
    blocks moved inside an operand on 4-byte copies (``edge_shift``); with STAND_IN_FRAG_CARRY, the
    last k carried over the barrier where the core reads the outer-product layout (``frag_carry``;
    with STAND_IN_FRAG_CARRY_CHUNKED in trips of the uncarried kernel's k's, ``carry_chunk``),
    with STAND_IN_FFMA_SERPENTINE its FFMAs in serpentine order there (``ffma_serpentine``); with
    STAND_IN_A_SWIZZLE, an A that stays K-major in shared memory (nt) swizzled (``a_swizzle``); with
    STAND_IN_BLOCK_K16, K tiles of 16 in 4 stages where the tile's are 32 (not nt)."""
    same = {k: cfg[k] for k in S10.default_config if k in cfg and k != "stages"}
    try:
        out = S10.config(same)
    except ConfigError:
        return S10.default_config
    if out["min_blocks"] >= 2 and out["block_k"] == 32 and S10.smem_bytes(out, {}) > S10_STAGE_BYTES_MULTI_BLOCK:
        out = _k_tiles_of_16(same, out)
    v = S10.variant(out, problem) if problem is not None else None
    if v is None or v["vec"]:  # 16-byte copies: as before
        return out
    nt = v["a_k_major"] and not v["b_n_major"]  # both fragments K-major
    if STAND_IN_BLOCK_K16 and out["block_k"] == 32 and not nt:  # as the multi-block tiles above
        out = _k_tiles_of_16({**out, "k_unroll": min(out["k_unroll"], 4)}, out)
    # the rules' changes, checked in one config (the model asks this for every candidate it ranks)
    extra = {"edge_shift": 1} if STAND_IN_EDGE_SHIFT else {}
    ku = out["k_unroll"] if STAND_IN_MAX_K_UNROLL is None else min(out["k_unroll"], STAND_IN_MAX_K_UNROLL)
    if ku != out["k_unroll"]:
        extra["k_unroll"] = ku
    # the layout is asked only where a flag needs it (the runtime's flags are off)
    outer = (STAND_IN_FFMA_SERPENTINE or STAND_IN_FRAG_CARRY) and S10.outer_product(out, v)
    if STAND_IN_FFMA_SERPENTINE and outer:
        extra["ffma_serpentine"] = 1
    if STAND_IN_FRAG_CARRY and outer and (STAND_IN_FRAG_CARRY_ACCUMULATORS is None or
                                          math.prod(S10.thread_tile(out)) in STAND_IN_FRAG_CARRY_ACCUMULATORS):
        extra["frag_carry"] = 1
        if STAND_IN_CARRY_COPY_AT is not None:
            bk = out["block_k"]
            extra["carry_copy_k"] = min(max(int(STAND_IN_CARRY_COPY_AT * bk) - 1, 0), bk - 2)
        elif (STAND_IN_FRAG_CARRY_CHUNKED and math.prod(S10.thread_tile(out)) * out["block_k"] > CARRY_TRIP_FFMAS
              and 4 * ku < out["block_k"]):
            extra["carry_chunk"] = 4 * ku
    if "a_vec" not in v and "b_vec" not in v:  # both operands on 4-byte copies
        tight = REG_FILE // (S10.threads(out) * out["min_blocks"]) <= 128
        if STAND_IN_A_SWIZZLE and v["a_k_major"] and not S10.transposed_in(out, v)[0]:
            extra["a_swizzle"] = 1  # A read as As[m][k]: swizzled, 2 wavefronts an LDS.128
        if NT_STAND_IN_FEWER_BLOCKS and nt:
            if tight and out["min_blocks"] > 1:
                extra["min_blocks"] = out["min_blocks"] - 1
            if ku > 4:
                extra["k_unroll"] = 4
        elif STAND_IN_NO_PREFETCH_AT_128_REGISTERS and tight:
            extra["frag_prefetch"] = 0
    return S10.config({**out, **extra}) if extra else out


STAGE = Tma(
    id="s11",
    name="tma",
    adds="Hopper TMA bulk tensor loads completing on mbarriers (full/empty per stage), issued by one thread "
         "(or a producer warpgroup with setmaxnreg: producer_warp=1), SIMT FFMA compute",
    notes="000 §10.5",
    params=(
        Param("block_m", 128, "rows of D per block (TMA box, at most 256)"),
        Param("block_n", 256, "columns of D per block (TMA box, at most 256)"),
        Param("block_k", 32, "K depth of one pipeline stage (8, 16 or 32)"),
        Param("warp_m", 64, "rows of D per warp (thread tile rows = warp_m/4)"),
        Param("warp_n", 64, "columns of D per warp (thread tile columns = warp_n/8)"),
        Param("k_unroll", 2, "groups of 4 k unrolled per trip of the inner loop (divides block_k/4)"),
        Param("a_swizzle", 0, "1: row-major A as As[m][k] XOR-swizzled, a thread's rows 4 apart; 0: plain, groups of 4 rows"),
        Param("stages", 4, "shared-memory stages in flight (full/empty mbarrier pair each)"),
        Param("group_m", 8, "tile rows per L2 group in the block order"),
        Param("producer_warp", 0, "1: a producer warpgroup (one warp issues the TMA copies; setmaxnreg gives its "
                                  "registers to the consumers); 0: thread 0 of warp 0 issues them between its own tiles"),
        Param("consumer_sync", 0, "1: the consumer warps also meet at a named barrier every K tile (lockstep, as s10); "
                                  "0: only the full/empty mbarriers couple them (up to stages-1 tiles of drift)"),
        Param("min_blocks", 1, "blocks per SM that __launch_bounds__ asks registers for (small tiles: 2-4)"),
        Param("ffma_rotate", 0, "1: each run of FFMAs sharing one A value starts at column (c+2) mod 4 (c: A's "
                                "component in its quad), so that with 4 register banks its first FFMA reads three "
                                "(B N-major; mma/warp_tile.cuh; an experiment); 0: columns in order",
              named_at_default=False),
        Param("ffma_serpentine", 0, "1: where the core reads A M-major and B N-major (tn; tt with b_transpose), the "
                                    "runs of FFMAs of odd rows go right to left (mma/warp_tile.cuh FFMA_ROTATE 2), so "
                                    "ptxas keeps two B values in the reuse cache; 0: every run left to right",
              named_at_default=False),
        Param("b_scalar", -1, "B K-major (nt, tt): 1 = fragments read one k at a time (LDS.32) and, with A "
                              "M-major, runs of FFMAs sharing B's value (half as many register-bank conflicts); "
                              "0 = 4 k of a column per LDS.128; -1 = 1 with 16+ rows per thread in tt, and in nt "
                              "at k_unroll 4 (measured faster there), else 0",
              named_at_default=False),
        Param("b_transpose", 0, "B K-major (nt, tt): 1 = each consumer warp copies its columns of the stage's Bs[n][k] "
                                "into a [k][n] tile of its own (4x4 blocks, LDS.128 / STS.128) and reads B as an "
                                "N-major B (shared memory: warps down the tile x block_k x block_n floats more); "
                                "0 = B's fragments straight from Bs[n][k]; 2 = the copy made and not read (an "
                                "experiment: what the copy alone costs)",
              named_at_default=False),
        FRAG_PREFETCH_PARAM,
        Param("persistent", -1, "1: a grid of as many blocks as the GPU holds at once, block b running tiles b, "
                                "b + G, ... of every batch through one ring of stages, so that a tile's first K "
                                "tiles are loaded while the consumers store the tile before (epilogue/stream_k.cuh "
                                "PersistentTiles; an experiment); split-K plans keep one block a tile; 0: one block "
                                "a tile; -1: the runtime's rule (s11_tma.PERSISTENT_GRID, off)",
              named_at_default=False),
    ),
    sass=("UTMALDG", "SYNCS", "LDS.128", "FFMA"),
    sass_scalar=("UTMALDG", "SYNCS", "LDS.128", "FFMA"),
    aligned_path=True,
    min_cc=90,
    expected_pct_cublas=(95, 100),
)


