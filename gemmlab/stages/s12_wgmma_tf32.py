"""s12 wgmma_tf32 (notes 000 §10.5, the last rung): s11's TMA + mbarrier pipeline feeding Hopper's
warpgroup tensor-core MMA (``wgmma.mma_async ... m64nNk8.f32.tf32.tf32``) instead of SIMT FFMA.

Precision ``tf32``: the tensor core reads 10 mantissa bits of each input, accumulates in FP32.

TF32 wgmma has no transpose, so both operands must be K-major in shared memory: A as [m][k], B as
[n][k], one 128-byte swizzled TMA box of 32 K each. The spec says so (``operands_k_major``) and
the plan gives the kernel K-major, TMA-aligned operands: an A or B whose unit stride is along M
or N is transposed into workspace first (B of an nn problem, A of tn/tt), any other unusable
operand is copied; the plan's report names those steps. Problems TMA cannot take at all (K == 0,
dimensions of 2^31 or more, more than 65535 batches) go to s10 (``fallback``, precision ieee).

Variant ``rs`` (config ``b_regs=1``): a row-major B is read as it is, with no transpose and no
workspace; the kernel computes D^T = B^T A^T with B^T as wgmma's register operand (the RS form),
one consumer warpgroup per 64 columns (``launch_threads``). H200: as fast as the transpose.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from . import tensor_map
from .base import Param, Problem, StageSpec
from .s10_cp_async import SMEM_LIMIT
from .s11_tma import INT32_LIMIT, s10_config_for

BLOCK_K = 32               # one 128-byte swizzled row of tf32
SWIZZLE = 128
PRODUCER_REGS = 40


def launch_regs(threads: int) -> int:
    """TmaPipeline::LAUNCH_REGS: registers per thread at launch (__launch_bounds__(threads, 1)),
    whole multiples of 8, at most 248."""
    raw = 65536 // threads // 8 * 8
    return 248 if raw > 255 else raw


def consumer_regs(cfg, warpgroups: int | None = None) -> int:
    """TmaPipeline::CONSUMER_REGS (kernels/copy/tma_pipeline.cuh): what each consumer thread gets
    after setmaxnreg, with one consumer warpgroup per 64 rows (or ``warpgroups`` of them). The
    pool setmaxnreg draws on is what the block was launched with (threads x launch registers),
    not the SM's 64K: 640 threads get 96 each (61440), so the consumers can have 104, not 112."""
    consumers = 128 * (warpgroups if warpgroups is not None else cfg["block_m"] // 64)
    pool = launch_regs(consumers + 128) * (consumers + 128)
    return min(240, (pool - 128 * PRODUCER_REGS) // consumers // 8 * 8)


def b_n_major_ready(p: Problem) -> bool:
    """B row-major (unit stride along N) with 16-byte aligned rows: the RS variant reads it as is
    (gemmlab/problem.py: ``Operand.x_rows_ready``)."""
    return p.operand("b").x_rows_ready


def rs_legal(cfg) -> bool:
    """Whether ``cfg`` can run the RS variant (B^T from registers): 64 columns per consumer
    warpgroup, block_m (the wgmma N) accumulators + 56 within a consumer's registers."""
    bn, bm = cfg["block_n"], cfg["block_m"]
    if bn % 64 or not 64 <= bn <= 256 or bm % 32 or not 32 <= bm <= 256 or not cfg.get("b_regs", 0):
        return False
    return bm // 2 + 56 <= consumer_regs(cfg, bn // 64)


def operand_view(p: Problem, which: str):
    """(ready, outer stride, batch stride) of operand ``which`` as gemmlab/problem.py sees it:
    whether it is K-major (unit stride along K; K == 1 counts) and TMA-aligned
    (``Operand.k_rows_ready``), with the stride between its rows, m of A or n of B
    (``Operand.k_row_stride``)."""
    op = p.operand(which)
    return op.k_rows_ready, op.k_row_stride, op.bs


def operand_maps(cfg, p: Problem, b_regs: int = 0) -> dict:
    """The two tensor maps, outermost first: A as (batch, M, K), B as (batch, N, K), boxes of
    (1, block_m | block_n, 32) with the 128-byte swizzle; with ``b_regs`` (the RS variant) B
    row-major as (batch, K, N) in boxes of (1, 32 k, 32 n); plus "batch_mask" (bit 0 A, bit 1 B
    batched; an unbatched operand is broadcast)."""
    out, mask = {}, 0
    for which, rows, box_rows, ptr in (("a", p.M, cfg["block_m"], p.a_ptr), ("b", p.N, cfg["block_n"], p.b_ptr)):
        _, outer_stride, bs = operand_view(p, which)
        batched = p.batch > 1 and bs != 0
        batch_stride = bs if batched else -(-(rows * outer_stride) // 4) * 4
        out[which] = (ptr, (p.batch if batched else 1, rows, p.K), (batch_stride, outer_stride, 1),
                      (1, box_rows, BLOCK_K), SWIZZLE)
        mask |= (1 if which == "a" else 2) if batched else 0
    out["batch_mask"] = mask
    if b_regs:  # the RS variant reads B row-major: (batch, K, N) in boxes of {32 n, 32 k}
        bs = p.b_bs
        batched = p.batch > 1 and bs != 0
        ld = p.operand("b").x_row_stride
        out["b"] = (p.b_ptr, (p.batch if batched else 1, p.K, p.N),
                    (bs if batched else -(-(p.K * ld) // 4) * 4, ld, 1), (1, BLOCK_K, 32), SWIZZLE)
    return out


class WgmmaTf32(StageSpec):
    precision = "tf32"
    operands_k_major = True
    map_operands = ("a", "b")  # one TMA map per operand source (s13 adds the lo copies)


    def compile_arch(self, cfg, arch):
        # wgmma and setmaxnreg exist only on the sm_90a target (runs on compute capability 9.0).
        return "sm_90a" if arch in ("sm_90", "sm_90a") else arch

    def tile_constraints(self, cfg) -> list[str]:
        """The tile, pipeline and block-order rules every wgmma stage shares (s13 adds its own)."""
        out = []
        bm, bn, st = cfg["block_m"], cfg["block_n"], cfg["stages"]
        if bm not in (64, 128, 192, 256):
            out.append(f"block_m={bm} must be 64, 128, 192 or 256 (one consumer warpgroup per 64 rows)")
        if bn % 32 or not 32 <= bn <= 256:
            out.append(f"block_n={bn} must be a multiple of 32 in 32..256 (wgmma n, one TMA box)")
        if cfg["block_k"] != BLOCK_K:
            out.append(f"block_k={cfg['block_k']} must be {BLOCK_K} (one 128-byte swizzled row of tf32)")
        if not 2 <= st <= 8:
            out.append(f"stages={st} must be 2..8")
        if cfg["group_m"] < 1:
            out.append(f"group_m={cfg['group_m']} must be at least 1")
        return out

    def constraints(self, cfg):
        out = self.tile_constraints(cfg)
        bm, bn = cfg["block_m"], cfg["block_n"]
        for key in ("tma_tf32", "b_regs", "a_order"):
            if cfg.get(key, 0) not in (0, 1):
                out.append(f"{key}={cfg[key]} must be 0 or 1")
        if not out:
            if bn // 2 + 40 > consumer_regs(cfg):
                out.append(f"block_n/2 = {bn // 2} accumulators + 40 exceed the {consumer_regs(cfg)} registers "
                           f"a consumer thread gets with block_m={bm}")
            smem = self.smem_bytes(cfg, {})
            if smem > SMEM_LIMIT:
                out.append(f"shared memory {smem} B (stages x (block_m + block_n) x 128 B) exceeds {SMEM_LIMIT} B")
        return out

    def smem_bytes(self, cfg, variant):
        return 1024 + cfg["stages"] * (cfg["block_m"] + cfg["block_n"]) * BLOCK_K * 4 + 2 * cfg["stages"] * 8

    def variants(self, cfg):
        return [{"rs": 0}] + ([{"rs": 1}] if rs_legal(cfg) else [])

    def variant(self, cfg, problem):
        """b_regs=1 (the RS variant) for a row-major B that is not K-major, where the config allows."""
        use = rs_legal(cfg) and b_n_major_ready(problem) and not operand_view(problem, "b")[0]
        return {"rs": int(use)}

    def threads(self, cfg):
        """Consumer warpgroups (one per 64 rows) + the producer warpgroup."""
        return 128 * (cfg["block_m"] // 64) + 128

    def launch_threads(self, cfg, variant):
        """The RS variant has one consumer warpgroup per 64 columns."""
        if variant.get("rs"):
            return 128 * (cfg["block_n"] // 64) + 128
        return self.threads(cfg)

    def template(self, cfg, variant):
        if variant.get("rs"):
            return (f"gemmlab::S12WgmmaTf32Rs<{cfg['block_m']}, {cfg['block_n']}, {cfg['block_k']}, {cfg['stages']}, "
                    f"{cfg.get('a_order', 0)}>")
        return f"gemmlab::S12WgmmaTf32<{cfg['block_m']}, {cfg['block_n']}, {cfg['block_k']}, {cfg['stages']}>"

    # ---- what the kernel can take ----------------------------------------------------------
    def operand_ready(self, problem: Problem, which: str, cfg=None) -> bool:
        """Whether the plan can hand operand ``which`` to the kernel as it is (else it repacks): K-major
        and TMA-aligned, or for B with ``cfg`` allowing the RS variant, row-major and aligned."""
        if operand_view(problem, which)[0]:
            return True
        return which == "b" and cfg is not None and rs_legal(cfg) and b_n_major_ready(problem)

    def tma_problems(self, cfg, p: Problem) -> list[str]:
        out = []
        if p.K == 0:
            out.append("K == 0 (nothing to load)")
        if max(p.M, p.N, p.K) >= INT32_LIMIT:
            out.append("a dimension of 2^31 or more (TMA coordinates are 32-bit)")
        if p.batch > 65535:
            out.append(f"{p.batch} batches (the batch index is blockIdx.z, at most 65535)")
        if p.splits > 1 and p.k_split % BLOCK_K:
            out.append(f"split-K slices of {p.k_split} are not whole K tiles of {BLOCK_K}")
        return out

    def fallback(self, cfg, problem):
        if self.tma_problems(cfg, problem) or not tensor_map.available():
            from .s10_cp_async import STAGE as S10
            return S10, s10_config_for({})
        return None

    def check_problem(self, cfg, problem):
        bad = self.tma_problems(cfg, problem)
        b_regs = self.variant(cfg, problem).get("rs", 0)
        for which in ("a", "b"):
            if not self.operand_ready(problem, which, cfg if b_regs else None):
                bad.append(f"{which.upper()} is not K-major with 16-byte aligned rows (TF32 wgmma reads both "
                           "operands K-major; gemm() transposes or copies such an operand first)")
        if not bad:
            maps = operand_maps(cfg, problem, b_regs)
            for which in ("a", "b"):
                ptr, shape, strides, box, swizzle = maps[which]
                bad += [f"{which.upper()}: {m}" for m in tensor_map.problems(ptr, shape, strides, box, swizzle,
                                                                             overhang=True)]
        if bad:
            raise ConfigError(f"stage {self.id} cannot run this problem as given: " + "; ".join(bad))

    # ---- kernel parameters: the two tensor maps and the batch mask --------------------------
    def maps(self, variant) -> tuple:
        """The kernel's tensor-map parameters, in order (operand sources of the plan)."""
        return self.map_operands

    def extra_params(self, cfg, variant):
        maps = [(f"const __grid_constant__ gemmlab::async::TmaDescriptor {ref}_map", f"{ref}_map")
                for ref in self.maps(variant)]
        return maps + [("int tma_batch_mask", "tma_batch_mask")]

    def extra_args(self, cfg, variant, problem):
        """One map per entry of ``map_operands``; "a_lo" shares "a"'s shape and strides (the split
        copies have one workspace layout)."""
        maps = operand_maps(cfg, problem, variant.get("rs", 0))
        dtype = tensor_map.TFLOAT32 if cfg.get("tma_tf32", 0) else tensor_map.FLOAT32
        return ([tensor_map.TensorMapArg(ref, *maps[ref[0]][1:], dtype) for ref in self.maps(variant)]
                + [np.int32(maps["batch_mask"])])

    def smem_accesses(self, cfg, variant=None):
        """The tensor cores read shared memory through descriptors and TMA writes it: no LDS/STS."""
        return {"a_load": [], "b_load": [], "a_store": [], "b_store": []}


STAGE = WgmmaTf32(
    id="s12",
    name="wgmma_tf32",
    adds="Hopper warpgroup tensor-core MMA (wgmma.mma_async m64nNk8 TF32) on TMA-loaded, 128B-swizzled K-major "
         "tiles; producer/consumer warpgroups with setmaxnreg; precision tf32",
    notes="000 §10.5",
    params=(
        Param("block_m", 128, "rows of D per block: one consumer warpgroup per 64 rows (64..256)"),
        Param("block_n", 256, "columns of D per block = wgmma n (32..256, multiple of 32)"),
        Param("block_k", 32, "K per pipeline stage: one 128-byte swizzled row of tf32 (fixed)"),
        Param("stages", 4, "shared-memory stages in flight (full/empty mbarrier pair each)"),
        Param("group_m", 8, "tile rows per L2 group in the block order"),
        Param("b_regs", 0, "1: a row-major B runs the RS variant (B^T through registers, D^T = B^T A^T, no "
                           "workspace) instead of a transposing pre-pass, where the tile allows it (block_n a "
                           "multiple of 64); H200: as fast as the pre-pass (323 vs 325 TFLOPS at 4096^3)"),
        Param("a_order", 0, "RS variant: order of the four tf32 words of wgmma's register fragment (0 or 1)"),
        Param("tma_tf32", 1, "1: the tensor maps are TFLOAT32: the TMA copy rounds each input to tf32 (H200: "
                             "rel. error 2.6e-4 at 4096^3, as cuBLAS TF32); 0: raw FP32 words, which the tensor "
                             "core truncates (6.8e-4)"),
    ),
    sass=("HGMMA", "UTMALDG", "SYNCS"),
    min_cc=90,
)
