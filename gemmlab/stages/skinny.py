"""skinny: the memory-bound kernel for M <= 16 or N <= 16 (GEMV-like shapes); kernels/skinny.cuh.

Not a rung of the ladder (``all_stages()`` does not list it): the dispatcher runs it for skinny
shapes, with the config and split-K that gemmlab/heuristics/skinny.py chooses (``applies``,
``choose``). ``gemm(stage="skinny")`` runs it on any shape (correct everywhere; fast only where
one of M, N is small).

Config keys are 0 ("auto") by default: :meth:`Skinny.fallback` fills every auto key for the
problem at plan time (the orientation, the smallest tile that covers the small dimension, the
algorithm that matches the big operand's unit stride, a geometry that fills the GPU, ...),
keeping the keys the caller set. Where no problem is known (``gemmlab sass skinny``, CI compiles)
the autos are filled for the nominal problem 1x4096x4096 (row-major): GEMV with B streamed.

Orientation: ``small_dim`` 1 (M small: S = A, G = B, the tile is small x block_big) or 2 (N small:
S = B^T, G = A^T, the tile is block_big x small). ``algo`` 1 (stream: G contiguous along its free
dimension, 4 consecutive outputs per thread) or 2 (dot: G contiguous along K, warps of dot
products and a shuffle reduce-scatter). Both split k inside the block (``k_groups``) and keep
G in flight in a per-thread cp.async ring in shared memory (``g_stages``). Variant ``vec``:
16-byte copies of G (pointer, strides, batch stride and extent checked here exactly), else
4-byte copies through the strides.
"""
from __future__ import annotations

import functools
import math

from ..errors import ConfigError
from .base import REG_FILE, Param, Problem, StageSpec

SMEM_LIMIT = 227 * 1024  # a block's shared memory on sm_90 (the kernel's static_assert)
SMEM_RESERVED = 1024     # per block (ptxas: "shared 1024" static on sm_90)
SMALLS = (1, 2, 4, 8, 16)
MAX_SMALL = 16
AUTO_KEYS = ("small_dim", "small", "algo", "block_big", "threads", "k_groups", "unroll", "g_stages", "k_chunk")
NOMINAL = Problem.dense(1, 4096, 4096)  # what the autos become when no problem is known
MAX_THREADS_PER_SM = 2048


# ---- the problem in the kernel's renamed form ------------------------------------------------
def renamed(p: Problem, small_dim: int) -> dict:
    """S (small operand) and G (big operand) of ``p`` as skinny.cuh's Operands: extents, element
    strides, G's pointer and batch stride."""
    if small_dim == 1:
        return {"ns": p.M, "ng": p.N, "s_ss": p.a_rs, "s_ks": p.a_cs, "g_ks": p.b_rs, "g_gs": p.b_cs,
                "g_ptr": p.b_ptr, "g_bs": p.b_bs}
    return {"ns": p.N, "ng": p.M, "s_ss": p.b_cs, "s_ks": p.b_rs, "g_ks": p.a_cs, "g_gs": p.a_rs,
            "g_ptr": p.a_ptr, "g_bs": p.a_bs}


def tiles_of(c: dict, r: dict, batch: int) -> int:
    """Output tiles of config ``c`` over the renamed problem ``r``, all batches."""
    return math.ceil(r["ns"] / c["small"]) * math.ceil(r["ng"] / c["block_big"]) * max(batch, 1)


def pick_small_dim(p: Problem) -> int:
    return 1 if p.M <= p.N else 2


def pick_small(ns: int) -> int:
    want = min(max(ns, 1), MAX_SMALL)
    return next(s for s in SMALLS if s >= want)


def pick_algo(p: Problem, small_dim: int) -> int:
    """2 (dot) when G's unit stride runs along K, 1 (stream) when along g. A G with no unit stride
    is repacked row-major by the plan layer first: B row-major is G along g (M small), A row-major
    is G along K (N small)."""
    r = renamed(p, small_dim)
    if r["g_ks"] == 1 and (r["g_gs"] != 1 or r["ng"] <= 1):
        return 2
    if r["g_gs"] == 1:
        return 1
    return 1 if small_dim == 1 else 2


def dot_rows_per_warp(small: int) -> int:
    """Algo 2's default rows per warp: 8 while the accumulators stay few (small <= 2), else 4
    (16 x 4 = 64 accumulators at small = 16)."""
    return 8 if small <= 2 else 4


