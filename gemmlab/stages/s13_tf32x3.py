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

Variants that split one operand in registers, not by a pre-pass, so that a large operand is read
once, as it is, and never copied (only the other operand is split into workspace):
  ``rs`` (config ``b_regs=1``, a row-major B): S13Tf32x3Rs computes D^T = B^T A^T on s12's RS
  path, B^T's raw words split where they are loaded into wgmma's register fragment; block_n is
  then the wgmma M (64 per consumer warpgroup) and block_m the wgmma N. H200, 128x8192x8192 nn:
  98.9 TFLOPS at 128x128 split 2, against 34.5 for the pre-split kernel and 50.5 for cuBLAS FP32.
  ``ra`` (config ``a_regs=1``, a K-major A): S13Tf32x3Ra, the SS tile with A's raw tile read into
  registers by each consumer warpgroup and split there.
Where both apply, the larger operand is the one split in registers.
"""
from __future__ import annotations

from .base import Param, Problem
from .s10_cp_async import SMEM_LIMIT
from .s12_wgmma_tf32 import BLOCK_K, WgmmaTf32, b_n_major_ready, consumer_regs, operand_view

RS_EXTRA_REGS = 8 * (BLOCK_K // 8) + 24  # the RS kernel: a tile's hi and lo fragments, and addressing


def register_split_problems(cfg, which: str) -> list[str]:
    """Why ``cfg`` cannot run the variant that splits operand ``which`` in registers ("b": RS,
    "a": RA); [] if it can. The consumer warpgroups (64 each) run along that operand's dimension
    (block_n for RS, block_m for RA) and the other one is the wgmma n; a stage holds the raw tile
    of the split operand and the hi and lo tiles of the other."""
    wg_key, n_key = ("block_n", "block_m") if which == "b" else ("block_m", "block_n")
    wg, n = cfg[wg_key], cfg[n_key]
    out = []
    if wg % 64 or not 64 <= wg <= 256:
        out.append(f"{wg_key}={wg} must be 64, 128, 192 or 256 (64 per consumer warpgroup)")
    if n % 32 or not 32 <= n <= 256:
        out.append(f"{n_key}={n} must be a multiple of 32 in 32..256 (the wgmma n)")
    if not out:
        sets = 3 if cfg["split_partials"] else 2
        regs = consumer_regs(cfg, wg // 64)
        if sets * (n // 2) + RS_EXTRA_REGS > regs:
            out.append(f"{sets} accumulator sets of {n_key}/2 = {n // 2} + {RS_EXTRA_REGS} exceed the {regs} registers "
                       f"a consumer thread gets with {wg_key}={wg}")
        smem = register_split_smem_bytes(cfg, which)
        if smem > SMEM_LIMIT:
            out.append(f"shared memory {smem} B (stages x ({wg_key} + 2 x {n_key}) x 128 B) exceeds {SMEM_LIMIT} B")
    return out


def register_split_smem_bytes(cfg, which: str) -> int:
    raw, split = (cfg["block_n"], cfg["block_m"]) if which == "b" else (cfg["block_m"], cfg["block_n"])
    return 1024 + cfg["stages"] * (raw + 2 * split) * BLOCK_K * 4 + 2 * cfg["stages"] * 8


class Tf32x3(WgmmaTf32):
    precision = "tf32x3"
    operand_split = True  # the plan writes hi and lo K-major copies of both operands (refs a, a_lo, b, b_lo)
    needs_workspace = True  # always (the split copies), so stage="auto" never picks it without one
    map_operands = ("a", "a_lo", "b", "b_lo")  # the kernel's four tensor-map parameters, in order

    def rs_legal(self, cfg) -> bool:
        return bool(cfg.get("b_regs", 0)) and not register_split_problems(cfg, "b")

    def ra_legal(self, cfg) -> bool:
        return bool(cfg.get("a_regs", 0)) and not register_split_problems(cfg, "a")

    def variants(self, cfg):
        return [{}] + ([{"rs": 1}] if self.rs_legal(cfg) else []) + ([{"ra": 1}] if self.ra_legal(cfg) else [])

    def variant(self, cfg, problem: Problem):
        """Which operand the kernel splits in registers: {"rs": 1} a row-major B that is not
        K-major, {"ra": 1} a K-major A, where the config allows (the larger operand where both
        could); {} both split by the pre-pass."""
        rs = self.rs_legal(cfg) and b_n_major_ready(problem) and not operand_view(problem, "b")[0]
        ra = self.ra_legal(cfg) and operand_view(problem, "a")[0]
        if rs and ra:
            rs = problem.N >= problem.M
            ra = not rs
        return {"rs": 1} if rs else {"ra": 1} if ra else {}

    def split_operands(self, cfg, problem: Problem) -> tuple:
        """The operands the plan splits into hi and lo workspace copies: both, or the one the
        kernel does not split in registers."""
        v = self.variant(cfg, problem)
        return ("a",) if v.get("rs") else ("b",) if v.get("ra") else ("a", "b")

    def kernel_config(self, cfg, problem: Problem) -> dict:
        """The config the kernel runs with once the plan has split what ``split_operands`` names:
        the register-split flag of the variant chosen on the caller's operands kept, the other
        cleared. (A pre-split operand is K-major and aligned: without this, an A the pre-pass had
        to split because its rows were not 16-byte aligned would qualify for ``ra`` afterwards,
        and its lo part would be lost.)"""
        v = self.variant(cfg, problem)
        return {**cfg, "a_regs": 1 if v.get("ra") else 0, "b_regs": 1 if v.get("rs") else 0}

    def maps(self, variant) -> tuple:
        if variant.get("rs"):
            return ("a", "a_lo", "b")
        if variant.get("ra"):
            return ("a", "b", "b_lo")
        return self.map_operands

    def operand_ready(self, problem: Problem, which: str, cfg=None) -> bool:
        if operand_view(problem, which)[0]:
            return True
        return which == "b" and cfg is not None and self.rs_legal(cfg) and b_n_major_ready(problem)

    def constraints(self, cfg):
        out = self.tile_constraints(cfg)
        if cfg.get("b_regs", 0) not in (0, 1):
            out.append(f"b_regs={cfg['b_regs']} must be 0 or 1")
        elif cfg.get("b_regs", 0) and not out:
            out += [f"b_regs=1: {m}" for m in register_split_problems(cfg, "b")]
        if cfg.get("a_regs", 0) not in (0, 1):
            out.append(f"a_regs={cfg['a_regs']} must be 0 or 1")
        elif cfg.get("a_regs", 0) and not out:
            out += [f"a_regs=1: {m}" for m in register_split_problems(cfg, "a")]
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
        if variant.get("rs"):
            return register_split_smem_bytes(cfg, "b")
        if variant.get("ra"):
            return register_split_smem_bytes(cfg, "a")
        return 1024 + cfg["stages"] * 2 * (cfg["block_m"] + cfg["block_n"]) * BLOCK_K * 4 + 2 * cfg["stages"] * 8

    def template(self, cfg, variant):
        kernel = "S13Tf32x3Ra" if variant.get("ra") else "S13Tf32x3Rs" if variant.get("rs") else "S13Tf32x3"
        return (f"gemmlab::{kernel}<{cfg['block_m']}, {cfg['block_n']}, {cfg['block_k']}, {cfg['stages']}, "
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
        Param("a_regs", 0, "1: a K-major A is split in registers (the RA variant: only B split by the pre-pass) "
                           "instead of by a pre-pass; where b_regs applies too, the larger operand is split in registers"),
        Param("b_regs", 0, "1: a row-major B is split in registers (the RS variant: D^T = B^T A^T, only A split by "
                           "the pre-pass) instead of by a pre-pass, where the tile allows it (block_n a multiple of 64)"),
    ),
    sass=("HGMMA", "UTMALDG", "SYNCS", "FADD"),
    min_cc=90,
)
