"""s03 block_tiling (notes 000 §4.4-4.6): 128x128 block tile, BLOCK_K = 8, 256 threads each owning
8x8 outputs strided 16 apart, cooperative loads re-arranged per slice for coalescing. The index
maths mirror kernels/s03_block_tiling.cuh (same names)."""
from ._slices import run_instructions, slice_load_rules, slice_store_instructions
from .base import Param, StageSpec

B_LOAD_COLS = 32  # threads across a row of the B slice (000 §4.4)
_KEYS = ("block_m", "block_n", "block_k", "threads", "threads_n")


def layout(cfg):
    """The derived sizes of the .cuh (same names). Assumes ``cfg`` is legal."""
    threads_m = cfg["threads"] // cfg["threads_n"]
    return {"THREADS_M": threads_m, "THREADS_N": cfg["threads_n"],
            "THREAD_M": cfg["block_m"] // threads_m, "THREAD_N": cfg["block_n"] // cfg["threads_n"]}


def thread_outputs(cfg, tid):
    """Every (row, col) of the block tile that thread ``tid`` computes (acc[i][j])."""
    lay = layout(cfg)
    thread_row, thread_col = divmod(tid, lay["THREADS_N"])
    return [(thread_row + i * lay["THREADS_M"], thread_col + j * lay["THREADS_N"])
            for i in range(lay["THREAD_M"]) for j in range(lay["THREAD_N"])]


class BlockTiling(StageSpec):
    def threads(self, cfg):
        return cfg["threads"]

    def min_blocks_per_sm(self, cfg):
        # 000 §4.6 / §12.5: __launch_bounds__(256, 2) -> at most 128 registers, two blocks per SM.
        lay = layout(cfg)
        return 2 if cfg["threads"] <= 256 and lay["THREAD_M"] * lay["THREAD_N"] <= 64 else 1

    def constraints(self, cfg):
        bm, bn, bk, t, tn = (cfg[k] for k in _KEYS)
        if min(bm, bn, bk, t, tn) < 1:
            return [f"{', '.join(_KEYS)} must all be positive"]
        if t % 32 or t > 1024:
            return [f"threads = {t} must be a multiple of 32, at most 1024"]
        out = []
        if t % tn or bn % tn or bm % (t // tn):
            out.append(f"compute layout: threads_n ({tn}) must divide threads ({t}) and block_n ({bn}), and "
                       f"threads/threads_n must divide block_m ({bm})")
        elif (bm // (t // tn)) * (bn // tn) > 128:
            out.append(f"{bm // (t // tn)}x{bn // tn} outputs per thread: at most 128 (more would spill)")
        return (out + slice_load_rules("A slice (block_m x block_k)", bm, bk, t, bk)
                + slice_load_rules("B slice (block_k x block_n)", bk, bn, t, B_LOAD_COLS))

    def smem_bytes(self, cfg, variant=None):
        return 4 * cfg["block_k"] * (cfg["block_m"] + cfg["block_n"])

    def template(self, cfg, variant):
        return "gemmlab::S03BlockTiling<{block_m}, {block_n}, {block_k}, {threads}, {threads_n}>".format(**cfg)

    def smem_accesses(self, cfg):
        """Warp 0, one BLOCK_K slice. A: each of the thread's THREAD_M rows of a_tile, merged by
        the compiler along k; B: THREAD_N single loads per k, THREADS_N columns apart."""
        bm, bn, bk, t = cfg["block_m"], cfg["block_n"], cfg["block_k"], cfg["threads"]
        lay = layout(cfg)
        tm_, tn_ = lay["THREADS_M"], lay["THREADS_N"]
        b_base = 4 * bm * bk
        a_runs = [lambda tid, i=i: (tid // tn_ + i * tm_) * bk for i in range(lay["THREAD_M"])]
        b_runs = [lambda tid, k=k, j=j: k * bn + tid % tn_ + j * tn_ for k in range(bk) for j in range(lay["THREAD_N"])]
        return {
            "a_load": run_instructions(a_runs, bk, t),
            "b_load": run_instructions(b_runs, 1, t, b_base),
            "a_store": slice_store_instructions(bm, bk, t, bk, 0),
            "b_store": slice_store_instructions(bk, bn, t, B_LOAD_COLS, b_base),
        }


STAGE = BlockTiling(
    id="s03",
    name="block_tiling",
    adds="BM=BN=128, BK=8, 256 threads, cooperative coalesced loads, 8x8 strided outputs per thread",
    notes="000 §4.4-4.6",
    params=(Param("block_m", 128, "rows of D per block"),
            Param("block_n", 128, "columns of D per block"),
            Param("block_k", 8, "depth of the shared-memory slices"),
            Param("threads", 256, "threads per block"),
            Param("threads_n", 16, "threads across N in the compute layout (the output stride along N)")),
    sass=("STS", "LDS", "BAR", "FFMA"),
    # 000 §12.2 has no row for block tiling alone. With 8x8 register outputs per thread it is
    # nearest to "Thread Tiling（寄存器外积）" 50-65%.
    expected_pct_cublas=(50, 65),
)
