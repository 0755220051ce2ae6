"""s02 smem_tiling (notes 001 kernel 3; 002): BLOCK_M x BLOCK_K and BLOCK_K x BLOCK_N slices of A
and B staged in shared memory, one output element per thread. The index maths mirror
kernels/s02_smem_tiling.cuh (same names)."""
from ._slices import run_instructions, slice_load_rules, slice_store_instructions
from .base import Param, StageSpec


def thread_outputs(cfg, tid):
    """The (row, col) of the block tile that thread ``tid`` computes."""
    return [divmod(tid, cfg["block_n"])]


class SmemTiling(StageSpec):
    def threads(self, cfg):
        return cfg["block_m"] * cfg["block_n"]

    def min_blocks_per_sm(self, cfg):
        return cfg["min_blocks"]

    def constraints(self, cfg):
        bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
        if min(bm, bn, bk, cfg["min_blocks"]) < 1:
            return ["block_m, block_n, block_k and min_blocks must be positive"]
        t = bm * bn
        out = []
        if bn % 32:
            out.append(f"block_n = {bn} must be a multiple of 32 (a warp spans one row of D)")
        if t > 1024:
            out.append(f"block_m*block_n = {t} threads, must be at most 1024")
        elif t * cfg["min_blocks"] > 2048:
            out.append(f"min_blocks ({cfg['min_blocks']}) blocks of {t} threads exceed 2048 threads per SM")
        if out:
            return out
        return (slice_load_rules("A slice (block_m x block_k)", bm, bk, t, bk)
                + slice_load_rules("B slice (block_k x block_n)", bk, bn, t, bn))

    def smem_bytes(self, cfg, variant=None):
        return 4 * cfg["block_k"] * (cfg["block_m"] + cfg["block_n"])

    def template(self, cfg, variant):
        return "gemmlab::S02SmemTiling<{block_m}, {block_n}, {block_k}>".format(**cfg)

    def smem_accesses(self, cfg):
        """Warp 0, one BLOCK_K slice. A: its row of a_tile, merged by the compiler into LDS.128
        along k (a broadcast: the warp shares one row); B: one LDS per k, a lane per column."""
        bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
        t = bm * bn
        b_base = 4 * bm * bk
        return {
            "a_load": run_instructions([lambda tid: tid // bn * bk], bk, t),
            "b_load": run_instructions([lambda tid, k=k: k * bn + tid % bn for k in range(bk)], 1, t, b_base),
            "a_store": slice_store_instructions(bm, bk, t, bk, 0),
            "b_store": slice_store_instructions(bk, bn, t, bn, b_base),
        }


STAGE = SmemTiling(
    id="s02",
    name="smem_tiling",
    adds="32x32 shared-memory tiles along K, one output per thread",
    notes="001 (kernel 3), 002",
    params=(Param("block_m", 32, "rows of D per block"),
            Param("block_n", 32, "columns of D per block (a multiple of 32)"),
            Param("block_k", 32, "depth of the A and B slices in shared memory (a multiple of block_m and block_n)"),
            Param("min_blocks", 2, "blocks per SM that __launch_bounds__ asks registers for "
                  "(2: at most 32 registers, two 1024-thread blocks per SM)")),
    sass=("STS", "LDS", "BAR", "FFMA"),
    expected_pct_cublas=(25, 40),  # 000 §12.2 "Shared Memory Tiling"
)
