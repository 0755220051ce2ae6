"""s13 tf32x3 (beyond the notes): FP32-accurate GEMM on s12's tensor-core engine (TENSORCORE.md).

Each operand is split by a pre-pass (kernels/copy/split_tf32.cuh, fused with the K-major
transpose TF32 wgmma needs anyway): v = hi + lo, hi = tf32_rn(v), lo = tf32_rn(v - hi), lo = 0
where v - hi is not finite. The kernel loads four TMA boxes per stage (A hi, A lo, B hi, B lo),
issues lo·hi, hi·lo, hi·hi per k8 step into tensor-core partial sums (hi·hi apart from the small
products: ``split_partials``), and every ``promote_k`` of K adds them into FP32 registers
("promotion"), because the tensor core's own accumulation truncates (H200, K = 4096, U(-1,1), one
partial: promote_k 32/64/128/256 gave 2.4/3.9/8.3/17e-7; hi·hi apart: 2.4/2.4/3.5/6.4e-7;
scripts/tf32x3_accuracy.py, docs/stages/s12-s13.md). With ``split_partials`` only hi·hi is
promoted every ``promote_k`` (default 32: at K = 1024 on U(0,1) data, 2048² outputs, pk32 gave
1.4e-7 where pk128 gave 6.1e-7 and cuBLAS FP32 4.3e-7), the small products every max(promote_k,
512). Precision ``tf32x3``: the relative error is that of FP32 SIMT or better.

The plan always runs the split (``operand_split``); the report names the split launches.
"""
from __future__ import annotations

from .base import Param
from .s10_cp_async import SMEM_LIMIT
from .s12_wgmma_tf32 import BLOCK_K, WgmmaTf32, consumer_regs


class Tf32x3(WgmmaTf32):
    precision = "tf32x3"
    operand_split = True  # the plan writes hi and lo K-major copies of both operands (refs a, a_lo, b, b_lo)
    needs_workspace = True  # always (the split copies), so stage="auto" never picks it without one
    map_operands = ("a", "a_lo", "b", "b_lo")  # the kernel's four tensor-map parameters, in order

    def constraints(self, cfg):
        out = self.tile_constraints(cfg)
        bm, bn, pk = cfg["block_m"], cfg["block_n"], cfg["promote_k"]
        if pk % BLOCK_K or not BLOCK_K <= pk <= 4096:
            out.append(f"promote_k={pk} must be a multiple of {BLOCK_K} in {BLOCK_K}..4096")
        if cfg["split_partials"] not in (0, 1):
            out.append(f"split_partials={cfg['split_partials']} must be 0 or 1")
        if not out:
            sets = 3 if cfg["split_partials"] else 2
            if sets * (bn // 2) + 32 > consumer_regs(cfg):
                out.append(f"{sets} accumulator sets of block_n/2 = {bn // 2} + 32 exceed the {consumer_regs(cfg)} "
                           f"registers a consumer thread gets with block_m={bm}")
            smem = self.smem_bytes(cfg, {})
            if smem > SMEM_LIMIT:
                out.append(f"shared memory {smem} B (stages x 2 x (block_m + block_n) x 128 B) exceeds {SMEM_LIMIT} B")
        return out

    def smem_bytes(self, cfg, variant):
        return 1024 + cfg["stages"] * 2 * (cfg["block_m"] + cfg["block_n"]) * BLOCK_K * 4 + 2 * cfg["stages"] * 8

    def template(self, cfg, variant):
        return (f"gemmlab::S13Tf32x3<{cfg['block_m']}, {cfg['block_n']}, {cfg['block_k']}, {cfg['stages']}, "
                f"{cfg['promote_k']}, {'true' if cfg['split_partials'] else 'false'}>")



STAGE = Tf32x3(
    id="s13",
    name="tf32x3",
    adds="FP32-accurate tensor cores: operands split into TF32 hi + lo (pre-pass), three wgmmas per k8 "
         "(lo·hi, hi·lo, hi·hi), the partial sum promoted into FP32 registers every promote_k; precision tf32x3",
    notes="beyond the notes (TENSORCORE.md)",
    params=(
        Param("block_m", 128, "rows of D per block: one consumer warpgroup per 64 rows (64..256)"),
        Param("block_n", 128, "columns of D per block = wgmma n (FP32 sums + two partial sums: 3 x block_n/2 registers)"),
        Param("block_k", 32, "K per pipeline stage: one 128-byte swizzled row of tf32 (fixed)"),
        Param("stages", 3, "shared-memory stages in flight (four boxes each: A hi/lo, B hi/lo)"),
        Param("promote_k", 32, "K between promotions of the tensor-core partial sum (of hi·hi, with split_partials; "
                               "the small products' every max(promote_k, 512)) into FP32 registers"),
        Param("split_partials", 1, "1: hi·hi in a tensor-core partial sum of its own, lo·hi + hi·lo in another "
                                   "(fewer truncating steps on the large one); 0: one partial sum"),
        Param("group_m", 8, "tile rows per L2 group in the block order"),
    ),
    sass=("HGMMA", "UTMALDG", "SYNCS", "FADD"),
    min_cc=90,
)
