"""s05 thread_tiling_2d (notes 000 §5, 001 kernel 5): explicit a_frag/b_frag and the 8x8 register
outer product; BLOCK_M = BLOCK_N = 128, BLOCK_K = 8, THREAD_M = THREAD_N = 8, 256 threads. The index
maths mirror kernels/s05_thread_tiling_2d.cuh (same names)."""
from ._slices import run_instructions, slice_load_rules, slice_store_instructions
from .base import Param, StageSpec

_KEYS = ("block_m", "block_n", "block_k", "thread_m", "thread_n")


def thread_origin(cfg, tid):
    """(thread_row, thread_col) of the .cuh: top-left of this thread's square."""
    threads_n = cfg["block_n"] // cfg["thread_n"]
    return tid // threads_n * cfg["thread_m"], tid % threads_n * cfg["thread_n"]


def thread_outputs(cfg, tid):
    """Every (row, col) of the block tile that thread ``tid`` computes (acc[i][j])."""
    row, col = thread_origin(cfg, tid)
    return [(row + i, col + j) for i in range(cfg["thread_m"]) for j in range(cfg["thread_n"])]


def b_load_cols(cfg, threads):
    return min(cfg["block_n"], threads)


class ThreadTiling2D(StageSpec):
    def threads(self, cfg):
        return cfg["block_m"] // cfg["thread_m"] * (cfg["block_n"] // cfg["thread_n"])

    def min_blocks_per_sm(self, cfg):
        # 000 §5.4 / §12.5: __launch_bounds__(256, 2) -> at most 128 registers, two blocks per SM.
        return 2 if self.threads(cfg) <= 256 and cfg["thread_m"] * cfg["thread_n"] <= 64 else 1

    def constraints(self, cfg):
        bm, bn, bk, tm, tn = (cfg[k] for k in _KEYS)
        if min(bm, bn, bk, tm, tn) < 1:
            return [f"{', '.join(_KEYS)} must all be positive"]
        if bm % tm or bn % tn:
            return [f"block_m ({bm}) and block_n ({bn}) must be multiples of thread_m ({tm}) and thread_n ({tn})"]
        t = self.threads(cfg)
        if t % 32 or t > 1024:
            return [f"(block_m/thread_m)*(block_n/thread_n) = {t} threads, must be a multiple of 32, at most 1024"]
        out = []
        if tm * tn > 128:
            out.append(f"thread_m*thread_n = {tm * tn} outputs per thread: at most 128 (more would spill)")
        return (out + slice_load_rules("A slice (block_m x block_k)", bm, bk, t, bk)
                + slice_load_rules("B slice (block_k x block_n)", bk, bn, t, b_load_cols(cfg, t)))

    def smem_bytes(self, cfg, variant=None):
        return 4 * cfg["block_k"] * (cfg["block_m"] + cfg["block_n"])

    def template(self, cfg, variant):
        return "gemmlab::S05ThreadTiling2D<{block_m}, {block_n}, {block_k}, {thread_m}, {thread_n}>".format(**cfg)

    def smem_accesses(self, cfg):
        """Warp 0, one BLOCK_K slice. A: the thread's THREAD_M rows of a_tile (a_frag over all k),
        merged by the compiler along k; B: b_frag, THREAD_N consecutive floats per k, merged."""
        bm, bn, bk, tn = cfg["block_m"], cfg["block_n"], cfg["block_k"], cfg["thread_n"]
        t = self.threads(cfg)
        b_base = 4 * bm * bk
        a_runs = [lambda tid, i=i: (thread_origin(cfg, tid)[0] + i) * bk for i in range(cfg["thread_m"])]
        b_runs = [lambda tid, k=k: k * bn + thread_origin(cfg, tid)[1] for k in range(bk)]
        return {
            "a_load": run_instructions(a_runs, bk, t),
            "b_load": run_instructions(b_runs, tn, t, b_base),
            "a_store": slice_store_instructions(bm, bk, t, bk, 0),
            "b_store": slice_store_instructions(bk, bn, t, b_load_cols(cfg, t), b_base),
        }


STAGE = ThreadTiling2D(
    id="s05",
    name="thread_tiling_2d",
    adds="explicit a_frag/b_frag and an 8x8 register outer product",
    notes="000 §5, 001 (kernel 5)",
    params=(Param("block_m", 128, "rows of D per block"),
            Param("block_n", 128, "columns of D per block"),
            Param("block_k", 8, "depth of the shared-memory slices"),
            Param("thread_m", 8, "rows of D per thread"),
            Param("thread_n", 8, "columns of D per thread")),
    # The compiler merges a_frag (along k) and b_frag (along n) into LDS.128; no scalar LDS is left.
    sass=("STS", "LDS.128", "BAR", "FFMA"),
    expected_pct_cublas=(50, 65),  # 000 §12.2 "Thread Tiling（寄存器外积）"
)