def vec_ok(p: Problem, small_dim: int, algo: int) -> bool:
    """16-byte copies of G are legal: unit stride along the vector dimension (g for algo 1, k for
    algo 2), 16-byte aligned base, every row start 16-byte aligned (the other stride and the batch
    stride multiples of 4 floats), and the vector dimension's extent a multiple of 4 (then no
    float4 straddles the edge: the VEC kernel has no scalar path). Split-K slices start at
    multiples of 32 k, so they keep all of it. S and D use 4-byte accesses: not checked."""
    r = renamed(p, small_dim)
    if r["g_ptr"] % 16:
        return False
    if algo == 1:
        unit, other, other_extent, extent = r["g_gs"], r["g_ks"], p.K, r["ng"]
    else:
        unit, other, other_extent, extent = r["g_ks"], r["g_gs"], r["ng"], p.K
    if unit != 1 or extent % 4:
        return False
    if other_extent > 1 and other % 4:
        return False
    if p.batch > 1 and r["g_bs"] % 4:
        return False
    return True


# ---- derived sizes (the .cuh's constants, same names) ----------------------------------------
def rows_per_warp(c: dict) -> int:
    """Algo 2's RL: block_big / (warps / k_groups)."""
    row_warps = max(c["threads"] // 32 // max(c["k_groups"], 1), 1)
    return c["block_big"] // row_warps


def iteration_k(c: dict) -> int:
    """k rows one block iteration covers (k_chunk must be a multiple)."""
    if c["algo"] == 1:
        return c["k_groups"] * c["unroll"]
    return 128 * c["unroll"] * c["k_groups"]


def layout(c: dict) -> dict:
    """The .cuh's derived sizes (same names) of a complete config; SMEM_BYTES is what the
    template passes for the kernel to check."""
    small, threads, bb, unroll, kc, kg = c["small"], c["threads"], c["block_big"], c["unroll"], c["k_chunk"], c["k_groups"]
    warps = threads // 32
    out = {"WARPS": warps, "K_GROUPS": kg}
    if c["algo"] == 1:
        p1 = small + 4 if small >= 8 else small
        slots, buf = unroll, kc * p1
        out.update(TC=bb // 4, ROWS_IT=kg * unroll, P1=p1, LS=(min(small, 4),))
    else:
        pad = 0 if small == 1 else 32 // min(small, 8)
        rl = rows_per_warp(c)
        slots, buf = unroll * rl, small * (kc + pad)
        out.update(RL=rl, ROW_WARPS=warps // max(kg, 1), ROWS_IT=128 * unroll * kg, PAD2=pad, LS=(1, min(small, 8)))
    ring = c["g_stages"] * slots * threads * 4
    main = ring + 2 * buf
    red_rows = min(small, _floor_pow2(max(main // (4 * threads), 1)))
    red = 0 if kg == 1 else red_rows * 4 * threads if c["algo"] == 1 else kg * bb * small
    out.update(SLOTS=slots, RING_FLOATS=ring, BUF_FLOATS=buf, RED_ROWS=red_rows, SMEM_BYTES=4 * max(main, red),
               IN_FLIGHT_BYTES=(c["g_stages"] - 1) * slots * threads * 16)
    return out


def _floor_pow2(x: int) -> int:
    return 1 << (x.bit_length() - 1) if x >= 1 else 1


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


# ---- budgets: registers, shared memory, SMs -------------------------------------------------
def estimate_registers(c: dict) -> int:
    """Live registers per thread in the main loop: accumulators, the G values of one step read
    back from the ring, the S values of one k and about 24 for addresses and counters."""
    small, unroll = c["small"], c["unroll"] or 1
    if c["algo"] == 1:
        return 4 * small + 4 * unroll + small + 24
    rl = rows_per_warp(c)
    return rl * small + 4 * rl + 4 + 24


def register_budget(c: dict) -> int:
    """80 registers (768 threads per SM) when the estimate leaves room, else 128 (512). Checked
    with the compiler for every auto config (tests/test_skinny.py: no spills)."""
    return 80 if estimate_registers(c) <= 56 else 128


def regs_blocks(c: dict) -> int:
    """Blocks per SM the register budget allows (and the 2048-thread limit)."""
    return min(REG_FILE // (c["threads"] * register_budget(c)), MAX_THREADS_PER_SM // c["threads"])


@functools.lru_cache(maxsize=None)
def gpu_smem() -> tuple[int, int]:
    """(dynamic shared memory one block may opt in to, shared memory per SM) of device 0; the
    H200's (227 KB, 228 KB) without a GPU."""
    try:
        from .. import device

        if device.has_gpu():
            i = device.info(0)
            return i.smem_per_block_optin, i.smem_per_sm
    except Exception:
        pass
    return SMEM_LIMIT, SMEM_LIMIT + SMEM_RESERVED


def default_sms() -> int:
    """Device 0's SM count, 132 (the H200's) without a GPU."""
    try:
        from .. import device

        return device.info(0).sms if device.has_gpu() else 132
    except Exception:
        return 132


# ---- the auto keys ---------------------------------------------------------------------------
def default_unroll(c: dict) -> int:
    """Algo 1: 4 rows per thread per iteration. Algo 2: steps of 128 k so that a lane has at
    least 4 copies per iteration (1 step at 4 or 8 rows per warp); 2 steps from small 8, where
    the kernel runs the steps of an iteration as a loop (no registers added) and the copies'
    address work is then shared by two steps."""
    if c["algo"] == 1:
        return 4
    rl = max(rows_per_warp(c), 1)
    return max(1, min(8 // rl, 2)) if c["small"] >= 8 else max(1, 4 // rl)


def default_k_chunk(c: dict, k_len: int) -> int:
    """Up to 8 iterations (algo 1) or 512 k per warp (algo 2; 256 at small 16) per stage, the two S
    stages within 48 KB where an iteration allows, no longer than the slice needs, but at least
    g_stages-1 iterations (the ring runs that far ahead); a multiple of 32 and of an iteration, a
    power of two iterations."""
    step = iteration_k(c)
    least = max(1, c["g_stages"] - 1)
    if c["algo"] == 1:
        p1 = c["small"] + 4 if c["small"] >= 8 else c["small"]
        its = 8
        while its > least and (2 * step * its * p1 * 4 > 48 * 1024 or step * (its // 2) >= k_len):
            its //= 2
    else:
        pad = 0 if c["small"] == 1 else 32 // min(c["small"], 8)
        its = max(1, (512 if c["small"] <= 8 else 256) // (128 * c["unroll"]))
        while its > least and (2 * c["small"] * (step * its + pad) * 4 > 48 * 1024 or step * (its // 2) >= k_len):
            its //= 2
    its = max(its, 1 << (least - 1).bit_length())  # a power of two: the staging copy then tiles it
    kc = step * its
    while kc % 32:
        kc += step
    return kc


def complete(c: dict, k_len: int) -> dict:
    """Fill unroll, g_stages and k_chunk (where auto) for a config whose geometry is set.
    g_stages: 3 (two iterations in flight per thread), 2 where three stages would not let the
    register budget's blocks share an SM's shared memory (or exceed a block's, on a smaller GPU).
    An auto unroll is halved while the block's shared memory does not fit (the caller's g_stages
    or k_chunk can ask for long stages)."""
    optin, per_sm = gpu_smem()
    unroll_set = bool(c["unroll"])
    base = dict(c)
    if not unroll_set:
        base["unroll"] = default_unroll(base)
        if base["k_chunk"]:  # the largest unroll whose iterations tile the caller's k_chunk, g_stages-1 of them
            while base["unroll"] > 1 and (base["k_chunk"] % iteration_k(base) or
                                          base["k_chunk"] // iteration_k(base) < base["g_stages"] - 1):
                base["unroll"] //= 2
    while True:
        c = dict(base)
        if not c["g_stages"]:
            c["g_stages"] = 3
            blocks = max(regs_blocks(c), 1)
            smem = layout({**c, "k_chunk": c["k_chunk"] or default_k_chunk(c, k_len)})["SMEM_BYTES"]
            if smem > optin or (blocks > 1 and blocks * (smem + SMEM_RESERVED) > per_sm):
                c["g_stages"] = 2
            if c["k_chunk"]:
                c["g_stages"] = max(2, min(c["g_stages"], c["k_chunk"] // iteration_k(c) + 1))
        if not c["k_chunk"]:
            c["k_chunk"] = default_k_chunk(c, k_len)
        if unroll_set or c["unroll"] == 1 or layout(c)["SMEM_BYTES"] <= optin:
            return c
        base["unroll"] //= 2


GEMV_THREADS, GEMV_UNROLL = 256, 8  # pick_geometry's GEMV geometry (small 1, algo 1)


def is_gemv_geometry(c: dict) -> bool:
    """Whether ``c`` is the GEMV geometry pick_geometry gives small 1, algo 1 (256 threads x 8 rows):
    one block per SM then has the bytes in flight DRAM needs."""
    return c["algo"] == 1 and c["small"] == 1 and c["threads"] == GEMV_THREADS and c["unroll"] == GEMV_UNROLL


def thread_options(c: dict) -> list[int]:
    """Threads per block to try: the caller's, else 256, 512 and (algo 1) 768."""
    if c["threads"]:
        return [c["threads"]]
    return [256, 512, 768] if c["algo"] == 1 else [256, 512]


def pick_geometry(c: dict, r: dict, batch: int, sms: int, k_len: int) -> dict:
    """threads, block_big and k_groups (those not set by the caller), so that the launch fills the
    GPU without split-K where it can: split-K inside the block (k groups, added in shared memory at
    the end) costs no second kernel, cross-block split-K costs the reduce kernel and its launch.

    Candidates in order of preference: algo 1 the widest tile first (128, 64, then 32 while small
    <= 8: the small operand is staged once per tile), then fewer threads; algo 2 fewer k groups
    first (wider tiles; at most 16/small groups), then fewer threads (more threads from small 8),
    with 8 rows per warp up to small 2, else 4.
    The first whose threads in flight (tiles x threads) reach 3/4 of what the SMs hold wins; if
    none, the last (the most parallel), and choose() adds split-K."""
    small = c["small"]
    fixed = {k: c[k] for k in ("threads", "block_big", "k_groups") if c[k]}
    cands = []
    for t in thread_options(c):
        warps = t // 32
        if c["algo"] == 1:
            for bb in ((128, 64, 32) if small <= 8 else (128, 64)):
                if t % (bb // 4) == 0:
                    cands.append({"threads": t, "block_big": bb, "k_groups": t // (bb // 4)})
        else:
            rl = dot_rows_per_warp(small)
            if c["unroll"]:
                rl = max(1, min(rl, 8 // c["unroll"]))
            for kg in (1, 2, 4, 8):  # at most 16/small: each group re-reads the staged S for fewer rows
                if warps % kg == 0 and kg * small <= 16:
                    cands.append({"threads": t, "block_big": warps // kg * rl, "k_groups": kg})
    if c["algo"] == 1:
        cands.sort(key=lambda g: (-g["block_big"], g["threads"]))
    else:  # from small 8 the larger block first: it stages the small operand once for twice the rows
        cands.sort(key=lambda g: (g["k_groups"], -g["threads"] if small >= 8 else g["threads"]))
    cands = [g for g in cands if all(g[k] == v for k, v in fixed.items())]
    if c["k_chunk"]:  # the caller's stage must hold whole iterations, g_stages-1 of them at least
        def fits(g):
            step = iteration_k({**c, **g, "unroll": c["unroll"] or 1})
            return c["k_chunk"] % step == 0 and c["k_chunk"] // step >= max(c["g_stages"] - 1, 1)
        cands = [g for g in cands if fits(g)]
    if not cands:  # the caller's keys leave no standard candidate: derive what is missing from them
        g = {"threads": c["threads"] or 256, "block_big": c["block_big"], "k_groups": c["k_groups"]}
        if c["algo"] == 1:
            if not g["block_big"]:
                g["block_big"] = 4 * max(g["threads"] // max(g["k_groups"], 1), 1)
            g["k_groups"] = g["k_groups"] or max(g["threads"] // max(g["block_big"] // 4, 1), 1)
        else:
            g["k_groups"] = g["k_groups"] or 1
            g["block_big"] = g["block_big"] or max(g["threads"] // 32 // g["k_groups"], 1) * dot_rows_per_warp(small)
        return g

    def held(g):  # threads one SM holds at this geometry (registers, shared memory), 0 if not one block
        gc = complete({**c, **g}, k_len)
        by_smem = gpu_smem()[1] // (layout(gc)["SMEM_BYTES"] + SMEM_RESERVED)
        return min(regs_blocks(gc), by_smem) * g["threads"]

    # GEMV (small 1, algo 1, geometry and unroll auto): 256 threads of 8 rows each, the widest tile
    # whose tiles cover 3/4 of the SMs. H200, event times after an L2 flush, with the evict-first
    # copies: 1x4096x4096 23.5 us against 24.8 at 768 threads x 4 rows (cuBLAS 23.6), 1x6144x2048
    # 19.9 against 22.0 (cuBLAS 19.4): the same bytes in flight from fewer threads, and 32 k groups
    # to add at the end instead of 96 (scripts/gemv_gap.py, docs/stages/skinny.md).
    if c["algo"] == 1 and small == 1 and not fixed and not c["unroll"] and not c["k_chunk"]:
        for bb in (128, 64, 32):
            g = {"threads": GEMV_THREADS, "block_big": bb, "k_groups": GEMV_THREADS // (bb // 4), "unroll": GEMV_UNROLL}
            if 4 * tiles_of({**c, **g}, r, batch) >= 3 * sms and held(g):
                return g

    fitting = [g for g in cands if held(g)]
    if not fitting:  # nothing fits an SM (the caller's keys): the smallest block, for the error to name
        return min(cands, key=lambda g: layout(complete({**c, **g}, k_len))["SMEM_BYTES"])
    cands = fitting
    cap = max(held(g) for g in cands)
    for g in cands:
        tiles = tiles_of({**c, **g}, r, batch)
        if 4 * tiles * g["threads"] >= 3 * sms * cap:
            return g
    return cands[-1]


class Skinny(StageSpec):
    @property
    def header(self) -> str:
        return "skinny.cuh"

    # ---- auto keys -------------------------------------------------------------------------
    def resolve(self, cfg: dict, problem: Problem | None = None, sms: int | None = None) -> dict:
        """``cfg`` with every auto (0) key filled for ``problem`` (the nominal one if None) on a GPU
        of ``sms`` SMs (device 0's, else 132); keys the caller set are kept, the others are derived
        from them."""
        c = {**self.default_config, **cfg}
        p = problem if problem is not None else NOMINAL
        if not c["small_dim"]:
            c["small_dim"] = pick_small_dim(p)
        r = renamed(p, c["small_dim"])
        if not c["small"]:
            c["small"] = pick_small(r["ns"])
        if not c["algo"]:
            c["algo"] = pick_algo(p, c["small_dim"])
        if not (c["threads"] and c["block_big"] and c["k_groups"]):
            c.update(pick_geometry(c, r, p.batch, sms or default_sms(), p.k_split if p.splits > 1 else p.K))
        return complete(c, p.k_split if p.splits > 1 else p.K)

    def check_problem(self, cfg: dict, problem: Problem) -> None:
        """The kernel counts k iterations and stages in 32 bits: K below 2^36 (256 GB of one row)."""
        if problem.K >= 1 << 36:
            raise ConfigError(f"stage {self.id}: K = {problem.K} is 2^36 or more; the kernel counts k steps in 32 bits")

    def fallback(self, cfg: dict, problem: Problem):
        """Auto keys become the problem's choice (the same spec, a complete config)."""
        if all(cfg.get(k) for k in AUTO_KEYS):
            return None
        resolved = self.resolve(cfg, problem)
        bad = self.combination_constraints(resolved)
        if bad:
            set_keys = {k: v for k, v in cfg.items() if v}
            raise ConfigError(f"stage {self.id}: config {set_keys} cannot run this problem "
                              f"(completed to {resolved}): " + "; ".join(bad))
        return self, resolved

    # ---- constraints -----------------------------------------------------------------------
    def constraints(self, cfg: dict) -> list[str]:
        c = {**self.default_config, **cfg}
        out = []
        if c["small_dim"] not in (0, 1, 2):
            out.append(f"small_dim={c['small_dim']} must be 1 (M is small), 2 (N is small) or 0 (auto)")
        if c["small"] and c["small"] not in SMALLS:
            out.append(f"small={c['small']} must be 1, 2, 4, 8 or 16 (or 0: auto)")
        if c["algo"] not in (0, 1, 2):
            out.append(f"algo={c['algo']} must be 1 (stream), 2 (dot) or 0 (auto)")
        if c["threads"] and (c["threads"] % 32 or not 64 <= c["threads"] <= 1024):
            out.append(f"threads={c['threads']} must be a multiple of 32 in 64..1024")
        if c["unroll"] and not 1 <= c["unroll"] <= 8:
            out.append(f"unroll={c['unroll']} must be 1..8")
        if c["g_stages"] and not 2 <= c["g_stages"] <= 8:
            out.append(f"g_stages={c['g_stages']} must be 2..8")
        if c["k_chunk"] and (c["k_chunk"] < 0 or c["k_chunk"] % 32):
            out.append(f"k_chunk={c['k_chunk']} must be a positive multiple of 32")
        if c["block_big"] < 0:
            out.append(f"block_big={c['block_big']} must be positive")
        if c["k_groups"] < 0:
            out.append(f"k_groups={c['k_groups']} must be positive")
        if c["evict_first"] not in (0, 1):
            out.append(f"evict_first={c['evict_first']} must be 0 or 1")
        if c["g_prefetch"] not in (0, 64, 128, 256):
            out.append(f"g_prefetch={c['g_prefetch']} must be 0, 64, 128 or 256 (bytes)")
        if out:
            return out
        return self.combination_constraints(self.resolve(c))

    def combination_constraints(self, c: dict) -> list[str]:
        """The .cuh's static_asserts on a complete config."""
        out = []
        small, threads, bb, unroll, kc, kg = (c[k] for k in ("small", "threads", "block_big", "unroll", "k_chunk",
                                                               "k_groups"))
        warps = threads // 32
        if c["algo"] == 1:
            tc = bb // 4
            if bb <= 0 or bb % 4 or tc > threads or threads % tc:
                out.append(f"algo 1: block_big={bb} must be a multiple of 4 whose block_big/4 threads along g "
                           f"divide threads={threads}")
                return out
            if kg != threads // tc:
                out.append(f"algo 1: k_groups={kg} must be threads/(block_big/4) = {threads // tc}")
            if small * unroll > 64:
                out.append(f"algo 1: small*unroll = {small * unroll} must be at most 64 (registers)")
        else:
            if kg < 1 or warps % kg:
                out.append(f"algo 2: k_groups={kg} must divide the {warps} warps")
                return out
            rl = bb // (warps // kg)
            if bb <= 0 or bb % (warps // kg) or not _pow2(rl) or rl > 8:
                out.append(f"algo 2: rows per warp, block_big/(warps/k_groups) = {bb}/{warps // kg}, must be a "
                           "power of two, at most 8")
                return out
            if rl * small > 64:
                out.append(f"algo 2: rows per warp * small = {rl * small} accumulators must be at most 64")
            if rl * unroll > 8:
                out.append(f"algo 2: rows per warp * unroll = {rl * unroll} copies per iteration must be at most 8")
        step = iteration_k(c)
        if kc % step:
            out.append(f"k_chunk={kc} must be a multiple of the {step} k rows of one iteration")
        elif kc // step < c["g_stages"] - 1:
            out.append(f"k_chunk={kc} holds {kc // step} iterations; g_stages={c['g_stages']} needs at least "
                       f"{c['g_stages'] - 1}")
        if out:
            return out
        lay = layout(c)
        for ls in lay["LS"]:
            tp = threads // ls
            if (kc % tp) if tp <= kc else (tp % kc):
                out.append(f"k_chunk={kc} and the {tp} staging threads per s group must divide one another")
                break
        smem = lay["SMEM_BYTES"]
        if smem > SMEM_LIMIT:
            out.append(f"shared memory {smem} B exceeds {SMEM_LIMIT} B per block; lower k_chunk")
        return out

    # ---- geometry --------------------------------------------------------------------------
    def block_tile(self, cfg):
        c = self.resolve(cfg)
        return (c["small"], c["block_big"]) if c["small_dim"] == 1 else (c["block_big"], c["small"])

    def threads(self, cfg):
        return self.resolve(cfg)["threads"]

    def smem_bytes(self, cfg, variant):
        return layout(self.resolve(cfg))["SMEM_BYTES"]

    def min_blocks_per_sm(self, cfg):
        """__launch_bounds__' second argument: blocks per SM that ptxas must leave registers for,
        from the register budget (80 or 128 per thread, see :func:`register_budget`). The split-K
        rule counts on this many blocks being resident."""
        c = self.resolve(cfg)
        return max(1, regs_blocks(c))

    def blocks_per_sm(self, cfg) -> int:
        """Blocks of this config that fit on one SM (registers as bounded above, shared memory)."""
        c = self.resolve(cfg)
        by_smem = gpu_smem()[1] // (layout(c)["SMEM_BYTES"] + SMEM_RESERVED)
        return max(1, min(self.min_blocks_per_sm(c), by_smem))

    # ---- instantiation ---------------------------------------------------------------------
    def variants(self, cfg):
        return [{"vec": 1}, {"vec": 0}]

    def variant(self, cfg, problem):
        c = self.resolve(cfg)
        return {"vec": int(vec_ok(problem, c["small_dim"], c["algo"]))}

    def template(self, cfg, variant):
        c = self.resolve(cfg)
        smem = layout(c)["SMEM_BYTES"]
        return (f"gemmlab::Skinny<{c['small']}, {c['small_dim']}, {c['algo']}, {c['block_big']}, {c['threads']}, "
                f"{c['k_groups']}, {c['unroll']}, {c['g_stages']}, {c['k_chunk']}, "
                f"{'true' if variant['vec'] else 'false'}, {c['evict_first']}, {c['g_prefetch']}, {smem}>")

    def kernel_name(self, cfg, variant):
        return super().kernel_name(self.resolve(cfg), variant)

    def describe(self) -> dict:
        return {**super().describe(), "applies": "M <= 16 or N <= 16"}

    def report_config(self, cfg: dict) -> dict:
        """The config that ``sass`` and ``explain`` compile and show: the auto (0) keys filled in
        for the nominal problem (1 x 4096 x 4096 on device 0's SMs, 132 without a GPU), as the
        kernel's name says; a call fills them for its own problem."""
        return self.resolve(cfg)


STAGE = Skinny(
    id="skinny",
    name="skinny",
    adds="memory-bound kernel for M <= 16 or N <= 16: the big operand streamed once by 16-byte cp.async into a "
         "per-thread shared-memory ring (4 outputs per thread, or warp dot products along K with a shuffle "
         "reduce-scatter), the small one staged in shared memory, k split inside the block",
    notes="docs/stages/skinny.md",
    params=(
        Param("small_dim", 0, "1: M is the small dimension (tile small x block_big); 2: N is (block_big x small); 0: auto"),
        Param("small", 0, "tile extent along the small dimension: 1, 2, 4, 8 or 16 (0: the smallest >= the problem's)"),
        Param("algo", 0, "1: stream (big operand contiguous along its free dimension), 2: dot (contiguous along K); 0: auto"),
        Param("block_big", 0, "tile extent along the big dimension (0: auto, see pick_geometry)"),
        Param("threads", 0, "threads per block (0: 256, 512 or 768, to fill the GPU)"),
        Param("k_groups", 0, "groups of threads (algo 1: threads/(block_big/4)) or warps (algo 2) that split k "
                             "inside the block, added in shared memory at the end (0: auto)"),
        Param("unroll", 0, "k rows (algo 1) or 128-k steps (algo 2) per iteration, loaded together (0: auto)"),
        Param("g_stages", 0, "shared-memory ring stages of the big operand's cp.async copies, 2..8: g_stages-1 "
                             "iterations in flight per thread (0: auto)"),
        Param("k_chunk", 0, "k per shared-memory stage of the small operand (0: auto)"),
        Param("evict_first", 1, "1: the big operand's copies carry an L2 evict-first policy (it is read once; "
                                "after a kernel that left L2 dirty its lines then displace each other, not the "
                                "dirty ones, whose eviction costs DRAM writes during the stream); 0: none"),
        Param("g_prefetch", 0, "L2 prefetch size of the big operand's 16-byte copies in bytes (64, 128, 256: the "
                               "fill from DRAM widened around each copy; 0: no hint)"),
    ),
    sass=("LDGSTS.E.BYPASS.128", "LDGDEPBAR", "DEPBAR", "LDS.128", "FFMA"),
    sass_scalar=("LDGSTS", "LDGDEPBAR", "DEPBAR", "LDS.128", "FFMA"),
    aligned_path=True,
    min_cc=80,
)
