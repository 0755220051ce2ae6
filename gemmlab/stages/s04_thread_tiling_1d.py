"""s04 thread_tiling_1d (notes 001 kernel 4): each thread a THREAD_M = 8 strip of one column of D,
the B element held in a register. BLOCK_M = BLOCK_N = 64, BLOCK_K = 8, 512 threads,
__launch_bounds__(512, min_blocks = 4). The index maths mirror kernels/s04_thread_tiling_1d.cuh
(same names)."""
from ._slices import run_instructions, slice_load_rules, slice_store_instructions
from .base import Param, StageSpec


def thread_outputs(cfg, tid):
    """Every (row, col) of the block tile that thread ``tid`` computes (acc[i])."""
    thread_row = tid // cfg["block_n"] * cfg["thread_m"]
    return [(thread_row + i, tid % cfg["block_n"]) for i in range(cfg["thread_m"])]


class ThreadTiling1D(StageSpec):
    def threads(self, cfg):
        return cfg["block_m"] // cfg["thread_m"] * cfg["block_n"]

    def min_blocks_per_sm(self, cfg):
        return cfg["min_blocks"]

    def constraints(self, cfg):
        bm, bn, bk, tm = cfg["block_m"], cfg["block_n"], cfg["block_k"], cfg["thread_m"]
        if min(bm, bn, bk, tm, cfg["min_blocks"]) < 1:
            return ["block_m, block_n, block_k, thread_m and min_blocks must be positive"]
        if bm % tm:
            return [f"block_m ({bm}) must be a multiple of thread_m ({tm})"]
        t = bm // tm * bn
        if t % 32 or t > 1024:
            return [f"block_m/thread_m*block_n = {t} threads, must be a multiple of 32, at most 1024"]
        out = []
        if tm > 128:
            out.append(f"thread_m = {tm} outputs per thread: at most 128 (more would spill)")
        if t * cfg["min_blocks"] > 2048:
            out.append(f"min_blocks ({cfg['min_blocks']}) blocks of {t} threads exceed 2048 threads per SM")
        return (out + slice_load_rules("A slice (block_m x block_k)", bm, bk, t, bk)
                + slice_load_rules("B slice (block_k x block_n)", bk, bn, t, bn))

    def smem_bytes(self, cfg, variant=None):
        return 4 * cfg["block_k"] * (cfg["block_m"] + cfg["block_n"])

    def template(self, cfg, variant):
        return "gemmlab::S04ThreadTiling1D<{block_m}, {block_n}, {block_k}, {thread_m}>".format(**cfg)

    def smem_accesses(self, cfg):
        """Warp 0, one BLOCK_K slice. A: each of the strip's THREAD_M rows of a_tile, merged by
        the compiler along k (2 LDS.128 per row at BLOCK_K = 8); B: one load per k (b_value),
        a lane per column."""
        bm, bn, bk, tm = cfg["block_m"], cfg["block_n"], cfg["block_k"], cfg["thread_m"]
        t = self.threads(cfg)
        b_base = 4 * bm * bk
        a_runs = [lambda tid, i=i: (tid // bn * tm + i) * bk for i in range(tm)]
        b_runs = [lambda tid, k=k: k * bn + tid % bn for k in range(bk)]
        return {
            "a_load": run_instructions(a_runs, bk, t),
            "b_load": run_instructions(b_runs, 1, t, b_base),
            "a_store": slice_store_instructions(bm, bk, t, bk, 0),
            "b_store": slice_store_instructions(bk, bn, t, bn, b_base),
        }


STAGE = ThreadTiling1D(
    id="s04",
    name="thread_tiling_1d",
    adds="each thread a TM=8 column strip, B element held in a register",
    notes="001 (kernel 4)",
    params=(Param("block_m", 64, "rows of D per block"),
            Param("block_n", 64, "columns of D per block"),
            Param("block_k", 8, "depth of the shared-memory slices"),
            Param("thread_m", 8, "rows of the strip each thread computes"),
            Param("min_blocks", 4, "blocks per SM that __launch_bounds__ asks registers for "
                  "(4: at most 32 registers, 64 warps per SM)")),
    sass=("STS", "LDS", "BAR", "FFMA"),
    # 000 §12.2 has no 1-D row. Nearest is "Shared Memory Tiling" 25-40%: 001 measured kernel 4
    # at 36.5% of cuBLAS, inside that band, and kernel 5 (2-D) at 68.7%, above the next band.
    expected_pct_cublas=(25, 40),
)
